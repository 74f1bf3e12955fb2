// SPDX-License-Identifier: MIT
#include "core/tracebackparser.h"

#include "core/trainerevent.h"

#include <rankscope/event_schema.h>

#include <algorithm>
#include <limits>
#include <utility>

namespace rankscope {

namespace {

constexpr int kFlatRanks = 4096; // -1 to 4094 kept in TracebackLogParser::m_flatRanks

constexpr QByteArrayView kTerminate = "terminate called after throwing an instance of '";
// The box the `rich` library draws a traceback in: "╭──── Traceback (most recent call last) ────╮", "│ … │",
// then "╰────╯" (or "└────┘"), in UTF-8.
constexpr QByteArrayView kBoxLine = "\xe2\x94\x80";          // ─
constexpr QByteArrayView kBoxSide = "\xe2\x94\x82";          // │
constexpr QByteArrayView kBoxBottomRounded = "\xe2\x95\xb0"; // ╰
constexpr QByteArrayView kBoxBottom = "\xe2\x94\x94";        // └
// keywords()
enum Keyword { kTraceback, kTerminateKeyword, kWhat, kTrainerError, kFatalPython };

// The bundled trainer's error line on stderr, "[rank R] error: MESSAGE" (after any launcher prefix): R, or -1 when
// the line is something else. `keywordAt` is where "] error: " starts in `text`.
int trainerErrorRank(QByteArrayView text, qsizetype keywordAt) {
    const QByteArrayView open = schemaBytes(schema::stderr_line::kRankOpen);
    const qsizetype digits = keywordAt - open.size();
    if (digits < 1 || digits > 9 || !text.startsWith(open))
        return -1;
    return static_cast<int>(decimalValue(text.sliced(open.size(), digits)));
}

// "worker-1: ": a host name as pdsh prints it (lower-case letters, digits, '.', '-', '_') and ": ", all of `text`.
// pdsh, which DeepSpeed's launcher runs across nodes, puts it before every line. Upper case is left out so that a
// logger's "ERROR: " or an exception's name before a traceback is not taken for a host: the traceback's next lines
// do not repeat it.
bool isHostPrefix(QByteArrayView text) {
    if (text.size() < 3 || text.size() > 128 || !text.endsWith(": "))
        return false;
    const QByteArrayView host = text.chopped(2);
    return std::all_of(host.begin(), host.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
    });
}

// A Python exception's line, as a traceback ends: its type, a dotted name whose last part ends as Python's types
// do ("RuntimeError", "torch.OutOfMemoryError", "KeyboardInterrupt", "dbm.sqlite3.error", "socket.timeout"),
// then nothing or ':' and its message.
bool isExceptionLine(QByteArrayView text) {
    qsizetype end = 0;
    qsizetype part = 0; // where the name's last dotted part starts
    for (; end < text.size(); ++end) {
        const char c = text[end];
        const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (c == '.' && end > part) {
            part = end + 1;
            continue;
        }
        if (!letter && !(end > part && c >= '0' && c <= '9'))
            break;
    }
    if (end == part || (end < text.size() && text[end] != ':'))
        return false;
    const QByteArrayView name = text.sliced(part, end - part);
    for (const QByteArrayView ending :
         {QByteArrayView("Error"), QByteArrayView("Exception"), QByteArrayView("Interrupt"), QByteArrayView("Exit"),
          QByteArrayView("Warning"), QByteArrayView("Iteration"), QByteArrayView("Group"), QByteArrayView("error"),
          QByteArrayView("timeout")}) {
        if (name.endsWith(ending))
            return true;
    }
    return false;
}

// A line of a C++ stack as PyTorch prints one at the margin: "Exception raised from checkTimeout at …:632 (most recent
// call first):", "frame #0: c10::Error::Error(…) + 0x57 (0x7f… in libc10.so)", "#4 c10d::ProcessGroupNCCL::…"
// (a CapturedTraceback's). Where processes write to one stream, another's lands among a traceback's frames.
bool isNativeStackLine(QByteArrayView text) {
    if (startsWithLiteral(text, "Exception raised from "))
        return true;
    if (startsWithLiteral(text, "frame #"))
        text = text.sliced(6);
    return text.size() >= 2 && text[0] == '#' && text[1] >= '0' && text[1] <= '9';
}

// What IPython prints before "Traceback (most recent call last)": the exception's type, padded with spaces.
bool isIPythonHeader(QByteArrayView before) {
    const QByteArrayView type = trimmedBlanks(before);
    return before.endsWith(' ') && !type.contains(':') && isExceptionLine(type);
}

// The lines of an IPython traceback's frame at the margin: where it is ("File /x.py:5, in f()", "Cell In[3], line
// 1", older "Input In [3], in <cell line: 1>()", "<ipython-input-3-…> in <module>", "/x.py in f()") and its line
// ("----> 5 …").
bool isIPythonFrame(QByteArrayView text) {
    if (startsWithLiteral(text, "File ") || startsWithLiteral(text, "Cell In") || startsWithLiteral(text, "Input In") ||
        startsWithLiteral(text, "<ipython-input-") || containsBytes(text, QByteArrayView(".py in ")))
        return true;
    qsizetype dashes = 0;
    while (dashes < text.size() && text[dashes] == '-')
        ++dashes;
    return dashes >= 2 && dashes + 1 < text.size() && text[dashes] == '>' && text[dashes + 1] == ' ';
}

// The type of "terminate called after throwing an instance of 'T'" between its quotes (`quoted`), as processes that
// ended at once wrote it into one line: "c10::Errorterminate called after throwing an instance of '" (another's line
// began before this one's quote) is "c10::Error", "c10::Errorc10::Error" (each wrote its type) is "c10::Error", and
// one that is only another's beginning is empty. A qualified name is never its own repetition.
QByteArrayView thrownType(QByteArrayView quoted) {
    if (const qsizetype other = findBytes(quoted, QByteArrayView("terminate called")); other >= 0)
        quoted.truncate(other);
    for (qsizetype period = 1; period <= quoted.size() / 2; ++period) {
        if (quoted.size() % period != 0)
            continue;
        const QByteArrayView first = quoted.first(period);
        bool repeated = true;
        for (qsizetype at = period; repeated && at < quoted.size(); at += period)
            repeated = quoted.sliced(at, period) == first;
        if (repeated && containsBytes(first, QByteArrayView("::")))
            return first;
    }
    return quoted;
}

// A c10d watchdog's timeout, whole: "Watchdog caught collective operation timeout: … before timing out."
bool holdsTimeout(QByteArrayView text) {
    const qsizetype caught = findBytes(text, QByteArrayView("atchdog caught"));
    return caught >= 0 && findBytes(text, QByteArrayView("timing out."), caught) >= 0;
}

// Characters of UTF-8 text (bytes that do not continue one).
qsizetype characters(QByteArrayView text) {
    return std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<quint8>(c) & 0xc0) != 0x80; });
}

} // namespace

TracebackLogParser::TracebackLogParser() : m_scanner({this}) {}

QList<QByteArray> TracebackLogParser::keywords() const {
    using namespace schema::stderr_line;
    return {QByteArrayLiteral("Traceback (most recent call last)"), kTerminate.toByteArray(),
            QByteArrayLiteral("what():"), schemaBytes(kRankClose).toByteArray() + schemaBytes(kError).toByteArray(),
            QByteArrayLiteral("Fatal Python error: ")};
}

void TracebackLogParser::takeLine(const LogLine& line) {
    const QByteArrayView text = line.text;
    if (m_cutWhatLines > 0)
        continueCutWhat(line);
    if (m_openTracebacks > 0 && line.number > m_cutAfter)
        closeCutTracebacks(line.number);
    if (line.holds(kTraceback)) {
        openTraceback(line, line.indexOf(kTraceback));
        return;
    }
    if (line.holds(kTerminateKeyword)) {
        const qsizetype start = line.indexOf(kTerminateKeyword) + kTerminate.size();
        const qsizetype end = text.indexOf('\'', start);
        if (const QByteArrayView type = thrownType(text.sliced(start, std::max<qsizetype>(0, end - start)));
            end > start && !type.isEmpty()) {
            QByteArray& pending = stateOf(line, true)->pendingThrow;
            pending.resize(0); // keeps its room: a job repeats its exceptions
            pending.append(type);
        }
        return;
    }
    if (line.holds(kWhat)) {
        const QByteArrayView stripped = trimmedBlanks(text);
        if (startsWithLiteral(stripped, "what():")) {
            // From its first word to the line's end: blanks there may be where a terminal cut it (continueCutWhat).
            const QByteArrayView afterWhat = text.sliced(stripped.data() - text.data() + 7);
            const QByteArrayView message = afterWhat.sliced(trimmedBlanks(afterWhat).data() - afterWhat.data());
            RankState* state = stateOf(line, false);
            QByteArray& whole = m_cutWhat;
            whole.resize(0);
            if (state && !state->pendingThrow.isEmpty()) {
                whole.append(state->pendingThrow).append(": ");
                state->pendingThrow.resize(0);
            }
            whole.append(message);
            const qsizetype error = addError(line, trimmedBlanks(whole));
            if (message.startsWith('[') && !holdsTimeout(whole)) {
                m_cutWhatError = error >= 0 ? error : kNotKept;
                m_cutWhatLines = kMaxTimeoutWrapLines;
            }
            return;
        }
    }
    // The interpreter's own crash report (faulthandler: a segfault or abort in native code, such as a CUDA or NCCL
    // library): no traceback follows, only each thread's stack.
    if (line.holds(kFatalPython)) {
        addError(line, trimmedBlanks(text.sliced(line.indexOf(kFatalPython))));
        return;
    }
    if (line.holds(kTrainerError)) {
        const qsizetype at = line.indexOf(kTrainerError);
        if (const int rank = trainerErrorRank(text, at); rank >= 0) {
            const size_t keyword = schema::stderr_line::kRankClose.size() + schema::stderr_line::kError.size();
            const QByteArrayView message = text.sliced(at + static_cast<qsizetype>(keyword));
            m_errors->append({m_source, line.number, rank, errorText(trimmedBlanks(message), m_texts)});
            return;
        }
    }
    if (m_openTracebacks == 0)
        return;
    QByteArrayView body = text;
    RankState* state = m_prefixed.empty() ? nullptr : prefixedStateOf(text, &body);
    if (!state)
        state = stateOf(line, false);
    if (!state || state->tracebackLines < 0)
        return;
    state->lastLine = line.number;
    takeTracebackLine(*state, line, body);
}

// A traceback's first line ("Traceback (most recent call last):" at `at`).
void TracebackLogParser::openTraceback(const LogLine& line, qsizetype at) {
    const QByteArrayView text = line.text;
    RankState* prefixed = nullptr;
    if (at > 0 && isHostPrefix(text.first(at))) {
        prefixed = prefixedStateOf(text, nullptr);
        if (!prefixed) {
            auto free = std::find_if(m_prefixed.begin(), m_prefixed.end(),
                                     [](const PrefixedTraceback& p) { return p.state.tracebackLines < 0; });
            if (free == m_prefixed.end())
                free = m_prefixed.insert(m_prefixed.end(), PrefixedTraceback{});
            free->prefix = text.first(at).toByteArray();
            prefixed = &free->state;
        }
    }
    RankState& state = prefixed ? *prefixed : *stateOf(line, true);
    if (state.wrappedError != -1)
        closeTraceback(state); // its exception's message ended
    if (state.group) {
        // A member's traceback inside an exception group is one of the group's lines; one at the margin is a
        // traceback of its own after the group.
        if (text.startsWith(' ')) {
            state.lastLine = line.number;
            return;
        }
        closeTraceback(state);
    }
    if (state.tracebackLines < 0) {
        if (m_openTracebacks++ == 0)
            m_cutAfter = line.number + kMaxTracebackGap;
        state.group = text.first(at).endsWith("Exception Group ");
        // IPython's and Jupyter's "ZeroDivisionError      Traceback (most recent call last)": its frames
        // ("File /x.py:5, in f()", "----> 5 …") are at the margin, so only an exception's line ends it.
        state.ipython = isIPythonHeader(text.first(at));
    } else {
        ++state.interleaved;
        state.tangled = true;
    }
    state.tracebackLines = 0;
    state.strayLines = 0;
    state.lastLine = line.number;
    state.boxed = containsBytes(text.first(at), kBoxLine);
    state.boxWidth = state.boxed ? characters(text) : 0;
}

// A line of `state`'s open traceback (`body`: without its pdsh host prefix).
void TracebackLogParser::takeTracebackLine(RankState& state, const LogLine& line, QByteArrayView body) {
    if (state.wrappedError != -1) {
        continueMessage(state, body);
        return;
    }
    if (state.boxed) {
        // rich's frames, each line in the box's sides; its exception follows the box's bottom edge.
        if (body.startsWith(kBoxSide)) {
            if (++state.tracebackLines > kMaxTracebackLines)
                closeTraceback(state);
            return;
        }
        state.boxed = false;
        if (body.startsWith(kBoxBottomRounded) || body.startsWith(kBoxBottom))
            return;
    }
    // loguru marks the frame that caught the exception with "> " at the margin.
    const bool indented =
        body.isEmpty() || body.startsWith(' ') || body.startsWith('\t') || startsWithLiteral(body, "> File \"");
    if (indented && ++state.tracebackLines > kMaxTracebackLines) {
        closeTraceback(state);
        return;
    }
    if (!indented && isNativeStackLine(body))
        return; // another process's, not this traceback's exception
    if (state.group) {
        takeGroupLine(state, line, body, indented);
        return;
    }
    if (!state.tangled && !state.ipython) {
        if (indented)
            return;
        // The first line that is not indented ends the traceback: it names the exception.
        const qsizetype error = addError(line, trimmedBlanks(body));
        if (state.boxWidth > 0) {
            state.wrappedError = error >= 0 ? error : kNotKept;
            state.pieceCharacters = characters(trimmedBlanks(body));
            return;
        }
        closeTraceback(state);
        return;
    }
    // Tangled tracebacks go on while frames and exceptions come; any other line may be anyone's.
    if (!indented && isExceptionLine(body)) {
        if (const qsizetype error = addError(line, trimmedBlanks(body)); error >= 0)
            m_errors->list[error].interleaved = state.tangled && line.rank < 0 && line.pid < 0;
        state.strayLines = 0;
        if (state.interleaved-- == 0)
            closeTraceback(state);
        return;
    }
    if (indented ? startsWithLiteral(trimmedBlanks(body), "File \"") || body.startsWith('>') : isIPythonFrame(body)) {
        state.strayLines = 0;
        return;
    }
    if (++state.strayLines > kMaxStrayLines)
        closeTraceback(state);
}

// rich wraps a long message at the box's width: a line is its next piece when its first word would not have fitted
// after the last one; else the message ended, and the line is the log's own.
void TracebackLogParser::continueMessage(RankState& state, QByteArrayView body) {
    const QByteArrayView piece = trimmedBlanks(body);
    qsizetype word = piece.indexOf(' ');
    if (word < 0)
        word = piece.size();
    if (piece.isEmpty() || body.startsWith(' ') ||
        state.pieceCharacters + 1 + characters(piece.first(word)) <= state.boxWidth) {
        closeTraceback(state);
        return;
    }
    if (state.wrappedError != kNotKept) {
        QByteArray& text = m_errors->list[state.wrappedError].text;
        m_joined.clear();
        m_joined.append(text).append(' ').append(piece);
        text = errorText(m_joined, m_texts);
    }
    state.pieceCharacters = characters(piece);
}

// A line after a "what():" of c10d's form ("[PG ID 0 … Rank 3] Process group watchdog thread terminated with
// exception: [Rank 3] Watchdog caught colle") that did not hold a whole timeout: where a terminal hard-wrapped the
// message, the next lines hold its rest, unprefixed (the launcher prefixed the line, the terminal cut it), not
// empty, and with no c10 header ("[E … ProcessGroupNCCL.cpp:…]"), PyTorch's "Exception raised from" or a line this
// parser looks for (another process's "what():") of their own.
// Once the pieces, joined as the terminal cut them, hold the whole timeout, they are the error's text; anything else
// ends the wait and keeps the first line's.
void TracebackLogParser::continueCutWhat(const LogLine& line) {
    const QByteArrayView text = line.text;
    if (line.rank >= 0 || line.pid >= 0 || line.keywords != 0 || text.isEmpty() ||
        startsWithLiteral(text, "Exception raised from") || containsBytes(text, QByteArrayView("ProcessGroupNCCL"))) {
        m_cutWhatLines = 0;
        return;
    }
    m_cutWhat.append(text);
    if (holdsTimeout(m_cutWhat)) {
        if (m_cutWhatError != kNotKept)
            m_errors->list[m_cutWhatError].text = errorText(trimmedBlanks(m_cutWhat), m_texts);
        m_cutWhatLines = 0;
        return;
    }
    --m_cutWhatLines;
}

// "  | ValueError: a" is the group's exception or a member's, "  |   File …" a frame, "  +-+--- 1 ---" a member's
// start; the first line at the margin is the log's own again.
void TracebackLogParser::takeGroupLine(RankState& state, const LogLine& line, QByteArrayView body, bool indented) {
    if (!indented) {
        closeTraceback(state);
        return;
    }
    qsizetype at = 0;
    while (at < body.size() && body[at] == ' ')
        ++at;
    const QByteArrayView inner = body.sliced(at);
    if (inner.startsWith("| ") && isExceptionLine(inner.sliced(2)))
        addError(line, trimmedBlanks(inner.sliced(2)));
}

TracebackLogParser::RankState* TracebackLogParser::prefixedStateOf(QByteArrayView text, QByteArrayView* body) {
    for (PrefixedTraceback& open : m_prefixed) {
        if (open.state.tracebackLines >= 0 && text.startsWith(open.prefix)) {
            if (body)
                *body = text.sliced(open.prefix.size());
            return &open.state;
        }
    }
    return nullptr;
}

TracebackLogParser::RankState* TracebackLogParser::stateOf(const LogLine& line, bool create) {
    if (line.rank >= 0 || line.pid < 0)
        return stateOf(line.rank, create);
    if (create)
        return &m_byPid[line.pid];
    const auto found = m_byPid.find(line.pid);
    return found == m_byPid.end() ? nullptr : &*found;
}

TracebackLogParser::RankState* TracebackLogParser::stateOf(int rank, bool create) {
    if (rank >= -1 && rank < kFlatRanks - 1) {
        const size_t at = static_cast<size_t>(rank + 1);
        if (at >= m_flatRanks.size()) {
            if (!create)
                return nullptr;
            m_flatRanks.resize(at + 1);
        }
        return &m_flatRanks[at];
    }
    if (create)
        return &m_otherRanks[rank];
    const auto found = m_otherRanks.find(rank);
    return found == m_otherRanks.end() ? nullptr : &*found;
}

void TracebackLogParser::closeTraceback(RankState& state) {
    state.tracebackLines = -1;
    state.interleaved = 0;
    state.tangled = false;
    state.ipython = false;
    state.group = false;
    state.boxed = false;
    state.boxWidth = 0;
    state.wrappedError = -1;
    --m_openTracebacks;
}

// Runs when the earliest an open traceback could be cut off has passed: one look at every rank's state, then
// none until the next such line.
void TracebackLogParser::closeCutTracebacks(qint64 lineNumber) {
    qint64 next = std::numeric_limits<qint64>::max();
    const auto look = [&](RankState& state) {
        if (state.tracebackLines < 0)
            return;
        if (lineNumber - state.lastLine > kMaxTracebackGap)
            closeTraceback(state);
        else
            next = std::min(next, state.lastLine + kMaxTracebackGap);
    };
    for (RankState& state : m_flatRanks)
        look(state);
    for (RankState& state : m_otherRanks)
        look(state);
    for (RankState& state : m_byPid)
        look(state);
    for (PrefixedTraceback& open : m_prefixed)
        look(open.state);
    m_cutAfter = next;
}

qsizetype TracebackLogParser::addError(const LogLine& line, QByteArrayView text) {
    return m_errors->append(LogError::at(m_source, line, errorText(text, m_texts)));
}

void TracebackLogParser::endOfStream() {
    m_flatRanks.clear();
    m_otherRanks.clear();
    m_byPid.clear();
    m_prefixed.clear();
    m_openTracebacks = 0;
    m_cutWhatLines = 0;
}

} // namespace rankscope
