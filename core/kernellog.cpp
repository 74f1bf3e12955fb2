// SPDX-License-Identifier: MIT
#include "core/kernellog.h"

#include "core/loglines.h"
#include "core/logprefix.h"

#include <QDate>
#include <QJsonArray>

#include <cmath>

namespace rankscope {

namespace {

bool isDigit(char c) {
    return c >= '0' && c <= '9';
}
bool isLower(char c) {
    return c >= 'a' && c <= 'z';
}

// Every line that can hold a fact has one of these; the others are skipped after this look.
constexpr QByteArrayView kKeywords[] = {"Kill", "oom-kill", "Xid (", "fallen off the bus", "The NVIDIA GPU "};

bool hasKeyword(QByteArrayView line) {
    for (const QByteArrayView keyword : kKeywords)
        if (containsBytes(line, keyword))
            return true;
    return false;
}

// The number at `at`; -1 when there is none or it has more than 18 digits. `end` receives where it stopped.
// `thousands`: commas between digits are skipped, as some copies of a log carry them in memory figures.
qint64 numberAt(QByteArrayView text, qsizetype at, qsizetype* end = nullptr, bool thousands = false) {
    qint64 value = -1;
    int digits = 0;
    for (; at < text.size() && (isDigit(text[at]) || (thousands && text[at] == ',' && digits > 0 &&
                                                      at + 1 < text.size() && isDigit(text[at + 1])));
         ++at) {
        if (text[at] == ',')
            continue;
        if (++digits > 18)
            return -1;
        value = (value < 0 ? 0 : value * 10) + (text[at] - '0');
    }
    if (end)
        *end = at;
    return value;
}

qint64 numberAfter(QByteArrayView text, QByteArrayView key, qsizetype from = 0, bool thousands = false) {
    const qsizetype at = findBytes(text, key, from);
    return at < 0 ? -1 : numberAt(text, at + key.size(), nullptr, thousands);
}

QString textOf(QByteArrayView bytes) {
    return QString::fromUtf8(trimmedBlanks(bytes));
}

// From `key` to the next `stop` (or the end).
QByteArrayView valueAfter(QByteArrayView text, QByteArrayView key, QByteArrayView stop) {
    const qsizetype at = findBytes(text, key);
    if (at < 0)
        return {};
    const qsizetype from = at + key.size();
    const qsizetype end = findBytes(text, stop, from);
    return text.sliced(from, (end < 0 ? text.size() : end) - from);
}

qsizetype skipBlanks(QByteArrayView text, qsizetype at) {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t'))
        ++at;
    return at;
}

// "2026-11-22T11:17:10,030333+00:00" (dmesg --time-format iso), "2024-01-15T10:23:45+0100" (journalctl
// short-iso), "….123456+01:00" (short-iso-precise, rsyslog), "…Z". Unix seconds, or NaN when it is none.
double isoTime(QByteArrayView text, qsizetype* end) {
    if (text.size() < 19 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' || text[16] != ':')
        return kUnknownTime;
    const auto field = [&](qsizetype at, qsizetype width) {
        int value = 0;
        for (qsizetype i = at; i < at + width; ++i) {
            if (!isDigit(text[i]))
                return -1;
            value = value * 10 + (text[i] - '0');
        }
        return value;
    };
    const QDate date(field(0, 4), field(5, 2), field(8, 2));
    const int hour = field(11, 2);
    const int minute = field(14, 2);
    const int second = field(17, 2);
    if (!date.isValid() || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 60)
        return kUnknownTime;
    qsizetype at = 19;
    double fraction = 0.0;
    if (at < text.size() && (text[at] == ',' || text[at] == '.')) {
        double scale = 0.1;
        for (++at; at < text.size() && isDigit(text[at]); ++at, scale /= 10)
            fraction += (text[at] - '0') * scale;
    }
    int offset = 0; // seconds east of UTC
    if (at < text.size() && text[at] == 'Z') {
        ++at;
    } else if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
        const int sign = text[at] == '-' ? -1 : 1;
        const qsizetype colon = at + 3 < text.size() && text[at + 3] == ':' ? 1 : 0;
        if (at + 5 + colon > text.size())
            return kUnknownTime;
        const int hours = field(at + 1, 2);
        const int minutes = field(at + 3 + colon, 2);
        if (hours < 0 || minutes < 0)
            return kUnknownTime;
        offset = sign * (hours * 3600 + minutes * 60);
        at += 5 + colon;
    } else {
        return kUnknownTime; // no zone: a local time of an unknown zone
    }
    *end = at;
    const double days = static_cast<double>(date.toJulianDay() - QDate(1970, 1, 1).toJulianDay());
    return days * 86400.0 + hour * 3600 + minute * 60 + second + fraction - offset;
}

// The "HOST kernel: " after a journal's or syslog's time, when it is there.
QByteArrayView withoutHostKernel(QByteArrayView text) {
    const qsizetype space = text.indexOf(' ');
    if (space > 0 && text.sliced(space + 1).startsWith("kernel: "))
        return text.sliced(space + 1 + 8);
    return text;
}

bool isMonth(QByteArrayView word) {
    static constexpr QByteArrayView months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    for (const QByteArrayView month : months)
        if (word == month)
            return true;
    return false;
}

// One prefix of a kernel log line off the front: its time (when it gives one) into *time. False when the text
// starts with none of them.
bool stripOneStamp(QByteArrayView& text, double bootTime, double* time) {
    if (text.isEmpty())
        return false;
    if (text[0] == '<') { // dmesg --raw: "<3>"
        const qsizetype close = text.indexOf('>');
        if (close > 1 && close < 5 && numberAt(text, 1) >= 0) {
            text = text.sliced(close + 1);
            return true;
        }
        return false;
    }
    if (text.startsWith("kernel: ")) {
        text = text.sliced(8);
        return true;
    }
    if (isDigit(text[0])) {
        qsizetype end = 0;
        const double iso = isoTime(text, &end);
        if (!std::isnan(iso)) {
            *time = iso;
            text = withoutHostKernel(text.sliced(skipBlanks(text, end)));
            return true;
        }
        // /dev/kmsg: "PRIORITY,SEQUENCE,MICROSECONDS,FLAGS;message"
        const qsizetype semicolon = text.first(std::min<qsizetype>(text.size(), 48)).indexOf(';');
        if (semicolon < 0)
            return false;
        const QByteArrayView head = text.first(semicolon);
        const qsizetype first = head.indexOf(',');
        const qsizetype second = first < 0 ? -1 : head.indexOf(',', first + 1);
        const qsizetype third = second < 0 ? -1 : head.indexOf(',', second + 1);
        qsizetype stop = 0;
        if (third < 0 || numberAt(head, 0, &stop) < 0 || stop != first || numberAt(head, first + 1, &stop) < 0 ||
            stop != second)
            return false;
        const qint64 micros = numberAt(head, second + 1, &stop);
        if (micros < 0 || stop != third)
            return false;
        if (std::isnan(*time))
            *time = bootTime + static_cast<double>(micros) / 1e6;
        text = text.sliced(semicolon + 1);
        return true;
    }
    if (text[0] == '[') { // "[ 1234.567890]", "[Sun Mar 30 08:24:00 2025]" (-T), "[  +0.000316]" (-H)
        const qsizetype close = text.first(std::min<qsizetype>(text.size(), 40)).indexOf(']');
        if (close < 2)
            return false;
        const QByteArrayView inside = trimmedBlanks(text.sliced(1, close - 1));
        if (inside.isEmpty())
            return false;
        qsizetype end = 0;
        const qint64 seconds = numberAt(inside, 0, &end);
        if (seconds >= 0 && end < inside.size() && inside[end] == '.') {
            qsizetype fractionEnd = 0;
            const QByteArrayView fraction = inside.sliced(end + 1);
            const qint64 micros = numberAt(fraction, 0, &fractionEnd);
            if (micros < 0 || fractionEnd != fraction.size())
                return false;
            if (std::isnan(*time))
                *time = bootTime + static_cast<double>(seconds) +
                        static_cast<double>(micros) / std::pow(10.0, static_cast<double>(fractionEnd));
        } else if (inside[0] != '+' &&
                   !(inside.size() > 4 && inside[3] == ' ' && inside[0] >= 'A' && inside[0] <= 'Z')) {
            return false;
        }
        text = text.sliced(skipBlanks(text, close + 1));
        return true;
    }
    if (text.size() > 16 && isMonth(text.first(3)) && text[3] == ' ') { // syslog: "May 15 23:09:30 host kernel: "
        const qsizetype clock = skipBlanks(text, 4);
        qsizetype dayEnd = 0;
        if (numberAt(text, clock, &dayEnd) < 0 || dayEnd + 9 > text.size() || text[dayEnd + 3] != ':')
            return false;
        text = withoutHostKernel(text.sliced(skipBlanks(text, dayEnd + 9)));
        return true;
    }
    if (isLower(text[0])) { // dmesg -x: "kern  :err   : "
        qsizetype at = 0;
        while (at < text.size() && isLower(text[at]))
            ++at;
        at = skipBlanks(text, at);
        if (at >= text.size() || text[at] != ':')
            return false;
        qsizetype level = at + 1;
        while (level < text.size() && isLower(text[level]))
            ++level;
        level = skipBlanks(text, level);
        if (level == at + 1 || level + 1 >= text.size() || text[level] != ':' || text[level + 1] != ' ')
            return false;
        text = text.sliced(level + 2);
        return true;
    }
    return false;
}

} // namespace

QString xidMeaning(int code) {
    switch (code) {
    case 13:
        return QStringLiteral("graphics engine exception: a GPU kernel faulted (an out-of-range access, an illegal "
                              "instruction), usually the application's doing, rarely the hardware's");
    case 31:
        return QStringLiteral("GPU memory page fault: the application accessed an invalid GPU address (an "
                              "application or framework bug, rarely the driver)");
    case 43:
        return QStringLiteral("GPU stopped processing: the driver stopped a channel after the application's own "
                              "error; the GPU itself is usually fine");
    case 45:
        return QStringLiteral("preemptive cleanup: the driver tore down the channels of a process that ended or was "
                              "killed, often after another error");
    case 48:
        return QStringLiteral("double-bit ECC error: an uncorrectable GPU memory error; reset the GPU, and replace "
                              "it if it recurs");
    case 63:
        return QStringLiteral("ECC page retirement or row remapping recorded: GPU memory was repaired; a GPU reset "
                              "applies it");
    case 64:
        return QStringLiteral("ECC page retirement or row remapping failed: the GPU's memory cannot be repaired any "
                              "more; take the GPU out of service");
    case 74:
        return QStringLiteral("NVLink error: a link between GPUs failed (hardware or its connection); check the "
                              "links and reset the GPUs");
    case 79:
        return QStringLiteral("the GPU has fallen off the bus: it no longer answers on PCIe (hardware, power or "
                              "overheating); drain the node");
    case 92:
        return QStringLiteral("high single-bit ECC error rate: correctable GPU memory errors above the threshold, a "
                              "sign of failing memory");
    case 94:
        return QStringLiteral("contained ECC error: an uncorrectable GPU memory error, confined to the application "
                              "that used that memory; restart it");
    case 95:
        return QStringLiteral("uncontained ECC error: an uncorrectable GPU memory error that may have hit every "
                              "application on the GPU; reset the GPU");
    case 119:
        return QStringLiteral("GSP RPC timeout: the GPU's system processor stopped answering the driver; reset the "
                              "GPU");
    default:
        return {};
    }
}

KernelLogParser::KernelLogParser(double bootTime) : m_bootTime(bootTime) {}

void KernelLogParser::feed(QByteArrayView chunk) {
    qsizetype pos = 0;
    while (pos < chunk.size()) {
        const qsizetype newline = chunk.indexOf('\n', pos);
        if (newline < 0) {
            appendPartial(chunk.sliced(pos));
            return;
        }
        if (m_inLine) {
            appendPartial(chunk.sliced(pos, newline - pos));
            takeLine(m_partial);
            m_partial.clear();
            m_inLine = false;
        } else {
            takeLine(chunk.sliced(pos, std::min(newline - pos, kMaxLineBytes)));
        }
        pos = newline + 1;
    }
}

void KernelLogParser::finish() {
    if (m_inLine)
        takeLine(m_partial);
    m_partial.clear();
    m_inLine = false;
    m_pendingSummary = -1;
}

void KernelLogParser::appendPartial(QByteArrayView bytes) {
    m_inLine = true;
    const qsizetype room = kMaxLineBytes - m_partial.size();
    if (room > 0)
        m_partial.append(bytes.first(std::min(room, bytes.size())));
}

void KernelLogParser::takeLine(QByteArrayView raw) {
    ++m_lineNumber;
    if (raw.endsWith('\r'))
        raw.chop(1);
    if (!hasKeyword(raw))
        return;
    QByteArrayView text = trimmedBlanks(cleanTerminalArtifacts(raw, m_scratch));
    double time = kUnknownTime;
    for (int i = 0; i < 4 && stripOneStamp(text, m_bootTime, &time); ++i)
        text = trimmedBlanks(text);
    takeMessage(text, time);
}

void KernelLogParser::takeMessage(QByteArrayView message, double time) {
    if (const qsizetype at = findBytes(message, " invoked oom-killer"); at > 0) {
        m_invoker = textOf(message.first(at));
        return;
    }
    if (message.startsWith("oom-kill:")) {
        takeSummary(message, time);
        return;
    }
    if (const qsizetype at = findBytes(message, "Killed process "); at >= 0) {
        takeKilled(message, at, time);
        return;
    }
    // Kernels before 5.0 name the victim first ("Memory cgroup out of memory: Kill process PID (COMM) score N or
    // sacrifice child") and then write a "Killed process" line without saying that a cgroup's limit was hit.
    if (const qsizetype at = findBytes(message, "Kill process "); at >= 0) {
        if (containsBytes(message.first(at), "Memory cgroup out of memory"))
            m_cgroupVictim = numberAt(message, at + 13);
        return;
    }
    if (const qsizetype at = findBytes(message, "Xid ("); at >= 0) {
        takeXid(message, at, time);
        return;
    }
    // Newer drivers also say it in three lines without an Xid: "NVRM: The NVIDIA GPU 0000:b3:00.0", "NVRM: (PCI ID:
    // …) installed in this system has", "NVRM: fallen off the bus and is not responding to commands."
    if (const qsizetype at = findBytes(message, "The NVIDIA GPU "); at >= 0) {
        m_fallenGpu = textOf(message.sliced(at + 15)).section(QLatin1Char(' '), 0, 0);
        m_fallenGpuTime = time; // the continuation lines carry no stamp of their own
        return;
    }
    if (containsBytes(message, "fallen off the bus") && m_xids.size() < kMaxFacts) {
        XidError xid;
        xid.time = std::isnan(time) ? std::exchange(m_fallenGpuTime, kUnknownTime) : time;
        xid.pciAddress = std::exchange(m_fallenGpu, QString());
        xid.code = 79;
        xid.detail = textOf(message.sliced(findBytes(message, "fallen off the bus")));
        xid.line = m_lineNumber;
        m_xids.append(xid);
    }
}

// "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/a,task_memcg=/a/b,
// task=python3,pid=21590,uid=0". A task name may hold commas, so task and pid are taken from the end.
void KernelLogParser::takeSummary(QByteArrayView message, double time) {
    const qsizetype pidAt = message.lastIndexOf(",pid=");
    const qsizetype taskAt = message.lastIndexOf(",task=");
    const qint64 pid = pidAt < 0 ? -1 : numberAt(message, pidAt + 5);
    if (pid < 0 || m_kills.size() >= kMaxFacts)
        return;
    OomKill kill;
    kill.time = time;
    kill.pid = pid;
    if (taskAt >= 0 && taskAt < pidAt)
        kill.command = textOf(message.sliced(taskAt + 6, pidAt - taskAt - 6));
    kill.constraint = textOf(valueAfter(message, "constraint=", ","));
    kill.cgroupLimit = kill.constraint == QLatin1String("CONSTRAINT_MEMCG");
    kill.memcg = textOf(valueAfter(message, "oom_memcg=", ","));
    if (kill.memcg.isEmpty() && taskAt >= 0)
        kill.memcg = textOf(valueAfter(message.first(taskAt), "task_memcg=", ","));
    kill.uid = numberAfter(message, ",uid=", pidAt < 0 ? 0 : pidAt);
    kill.invokedBy = std::exchange(m_invoker, QString());
    kill.line = m_lineNumber;
    m_kills.append(kill);
    m_pendingSummary = m_kills.size() - 1;
}

// "[Memory cgroup ]Out of memory: Killed process PID (COMM) total-vm:82136kB, anon-rss:65280kB, file-rss:2468kB,
// shmem-rss:0kB, UID:0 pgtables:192kB oom_score_adj:0". COMM may hold spaces and parentheses ("((resolved))"),
// so it ends at the last ')' before the memory figures.
void KernelLogParser::takeKilled(QByteArrayView message, qsizetype at, double time) {
    const qsizetype pidAt = at + 15;
    qsizetype pidEnd = 0;
    const qint64 pid = numberAt(message, pidAt, &pidEnd);
    if (pid < 0 || pidEnd == pidAt)
        return;
    QString command;
    qsizetype figures = pidEnd;
    if (message.sliced(pidEnd).startsWith(" (")) {
        const qsizetype open = pidEnd + 2;
        const qsizetype vm = findBytes(message, "total-vm:", open);
        const qsizetype close = message.first(vm < 0 ? message.size() : vm).lastIndexOf(')');
        if (close >= open) {
            command = QString::fromUtf8(message.sliced(open, close - open));
            figures = close + 1;
        }
    }
    OomKill fresh;
    OomKill* kill = &fresh;
    if (m_pendingSummary >= 0 && m_kills[m_pendingSummary].pid == pid)
        kill = &m_kills[m_pendingSummary];
    else if (m_kills.size() >= kMaxFacts)
        return;
    m_pendingSummary = -1;
    if (kill == &fresh) {
        fresh.pid = pid;
        fresh.time = time;
        fresh.line = m_lineNumber;
        fresh.invokedBy = std::exchange(m_invoker, QString());
    }
    if (!command.isEmpty())
        kill->command = command;
    if (std::isnan(kill->time))
        kill->time = time;
    kill->cgroupLimit = kill->cgroupLimit || containsBytes(message.first(at), "Memory cgroup") || m_cgroupVictim == pid;
    m_cgroupVictim = -1;
    kill->totalVmKiB = numberAfter(message, "total-vm:", figures, true);
    kill->anonRssKiB = numberAfter(message, "anon-rss:", figures, true);
    kill->fileRssKiB = numberAfter(message, "file-rss:", figures, true);
    kill->shmemRssKiB = numberAfter(message, "shmem-rss:", figures, true);
    if (const qint64 uid = numberAfter(message, "UID:", figures); uid >= 0)
        kill->uid = uid;
    if (kill == &fresh)
        m_kills.append(fresh);
}

// "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus." Older drivers print no
// pid and name ("Xid (PCI:0000:01:00): 13, Graphics Exception: …", "Xid (0000:03:00): 13, 0003 …"); newer ones
// may print pid='<unknown>', name=<unknown>.
void KernelLogParser::takeXid(QByteArrayView message, qsizetype at, double time) {
    const qsizetype open = at + 5;
    const qsizetype close = findBytes(message, "): ", open);
    if (close < 0 || close - open > 40 || m_xids.size() >= kMaxFacts)
        return;
    qsizetype codeEnd = 0;
    const qint64 code = numberAt(message, close + 3, &codeEnd);
    if (code < 0 || code > 100000)
        return;
    XidError xid;
    xid.time = time;
    xid.line = m_lineNumber;
    xid.code = static_cast<int>(code);
    QByteArrayView address = message.sliced(open, close - open);
    if (address.startsWith("PCI:"))
        address = address.sliced(4);
    xid.pciAddress = QString::fromUtf8(address);
    QByteArrayView rest = message.sliced(codeEnd);
    if (rest.startsWith(','))
        rest = trimmedBlanks(rest.sliced(1));
    for (const QByteArrayView key : {QByteArrayView("pid="), QByteArrayView("name=")}) {
        if (!rest.startsWith(key))
            continue;
        const qsizetype comma = findBytes(rest, ", ");
        const QByteArrayView value = rest.sliced(key.size(), (comma < 0 ? rest.size() : comma) - key.size());
        rest = comma < 0 ? QByteArrayView() : rest.sliced(comma + 2);
        const bool unknown = value.contains('<') || value.contains("N/A");
        if (key == QByteArrayView("pid=")) {
            qsizetype end = 0;
            const qint64 pid = numberAt(value, 0, &end);
            xid.pid = !unknown && end == value.size() ? pid : -1;
        } else if (!unknown) {
            xid.process = QString::fromUtf8(value);
        }
    }
    xid.detail = textOf(rest);
    m_xids.append(xid);
}

QJsonObject KernelLogCapture::toJson() const {
    QJsonObject pids;
    for (auto it = rankPids.cbegin(); it != rankPids.cend(); ++it)
        pids.insert(QString::number(it.key()), it.value());
    // One string per line, so that the file reads as the log did; a last line without its newline gets one.
    QJsonArray lines;
    for (const QByteArray& line : text.split('\n'))
        lines.append(QString::fromUtf8(line));
    if (text.isEmpty() || text.endsWith('\n'))
        lines.removeLast();
    QJsonObject object{
        {"node", node},      {"host", host},  {"source", source}, {"problem", problem}, {"total_bytes", totalBytes},
        {"rank_pids", pids}, {"lines", lines}};
    if (!std::isnan(readAt))
        object.insert(QStringLiteral("read_at"), readAt);
    if (!std::isnan(bootTime))
        object.insert(QStringLiteral("boot_time"), bootTime);
    return object;
}

std::optional<KernelLogCapture> KernelLogCapture::fromJson(const QJsonObject& object) {
    if (!object.value(QStringLiteral("node")).isDouble() || !object.value(QStringLiteral("lines")).isArray())
        return std::nullopt;
    KernelLogCapture capture;
    capture.node = object.value(QStringLiteral("node")).toInt();
    capture.host = object.value(QStringLiteral("host")).toString();
    capture.source = object.value(QStringLiteral("source")).toString();
    capture.problem = object.value(QStringLiteral("problem")).toString();
    capture.readAt = object.value(QStringLiteral("read_at")).toDouble(kUnknownTime);
    capture.bootTime = object.value(QStringLiteral("boot_time")).toDouble(kUnknownTime);
    capture.totalBytes = object.value(QStringLiteral("total_bytes")).toInteger();
    const QJsonObject pids = object.value(QStringLiteral("rank_pids")).toObject();
    for (auto it = pids.constBegin(); it != pids.constEnd(); ++it)
        capture.rankPids.insert(it.key().toInt(), it.value().toInteger());
    for (const QJsonValue& line : object.value(QStringLiteral("lines")).toArray())
        capture.text += line.toString().toUtf8() + '\n';
    return capture;
}

} // namespace rankscope
