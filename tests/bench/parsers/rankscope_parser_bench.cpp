// SPDX-License-Identifier: MIT
// Log parser throughput: LogInspector (every log parser behind one scanner, fed in 1 MiB chunks) over a large
// mixed log built from the recorded logs in tests/data that mixed-log.list names, against `grep -c NCCL` and `grep -c -F NCCL` over the
// same file as the floor. Rounds are interleaved; medians are reported. Run it on one core
// (`tests/bench/run parsers` uses taskset -c 0; grep inherits the affinity). The inspector is timed twice a round:
// in a process of its own, started for the round as `rankscope-cli inspect` is (the goal's row: a fresh heap pays
// for every page of memory the results take), and again in the bench's own process, where each round reuses the
// memory the one before freed.
//
//   rankscope_parser_bench [--size-mib 100] [--rounds 5] [--log PATH] [--json PATH]
#include "core/loginspect.h"
#include "tests/bench/benchargs.h"

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryFile>

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

using namespace rankscope;

namespace {

// The recorded logs listed in mixed-log.list (paths under tests/data, one a line), each ending with a newline.
// A fixed list, not every file there: a parser test's new sample must not change the log the figures are
// measured on. An error names the list or the file when one cannot be read.
QByteArray mixedSample(QString* error) {
    QFile list(QStringLiteral(RANKSCOPE_MIXED_LOG_LIST));
    if (!list.open(QIODevice::ReadOnly)) {
        *error = QStringLiteral("%1: %2").arg(list.fileName(), list.errorString());
        return {};
    }
    const QDir data(QStringLiteral(RANKSCOPE_TEST_DATA_DIR));
    QByteArray sample;
    for (const QByteArray& line : list.readAll().split('\n')) {
        const QByteArray name = line.trimmed();
        if (name.isEmpty() || name.startsWith('#'))
            continue;
        QFile file(data.filePath(QString::fromUtf8(name)));
        if (!file.open(QIODevice::ReadOnly)) {
            *error = QStringLiteral("%1 (listed in %2): %3").arg(file.fileName(), list.fileName(), file.errorString());
            return {};
        }
        sample += file.readAll();
        if (!sample.endsWith('\n'))
            sample += '\n';
    }
    if (sample.isEmpty())
        *error = QStringLiteral("%1 lists no file").arg(list.fileName());
    return sample;
}

bool writeMixedLog(QFile& file, qint64 bytes, QString* error) {
    const QByteArray sample = mixedSample(error);
    if (sample.isEmpty())
        return false;
    qint64 written = 0;
    while (written < bytes) {
        if (file.write(sample) != sample.size())
            return false;
        written += sample.size();
    }
    return file.flush();
}

// LogInspection::lines is 0 today (the scanner resets its count in finish()), so the bench counts lines itself.
qint64 countLines(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return 0;
    qint64 lines = 0;
    QByteArray chunk;
    while (!(chunk = file.read(1024 * 1024)).isEmpty())
        lines += chunk.count('\n');
    return lines;
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Seconds grep takes, or a negative number when it fails; `count` gets its output.
double timeGrep(const QStringList& arguments, QByteArray* count) {
    QProcess grep;
    QElapsedTimer timer;
    timer.start();
    grep.start(QStringLiteral("grep"), arguments);
    grep.waitForFinished(-1);
    const double seconds = timer.nsecsElapsed() / 1e9;
    *count = grep.readAllStandardOutput().trimmed();
    return grep.exitStatus() == QProcess::NormalExit && grep.exitCode() == 0 ? seconds : -1;
}

// The time to inspect the file and build the result, from the state `rankscope-cli inspect` starts in: the previous
// round's result is freed before the timer starts, not kept alive through this round (where the allocator would
// hand this round's growing lists the memory the last round's inspector freed, which no single run has). Not timed
// either: that freeing, and the inspector's own destruction.
double timeInspector(const QString& path, LogInspection* inspection) {
    *inspection = LogInspection();
    QElapsedTimer timer;
    timer.start();
    LogInspector inspector;
    if (inspector.inspectFile(path))
        return -1;
    LogInspection result = inspector.result();
    const double seconds = timer.nsecsElapsed() / 1e9;
    *inspection = std::move(result);
    return seconds;
}

// The same in a process of its own (this program with --inspect-once PATH, which prints the seconds): the state
// `rankscope-cli inspect` starts in, a heap that nothing was allocated from or freed to yet. In the bench's own
// process each round after the first is handed the memory the round before it freed, which makes small allocations
// cheaper and fewer fresh pages touched than in any one run of the CLI. Negative when the child fails.
double timeInspectorProcess(const QString& path) {
    QProcess child;
    child.start(QCoreApplication::applicationFilePath(), {QStringLiteral("--inspect-once"), path});
    child.waitForFinished(-1);
    bool ok = false;
    const double seconds = child.readAllStandardOutput().trimmed().toDouble(&ok);
    return child.exitStatus() == QProcess::NormalExit && child.exitCode() == 0 && ok ? seconds : -1;
}

// The inspection's JSON with the log's name fixed: the temporary file has a new name every run, and the name is
// in the JSON (files, errors), so hashing it as is would give a new digest every run.
QByteArray stableJson(LogInspection inspection) {
    const QString name = QStringLiteral("mixed.log");
    inspection.files = {name};
    for (LogError& error : inspection.errors)
        error.file = name;
    return inspectionToJson(inspection);
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    if (const QString once = bench::option(args, "--inspect-once", {}); !once.isEmpty()) {
        LogInspection inspection;
        const double seconds = timeInspector(once, &inspection);
        std::printf("%.6f\n", seconds);
        return seconds < 0 ? 1 : 0;
    }
    const auto option = [&args](const char* name, const QString& fallback) {
        return bench::option(args, name, fallback);
    };
    const qint64 sizeMiB = option("--size-mib", QStringLiteral("100")).toLongLong();
    const int rounds = std::max(1, option("--rounds", QStringLiteral("5")).toInt());
    QString path = option("--log", {});
    QTemporaryFile temp(QDir::temp().filePath(QStringLiteral("rankscope-parser-bench-XXXXXX.log")));
    if (path.isEmpty()) {
        QString error;
        if (!temp.open() || !writeMixedLog(temp, sizeMiB * 1024 * 1024, &error)) {
            std::fprintf(stderr, "rankscope_parser_bench: cannot write the mixed log: %s\n",
                         qPrintable(error.isEmpty() ? temp.errorString() : error));
            return 1;
        }
        path = temp.fileName();
        temp.close();
    }
    const double bytes = static_cast<double>(QFileInfo(path).size());

    std::vector<double> inspectorTimes, processTimes, grepTimes, grepFixedTimes;
    LogInspection inspection;
    QByteArray grepCount, grepFixedCount;
    QByteArray warm;
    timeGrep({QStringLiteral("-c"), QStringLiteral("NCCL"), path}, &warm); // page cache
    for (int round = 0; round < rounds; ++round) {
        processTimes.push_back(timeInspectorProcess(path));
        inspectorTimes.push_back(timeInspector(path, &inspection));
        grepTimes.push_back(timeGrep({QStringLiteral("-c"), QStringLiteral("NCCL"), path}, &grepCount));
        grepFixedTimes.push_back(
            timeGrep({QStringLiteral("-c"), QStringLiteral("-F"), QStringLiteral("NCCL"), path}, &grepFixedCount));
        if (processTimes.back() < 0 || inspectorTimes.back() < 0 || grepTimes.back() < 0 || grepFixedTimes.back() < 0) {
            std::fprintf(stderr, "rankscope_parser_bench: round %d failed\n", round + 1);
            return 1;
        }
    }
    const double lines = static_cast<double>(countLines(path));
    const double inspector = median(inspectorTimes);
    const double process = median(processTimes);
    const double grep = median(grepTimes);
    const double grepFixed = median(grepFixedTimes);
    const auto row = [&](const char* what, double seconds, const char* note) {
        std::printf("| %s | %.3f | %.1f | %.2f | %.2f | %s |\n", what, seconds, bytes / seconds / 1e6,
                    lines / seconds / 1e6, grep / seconds, note);
    };
    std::printf("Mixed log: %.1f MB, %.0f lines, %d interleaved rounds, medians; NCCL lines: %s\n\n", bytes / 1e6,
                lines, rounds, grepCount.constData());
    std::printf("| program | s | MB/s | M lines/s | x grep -c NCCL | |\n|---|---|---|---|---|---|\n");
    row("LogInspector (all parsers, 1 MiB chunks), a process of its own each round", process, "goal >= 0.5x");
    row("LogInspector, round after round in one process", inspector, "");
    row("grep -c NCCL", grep, "floor");
    row("grep -c -F NCCL", grepFixed, "");
    std::printf("\nLogInspector found %lld communicators, %lld warnings, %lld timeouts, %lld failures, %lld errors\n",
                static_cast<long long>(inspection.nccl.communicators.size()),
                static_cast<long long>(inspection.nccl.warnings.size()),
                static_cast<long long>(inspection.timeouts.size()), static_cast<long long>(inspection.failures.size()),
                static_cast<long long>(inspection.errors.size()));
    // Speedups must not change results: compare this digest before and after (--json writes what it hashes).
    const QByteArray json = stableJson(inspection);
    if (const QString jsonPath = option("--json", {}); !jsonPath.isEmpty()) {
        QFile out(jsonPath);
        if (!out.open(QIODevice::WriteOnly) || out.write(json) != json.size())
            std::fprintf(stderr, "rankscope_parser_bench: cannot write %s\n", qPrintable(jsonPath));
    }
    std::printf("Result digest (SHA-1 of the inspection JSON, the log named mixed.log): %s\n",
                QCryptographicHash::hash(json, QCryptographicHash::Sha1).toHex().constData());
    return 0;
}
