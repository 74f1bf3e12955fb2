// SPDX-License-Identifier: MIT
#include "core/nvidiasmi.h"

#include <QDateTime>
#include <QRegularExpression>
#include <QTimeZone>

namespace rankscope {

namespace {

QString cellText(const QByteArray& cell) {
    return QString::fromUtf8(cell).trimmed();
}

// "35 %", "1234 MiB", "85.23 W", "45", "33C", "61W", "0%": the leading number. "[N/A]", "N/A",
// "[Not Supported]", "ERR!" and anything else without one: no reading.
double readingOf(const QString& text) {
    static const QRegularExpression number(QStringLiteral("^[-+]?\\d+(?:\\.\\d+)?"));
    const QRegularExpressionMatch match = number.match(text);
    if (!match.hasMatch())
        return kNoReading;
    bool ok = false;
    const double value = match.captured(0).toDouble(&ok);
    return ok ? value : kNoReading;
}

double unixSeconds(const QDate& date, const QTime& time) {
    if (!date.isValid() || !time.isValid())
        return kNoReading;
    return static_cast<double>(QDateTime(date, time, QTimeZone::utc()).toMSecsSinceEpoch()) / 1000.0;
}

// --query-gpu's "2024/01/15 10:23:45.123".
double csvTimestamp(const QString& text) {
    const QDate date = QDate::fromString(text.left(10), QStringLiteral("yyyy/MM/dd"));
    const QString clock = text.mid(11).trimmed();
    QTime time = QTime::fromString(clock, QStringLiteral("HH:mm:ss.zzz"));
    if (!time.isValid())
        time = QTime::fromString(clock, QStringLiteral("HH:mm:ss"));
    return unixSeconds(date, time);
}

// The table's "Tue Jun 24 01:54:13 2025" (the day padded with a space when it has one digit).
double tableTimestamp(const QByteArray& line) {
    static const QRegularExpression pattern(
        QStringLiteral("^[A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\\d{1,2}) (\\d{2}:\\d{2}:\\d{2}) (\\d{4})$"));
    const QRegularExpressionMatch match = pattern.match(QString::fromLatin1(line));
    if (!match.hasMatch())
        return kNoReading;
    static const QStringList months = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    const int month = static_cast<int>(months.indexOf(match.captured(1))) + 1;
    const QDate date(match.captured(4).toInt(), month, match.captured(2).toInt());
    return unixSeconds(date, QTime::fromString(match.captured(3), QStringLiteral("HH:mm:ss")));
}

bool isFieldName(const QString& cell) {
    static const QRegularExpression pattern(QStringLiteral("^[a-z][a-z0-9_.]*( \\[[^\\]]*\\])?$"));
    return pattern.match(cell).hasMatch();
}

} // namespace

QStringList nvidiaSmiQueryFields() {
    return {QStringLiteral("timestamp"),    QStringLiteral("index"),           QStringLiteral("name"),
            QStringLiteral("pci.bus_id"),   QStringLiteral("utilization.gpu"), QStringLiteral("memory.used"),
            QStringLiteral("memory.total"), QStringLiteral("temperature.gpu"), QStringLiteral("power.draw"),
            QStringLiteral("power.limit")};
}

NvidiaSmiParser::NvidiaSmiParser(QStringList headerlessFields) {
    if (!headerlessFields.isEmpty()) {
        QList<QByteArray> cells;
        for (const QString& field : std::as_const(headerlessFields))
            cells.append(field.toUtf8());
        parseHeader(cells);
    }
}

QVector<GpuSample> NvidiaSmiParser::feed(QByteArrayView chunk) {
    m_partial.append(chunk);
    QVector<GpuSample> out;
    qsizetype start = 0;
    while (true) {
        const qsizetype end = m_partial.indexOf('\n', start);
        if (end < 0)
            break;
        parseLine(QByteArrayView(m_partial).sliced(start, end - start), out);
        start = end + 1;
    }
    m_partial.remove(0, start);
    return out;
}

QVector<GpuSample> NvidiaSmiParser::finish() {
    QVector<GpuSample> out;
    if (!m_partial.isEmpty())
        parseLine(m_partial, out);
    m_partial.clear();
    return out;
}

void NvidiaSmiParser::parseLine(QByteArrayView raw, QVector<GpuSample>& out) {
    const QByteArray line = raw.toByteArray().trimmed(); // also drops a "\r" before the "\n"
    if (line.isEmpty()) {
        m_inGpuTable = false; // a blank line follows the GPU box
        return;
    }
    if (line.startsWith('|') || line.startsWith('+')) {
        parseTableLine(line, out);
        return;
    }
    if (const double time = tableTimestamp(line); GpuSample::has(time)) {
        m_tableTime = time;
        m_inGpuTable = false;
        return;
    }
    const QList<QByteArray> cells = line.split(',');
    if (!parseHeader(cells) && !parseCsvRow(cells, out))
        ++m_skipped;
}

bool NvidiaSmiParser::parseHeader(const QList<QByteArray>& cells) {
    static const QHash<QString, Column> known = {
        {"timestamp", Column::Timestamp},
        {"index", Column::Index},
        {"name", Column::Name},
        {"gpu_name", Column::Name},
        {"pci.bus_id", Column::BusId},
        {"gpu_bus_id", Column::BusId},
        {"utilization.gpu", Column::Utilization},
        {"memory.used", Column::MemoryUsed},
        {"memory.total", Column::MemoryTotal},
        {"temperature.gpu", Column::Temperature},
        {"power.draw", Column::Power},
        {"power.draw.instant", Column::Power},
        {"power.draw.average", Column::Power},
        {"power.limit", Column::PowerLimit},
        {"enforced.power.limit", Column::PowerLimit},
    };
    QVector<Column> columns;
    bool anyKnown = false;
    for (const QByteArray& cell : cells) {
        const QString text = cellText(cell);
        if (!isFieldName(text))
            return false;
        const QString name = text.section(QLatin1Char(' '), 0, 0); // without " [unit]"
        const Column column = known.value(name, Column::Ignored);
        anyKnown = anyKnown || column != Column::Ignored;
        columns.append(column);
    }
    if (!anyKnown)
        return false;
    m_columns = columns; // a restarted sampler may ask for other columns: the latest header rules
    return true;
}

bool NvidiaSmiParser::parseCsvRow(const QList<QByteArray>& cells, QVector<GpuSample>& out) {
    if (m_columns.isEmpty() || cells.size() != m_columns.size())
        return false;
    GpuSample sample;
    bool indexOk = !m_columns.contains(Column::Index);
    for (qsizetype i = 0; i < cells.size(); ++i) {
        const QString text = cellText(cells[i]);
        switch (m_columns[i]) {
        case Column::Ignored:
            break;
        case Column::Timestamp:
            sample.time = csvTimestamp(text);
            break;
        case Column::Index:
            sample.index = text.toInt(&indexOk);
            break;
        case Column::Name:
            sample.name = text.startsWith(QLatin1Char('[')) ? QString() : text;
            break;
        case Column::BusId:
            sample.busId = text.startsWith(QLatin1Char('[')) ? QString() : text;
            break;
        case Column::Utilization:
            sample.utilizationPercent = readingOf(text);
            break;
        case Column::MemoryUsed:
            sample.memoryUsedMiB = readingOf(text);
            break;
        case Column::MemoryTotal:
            sample.memoryTotalMiB = readingOf(text);
            break;
        case Column::Temperature:
            sample.temperatureC = readingOf(text);
            break;
        case Column::Power:
            if (!GpuSample::has(sample.powerWatts))
                sample.powerWatts = readingOf(text);
            break;
        case Column::PowerLimit:
            if (!GpuSample::has(sample.powerLimitWatts))
                sample.powerLimitWatts = readingOf(text);
            break;
        }
    }
    if (!indexOk)
        return false; // an error message that happens to have as many commas as the header
    if (!m_columns.contains(Column::Index) && !sample.busId.isEmpty())
        sample.index = indexForBusId(sample.busId);
    out.append(sample);
    return true;
}

int NvidiaSmiParser::indexForBusId(const QString& busId) {
    const auto found = m_busIndex.constFind(busId);
    if (found != m_busIndex.cend())
        return *found;
    const int index = static_cast<int>(m_busIndex.size());
    m_busIndex.insert(busId, index);
    return index;
}

void NvidiaSmiParser::parseTableLine(const QByteArray& line, QVector<GpuSample>& out) {
    if (line.startsWith("|=")) {
        m_inGpuTable = m_expectingGpuRows;
        m_expectingGpuRows = false;
        m_havePendingRow = false;
        return;
    }
    if (line.startsWith('+'))
        return; // a rule between GPUs or around the box
    if (line.contains("Bus-Id") || line.contains("Persistence-M")) {
        m_expectingGpuRows = true;
        return;
    }
    if (line.contains("Processes:") || line.contains("MIG devices:")) {
        m_inGpuTable = false;
        return;
    }
    if (!m_inGpuTable)
        return; // the version line, column headings, process rows
    QList<QByteArray> cells = line.split('|');
    if (cells.size() < 4)
        return;
    cells = cells.mid(1, cells.size() - 2);
    static const QRegularExpression first(QStringLiteral("^\\s*(\\d+)\\s+(.*?)\\s+(?:On|Off)\\s*$"));
    static const QRegularExpression bus(QStringLiteral("^\\s*([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\\.[0-9A-Fa-f]+)"));
    static const QRegularExpression second(
        QStringLiteral("^\\s*(\\S+)\\s+(\\S+)\\s+(\\S+)\\s+(\\S+)\\s*/\\s*(\\S+)\\s*$"));
    static const QRegularExpression memory(QStringLiteral("(\\S+)MiB\\s*/\\s*(\\S+)MiB"));
    const QString c0 = QString::fromUtf8(cells[0]);
    if (const QRegularExpressionMatch m = first.match(c0); m.hasMatch()) {
        m_pendingRow = GpuSample{};
        m_pendingRow.index = m.captured(1).toInt();
        m_pendingRow.name = m.captured(2);
        if (const QRegularExpressionMatch b = bus.match(QString::fromUtf8(cells[1])); b.hasMatch())
            m_pendingRow.busId = b.captured(1);
        m_havePendingRow = true;
        return;
    }
    const QRegularExpressionMatch m = second.match(c0);
    if (!m_havePendingRow || !m.hasMatch())
        return; // the third line of a block (MIG M.)
    GpuSample sample = m_pendingRow;
    m_havePendingRow = false;
    sample.time = m_tableTime;
    sample.temperatureC = readingOf(m.captured(2));
    sample.powerWatts = readingOf(m.captured(4));
    sample.powerLimitWatts = readingOf(m.captured(5));
    if (const QRegularExpressionMatch mem = memory.match(QString::fromUtf8(cells[1])); mem.hasMatch()) {
        sample.memoryUsedMiB = readingOf(mem.captured(1));
        sample.memoryTotalMiB = readingOf(mem.captured(2));
    }
    // A row cut short (two cells) has no utilization cell.
    sample.utilizationPercent = readingOf(QString::fromUtf8(cells.value(2)).trimmed());
    out.append(sample);
    return;
}

} // namespace rankscope
