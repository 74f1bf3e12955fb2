// SPDX-License-Identifier: MIT
#pragma once

#include "core/loglines.h"
#include "core/textstore.h"

#include <QList>
#include <QString>
#include <QVector>

namespace rankscope {

// "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=…, OpType=…, NumelIn=…, NumelOut=…,
// Timeout(ms)=…) ran for … milliseconds", with the "last enqueued/completed work" PyTorch prints after it.
// A field that was not printed is -1 (numbers) or empty (op).
struct CollectiveTimeout {
    int rank = -1;
    qint64 seq = -1;
    QString op;
    qint64 numelIn = -1;
    qint64 numelOut = -1;
    qint64 timeoutMs = -1;
    qint64 ranMs = -1;
    qint64 lastEnqueued = -1;
    qint64 lastCompleted = -1;
    // The process group other than the default one that PyTorch's lines name for this work ("[PG ID 2 PG GUID 9
    // Rank 0] Exception … detected by watchdog at work: 610"), and the rank within it; -1 when none is named.
    qint64 group = -1;
    int groupRank = -1;
    // torchrun's "[default3]:" before the line, where the rank is that prefix's (rank -1): no rank of the run.
    int localRank = -1;
};

// "ALLREDUCE (SeqNum 808) after 600086 ms (timeout 600000 ms)", each part only when the line gave it.
[[nodiscard]] QString describeTimeout(const CollectiveTimeout& timeout);

// What PyTorch's desync report (TORCH_NCCL_DESYNC_DEBUG) blames: "the lagging/dead/mismatched ranks that caused the
// desync are:" and then "[7] finished collective #182, but didn't join collective #183 (count from 1)".
struct DesyncBlame {
    QVector<int> ranks; // [7], in the report's process group
    QString text;       // the item as printed, without its indentation
};

// An error line found in a log: where it is and what it says.
struct LogError {
    QString file;
    qint64 line = 0;
    int rank = -1;
    QByteArray text; // the log's bytes (UTF-8, or whatever the program wrote): made a string where it is shown
    // From tracebacks printed at the same time with nothing to tell their lines apart (torchrun without --tee):
    // whose it is, the log does not say.
    bool interleaved = false;
    int localRank = -1; // torchrun's "[default3]:" before the line, where no rank of the run is known (rank -1)

    // An error read from `line`, its rank what the line's prefix says.
    [[nodiscard]] static LogError at(const QString& file, const LogLine& line, QByteArray text) {
        return {file, line.number, line.reportedRank(), std::move(text), false, line.localRank()};
    }
};

} // namespace rankscope

// Lists of errors grow by moving their bytes (a parser can keep tens of thousands): no copy of each string's
// reference and no fresh pages where a block can grow in place.
Q_DECLARE_TYPEINFO(rankscope::LogError, Q_RELOCATABLE_TYPE);

namespace rankscope {

// Where a parser's errors go, in the order it reads them: a list of its own, or one that several parsers of one log
// append to (LogInspector's, oneALine), which keeps one error a line, the first parser's to read it. A traceback's
// last line can also be an "NCCL error in:" line, which the watchdog, called before the traceback parser, has taken
// (with NCCL's "Last error:" detail to come). A second error of a line is not appended at all, rather than found and
// removed when the stream ends: that pass read every error of the log again, cold (4 % of an inspection).
struct ErrorList {
    QList<LogError> list;
    bool oneALine = false;
    qsizetype streamFrom = 0; // where the errors of the stream being read start: another stream's lines are others'
    // False once an error was appended after one of a later line in its stream (a parser that names an error's first
    // line when it has read on). Then the list is not in line order by itself; LogInspector sorts it. Knowing it here
    // spares a pass over every error of the log, read again cold, to find out (3 % of an inspection).
    bool inOrder = true;
    // Appends `error`, unless one a line is kept and the stream's last error is of its line; returns its index, or -1
    // where it was not appended.
    qsizetype append(LogError&& error) {
        if (list.size() > streamFrom) {
            const qint64 last = list.constLast().line;
            if (oneALine && last == error.line)
                return -1;
            inOrder = inOrder && last <= error.line;
        }
        list.append(std::move(error));
        return list.size() - 1;
    }
    void clear() {
        list.clear();
        streamFrom = 0;
        inOrder = true;
    }
};

// Lines after a timeout's first that a terminal's hard wrap may have put the rest of its message on: the ~200 bytes
// from "Watchdog caught" to "timing out." at 40 columns and more.
inline constexpr int kMaxTimeoutWrapLines = 6;

// The text an error keeps of `text`: at most kMaxErrorText characters as it is shown, whichever parser found it.
inline constexpr qsizetype kMaxErrorText = 1000;
[[nodiscard]] QByteArray errorText(QByteArrayView text);
// The same, kept in `store` (a parser's, for the errors of a whole log).
[[nodiscard]] QByteArray errorText(QByteArrayView text, TextStore& store);

// PyTorch's ProcessGroupNCCL watchdog and its errors: timeouts (also when a terminal wrapped the line, or
// when it is repeated inside a "what():" of c10::DistBackendError: one timeout per rank and sequence number),
// "last enqueued/completed work", "NCCL error in: …", DistBackendError lines (with NCCL's "Last error:" detail
// that follows them), the ranks a desync report blames, and the end of a process whose watchdog got stuck or that
// the watchdog terminated.
class WatchdogLogParser final : public LogLineSink {
public:
    WatchdogLogParser();

    void setSource(const QString& file) { m_source = file; }
    void feed(QByteArrayView chunk) { m_scanner.feed(chunk); }
    void finish() { m_scanner.finish(); }

    [[nodiscard]] QList<CollectiveTimeout> timeouts() const; // sorted by rank, then sequence number
    // The timeouts in the order they were read, as their own lines said them (timeouts() adds what later lines
    // say of their ranks and progress): a live reader's way to tell the new ones.
    [[nodiscard]] const QList<CollectiveTimeout>& timeoutsRead() const { return m_timeouts; }
    // Each item of the desync reports read, in order (also an error each, "desync: …").
    [[nodiscard]] const QList<DesyncBlame>& desyncBlamesRead() const { return m_desyncBlames; }
    [[nodiscard]] QList<LogError> errors() const { return m_errors->list; }
    // Appends the errors it reads to `errors` from now on, which other parsers may append to as well (LogInspector's
    // one list of every parser's errors), instead of to a list of its own; errors() is then that list. `errors`
    // outlives the parser.
    void appendErrorsTo(ErrorList* errors) { m_errors = errors; }
    // Drops the errors read so far, and the wait for the last one's detail: a reader that wants only the timeouts
    // (a run's live diagnosis, for as long as the run lasts) keeps no more than them.
    void forgetErrors() {
        m_errors->clear();
        m_details.clear();
        m_texts.clear();
    }

    [[nodiscard]] QList<QByteArray> keywords() const override;
    [[nodiscard]] bool wantsEveryLine() const override {
        return m_joinLines > 0 || m_headLine >= 0 || m_inDesyncReport || !m_details.isEmpty();
    }
    void takeLine(const LogLine& line) override;
    void endOfStream() override;

private:
    struct LinePrefix { // what a line's launcher prefix says of its rank (LogLine::rank, LogLine::rankKind)
        int rank = -1;
        PrefixRank kind = PrefixRank::Launcher;
    };
    // What a watchdog's line says of its rank: its prefix, and the "Rank 3" of PyTorch's text with the process group
    // the text names it in (-1: none named, "[Rank 3]").
    struct RankSaid {
        LinePrefix prefix;
        int text = -1;
        qint64 group = -1;
        // The rank that tells this rank's lines apart from the others' (the prefix's where the text's is not the
        // run's); a report gives it as a local rank when it is torchrun's (localPrefixRank()).
        [[nodiscard]] int runRank() const;
        [[nodiscard]] bool localPrefixRank() const;
    };
    static RankSaid rankBefore(QByteArrayView text, qsizetype before, LinePrefix prefix);
    // watchdog: where "atchdog caught" starts in text; -1: search for it.
    void takeTimeout(QByteArrayView text, LinePrefix prefix, qsizetype watchdog = -1);
    void takeWatchdogLine(QByteArrayView text, LinePrefix prefix, qsizetype watchdog);
    void takeProgress(QByteArrayView text, LinePrefix prefix);
    void takeDesyncLine(const LogLine& line);
    // The error of a watchdog's end in `text` (a line's, or two lines' that a terminal cut it into), read at
    // `lineNumber`; false where `text` holds none.
    bool takeWatchdogEnd(QByteArrayView text, qint64 lineNumber, LinePrefix prefix, bool stuck);
    bool takeCutWatchdogEnd(const LogLine& line, qsizetype seam);
    qsizetype addError(const LogLine& line, QByteArrayView text); // ErrorList::append()'s index
    bool takeErrorDetail(const LogLine& line); // true: the line was the last NCCL error's

    LogLineScanner m_scanner;
    QString m_source;
    QList<CollectiveTimeout> m_timeouts;
    QList<RankSaid> m_timeoutRanks; // of each of m_timeouts
    struct Progress {
        RankSaid rank;
        qint64 seq;
        qint64 lastEnqueued;
        qint64 lastCompleted;
    };
    QList<Progress> m_progress;
    QList<DesyncBlame> m_desyncBlames;
    ErrorList m_ownErrors;
    ErrorList* m_errors = &m_ownErrors; // where its errors go (appendErrorsTo)
    TextStore m_texts;                        // of its errors
    QByteArray m_withDetail;                  // an error's text and the detail added to it
    QByteArray m_joined; // a timeout message that a terminal wrapped over several lines
    int m_joinLines = 0; // continuation lines still allowed
    LinePrefix m_joinPrefix;
    // A line that may end inside "Watchdog caught", a terminal having cut the words in two: its text, number and
    // prefix, kept for the next line (m_headLine -1: none).
    QByteArray m_head;
    qint64 m_headLine = -1;
    LinePrefix m_headPrefix;
    bool m_inDesyncReport = false;
    // NCCL errors whose "Last error:" detail may still come: each error's index in *m_errors, its rank, how many more
    // lines (of any rank) may hold it, and whether the next line of its rank is the detail itself.
    struct PendingDetail {
        qsizetype error; // -1: an error a shared list did not take, whose detail lines are still taken
        int rank;
        int linesLeft;
        bool next;
    };
    QList<PendingDetail> m_details;
};

} // namespace rankscope
