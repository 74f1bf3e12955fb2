// SPDX-License-Identifier: MIT
// The remote engine's benchmarks, each against an OpenSSH baseline in the same run (tests/bench/run remote
// drives them and prints the table). Needs root for the network namespace nodes; prints one JSON object.
//
//   rankscope_remote_bench launch    [--rounds N] [--login-shell /bin/sh] [--poll-ms MS] [--trainer PATH]
//   rankscope_remote_bench sftp      [--rounds N] [--size-mib 256] [--ciphers default,aes128-gcm@openssh.com]
//   rankscope_remote_bench telemetry [--rounds N] [--steps 2000] [--poll-ms MS] [--login-shell PATH]
#include "benchcommon.h"

#include "core/runstore.h"

#include <QCoreApplication>
#include <QJsonDocument>

#include <cstdio>

using namespace rankscope;

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    qRegisterMetaType<RunRecord>();
    const QStringList arguments = app.arguments().mid(1);
    const QString command = arguments.value(0);
    const bench::BenchArgs args(arguments.mid(1));
    QString error;
    QJsonObject result;
    if (command == QLatin1String("launch")) {
        result = bench::runLaunchBench(args, &error);
    } else if (command == QLatin1String("sftp")) {
        result = bench::runSftpBench(args, &error);
    } else if (command == QLatin1String("telemetry")) {
        result = bench::runTelemetryBench(args, &error);
    } else {
        std::fprintf(stderr, "usage: rankscope_remote_bench launch|sftp|telemetry [--rounds N] [options]\n");
        return 2;
    }
    if (result.isEmpty()) {
        std::fprintf(stderr, "rankscope_remote_bench %s: %s\n", qPrintable(command), qPrintable(error));
        return 1;
    }
    std::printf("%s\n", QJsonDocument(result).toJson(QJsonDocument::Compact).constData());
    return 0;
}
