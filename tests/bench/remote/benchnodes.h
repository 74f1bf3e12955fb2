// SPDX-License-Identifier: MIT
#pragma once

#include "benchcommon.h"
#include "fixtures/netnsfixture.h"
#include "remote/runengine.h"

#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

namespace rankscope::bench {

// Two (or more) namespace nodes for the launch and telemetry benchmarks, each with its own work directory
// (no shared home: every node is deployed on its own), and what the engine and the OpenSSH baseline need to
// reach them.
class BenchNodes final {
public:
    // loginShell: empty keeps root's shell (bash, which reads ~/.bashrc on every SSH command); a path such
    // as /bin/sh replaces it inside the nodes only, through the /etc/netns/NAME/passwd that `ip netns exec`
    // mounts over /etc/passwd, so the machine's own accounts are left alone.
    explicit BenchNodes(QString loginShell = {});
    ~BenchNodes();
    BenchNodes(const BenchNodes&) = delete;
    BenchNodes& operator=(const BenchNodes&) = delete;

    bool start(int nodes, QString* error);
    void stop();

    [[nodiscard]] int count() const { return m_fixture.nodeCount(); }
    [[nodiscard]] QString workDir(int node) const;
    [[nodiscard]] OpensshTarget target(int node) const;
    [[nodiscard]] QString loginShellSeen() const { return m_shellSeen; } // what an SSH command runs under
    [[nodiscard]] test::NetnsFixture& fixture() { return m_fixture; }

    // A 1-rank-per-node submit job on the prebuilt trainer ("deploy": "binary"): synthetic data, mlp,
    // one intra-op thread per rank (two ranks share the VM's two cores), no validation.
    [[nodiscard]] QJsonObject job(const QString& name, int maxSteps, int epochs) const;
    [[nodiscard]] remote::EngineOptions engineOptions(const QString& trainer, int pollIntervalMs) const;

    // Runs a job to its end with the engine; true when it finished cleanly.
    static bool runToEnd(remote::RunEngine& engine, const JobSpec& job, int timeoutMs, QString* error);

private:
    bool overrideLoginShell(QString* error);
    void removeOverrides();

    QString m_loginShell;
    QString m_shellSeen;
    QStringList m_overrideDirs;
    test::NetnsFixture m_fixture;
    QTemporaryDir m_dir;
};

} // namespace rankscope::bench
