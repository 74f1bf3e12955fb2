// SPDX-License-Identifier: MIT
#include "core/logprefix.h"

#include "core/keywordsearch.h"

#include <cstring>

namespace rankscope {

namespace {

constexpr qsizetype kMaxBracketPrefix = 64;
constexpr int kMaxPrefixes = 4;
constexpr qsizetype kMaxSrunLabelWidth = 7; // up to 9,999,999 tasks

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

// A prefix's number (a rank, a pid, a task): at most 9 digits, an int.
int digitsValue(QByteArrayView digits) {
    return digits.size() > 9 ? -1 : static_cast<int>(decimalValue(digits));
}

QByteArrayView skipSpaces(QByteArrayView text) {
    qsizetype i = 0;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
        ++i;
    return text.sliced(i);
}

// "[1,3]<stdout>:" or "[1,3]<stderr>:" (Open MPI --tag-output): the second number is the rank.
bool stripOpenMpi(QByteArrayView inside, QByteArrayView after, StrippedLine& out) {
    const qsizetype comma = inside.indexOf(',');
    if (comma < 0 || digitsValue(inside.first(comma)) < 0)
        return false;
    const int rank = digitsValue(inside.sliced(comma + 1));
    if (rank < 0)
        return false;
    for (const char* tag : {"<stdout>:", "<stderr>:", "<stddiag>:"}) {
        if (after.startsWith(tag)) {
            out = {after.sliced(qstrlen(tag)), rank};
            return true;
        }
    }
    return false;
}

// "[default3]:" (torchrun --tee, role name and local rank) and "[rank3]:" (PyTorch 2.x). PyTorch writes "[rank3]:"
// straight before its C++ log lines ("[rank3]:[E626 …") but "[rank3]: " before each line of a Python traceback
// ("[rank3]:   File …", "[rank3]: RuntimeError: …"): that one space is the prefix's, not the line's, or every
// line of the traceback would look indented and its exception would never be read.
bool stripRoleRank(QByteArrayView inside, QByteArrayView after, StrippedLine& out) {
    qsizetype letters = 0;
    while (letters < inside.size() && isAlpha(inside[letters]))
        ++letters;
    if (letters == 0 || !after.startsWith(':'))
        return false;
    const int rank = digitsValue(inside.sliced(letters));
    if (rank < 0)
        return false;
    const bool pytorchRank = letters == 4 && std::memcmp(inside.data(), "rank", 4) == 0;
    out = {after.sliced(pytorchRank && after.size() > 1 && after[1] == ' ' ? 2 : 1), rank};
    out.rankKind = pytorchRank ? PrefixRank::Run : PrefixRank::Local;
    return true;
}

// "[2024-05-08 08:47:31,261]": a bracket that starts with a digit and holds a date or a time. "[0]:" (an entry
// of torchrun's failure table) has neither and is kept.
bool stripBracketTimestamp(QByteArrayView inside, QByteArrayView after, StrippedLine& out) {
    if (inside.isEmpty() || !isDigit(inside[0]) || (!inside.contains('-') && !inside.contains(':')))
        return false;
    for (char c : inside) {
        if (!isDigit(c) && c != '-' && c != ':' && c != ' ' && c != ',' && c != '.' && c != 'T' && c != 'Z' &&
            c != '+' && c != '/')
            return false;
    }
    out.text = skipSpaces(after);
    return true;
}

// "18:11:06.680 ": a time of day alone, then a space (`ts '%H:%M:%.S'`, loggers set to print the time only).
bool stripTimeOfDay(QByteArrayView text, StrippedLine& out) {
    const auto twoDigits = [&](qsizetype at, char highest) {
        return text[at] >= '0' && text[at] <= highest && isDigit(text[at + 1]);
    };
    if (text.size() < 9 || !twoDigits(0, '2') || text[2] != ':' || !twoDigits(3, '5') || text[5] != ':' ||
        !twoDigits(6, '6'))
        return false;
    qsizetype i = 8;
    if (text[i] == '.' || text[i] == ',') {
        ++i;
        while (i < text.size() && isDigit(text[i]))
            ++i;
    }
    if (i >= text.size() || text[i] != ' ')
        return false;
    out.text = skipSpaces(text.sliced(i));
    return true;
}

// "2025-11-12 20:42:20,261 " optionally followed by "- INFO - " (Python logging's default format), and ISO 8601
// stamps with a zone ("2026-09-02T09:08:50.880492+00:00 ", rsyslog's and journalctl's short-iso).
bool stripLeadingTimestamp(QByteArrayView text, StrippedLine& out) {
    if (text.size() < 19 || !isDigit(text[0]) || !isDigit(text[3]) || text[4] != '-' || text[7] != '-' ||
        (text[10] != ' ' && text[10] != 'T') || text[13] != ':' || text[16] != ':')
        return false;
    qsizetype i = 19;
    while (i < text.size() && (isDigit(text[i]) || text[i] == ',' || text[i] == '.' || text[i] == 'Z'))
        ++i;
    // A zone: "+00:00", "-0500".
    if (i + 2 < text.size() && (text[i] == '+' || text[i] == '-') && isDigit(text[i + 1]) && isDigit(text[i + 2])) {
        i += 3;
        if (i + 2 < text.size() && text[i] == ':' && isDigit(text[i + 1]) && isDigit(text[i + 2]))
            i += 3;
        else if (i + 1 < text.size() && isDigit(text[i]) && isDigit(text[i + 1]))
            i += 2;
    }
    QByteArrayView rest = skipSpaces(text.sliced(i));
    if (rest.startsWith("- ")) {
        const qsizetype dash = rest.indexOf(" - ", 2);
        if (dash > 0 && dash < 12)
            rest = rest.sliced(dash + 3);
    }
    out.text = rest;
    return true;
}

// "(pid=123)" or "(RayWorkerWrapper pid=1019, ip=10.0.0.1)": Ray's worker prefix.
bool stripRayPrefix(QByteArrayView text, StrippedLine& out) {
    const qsizetype close = text.first(std::min(text.size(), kMaxBracketPrefix)).indexOf(')');
    if (close < 0)
        return false;
    const QByteArrayView inside = text.sliced(1, close - 1);
    qsizetype pidAt = 4;
    if (!inside.startsWith("pid=")) {
        const qsizetype space = inside.indexOf(" pid=");
        if (space < 0)
            return false;
        pidAt = space + 5;
    }
    qsizetype end = pidAt;
    while (end < inside.size() && isDigit(inside[end]))
        ++end;
    // Ray writes one space after the prefix: more are the line's own (a traceback's indented frames).
    const QByteArrayView after = text.sliced(close + 1);
    out.text = after.startsWith(' ') ? after.sliced(1) : after;
    out.pid = digitsValue(inside.sliced(pidAt, end - pidAt));
    return true;
}

// "3: " (Slurm's `srun --label`): the task id, right-aligned to the width of the largest one (" 3: " among 16
// tasks; zero-padded, "03: ", before Slurm 20), then ": ". The task id is the rank of a process srun started.
bool stripSrunLabel(QByteArrayView text, StrippedLine& out) {
    qsizetype i = 0;
    while (i < text.size() && i < kMaxSrunLabelWidth && text[i] == ' ')
        ++i;
    const qsizetype digits = i;
    while (i < text.size() && i < kMaxSrunLabelWidth && isDigit(text[i]))
        ++i;
    if (i == digits || i + 1 >= text.size() || text[i] != ':' || text[i + 1] != ' ')
        return false;
    out = {text.sliced(i + 2), digitsValue(text.sliced(digits, i - digits))};
    return true;
}

bool stripOne(QByteArrayView text, StrippedLine& out) {
    if (text.isEmpty())
        return false;
    if (text[0] == '(')
        return stripRayPrefix(text, out);
    if (text[0] == ' ')
        return stripSrunLabel(text, out);
    if (text[0] != '[')
        return stripSrunLabel(text, out) || stripLeadingTimestamp(text, out) || stripTimeOfDay(text, out);
    const qsizetype close = text.first(std::min(text.size(), kMaxBracketPrefix)).indexOf(']');
    if (close < 0)
        return false;
    const QByteArrayView inside = text.sliced(1, close - 1);
    const QByteArrayView after = text.sliced(close + 1);
    return stripOpenMpi(inside, after, out) || stripRoleRank(inside, after, out) ||
           stripBracketTimestamp(inside, after, out);
}

} // namespace

StrippedLine detail::stripLogPrefixes(QByteArrayView line) {
    StrippedLine result{line, -1};
    for (int i = 0; i < kMaxPrefixes; ++i) {
        StrippedLine next{result.text, -1};
        if (!stripOne(result.text, next))
            break;
        result.text = next.text;
        if (next.rank >= 0) {
            result.rank = next.rank;
            result.rankKind = next.rankKind;
        }
        if (next.pid >= 0)
            result.pid = next.pid;
    }
    return result;
}

QByteArrayView cleanTerminalArtifacts(QByteArrayView line, QByteArray& scratch) {
    // Most lines have neither byte: memchr says so several times faster than a loop over the line.
    const auto holds = [](QByteArrayView text, char c) {
        return !text.isEmpty() && std::memchr(text.data(), c, static_cast<size_t>(text.size())) != nullptr;
    };
    const bool hasEscape = holds(line, '\x1b');
    // Text after the last '\r' that is followed by something (a trailing '\r' hides nothing).
    qsizetype start = 0;
    if (holds(line.chopped(std::min<qsizetype>(line.size(), 1)), '\r')) {
        for (qsizetype i = line.size() - 2; i >= 0; --i) {
            if (line[i] == '\r') {
                start = i + 1;
                break;
            }
        }
    }
    if (!hasEscape)
        return line.sliced(start);
    scratch.clear();
    for (qsizetype i = start; i < line.size(); ++i) {
        const char c = line[i];
        if (c != '\x1b') {
            if (c != '\r')
                scratch.append(c);
            continue;
        }
        // CSI "ESC [ params final" or a two-byte escape "ESC X".
        if (i + 1 < line.size() && line[i + 1] == '[') {
            i += 2;
            while (i < line.size() && !(line[i] >= 0x40 && line[i] <= 0x7e))
                ++i;
        } else {
            ++i;
        }
    }
    return QByteArrayView(scratch);
}

} // namespace rankscope
