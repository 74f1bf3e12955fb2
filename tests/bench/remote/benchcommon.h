// SPDX-License-Identifier: MIT
#pragma once

#include "core/jobspec.h"
#include "remote/transport.h"

#include <QElapsedTimer>
#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QMutex>
#include <QString>
#include <QStringList>
#include <QVector>

#include <functional>
#include <memory>

// Shared pieces of rankscope_remote_bench: arguments, statistics, waiting on the event loop, the OpenSSH
// client's command line for the baselines, and a Transport that times every call it forwards.
namespace rankscope::bench {

// "--name value" pairs after the subcommand; "--flag" alone reads as "1".
class BenchArgs final {
public:
    explicit BenchArgs(const QStringList& arguments);

    [[nodiscard]] QString text(const QString& name, const QString& fallback = {}) const;
    [[nodiscard]] int integer(const QString& name, int fallback) const;
    [[nodiscard]] int rounds() const { return integer(QStringLiteral("rounds"), 5); }
    [[nodiscard]] QString trainer() const;

private:
    QHash<QString, QString> m_values;
};

// Nearest-rank percentile (p in 0..100) and the median; NaN for an empty list.
[[nodiscard]] double percentile(QVector<double> values, double p);
[[nodiscard]] double median(const QVector<double>& values);
// {"median": m, "min": a, "max": b, "n": k, "values": [...]} with values rounded to 0.1.
[[nodiscard]] QJsonObject summary(const QVector<double>& values);
[[nodiscard]] QJsonArray toJson(const QVector<double>& values);

// Milliseconds since the Unix epoch with microsecond resolution: the clock the trainer's `time` field is on.
[[nodiscard]] double wallMs();

// Runs the event loop until done() holds or timeoutMs passes; returns done(). It never sleeps, so a
// queued signal is handled (and timestamped) the moment it arrives.
bool waitUntil(const std::function<bool()>& done, int timeoutMs);

// A job from JSON, or nothing with the parser's issues in *error.
[[nodiscard]] std::optional<JobSpec> jobFromJson(const QJsonObject& json, QString* error);
// A random master port, so that back-to-back launches never meet a port in TIME_WAIT.
[[nodiscard]] int freshMasterPort();

// How the OpenSSH client reaches one of the fixtures' servers.
struct OpensshTarget {
    QString host;
    int port = 22;
    QString user;
    QString identityFile;
    QString knownHosts;
    QString config = QStringLiteral("/dev/null"); // -F: /dev/null reads no user config
};
// Options shared by ssh and scp (no port: ssh takes -p, scp -P).
[[nodiscard]] QStringList opensshOptions(const OpensshTarget& target);
[[nodiscard]] QStringList sshArguments(const OpensshTarget& target, const QString& command);

// Forwards to another Transport and records how long each call took, in order.
class TimingTransport final : public remote::Transport {
public:
    struct Call {
        QString what; // "connect", "readWhole /path", ...
        double startMs = 0;
        double ms = 0;
    };

    explicit TimingTransport(std::unique_ptr<remote::Transport> inner);

    [[nodiscard]] QVector<Call> calls() const;
    [[nodiscard]] double elapsedMs() const;

    [[nodiscard]] QString host() const override { return m_inner->host(); }
    [[nodiscard]] bool isLocal() const override { return m_inner->isLocal(); }
    void connect() override;
    void disconnect() override;
    [[nodiscard]] bool isConnected() const override { return m_inner->isConnected(); }
    remote::ExecResult exec(const QString& command, const QByteArray& input = {},
                            std::chrono::milliseconds timeout = std::chrono::seconds(60),
                            remote::CommandEffect effect = remote::CommandEffect::Changes) override;
    void writeFile(const QString& path, const QByteArray& data, int mode = 0644) override;
    void uploadFile(const QString& localPath, const QString& remotePath, int mode = 0644) override;
    QByteArray readFrom(const QString& path, qint64 offset, qint64 maxBytes) override;
    std::optional<QByteArray> readWhole(const QString& path) override;
    std::optional<qint64> fileSize(const QString& path) override;
    void makeDirectories(const QString& path) override;
    [[nodiscard]] QString homeDirectory() override;

private:
    template <typename F> auto timed(const QString& what, F&& call) -> decltype(call());

    std::unique_ptr<remote::Transport> m_inner;
    QElapsedTimer m_clock;
    mutable QMutex m_mutex;
    QVector<Call> m_calls;
};

// The three subcommands: each returns one JSON object of results, or an empty one with *error set.
[[nodiscard]] QJsonObject runLaunchBench(const BenchArgs& args, QString* error);
[[nodiscard]] QJsonObject runSftpBench(const BenchArgs& args, QString* error);
[[nodiscard]] QJsonObject runTelemetryBench(const BenchArgs& args, QString* error);

} // namespace rankscope::bench
