// SPDX-License-Identifier: MIT
#include "core/logclassify.h"

#include <algorithm>
#include <optional>

namespace rankscope {
namespace {

bool isWordChar(QChar c) {
    return c.isLetterOrNumber() || c == u'_';
}

bool isDigits(QStringView text) {
    return !text.isEmpty() && std::all_of(text.begin(), text.end(), [](QChar c) { return c.isDigit(); });
}

// `word` occurs in `text` with no letter, digit or '_' on either side (so NCCL_ASYNC_ERROR_HANDLING is no error).
bool containsWord(QStringView text, QStringView word) {
    for (qsizetype at = text.indexOf(word); at >= 0; at = text.indexOf(word, at + 1)) {
        const qsizetype end = at + word.size();
        if ((at == 0 || !isWordChar(text[at - 1])) && (end == text.size() || !isWordChar(text[end])))
            return true;
    }
    return false;
}

std::optional<LogSeverity> severityOfLetter(QChar letter) {
    switch (letter.unicode()) {
    case u'D':
    case u'V':
        return LogSeverity::Debug;
    case u'I':
        return LogSeverity::Info;
    case u'W':
        return LogSeverity::Warning;
    case u'E':
        return LogSeverity::Error;
    case u'F':
        return LogSeverity::Fatal;
    default:
        return std::nullopt;
    }
}

// Prefixes that only say where the line came from: "[rank3]:", "[1,2]<stdout>:", leading blanks.
QStringView stripSourcePrefixes(QStringView text) {
    for (;;) {
        text = text.trimmed();
        if (!text.startsWith(u'['))
            return text;
        const qsizetype close = text.indexOf(u']');
        if (close < 0 || close > 24 || text.first(close).contains(u' '))
            return text;
        qsizetype next = close + 1;
        if (text.mid(next).startsWith(u'<')) { // mpirun's "<stdout>"
            const qsizetype tagEnd = text.indexOf(u'>', next);
            if (tagEnd < 0 || tagEnd > 40)
                return text;
            next = tagEnd + 1;
        }
        if (next >= text.size() || text[next] != u':')
            return text;
        text = text.mid(next + 1);
    }
}

// glog ("E1122 10:00:00.123456 4242 file.cc:12] ...") and c10 ("[E ProcessGroupNCCL.cpp:458] ...",
// "[W socket.cpp:601] ...", "[E1122 10:00:00.1 ProcessGroupNCCL.cpp:607] ...").
std::optional<LogSeverity> glogSeverity(QStringView text) {
    const bool bracketed = text.startsWith(u'[');
    const QStringView body = bracketed ? text.mid(1) : text;
    if (body.size() < 3)
        return std::nullopt;
    const auto severity = severityOfLetter(body[0]);
    if (!severity)
        return std::nullopt;
    if (bracketed && body[1] == u' ')
        return severity; // c10: "[E file.cpp:12]"
    // glog: "E1122 10:00:00.1 ..."; recent c10 drops the month's leading zero: "[E321 02:07:08.4 ...".
    for (const qsizetype digits : {4, 3}) {
        if (body.size() > digits + 1 && isDigits(body.mid(1, digits)) && body[digits + 1] == u' ')
            return severity;
    }
    return std::nullopt;
}

// NCCL: "host:pid:tid [dev] NCCL INFO ...", "host:pid:tid [dev] misc/ibvwrap.cc:63 NCCL WARN ...".
std::optional<LogSeverity> ncclSeverity(QStringView text) {
    const qsizetype at = text.indexOf(u"NCCL ");
    if (at < 0 || (at > 0 && text[at - 1] != u' '))
        return std::nullopt;
    const QStringView level = text.mid(at + 5);
    if (level.startsWith(u"WARN"))
        return LogSeverity::Warning;
    if (level.startsWith(u"INFO"))
        return LogSeverity::Info;
    if (level.startsWith(u"TRACE"))
        return LogSeverity::Debug;
    if (level.startsWith(u"ABORT") || level.startsWith(u"ERROR"))
        return LogSeverity::Error;
    return std::nullopt;
}

// "WARNING:root:...", "ERROR: ...", "[rank 1] error: ...", "UserWarning: ..." and other leading levels.
std::optional<LogSeverity> prefixSeverity(QStringView text) {
    if (text.startsWith(u"[rank ")) {
        const qsizetype close = text.indexOf(u"] ");
        if (close > 0)
            text = text.mid(close + 2);
    }
    struct Prefix {
        QStringView word;
        LogSeverity severity;
    };
    static constexpr Prefix prefixes[] = {
        {u"FATAL", LogSeverity::Fatal},      {u"CRITICAL", LogSeverity::Fatal}, {u"fatal:", LogSeverity::Fatal},
        {u"ERROR", LogSeverity::Error},      {u"Error:", LogSeverity::Error},   {u"error:", LogSeverity::Error},
        {u"WARNING", LogSeverity::Warning},  {u"WARN", LogSeverity::Warning},   {u"Warning:", LogSeverity::Warning},
        {u"warning:", LogSeverity::Warning}, {u"DEBUG", LogSeverity::Debug},    {u"INFO", LogSeverity::Info},
    };
    for (const Prefix& prefix : prefixes) {
        if (text.startsWith(prefix.word) &&
            (text.size() == prefix.word.size() || !isWordChar(text[prefix.word.size()])))
            return prefix.severity;
    }
    return std::nullopt;
}

// "RuntimeError: ...", "torch.distributed.DistBackendError: ...", "KeyboardInterrupt", "ValueError".
std::optional<LogSeverity> pythonExceptionSeverity(QStringView text) {
    qsizetype end = 0;
    while (end < text.size() && (isWordChar(text[end]) || text[end] == u'.'))
        ++end;
    const QStringView name = text.first(end);
    if (end < text.size() && text[end] != u':')
        return std::nullopt;
    if (name.endsWith(u"Warning") && name.size() > 7)
        return LogSeverity::Warning;
    if ((name.endsWith(u"Error") && name.size() > 5) || (name.endsWith(u"Exception") && name.size() > 9) ||
        name == u"KeyboardInterrupt")
        return LogSeverity::Error;
    return std::nullopt;
}

} // namespace

LogLineTraits classifyLogLine(QStringView text) {
    LogLineTraits traits;
    text = stripSourcePrefixes(text);
    traits.nccl = text.contains(u"NCCL");

    // RankScope's own event lines: an error event is an error, the rest is bookkeeping.
    if (text.startsWith(u"@rankscope ")) {
        traits.nccl = false;
        traits.severity = text.contains(u"\"type\":\"error\"") ? LogSeverity::Error : LogSeverity::Debug;
        return traits;
    }
    // These end a process whatever else the line says.
    if (text.startsWith(u"terminate called") || text.contains(u"Segmentation fault") ||
        text.contains(u"(core dumped)") || text.startsWith(u"Fatal Python error")) {
        traits.severity = LogSeverity::Fatal;
        return traits;
    }
    if (text.startsWith(u"Traceback (most recent call last)")) {
        traits.severity = LogSeverity::Error;
        return traits;
    }
    for (auto level : {glogSeverity(text), ncclSeverity(text), prefixSeverity(text), pythonExceptionSeverity(text)}) {
        if (level) {
            traits.severity = *level;
            return traits;
        }
    }
    // No level where levels go: an upper-case ERROR or WARNING anywhere still tells.
    if (containsWord(text, u"ERROR") || containsWord(text, u"Error:"))
        traits.severity = LogSeverity::Error;
    else if (containsWord(text, u"WARNING") || containsWord(text, u"WARN"))
        traits.severity = LogSeverity::Warning;
    return traits;
}

QString logSeverityName(LogSeverity severity) {
    switch (severity) {
    case LogSeverity::Debug:
        return QStringLiteral("debug");
    case LogSeverity::Info:
        return QStringLiteral("info");
    case LogSeverity::Warning:
        return QStringLiteral("warning");
    case LogSeverity::Error:
        return QStringLiteral("error");
    case LogSeverity::Fatal:
        return QStringLiteral("fatal");
    }
    return {};
}

QStringView withoutProcessPrefix(QStringView view) {
    const qsizetype bracket = view.indexOf(u" [");
    const QStringView head = bracket > 0 ? view.first(bracket) : QStringView();
    if (head.count(u':') == 2 && !head.contains(u' ')) { // NCCL: host:pid:tid [dev] (dev: digits)
        const qsizetype close = view.indexOf(u"] ", bracket);
        const QStringView device = close > bracket ? view.mid(bracket + 2, close - bracket - 2) : QStringView();
        if (!device.isEmpty() && device.size() < 6 &&
            std::all_of(device.begin(), device.end(), [](QChar c) { return c.isDigit(); }))
            return view.mid(close + 2);
    }
    if (view.startsWith(u"[rank")) { // the trainer's "[rank 3] ", torchrun's "[rank3]:"
        const qsizetype close = view.indexOf(u']');
        if (close > 0 && close < 12) {
            QStringView rest = view.mid(close + 1);
            if (rest.startsWith(u':'))
                rest = rest.mid(1);
            return rest.trimmed();
        }
    }
    return view;
}

} // namespace rankscope
