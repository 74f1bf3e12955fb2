// SPDX-License-Identifier: MIT
#include "checkcommand.h"

#include "cli.h"

#include "core/jobspec.h"
#include "remote/clustercheck.h"

#include <QEventLoop>
#include <QJsonDocument>
#include <QTextStream>

#include <cstdio>
#include <unistd.h>

namespace rankscope::cli {

namespace {

using remote::CheckVerdict;
using remote::ClusterCheckResult;
using remote::NodeCheck;
using remote::VerdictLevel;

constexpr int kExitCheckFailed = 1; // a node failed a check; warnings alone pass

QString levelLabel(VerdictLevel level) {
    switch (level) {
    case VerdictLevel::Ok:
        return QStringLiteral("ok");
    case VerdictLevel::Warn:
        return QStringLiteral("WARN");
    case VerdictLevel::Fail:
        return QStringLiteral("FAIL");
    }
    return QStringLiteral("FAIL");
}

// The node's status line names the real cause: the connection error as the transport classified it, else the
// worst verdict.
QString statusLine(const NodeCheck& node) {
    QString where = node.host;
    if (node.port > 0)
        where += QStringLiteral(":%1").arg(node.port);
    QString line =
        QStringLiteral("== %1 (%2)%3: %4")
            .arg(node.name, where, node.master ? QStringLiteral(", master") : QString(), levelLabel(node.level()));
    if (!node.reachable && node.errorKind)
        return line +
               QStringLiteral(": %1: %2").arg(remote::transportErrorKindName(*node.errorKind), node.errorMessage);
    if (node.level() != VerdictLevel::Ok)
        line += QStringLiteral(": ") + node.cause();
    return line;
}

void printFact(QTextStream& out, const QString& name, const QString& value) {
    if (!value.isEmpty())
        out << QStringLiteral("   %1 %2\n").arg(name, -11).arg(value);
}

// What the verdicts do not say themselves: who the probe ran as, every LibTorch candidate, the tools, every
// GPU and interface.
void printFacts(QTextStream& out, const ProbeReport& report) {
    printFact(out, QStringLiteral("login"),
              QStringLiteral("%1@%2, home %3").arg(report.user, report.hostname, report.home));
    QStringList torch;
    for (const TorchInstall& install : report.torch)
        torch << QStringLiteral("%1 %2 %3%4")
                     .arg(install.source, install.version.isEmpty() ? QStringLiteral("?") : install.version,
                          install.cmakeDir, install.hasConfig ? QString() : QStringLiteral(" (no CMake files)"));
    printFact(out, QStringLiteral("torch"),
              torch.isEmpty() ? QStringLiteral("none") : torch.join(QStringLiteral("; ")));
    const bool noCompiler = report.cxx == QLatin1String("missing") || report.cxx == QLatin1String("error");
    printFact(out, QStringLiteral("tools"),
              QStringLiteral("cmake %1; %2")
                  .arg(report.cmake, noCompiler ? QStringLiteral("c++ ") + report.cxx : report.cxx));
    if (report.gpus.isEmpty())
        printFact(out, QStringLiteral("gpus"), QStringLiteral("none (nvidia-smi %1)").arg(report.nvidiaSmi));
    for (const QString& gpu : report.gpus)
        printFact(out, QStringLiteral("gpu"), gpu);
    QStringList interfaces;
    for (const NetInterface& interface : report.interfaces)
        interfaces << QStringLiteral("%1 %2/%3%4")
                          .arg(interface.name, interface.address)
                          .arg(interface.prefixLength)
                          .arg(interface.up ? QString() : QStringLiteral(" (down)"));
    printFact(out, QStringLiteral("interfaces"), interfaces.join(QStringLiteral(", ")));
}

void printTable(const ClusterCheckResult& result) {
    QTextStream out(stdout);
    int passed = 0;
    int warned = 0;
    int failed = 0;
    for (const NodeCheck& node : result.nodes) {
        out << statusLine(node) << '\n';
        if (node.reachable)
            printFacts(out, node.report);
        for (const CheckVerdict& verdict : node.verdicts) {
            out << QStringLiteral("   %1 %2 %3\n")
                       .arg(levelLabel(verdict.level), -5)
                       .arg(verdict.item, -14)
                       .arg(verdict.message);
            if (!verdict.fix.isEmpty() && verdict.level != VerdictLevel::Ok)
                out << QStringLiteral("   %1 fix: %2\n").arg(QString(), -20).arg(verdict.fix);
        }
        out << '\n';
        const VerdictLevel level = node.level();
        (level == VerdictLevel::Fail ? failed : level == VerdictLevel::Warn ? warned : passed) += 1;
    }
    out << QStringLiteral("%1 node(s), master %2:%3: %4 ok, %5 with warnings, %6 failing\n")
               .arg(result.nodes.size())
               .arg(result.masterAddress)
               .arg(result.masterPort)
               .arg(passed)
               .arg(warned)
               .arg(failed);
}

} // namespace

int runCheckCommand(const QString& jobPath, bool json, const ConnectionFlags& flags) {
    return runCheckCommand(jobPath, QString(), json, flags);
}

int runCheckCommand(const QString& jobPath, const QString& mode, bool json, const ConnectionFlags& flags) {
    QTextStream err(stderr);
    int exitCode = kExitOk;
    const std::optional<CommandJob> loaded = loadCommandJob(QStringLiteral("check"), jobPath, mode, &exitCode);
    if (!loaded)
        return exitCode;
    const RunMode runMode = loaded->mode;

    // A passphrase or password is asked on the terminal, as `run` does; an unknown host is reported with its
    // fingerprint unless --accept-new-host-keys trusts it.
    remote::ConnectionOptions options;
    options.knownHostsPath = flags.knownHosts;
    options.sshConfigPath = flags.sshConfig;
    options.acceptNewHostKeys = flags.acceptNewHostKeys;
    options.passphrase = askSecret;
    options.password = askSecret;
    remote::ClusterCheck check(options);
    const bool progress = !json && isatty(fileno(stderr)) != 0;
    QObject::connect(&check, &remote::ClusterCheck::nodeChecked, &check, [progress](const NodeCheck& node) {
        if (progress)
            std::fprintf(stderr, "  %s: %s\n", qPrintable(node.name), node.reachable ? "probed" : "not reached");
    });
    QEventLoop loop;
    QObject::connect(&check, &remote::ClusterCheck::finished, &loop, &QEventLoop::quit);
    QString error;
    if (!check.start(loaded->job, runMode, &error)) {
        err << "rankscope-cli check: " << error << '\n';
        return kExitInvalidJob;
    }
    if (progress)
        std::fprintf(stderr, "checking %d node(s) of %s (%s mode)\n", static_cast<int>(check.result().nodes.size()),
                     qPrintable(loaded->job.name), runModeName(runMode).latin1());
    loop.exec();

    const ClusterCheckResult& result = check.result();
    if (json) {
        const QByteArray text = QJsonDocument(remote::clusterCheckToJson(result)).toJson();
        std::fwrite(text.constData(), 1, static_cast<size_t>(text.size()), stdout);
    } else {
        printTable(result);
    }
    return result.ok() ? kExitOk : kExitCheckFailed;
}

} // namespace rankscope::cli
