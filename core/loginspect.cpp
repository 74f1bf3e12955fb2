// SPDX-License-Identifier: MIT
#include "core/loginspect.h"

#include "core/kernellog.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cstring>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

namespace rankscope {

// nvidia-smi output inside a log: from its banner or CSV header on, every line of the file goes to the
// nvidia-smi parser (its rows hold no keyword of their own).
class LogInspector::GpuSink final : public LogLineSink {
public:
    [[nodiscard]] QList<QByteArray> keywords() const override {
        return {QByteArrayLiteral("NVIDIA-SMI"), QByteArrayLiteral("utilization.gpu")};
    }
    [[nodiscard]] bool wantsEveryLine() const override { return m_active; }
    void takeLine(const LogLine& line) override {
        if (!m_active && line.keywords == 0)
            return;
        if (!m_active)
            m_parser.emplace();
        m_active = true;
        QByteArray bytes = line.text.toByteArray();
        bytes.append('\n');
        keep(m_parser->feed(bytes));
    }
    void endOfStream() override {
        if (m_parser)
            keep(m_parser->finish());
        m_parser.reset();
        m_active = false;
    }
    [[nodiscard]] QList<GpuSample> samples() const {
        QList<GpuSample> out;
        for (const auto& [index, sample] : m_last)
            out.append(sample);
        return out;
    }

private:
    // A GPU is its index (or bus id, which the parser numbers). Output with neither (a CSV query without index or
    // pci.bus_id) tells GPUs apart only by name: two models are two GPUs, never one reading taken for the other's.
    void keep(const QVector<GpuSample>& samples) {
        for (const GpuSample& sample : samples)
            m_last[{sample.index, sample.index < 0 ? sample.name : QString()}] = sample;
    }
    bool m_active = false;
    std::optional<NvidiaSmiParser> m_parser;
    std::map<std::pair<int, QString>, GpuSample> m_last;
};

namespace {

// bash's report of a job that a signal ended, in a job script's output: "./train.sh: line 1:  7364 Killed
// python3 train.py", "bash: line 1: 77 Segmentation fault      (core dumped) python x.py". `at` is where ": line "
// starts. The signal's description is strsignal's, for the signals that end a process with no word of its own.
bool isShellKillReport(QByteArrayView text, qsizetype at) {
    qsizetype i = at + 7;
    const auto digits = [&] {
        const qsizetype start = i;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9')
            ++i;
        return i > start;
    };
    if (!digits() || !text.sliced(i).startsWith(": "))
        return false;
    i += 2;
    while (i < text.size() && text[i] == ' ') // bash pads the pid: "line 1:  7364 Killed"
        ++i;
    if (!digits() || i >= text.size() || text[i] != ' ')
        return false;
    const QByteArrayView description = text.sliced(i + 1);
    for (const char* signal :
         {"Killed", "Segmentation fault", "Aborted", "Bus error", "Floating point exception", "Illegal instruction"}) {
        const qsizetype size = qsizetype(std::strlen(signal));
        if (description.startsWith(signal) && (description.size() == size || description[size] == ' '))
            return true;
    }
    return false;
}

} // namespace

// Kills by the system, which the program could not print an error for: the kernel's OOM killer and NVIDIA Xid
// errors (a log that captured dmesg or syslog, or a node's console; core/kernellog.h tells a kernel line from a
// program's line that only mentions one), Slurm's report of an OOM kill in a job step ("slurmstepd: error:
// Detected 1 oom_kill event in StepId=…", "srun: error: gpu001: task 0: Out Of Memory") and bash's report of a job a
// signal ended. Each is an error of its line.
class LogInspector::KillSink final : public LogLineSink {
public:
    [[nodiscard]] QList<QByteArray> keywords() const override {
        return {QByteArrayLiteral("Killed process "), QByteArrayLiteral("NVRM: Xid"),
                QByteArrayLiteral("oom_kill event"),  QByteArrayLiteral("oom-kill event"),
                QByteArrayLiteral(": line "),         QByteArrayLiteral(": Out Of Memory")};
    }
    [[nodiscard]] bool wantsEveryLine() const override { return false; }
    explicit KillSink(ErrorList* errors) : m_errors(errors) {}
    void setSource(const QString& file) { m_source = file; }
    void takeLine(const LogLine& line) override {
        enum { kKilled, kXid, kSlurmOom, kSlurmOomDashed, kShellLine, kSrunOom };
        if ((line.holds(kShellLine) && isShellKillReport(line.text, line.indexOf(kShellLine))) ||
            (line.holds(kSrunOom) && startsWithLiteral(line.text, "srun: error: "))) {
            m_errors->append(LogError::at(m_source, line, errorText(trimmedBlanks(line.text), m_texts)));
            return;
        }
        if (line.holds(kKilled) || line.holds(kXid)) {
            const qsizetype kills = m_kernel.oomKills().size();
            const qsizetype xids = m_kernel.xids().size();
            QByteArray bytes = line.text.toByteArray();
            bytes.append('\n');
            m_kernel.feed(bytes);
            // A kill is the kernel's when it names the task ("Killed process 12 (python3)"), unlike a program's
            // "Killed process 12 because …".
            const bool killed = m_kernel.oomKills().size() > kills && !m_kernel.oomKills().last().command.isEmpty();
            if (!killed && m_kernel.xids().size() == xids)
                return;
        } else if (!line.holds(kSlurmOom) && !line.holds(kSlurmOomDashed)) {
            return;
        }
        m_errors->append(LogError::at(m_source, line, errorText(trimmedBlanks(line.text), m_texts)));
    }
    void endOfStream() override { m_kernel = KernelLogParser(); }

private:
    KernelLogParser m_kernel; // of this stream's kill lines only: its facts say which lines are a kernel's
    QString m_source;
    TextStore m_texts;      // of its errors
    ErrorList* m_errors; // the inspector's
};

namespace {

constexpr qsizetype kReadChunk = 1024 * 1024;

} // namespace

LogInspector::LogInspector()
    : m_gpu(new GpuSink), m_kills(new KillSink(&m_errors)),
      m_scanner({&m_nccl, &m_watchdog, &m_elastic, &m_traceback, m_gpu, m_kills}) {
    m_errors.oneALine = true;
    m_watchdog.appendErrorsTo(&m_errors);
    m_traceback.appendErrorsTo(&m_errors);
}

LogInspector::~LogInspector() {
    delete m_gpu;
    delete m_kills;
}

void LogInspector::beginFile(const QString& name) {
    // A name given again starts at line 1 again, before the errors its first reading left.
    if (m_fileNames.contains(name))
        m_errors.inOrder = false;
    m_fileNames.insert(name);
    m_files.append(name);
    m_watchdog.setSource(name);
    m_traceback.setSource(name);
    m_kills->setSource(name);
    m_errors.streamFrom = m_errors.list.size();
}

void LogInspector::feed(QByteArrayView chunk) {
    m_bytes += chunk.size();
    m_scanner.feed(chunk);
}

void LogInspector::endFile() {
    m_lines += m_scanner.finish();
}

QString decompressorFor(QByteArrayView head) {
    static constexpr struct {
        std::string_view magic;
        const char* tool;
    } kFormats[] = {{"\x1f\x8b", "gzip"},
                    {"\x28\xb5\x2f\xfd", "zstd"},
                    {"\xfd"
                     "7zXZ\x00",
                     "xz"},
                    {"\x04\x22\x4d\x18", "lz4"}};
    for (const auto& format : kFormats) {
        if (head.startsWith(QByteArrayView(format.magic.data(), qsizetype(format.magic.size()))))
            return QString::fromLatin1(format.tool);
    }
    // "BZh" and the block size, '1' to '9'.
    if (head.size() >= 4 && head.startsWith("BZh") && head[3] >= '1' && head[3] <= '9')
        return QStringLiteral("bzip2");
    return {};
}

std::optional<QString> LogInspector::inspectFile(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return QStringLiteral("%1: %2").arg(path, file.errorString());
    return inspectDevice(file, path);
}

std::optional<QString> LogInspector::inspectDevice(QIODevice& device, const QString& name) {
    beginFile(name);
    QByteArray buffer(kReadChunk, Qt::Uninitialized);
    while (true) {
        const qint64 read = device.read(buffer.data(), buffer.size());
        if (read < 0) {
            endFile();
            return QStringLiteral("%1: %2").arg(name, device.errorString());
        }
        if (read == 0) {
            // A file is at its end; a process's output may have more to come (false: it has ended, all read).
            if (device.waitForReadyRead(-1))
                continue;
            break;
        }
        feed(QByteArrayView(buffer.constData(), read));
    }
    endFile();
    return std::nullopt;
}

namespace {

// Where an error is in the files inspected: the index of its file in beginFile()'s order (-1: none), then its line.
struct ErrorPlace {
    qsizetype file;
    qint64 line;
    friend bool operator==(const ErrorPlace& a, const ErrorPlace& b) { return a.file == b.file && a.line == b.line; }
    friend bool operator<(const ErrorPlace& a, const ErrorPlace& b) {
        return a.file != b.file ? a.file < b.file : a.line < b.line;
    }
};

// The place of each error in turn. Errors share their file name's string and come in runs of one file: the name is
// looked up in the list of files only where the string changes.
class ErrorPlaces {
public:
    explicit ErrorPlaces(const QStringList& files) : m_files(files) {}
    ErrorPlace operator()(const LogError& error) {
        const bool sameString =
            error.file.constData() == m_name.constData() && error.file.size() == m_name.size() && m_index != -2;
        if (!sameString) {
            if (m_index == -2 || error.file != m_name)
                m_index = m_files.indexOf(error.file);
            m_name = error.file;
        }
        return {m_index, error.line};
    }

private:
    const QStringList& m_files;
    QString m_name;
    qsizetype m_index = -2; // none looked up yet
};

} // namespace

// The parsers append to one list as they read, one error a line (ErrorList): that is file and line order, unless a
// file was given twice (its second read starts at line 1 again) or a parser named an earlier line than the last
// error's (ErrorList::inOrder). Then the errors are put in that order, each line's first kept; else the list is the
// parsers' own, shared, not copied.
QList<LogError> LogInspector::errorsInOrder() const {
    if (m_errors.inOrder)
        return m_errors.list;
    ErrorPlaces placeOf(m_files);
    const auto before = [&placeOf](const LogError& a, const LogError& b) { return placeOf(a) < placeOf(b); };
    QList<LogError> ordered = m_errors.list;
    std::stable_sort(ordered.begin(), ordered.end(), before);
    const auto samePlace = [&placeOf](const LogError& a, const LogError& b) { return placeOf(a) == placeOf(b); };
    ordered.erase(std::unique(ordered.begin(), ordered.end(), samePlace), ordered.end());
    return ordered;
}

LogInspection LogInspector::result() const {
    LogInspection inspection;
    inspection.files = m_files;
    inspection.nccl = m_nccl.facts();
    inspection.ncclFindings = ncclLogFindings(inspection.nccl);
    inspection.timeouts = m_watchdog.timeouts();
    inspection.failures = m_elastic.failures();
    inspection.gpus = m_gpu->samples();
    inspection.errors = errorsInOrder();
    inspection.bytes = m_bytes;
    inspection.lines = m_lines;
    return inspection;
}

namespace {

void putString(QJsonObject& object, const char* key, const QString& value) {
    if (!value.isEmpty())
        object.insert(QLatin1String(key), value);
}

void putNumber(QJsonObject& object, const char* key, qint64 value) {
    if (value >= 0)
        object.insert(QLatin1String(key), value);
}

void putReading(QJsonObject& object, const char* key, double value) {
    if (GpuSample::has(value))
        object.insert(QLatin1String(key), value);
}

QJsonObject ncclJson(const NcclFacts& nccl) {
    QJsonObject object;
    if (!nccl.versions.isEmpty())
        object.insert(QStringLiteral("versions"), QJsonArray::fromStringList(nccl.versions));
    if (!nccl.hosts.isEmpty())
        object.insert(QStringLiteral("hosts"), QJsonArray::fromStringList(nccl.hosts));
    if (!nccl.ranks.isEmpty()) {
        QJsonArray ranks;
        for (int rank : nccl.ranks)
            ranks.append(rank);
        object.insert(QStringLiteral("ranks"), ranks);
    }
    if (nccl.nranks > 0)
        object.insert(QStringLiteral("nranks"), nccl.nranks);
    if (!nccl.communicators.isEmpty()) {
        QJsonArray comms;
        for (const NcclCommunicator& comm : nccl.communicators) {
            QJsonObject c;
            putString(c, "comm_id", comm.commId);
            c.insert(QStringLiteral("nranks"), comm.nranks);
            QJsonArray ranks;
            for (const NcclCommRank& rank : comm.ranks) {
                QJsonObject r;
                r.insert(QStringLiteral("rank"), rank.rank);
                putString(r, "host", rank.host);
                putNumber(r, "pid", rank.pid);
                putNumber(r, "cuda_dev", rank.cudaDev);
                putString(r, "bus_id", rank.busId);
                putString(r, "init", rank.init);
                ranks.append(r);
            }
            c.insert(QStringLiteral("ranks"), ranks);
            comms.append(c);
        }
        object.insert(QStringLiteral("communicators"), comms);
    }
    putString(object, "network", nccl.network);
    if (!nccl.interfaces.isEmpty())
        object.insert(QStringLiteral("interfaces"), QJsonArray::fromStringList(nccl.interfaces));
    if (!nccl.transports.isEmpty()) {
        QJsonObject transports;
        for (auto it = nccl.transports.cbegin(); it != nccl.transports.cend(); ++it)
            transports.insert(it.key(), it.value());
        object.insert(QStringLiteral("transports"), transports);
    }
    if (nccl.channels > 0)
        object.insert(QStringLiteral("channels"), nccl.channels);
    if (!nccl.warnings.isEmpty()) {
        QJsonArray warnings;
        for (const NcclWarning& warning : nccl.warnings) {
            QJsonObject w;
            putString(w, "host", warning.host);
            putNumber(w, "pid", warning.pid);
            putNumber(w, "rank", warning.rank);
            putNumber(w, "local_rank", warning.localRank);
            putString(w, "source", warning.source);
            w.insert(QStringLiteral("text"), warning.text);
            warnings.append(w);
        }
        object.insert(QStringLiteral("warnings"), warnings);
    }
    return object;
}

QJsonArray timeoutsJson(const QList<CollectiveTimeout>& timeouts) {
    QJsonArray array;
    for (const CollectiveTimeout& t : timeouts) {
        QJsonObject o;
        putNumber(o, "rank", t.rank);
        putNumber(o, "local_rank", t.localRank);
        putNumber(o, "seq", t.seq);
        putString(o, "op", t.op);
        putNumber(o, "numel_in", t.numelIn);
        putNumber(o, "numel_out", t.numelOut);
        putNumber(o, "timeout_ms", t.timeoutMs);
        putNumber(o, "ran_ms", t.ranMs);
        putNumber(o, "last_enqueued", t.lastEnqueued);
        putNumber(o, "last_completed", t.lastCompleted);
        array.append(o);
    }
    return array;
}

QJsonArray failuresJson(const QList<ElasticFailure>& failures) {
    QJsonArray array;
    for (const ElasticFailure& f : failures) {
        QJsonObject o;
        putString(o, "time", f.time);
        putString(o, "host", f.host);
        putNumber(o, "rank", f.rank);
        putNumber(o, "local_rank", f.localRank);
        if (f.exitCode)
            o.insert(QStringLiteral("exit_code"), *f.exitCode);
        putString(o, "signal", f.signal);
        putNumber(o, "pid", f.pid);
        o.insert(QStringLiteral("root_cause"), f.rootCause);
        array.append(o);
    }
    return array;
}

QJsonArray gpusJson(const QList<GpuSample>& gpus) {
    QJsonArray array;
    for (const GpuSample& g : gpus) {
        QJsonObject o;
        putNumber(o, "index", g.index);
        putString(o, "name", g.name);
        putString(o, "bus_id", g.busId);
        putReading(o, "util_pct", g.utilizationPercent);
        putReading(o, "mem_used_mib", g.memoryUsedMiB);
        putReading(o, "mem_total_mib", g.memoryTotalMiB);
        putReading(o, "temp_c", g.temperatureC);
        putReading(o, "power_w", g.powerWatts);
        putReading(o, "power_cap_w", g.powerLimitWatts);
        array.append(o);
    }
    return array;
}

QJsonArray errorsJson(const QList<LogError>& errors) {
    QJsonArray array;
    for (const LogError& e : errors) {
        QJsonObject o;
        putString(o, "file", e.file);
        putNumber(o, "line", e.line);
        putNumber(o, "rank", e.rank);
        putNumber(o, "local_rank", e.localRank);
        o.insert(QStringLiteral("text"), QString::fromUtf8(e.text));
        array.append(o);
    }
    return array;
}

} // namespace

QByteArray inspectionToJson(const LogInspection& inspection) {
    QJsonObject root;
    root.insert(QStringLiteral("files"), QJsonArray::fromStringList(inspection.files));
    if (!inspection.nccl.isEmpty()) {
        QJsonObject nccl = ncclJson(inspection.nccl);
        if (!inspection.ncclFindings.isEmpty()) {
            QJsonArray findings;
            for (const Diagnosis& finding : inspection.ncclFindings) {
                QJsonObject object{{"key", finding.key}, {"message", finding.message}};
                if (!finding.ranks.isEmpty()) {
                    QJsonArray ranks;
                    for (const int rank : finding.ranks)
                        ranks.append(rank);
                    object.insert(QStringLiteral("ranks"), ranks);
                }
                findings.append(object);
            }
            nccl.insert(QStringLiteral("findings"), findings);
        }
        root.insert(QStringLiteral("nccl"), nccl);
    }
    if (!inspection.timeouts.isEmpty())
        root.insert(QStringLiteral("timeouts"), timeoutsJson(inspection.timeouts));
    if (!inspection.failures.isEmpty())
        root.insert(QStringLiteral("failures"), failuresJson(inspection.failures));
    if (!inspection.gpus.isEmpty())
        root.insert(QStringLiteral("gpus"), gpusJson(inspection.gpus));
    if (!inspection.errors.isEmpty())
        root.insert(QStringLiteral("errors"), errorsJson(inspection.errors));
    return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

} // namespace rankscope
