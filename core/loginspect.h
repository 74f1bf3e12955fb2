// SPDX-License-Identifier: MIT
#pragma once

#include "core/elasticparser.h"
#include "core/loglines.h"
#include "core/ncclfindings.h"
#include "core/ncclparser.h"
#include "core/nvidiasmi.h"
#include "core/tracebackparser.h"
#include "core/watchdogparser.h"

#include <QByteArray>
#include <QIODevice>
#include <QList>
#include <QSet>
#include <QString>
#include <QStringList>

#include <optional>

namespace rankscope {

// What `rankscope-cli inspect` reports: every parser's findings over a set of log files.
struct LogInspection {
    QStringList files;
    NcclFacts nccl;
    // What NCCL's records say about the network each process chose (ncclLogFindings): the loopback or a bridge
    // across hosts, sockets for want of InfiniBand, different networks or NCCL versions.
    QVector<Diagnosis> ncclFindings;
    QList<CollectiveTimeout> timeouts;
    QList<ElasticFailure> failures;
    QList<GpuSample> gpus; // the last reading of each GPU (by index) found in nvidia-smi output
    // Python exceptions, C++ exceptions, NCCL errors, desync blame, OOM kills (the kernel's, Slurm's) and GPU Xid
    // errors; in file and line order
    QList<LogError> errors;
    qint64 bytes = 0;
    qint64 lines = 0;
};

// The program that writes out a compressed log ("gzip", "zstd", "xz", "bzip2", "lz4", each with -dc), told by the
// stream's first bytes (at least 6 of them where the file has them); empty when they start no stream it knows.
[[nodiscard]] QString decompressorFor(QByteArrayView head);

// Runs every log parser over one stream per file in a single pass. Feed each file's bytes in any chunks
// between beginFile() and endFile(); the result does not depend on the chunking.
class LogInspector final {
public:
    LogInspector();
    ~LogInspector();
    LogInspector(const LogInspector&) = delete;
    LogInspector& operator=(const LogInspector&) = delete;

    void beginFile(const QString& name);
    void feed(QByteArrayView chunk);
    void endFile();

    // Reads a whole file in chunks; returns a message naming the file when it cannot be read.
    [[nodiscard]] std::optional<QString> inspectFile(const QString& path);
    // The same for an open device (standard input, a pipe, a process's output) read to its end, reported as `name`.
    [[nodiscard]] std::optional<QString> inspectDevice(QIODevice& device, const QString& name);

    // What was found so far. Its errors are the inspector's own list, shared, not copied: a log of tens of thousands
    // of errors holds them once.
    [[nodiscard]] LogInspection result() const;

private:
    class GpuSink;
    class KillSink;

    [[nodiscard]] QList<LogError> errorsInOrder() const;

    NcclLogParser m_nccl;
    WatchdogLogParser m_watchdog;
    ElasticLogParser m_elastic;
    TracebackLogParser m_traceback;
    GpuSink* m_gpu;
    KillSink* m_kills;
    LogLineScanner m_scanner;
    ErrorList m_errors; // of the watchdog, traceback and kill parsers, as they read them
    QStringList m_files;
    QSet<QString> m_fileNames; // m_files, to tell a name given again
    qint64 m_bytes = 0;
    qint64 m_lines = 0;
};

// The JSON object of `rankscope-cli inspect --json` (README, "Inspecting logs"). Facts that were not found are
// left out.
[[nodiscard]] QByteArray inspectionToJson(const LogInspection& inspection);

} // namespace rankscope
