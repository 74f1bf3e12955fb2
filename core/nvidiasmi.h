// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QHash>
#include <QString>
#include <QStringList>
#include <QVector>

#include <cmath>
#include <limits>

namespace rankscope {

inline constexpr double kNoReading = std::numeric_limits<double>::quiet_NaN();

// One reading of one GPU. A value the tool did not report, or reported as [N/A] / [Not Supported], is NaN.
// The first seven fields come first so that `{node, index, time, util, used, total, power}` reads naturally.
struct GpuSample {
    QString node;             // the node's name in the job; set by whoever knows it (the engine), empty from the parser
    int index = -1;           // nvidia-smi's GPU index; -1 when the output says neither index nor bus id
    double time = kNoReading; // Unix seconds; nvidia-smi's clock is the node's local time, read as UTC
    double utilizationPercent = kNoReading;
    double memoryUsedMiB = kNoReading;
    double memoryTotalMiB = kNoReading;
    double powerWatts = kNoReading;
    QString name;  // "NVIDIA A100-SXM4-40GB" (the table truncates long names with "...")
    QString busId; // "00000000:07:00.0"
    double temperatureC = kNoReading;
    double powerLimitWatts = kNoReading;

    [[nodiscard]] static bool has(double value) { return !std::isnan(value); }
};

// The columns RankScope's node supervisor asks for, in its order (resources/remote/supervisor.sh).
[[nodiscard]] QStringList nvidiaSmiQueryFields();

// Parses what nvidia-smi prints, fed in byte chunks that may end anywhere; a line is parsed once its '\n'
// arrives, so the result never depends on how the bytes were chunked. Understands, in one stream:
//  - `--query-gpu=... --format=csv[,noheader][,nounits]` with any columns in any order: a header line
//    ("index, utilization.gpu [%], ...") maps the columns, and a later header (a restarted sampler) maps them
//    again. Without a header, the fields given to the constructor say the order. Units are optional.
//  - the default boxed table (`nvidia-smi`, `nvidia-smi -l N`): GPU rows between the "|===" rule and the next
//    section, the timestamp line above the box giving their time.
// Anything else (errors such as "No devices were found", MIG and process tables, blank lines) is skipped and
// counted.
class NvidiaSmiParser final {
public:
    explicit NvidiaSmiParser(QStringList headerlessFields = {});

    [[nodiscard]] QVector<GpuSample> feed(QByteArrayView chunk);
    // End of stream: parses an unterminated last line.
    [[nodiscard]] QVector<GpuSample> finish();

    [[nodiscard]] int skippedLines() const { return m_skipped; }
    [[nodiscard]] qsizetype bufferedBytes() const { return m_partial.size(); }

private:
    enum class Column {
        Ignored,
        Timestamp,
        Index,
        Name,
        BusId,
        Utilization,
        MemoryUsed,
        MemoryTotal,
        Temperature,
        Power,
        PowerLimit
    };

    void parseLine(QByteArrayView line, QVector<GpuSample>& out);
    bool parseHeader(const QList<QByteArray>& cells);
    bool parseCsvRow(const QList<QByteArray>& cells, QVector<GpuSample>& out);
    void parseTableLine(const QByteArray& line, QVector<GpuSample>& out);
    int indexForBusId(const QString& busId);

    QByteArray m_partial;
    QVector<Column> m_columns;
    QHash<QString, int> m_busIndex; // bus id -> ordinal, for output without an index column
    int m_skipped = 0;
    // The boxed table.
    bool m_expectingGpuRows = false; // the column headings of the GPU box were seen
    bool m_inGpuTable = false;
    double m_tableTime = kNoReading;
    GpuSample m_pendingRow; // the first line of a GPU's block: index, name, bus id
    bool m_havePendingRow = false;
};

} // namespace rankscope
