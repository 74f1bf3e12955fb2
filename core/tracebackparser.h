// SPDX-License-Identifier: MIT
#pragma once

#include "core/loglines.h"
#include "core/watchdogparser.h"

#include <QHash>
#include <QList>
#include <QString>

#include <vector>

namespace rankscope {

// Python tracebacks (their final exception line), the interpreter's crash reports ("Fatal Python error: Segmentation
// fault") and C++ exceptions that ended a process
// ("terminate called after throwing an instance of 'T'" and its "what():" line), and the errors the bundled trainer
// reports on stderr ("[rank R] error: MESSAGE", <rankscope/event_schema.h>), with that R. Lines of different ranks
// may interleave: a traceback is followed per rank named by the launcher prefix (per process where the prefix names
// one instead, as Ray's "(RayTrainWorker pid=1234, ip=…)" does). A traceback whose rank prints no
// line for kMaxTracebackGap lines of the stream was cut off (the process died, or the log was cut): it ends
// without an error, and a line of its rank much later is not taken for its exception. A traceback whose first line
// starts with a host name and ": " (pdsh, as DeepSpeed's multi-node launcher runs it: "worker-1: Traceback …") is
// followed through the lines that start with that same prefix, apart from other hosts' lines. Tracebacks that
// nothing tells apart (all ranks of `torchrun` without `--tee` failing at once, threads) interleave line by line:
// each header while one is open awaits one more exception, and then only a line of an exception's form ("Type" or
// "module.Type: message", a type named as Python's are) is taken for one; the others are the other tracebacks' or
// other processes' lines. kMaxStrayLines lines in a row without a frame ("  File …"), a traceback's first line or
// an exception end them all: the rest were cut off. An exception group's traceback (Python 3.11+, asyncio's
// TaskGroup) is inset: its exception and each member's ("  | ValueError: a") are errors, and it ends at the first
// line at the margin, which is not taken for its exception. A traceback the `rich` library draws in a box has its
// frames in the box and its exception on the first line after it, with the lines rich wrapped it into at the box's
// width. loguru's "> File …" at the margin is a frame. IPython's tracebacks ("ValueError    Traceback (most recent
// call last)", frames at the margin) end at the first line of an exception's form. Another process's C++ stack at the
// margin among a traceback's lines (PyTorch's "Exception raised from …", "frame #0: …") is not its exception.
class TracebackLogParser final : public LogLineSink {
public:
    TracebackLogParser();

    static constexpr qint64 kMaxTracebackGap = 2000;
    static constexpr int kMaxStrayLines = 20;
    // A traceback longer than this (frames and the lines between them) is no traceback but a runaway: it ends there,
    // and the line after it is not taken for its exception.
    static constexpr int kMaxTracebackLines = 5000;

    void setSource(const QString& file) { m_source = file; }
    void feed(QByteArrayView chunk) { m_scanner.feed(chunk); }
    void finish() { m_scanner.finish(); }

    [[nodiscard]] QList<LogError> errors() const { return m_errors->list; }
    // Appends the errors it reads to `errors` from now on, which other parsers may append to as well (LogInspector's
    // one list of every parser's errors, in the order of the lines they were read from), instead of to a list of its
    // own; errors() is then that list. `errors` outlives the parser.
    void appendErrorsTo(ErrorList* errors) { m_errors = errors; }

    [[nodiscard]] QList<QByteArray> keywords() const override;
    [[nodiscard]] bool wantsEveryLine() const override { return m_openTracebacks > 0 || m_cutWhatLines > 0; }
    void takeLine(const LogLine& line) override;
    void endOfStream() override;

private:
    static constexpr qsizetype kNotKept = -2; // RankState::wrappedError's and m_cutWhatError's

    // What is being read of one rank's output.
    struct RankState {
        int tracebackLines = -1; // lines of its open traceback so far; -1: none is open
        qint64 lastLine = 0;     // the stream's line number of its open traceback's last line
        // Tracebacks begun while one was open (processes or threads printing at once with nothing to tell their
        // lines apart): one exception line each is still to come after the open one's. Once tangled (and in IPython's
        // tracebacks, whose frames are at the margin), only a line of an exception's form is one.
        int interleaved = 0;
        bool tangled = false;
        bool ipython = false; // "ValueError    Traceback (most recent call last)"
        bool group = false;   // an exception group's ("  + Exception Group Traceback …"): its lines are inset by "| "
        bool boxed = false; // in the box `rich` draws a traceback in ("╭── Traceback … ──╮", "│ … │", "╰──╯")
        qsizetype boxWidth = 0; // in characters, of a traceback drawn in a box
        // *m_errors' index of a boxed traceback's exception whose next line may go on (kNotKept: an exception a shared
        // list did not take, whose wrapped lines are still its); -1: none
        qsizetype wrappedError = -1;
        qsizetype pieceCharacters = 0; // of the exception's last line
        int strayLines = 0;      // lines since the tangled tracebacks' last frame ("  File …"), header or exception
        QByteArray pendingThrow; // exception type of "terminate called after throwing"
    };
    // An open traceback of lines that start with `prefix` ("worker-1: ").
    struct PrefixedTraceback {
        QByteArray prefix;
        RankState state;
    };
    // The state of `rank` (-1: none named); nullptr where it has none yet and create is false.
    RankState* stateOf(int rank, bool create);
    // The state of the line's rank, or of the process its prefix names when it names no rank (Ray's pid=).
    RankState* stateOf(const LogLine& line, bool create);
    // The state of the open traceback whose prefix starts `text`, and in `body` (when given) `text` without it;
    // nullptr if none.
    RankState* prefixedStateOf(QByteArrayView text, QByteArrayView* body);
    void openTraceback(const LogLine& line,
                       qsizetype at); // its first line, "Traceback (most recent call last)" at `at`
    void takeTracebackLine(RankState& state, const LogLine& line, QByteArrayView body);
    void continueMessage(RankState& state, QByteArrayView body); // a boxed traceback's exception, wrapped
    void takeGroupLine(RankState& state, const LogLine& line, QByteArrayView body, bool indented);
    void continueCutWhat(const LogLine& line); // a line while m_cutWhatLines > 0
    void closeTraceback(RankState& state);
    void closeCutTracebacks(qint64 lineNumber); // those whose rank printed nothing since before the gap
    qsizetype addError(const LogLine& line, QByteArrayView text); // ErrorList::append()'s index

    LogLineScanner m_scanner;
    QString m_source;
    // Rank + 1 -> its state, for the ranks of most jobs: every line of an open traceback looks its rank up, and an
    // index costs less than a hash.
    std::vector<RankState> m_flatRanks;
    QHash<int, RankState> m_otherRanks;        // any other rank a launcher prefix names
    QHash<int, RankState> m_byPid;             // lines whose prefix names a process and no rank (Ray's workers)
    std::vector<PrefixedTraceback> m_prefixed; // a few hosts' at a time; an entry whose traceback ended is reused
    int m_openTracebacks = 0;
    qint64 m_cutAfter = 0; // no open traceback is cut off up to this line number
    ErrorList m_ownErrors;
    ErrorList* m_errors = &m_ownErrors; // where its errors go (appendErrorsTo)
    TextStore m_texts;                  // of its errors
    QByteArray m_joined;                // a boxed traceback's exception and its next piece
    // The last "what():" error's text (with its type) and the pieces joined to it, its index in *m_errors (kNotKept:
    // one the list did not take), and how many next lines may still go on with it (continueCutWhat; at most
    // kMaxTimeoutWrapLines, as WatchdogLogParser reads a wrapped timeout).
    QByteArray m_cutWhat;
    qsizetype m_cutWhatError = -1;
    int m_cutWhatLines = 0;
};

} // namespace rankscope
