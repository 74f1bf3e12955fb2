// SPDX-License-Identifier: MIT
#include "core/watchdogparser.h"

#include "core/ranklist.h"

#include <algorithm>
#include <limits>

namespace rankscope {

namespace {

constexpr int kMaxErrorDetailLines = 8; // lines of any rank after an NCCL error that may hold its detail

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// The number at `at` (after optional spaces); -1 when there is none or it does not fit in 18 digits.
qint64 numberAt(QByteArrayView text, qsizetype at) {
    while (at < text.size() && text[at] == ' ')
        ++at;
    qint64 value = -1;
    for (int digits = 0; at < text.size() && isDigit(text[at]); ++at) {
        if (++digits > 18)
            return -1;
        value = (value < 0 ? 0 : value * 10) + (text[at] - '0');
    }
    return value;
}

// What is searched for in the watchdog's lines, each with its rarest byte found when compiling: a search led by
// the first byte of "ran for " or "timing out" stops at every 'r' or 't' of a long line.
constexpr Needle kWatchdogCaught{"atchdog caught"};
constexpr Needle kTimingOut{"timing out"};
constexpr Needle kMilliseconds{"milliseconds"};
constexpr Needle kWorkNccl{"WorkNCCL("};
constexpr Needle kSeqNum{"SeqNum="};
constexpr Needle kOpType{"OpType="};
constexpr Needle kNumelIn{"NumelIn="};
constexpr Needle kNumelOut{"NumelOut="};
constexpr Needle kTimeoutMs{"Timeout(ms)="};
constexpr Needle kRanFor{"ran for "};
// "ast": PyTorch writes "last enqueued" in its timeout and progress lines, "Last enqueued" in its dump lines.
constexpr Needle kLastEnqueuedText{"ast enqueued"};
constexpr Needle kLastCompleted{"last completed"};
constexpr Needle kAtWorkSequenceId{"at work sequence id:"};
constexpr Needle kAtWork{"at work:"};
constexpr Needle kWatchdogStuckText{"atchdog got stuck"};
constexpr Needle kAfterAttempting{"after attempting to dump debug info"};
constexpr Needle kSentenceEnd{". "};
// What PyTorch prints from "atchdog caught" to the fields: where it does, "WorkNCCL(" need not be searched for.
constexpr char kCaughtTimeout[] = "atchdog caught collective operation timeout: WorkNCCL(";

qint64 numberAfter(QByteArrayView text, const Needle& key, qsizetype from = 0) {
    const qsizetype at = findBytes(text, key, from);
    return at < 0 ? -1 : numberAt(text, at + key.size());
}

// The process group that a "Rank N" at `at` is in, where the text names it: "[PG ID 12 PG GUID
// 99(EXPERT_MODEL_PARALLEL_GROUP) Rank 4]" (PyTorch 2.4 and later), "[PG 3 Rank 5]" (2.3); -1 for a bare "[Rank 4]".
qint64 groupOf(QByteArrayView text, qsizetype at) {
    const qsizetype open = text.first(at).lastIndexOf('[');
    if (open < 0 || !startsWithLiteral(text.sliced(open), "[PG "))
        return -1;
    return numberAt(text, startsWithLiteral(text.sliced(open), "[PG ID ") ? open + 7 : open + 4);
}

} // namespace

// The "Rank 3" nearest before `before` (PyTorch writes "[Rank 3]" and "[PG ID 0 PG GUID 0(default_pg) Rank 3]"), and
// the group it is in. A loop back from `before` to each 'R': the rank is a few bytes before the watchdog's words,
// where QByteArrayView's lastIndexOf costs a call and a rolling hash.
WatchdogLogParser::RankSaid WatchdogLogParser::rankBefore(QByteArrayView text, qsizetype before, LinePrefix prefix) {
    for (qsizetype at = before - 5; at >= 0; --at) {
        if (text[at] == 'R' && startsWithLiteral(text.sliced(at + 1), "ank ")) {
            const qint64 rank = numberAt(text, at + 5);
            if (rank < 0 || rank > std::numeric_limits<int>::max())
                return {prefix};
            return {prefix, static_cast<int>(rank), groupOf(text, at)};
        }
    }
    return {prefix};
}

// The run's rank. PyTorch's own "[rank3]:" before the line says it. Otherwise the rank in PyTorch's text, unless
// that is the rank within another process group than the default one (the first made, "PG ID 0"): then the
// launcher's prefix, which may name none. A bare "[Rank 3]" names no group, and is most often the default group's.
int WatchdogLogParser::RankSaid::runRank() const {
    if (prefix.kind == PrefixRank::Run || text < 0 || group > 0)
        return prefix.rank;
    return text;
}

bool WatchdogLogParser::RankSaid::localPrefixRank() const {
    return prefix.kind == PrefixRank::Local && (text < 0 || group > 0);
}

namespace {

// "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=2, NumelOut=2, Timeout(ms)=600000) ran for 600035" as PyTorch
// prints it (older versions leave out the Numel fields), read in one pass from "WorkNCCL(" at `work`. False when the
// text differs in any way: the caller then searches for each field. A field read here is the one that search finds
// first, since no other field's name fits before it: the op is the only free text and a '=' ends the pass.
bool readWorkFields(QByteArrayView text, qsizetype work, CollectiveTimeout& timeout, QByteArrayView& op) {
    // Its numbers are read as numberAt() reads them where no space comes first.
    TextCursor in{text, work + kWorkNccl.size()};
    if (!in.skip("SeqNum=") || !in.number(timeout.seq) || !in.skip(", OpType="))
        return false;
    const qsizetype opStart = in.at;
    for (; in.at < text.size() && text[in.at] != ',' && text[in.at] != ')' && text[in.at] != ' '; ++in.at) {
        if (text[in.at] == '=')
            return false;
    }
    const QByteArrayView opText = text.sliced(opStart, in.at - opStart);
    const bool numels = in.skip(", NumelIn=");
    if (numels && (!in.number(timeout.numelIn) || !in.skip(", NumelOut=") || !in.number(timeout.numelOut)))
        return false;
    if (!in.skip(", Timeout(ms)=") || !in.number(timeout.timeoutMs) || !in.skip(") ran for ") ||
        !in.number(timeout.ranMs))
        return false;
    if (!numels) {
        // Not before here: the first after "WorkNCCL(" is the first after here.
        timeout.numelIn = numberAfter(text, kNumelIn, in.at);
        timeout.numelOut = numberAfter(text, kNumelOut, in.at);
    }
    op = opText;
    return true;
}

// The fields of a WorkNCCL printed any other way: each the first of its name after "WorkNCCL(" at `work`.
void searchWorkFields(QByteArrayView text, qsizetype work, CollectiveTimeout& timeout, QByteArrayView& op) {
    timeout.seq = numberAfter(text, kSeqNum, work);
    if (const qsizetype at = findBytes(text, kOpType, work); at >= 0) {
        qsizetype end = at + kOpType.size();
        while (end < text.size() && text[end] != ',' && text[end] != ')' && text[end] != ' ')
            ++end;
        op = text.sliced(at + kOpType.size(), end - at - kOpType.size());
    }
    timeout.numelIn = numberAfter(text, kNumelIn, work);
    timeout.numelOut = numberAfter(text, kNumelOut, work);
    timeout.timeoutMs = numberAfter(text, kTimeoutMs, work);
    timeout.ranMs = numberAfter(text, kRanFor, work);
}

// op == QString::fromUtf8(bytes) (empty where bytes is null), without building a string that the repeat of a
// timeout would drop: ops are ASCII, where UTF-8 and Latin-1 read the same.
bool isOp(const QString& op, QByteArrayView bytes) {
    for (const char c : bytes) {
        if (static_cast<uchar>(c) >= 0x80)
            return op == QString::fromUtf8(bytes);
    }
    return op == QLatin1String(bytes);
}

// "… ran for 600035 milliseconds before timing out." holds "timing out" after "atchdog caught" wherever the line
// ends so: most timeouts need no search to tell that a terminal did not wrap them.
bool endsTimingOut(QByteArrayView text) {
    return text.size() >= 11 && startsWithLiteral(text.last(11), "timing out.");
}

// keywords()
enum Keyword {
    kWatchdog,
    kLastEnqueued,
    kDesyncReport,
    kNcclErrorIn,
    kAsyncNcclError,
    kDistBackendError,
    kWatchdogStuck,
    kTerminating,
    kProcessGroupSource,
    kWithException
};

// How far into the next line "Watchdog caught" may start for that line to go on with a cut timeout's message: past
// the rest of a cut "[PG 0 Rank 3] ", not past a header of its own.
constexpr qsizetype kMaxLeadAfterCut = 40;
// The same for the end of a watchdog: "Terminating the process" can follow two "[PG ID … Rank N]" (after a cut in the
// first, about 100 bytes, more with a group's name).
constexpr qsizetype kMaxLeadAfterEndCut = 200;
constexpr Needle kC10Source{"ProcessGroupNCCL.cpp:"};
constexpr Needle kStuckKeyword{"got stuck for"}; // keywords()'s, that make a line a watchdog's end
constexpr Needle kTerminatingKeyword{"after attempting"};

bool isErrorLine(const LogLine& line) {
    return line.holds(kNcclErrorIn) || line.holds(kAsyncNcclError) ||
           (line.holds(kDistBackendError) &&
            (line.text.startsWith("torch.distributed.DistBackendError:") || line.text.startsWith("DistBackendError:")));
}

} // namespace

WatchdogLogParser::WatchdogLogParser() : m_scanner({this}) {}

QList<QByteArray> WatchdogLogParser::keywords() const {
    return {QByteArrayLiteral("atchdog caught"), QByteArrayLiteral("ast enqueued"),
            QByteArrayLiteral("caused the desync are:"), QByteArrayLiteral("NCCL error in:"),
            QByteArrayLiteral("async exception: NCCL error"), QByteArrayLiteral("DistBackendError:"),
            // Not "atchdog got stuck": its fingerprint let the search stop at 12 % more places of the bench's log.
            // The line is checked for the rest (takeWatchdogEnd).
            QByteArrayLiteral("got stuck for"), QByteArrayLiteral("after attempting"),
            // Where a timeout's line starts when a terminal cut "Watchdog caught" in two (see takeLine).
            QByteArrayLiteral("ProcessGroupNCCL.cpp:"), QByteArrayLiteral("with exception:")};
}

void WatchdogLogParser::takeLine(const LogLine& line) {
    const QByteArrayView text = line.text;
    if (m_headLine >= 0) {
        // The line after a timeout's header that a terminal may have cut before its "Watchdog caught" or inside it
        // ("…ProcessGroupNCCL.cpp:616] [Rank" + " 3] Watchdog caught …", "… [Rank 3] W" + "atchdog caught …"): where
        // this line goes on with those words, without a prefix or header of its own, the two are one message,
        // whose rank the first line's prefix and text say.
        const bool next = line.number == m_headLine + 1 && line.rank < 0 && line.pid < 0;
        const qsizetype seam = m_head.size();
        m_headLine = -1;
        if (next) {
            m_head.append(text.data(), text.size());
            const qsizetype at = findBytes(m_head, kWatchdogCaught, std::max<qsizetype>(0, seam - 13));
            if (at >= 0 && at - seam <= kMaxLeadAfterCut &&
                !containsBytes(QByteArrayView(m_head).sliced(seam, std::max<qsizetype>(0, at - seam)),
                               QByteArrayView("ProcessGroupNCCL"))) {
                takeWatchdogLine(m_head, m_headPrefix, at);
                m_head.resize(0);
                return;
            }
            // The end of a process's watchdog, cut the same way ("… Rank 6] ProcessGroupNCCL'" + "s watchdog got
            // stuck for 480 seconds …", "… [PG ID 0 PG GUID " + "0(default_pg) Rank 6] Terminating the process after
            // attempting …"): one error, at the message's first line, of the rank that line says.
            if (takeCutWatchdogEnd(line, seam)) {
                m_head.resize(0);
                return;
            }
        }
        m_head.resize(0); // keeps its room: every c10 line of the log passes through it
    }
    if (m_joinLines > 0) {
        m_joined.append(text.data(), text.size()); // a terminal's hard wrap: the pieces join without a space
        if (--m_joinLines == 0 || containsBytes(m_joined, kTimingOut)) {
            takeTimeout(m_joined, m_joinPrefix);
            m_joinLines = 0;
            m_joined.clear();
        }
        return;
    }
    if (m_inDesyncReport) {
        takeDesyncLine(line);
        if (m_inDesyncReport)
            return;
    }
    if (!m_details.isEmpty() && takeErrorDetail(line))
        return;
    const qsizetype watchdog = line.indexOf(kWatchdog);
    if (watchdog >= 0)
        takeWatchdogLine(text, {line.rank, line.rankKind}, watchdog);
    else if ((line.holds(kProcessGroupSource) || line.holds(kWithException)) && m_joinLines == 0) {
        m_head.resize(0);
        m_head.append(text.data(), text.size());
        m_headLine = line.number;
        m_headPrefix = {line.rank, line.rankKind};
    }
    if (line.holds(kLastEnqueued))
        takeProgress(text, {line.rank, line.rankKind});
    if (line.holds(kDesyncReport))
        m_inDesyncReport = true;
    if (line.holds(kWatchdogStuck) || line.holds(kTerminating))
        takeWatchdogEnd(trimmedBlanks(line.text), line.number, {line.rank, line.rankKind}, line.holds(kWatchdogStuck));
    if (isErrorLine(line)) {
        const qsizetype error = addError(line, text);
        // A rank's new error ends the wait for its last one's detail.
        m_details.removeIf([&line](const PendingDetail& pending) { return pending.rank == line.rank; });
        m_details.append({error, line.rank, kMaxErrorDetailLines, false});
    }
}

// NCCL's own account of an error follows PyTorch's line about it: "ncclSystemError: System call (e.g. socket,
// malloc) or external library call failed or device error. ", "Last error:", then what failed ("socketStartConnect:
// Connect to 10.0.0.2<52822> failed : No route to host"), which is what the user needs and is added to the error.
// Lines of other ranks in between are not the error's.
bool WatchdogLogParser::takeErrorDetail(const LogLine& line) {
    bool taken = false;
    for (qsizetype i = 0; i < m_details.size();) {
        PendingDetail& pending = m_details[i];
        bool done = --pending.linesLeft <= 0;
        if (pending.rank == line.rank && !taken) {
            const QByteArrayView text = trimmedBlanks(line.text);
            if (pending.next) {
                done = true;
                // Empty, or PyTorch's "Exception raised from": NCCL had nothing to say.
                if (!text.isEmpty() && !startsWithLiteral(text, "Exception raised from")) {
                    if (pending.error >= 0) {
                        LogError& error = m_errors->list[pending.error];
                        m_withDetail.clear();
                        m_withDetail.append(error.text).append("; last error: ").append(text);
                        error.text = errorText(m_withDetail, m_texts);
                    }
                    taken = true;
                }
            } else if (sameBytes(text, "Last error:")) {
                pending.next = taken = true;
            } else if (startsWithLiteral(text, "nccl") && containsBytes(text, "Error: ")) {
                taken = true; // the error code's meaning, which PyTorch's line already said in its words
            } else {
                done = true;
            }
        }
        if (done)
            m_details.removeAt(i);
        else
            ++i;
    }
    return taken;
}

void WatchdogLogParser::takeTimeout(QByteArrayView text, LinePrefix prefix, qsizetype watchdog) {
    if (watchdog < 0)
        watchdog = findBytes(text, kWatchdogCaught);
    if (watchdog < 0)
        return;
    const qsizetype work = startsWithLiteral(text.sliced(watchdog), kCaughtTimeout)
                               ? watchdog + qsizetype(sizeof kCaughtTimeout) - 1 - kWorkNccl.size()
                               : findBytes(text, kWorkNccl, watchdog);
    if (work < 0)
        return;
    CollectiveTimeout timeout;
    const RankSaid said = rankBefore(text, watchdog, prefix);
    timeout.rank = said.runRank();
    QByteArrayView op; // null when there is no "OpType="
    if (!readWorkFields(text, work, timeout, op))
        searchWorkFields(text, work, timeout, op);
    for (CollectiveTimeout& known : m_timeouts) {
        if (known.rank == timeout.rank && known.seq == timeout.seq && isOp(known.op, op)) {
            // The same timeout again, e.g. in the "what():" of the exception that ends the process.
            for (auto [mine, theirs] : {std::pair{&known.numelIn, timeout.numelIn}, {&known.numelOut, timeout.numelOut},
                                        {&known.timeoutMs, timeout.timeoutMs}, {&known.ranMs, timeout.ranMs}}) {
                if (*mine < 0)
                    *mine = theirs;
            }
            return;
        }
    }
    if (!op.isNull())
        timeout.op = QString::fromUtf8(op);
    m_timeouts.append(timeout);
    m_timeoutRanks.append(said);
}

// "… Rank 1] Exception (either an error or timeout) detected by watchdog at work: 808, last enqueued NCCL work:
// 811, last completed NCCL work: 807." (2.2 to 2.4) and "… failure detected by watchdog at work sequence id: 241
// PG status: last enqueued work: 315, last completed work: 183" (2.5 and later); and the dump a timeout sets off, on
// the rank that timed out or any other: "[PG ID 0 PG GUID 0(default_pg) Rank 3] Received a dump signal due to a
// collective timeout from this local rank and we will try our best to dump the debug info. Last enqueued NCCL work:
// 4, last completed NCCL work: 3." (also "Received a global timeout from another rank …").
void WatchdogLogParser::takeProgress(QByteArrayView text, LinePrefix prefix) {
    const qsizetype enqueued = findBytes(text, kLastEnqueuedText);
    const qsizetype enqueuedColon = text.indexOf(':', enqueued);
    const qsizetype completed = findBytes(text, kLastCompleted, enqueued);
    const qsizetype completedColon = completed < 0 ? -1 : text.indexOf(':', completed);
    Progress progress{rankBefore(text, enqueued, prefix), -1, -1, -1};
    if (const qsizetype at = findBytes(text, kAtWorkSequenceId); at >= 0 && at < enqueued)
        progress.seq = numberAt(text, at + 20);
    else if (const qsizetype at = findBytes(text, kAtWork); at >= 0 && at < enqueued)
        progress.seq = numberAt(text, at + 8);
    progress.lastEnqueued = enqueuedColon < 0 ? -1 : numberAt(text, enqueuedColon + 1);
    progress.lastCompleted = completedColon < 0 ? -1 : numberAt(text, completedColon + 1);
    if (progress.lastEnqueued >= 0 || progress.lastCompleted >= 0)
        m_progress.append(progress);
}

// The lines after "the lagging/dead/mismatched ranks that caused the desync are:", up to the next "- " item.
void WatchdogLogParser::takeDesyncLine(const LogLine& line) {
    const QByteArrayView text = trimmedBlanks(line.text);
    if (text.startsWith('[') && containsBytes(text, "] ")) {
        addError(line, QByteArray("desync: ") + text.toByteArray());
        // "[7]" or "[1, 3]": a list of ranks, else no rank is taken of it.
        DesyncBlame blame;
        if (const auto ranks = parseRankList(QString::fromUtf8(text.sliced(1, text.indexOf(']') - 1)))) {
            blame.ranks = QVector<int>(ranks->cbegin(), ranks->cend());
            std::sort(blame.ranks.begin(), blame.ranks.end());
        }
        if (!blame.ranks.isEmpty()) {
            blame.text = QString::fromUtf8(text);
            m_desyncBlames.append(std::move(blame));
        }
        return;
    }
    m_inDesyncReport = false;
    m_details.clear();
}

// What ends a process whose watchdog could not go on (PyTorch 2.2 and later, which then abort it with SIGABRT):
// "[PG ID 0 PG GUID 0(default_pg) Rank 2] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making
// progress in monitoring enqueued collectives. This typically indicates …" (the heartbeat monitor) and "…
// Terminating the process after attempting to dump debug info, due to ProcessGroupNCCL watchdog hang." (or "due to
// collective timeout or exception."). Of the first, the error keeps the first sentence: the rest, the same advice
// every time, is in the log at the error's line.
bool WatchdogLogParser::takeWatchdogEnd(QByteArrayView text, qint64 lineNumber, LinePrefix prefix, bool stuck) {
    const qsizetype at = findBytes(text, stuck ? kWatchdogStuckText : kAfterAttempting);
    if (at < 0)
        return false;
    if (stuck) {
        if (const qsizetype end = findBytes(text, kSentenceEnd, at); end >= 0)
            text.truncate(end + 1);
    }
    const RankSaid said = rankBefore(text, at, prefix);
    LogError error{m_source, lineNumber, said.runRank(), errorText(text, m_texts)};
    if (said.localPrefixRank())
        std::swap(error.rank, error.localRank);
    m_errors->append(std::move(error));
    return true;
}

// `line` goes on the kept line m_head from `seam` on. Where the words that make a line a watchdog's end (its
// keywords, "got stuck for" and "after attempting") were not all on the first line but are in the two, within
// kMaxLeadAfterEndCut bytes after the seam (the cut may fall anywhere, inside them too), with no c10 header of the
// second line's own before them, the two lines are one message. A first line that held them was an end of its own.
bool WatchdogLogParser::takeCutWatchdogEnd(const LogLine& line, qsizetype seam) {
    const QByteArrayView joined = m_head;
    for (const bool stuck : {true, false}) {
        const Needle& keyword = stuck ? kStuckKeyword : kTerminatingKeyword;
        const qsizetype to = std::min(joined.size(), seam + kMaxLeadAfterEndCut + keyword.size());
        const qsizetype at = findBytes(joined.first(to), keyword, std::max<qsizetype>(0, seam - keyword.size() + 1));
        if (at < 0 || containsBytes(joined.sliced(seam, std::max<qsizetype>(0, at - seam)), kC10Source))
            continue;
        return takeWatchdogEnd(trimmedBlanks(joined), line.number - 1, m_headPrefix, stuck);
    }
    return false;
}

qsizetype WatchdogLogParser::addError(const LogLine& line, QByteArrayView text) {
    const QByteArrayView trimmed = trimmedBlanks(text);
    return m_errors->append(LogError::at(m_source, line, errorText(trimmed, m_texts)));
}

QString describeTimeout(const CollectiveTimeout& timeout) {
    QString text = timeout.op.isEmpty() ? QStringLiteral("a collective") : timeout.op;
    if (timeout.seq >= 0)
        text += QStringLiteral(" (SeqNum %1)").arg(timeout.seq);
    if (timeout.ranMs >= 0)
        text += QStringLiteral(" after %1 ms").arg(timeout.ranMs);
    if (timeout.timeoutMs >= 0)
        text += QStringLiteral(" (timeout %1 ms)").arg(timeout.timeoutMs);
    return text;
}

// UTF-8 takes at least one byte for each UTF-16 unit (an invalid byte shows as one replacement character), so a
// text of no more bytes than the limit is whole; a longer one is cut where it is shown.
QByteArray errorText(QByteArrayView text) {
    return text.size() <= kMaxErrorText ? text.toByteArray() : QString::fromUtf8(text).left(kMaxErrorText).toUtf8();
}

QByteArray errorText(QByteArrayView text, TextStore& store) {
    return text.size() <= kMaxErrorText ? store.bytes(text) : store.bytes(errorText(text));
}

// A line with "atchdog caught" at `watchdog`: a timeout, or the first piece of one that a terminal wrapped.
void WatchdogLogParser::takeWatchdogLine(QByteArrayView text, LinePrefix prefix, qsizetype watchdog) {
    if (endsTimingOut(text) || findBytes(text, kTimingOut, watchdog) >= 0 ||
        findBytes(text, kMilliseconds, watchdog) >= 0) {
        takeTimeout(text, prefix, watchdog);
    } else {
        m_joined = text.toByteArray();
        m_joinLines = kMaxTimeoutWrapLines;
        m_joinPrefix = prefix;
    }
}

void WatchdogLogParser::endOfStream() {
    m_headLine = -1;
    m_head.clear();
    if (m_joinLines > 0)
        takeTimeout(m_joined, m_joinPrefix);
    m_joinLines = 0;
    m_joined.clear();
    m_inDesyncReport = false;
    m_details.clear();
}

QList<CollectiveTimeout> WatchdogLogParser::timeouts() const {
    QList<CollectiveTimeout> result = m_timeouts;
    for (qsizetype i = 0; i < result.size(); ++i) {
        CollectiveTimeout& timeout = result[i];
        const RankSaid& said = m_timeoutRanks[i];
        // The progress of the same rank, or of the same process and group: a timeout says "[Rank 0]", its progress
        // "[PG ID 2 PG GUID 9 Rank 0]", with the same prefix before both.
        const auto sameRank = [&](const RankSaid& other) {
            return other.runRank() == timeout.rank ||
                   (other.text >= 0 && other.text == said.text && other.prefix.rank == said.prefix.rank &&
                    other.prefix.kind == said.prefix.kind);
        };
        const Progress* best = nullptr;
        for (const Progress& progress : m_progress) {
            if (!sameRank(progress.rank))
                continue;
            if (progress.seq == timeout.seq) {
                best = &progress;
                break;
            }
            if (progress.seq < 0 && !best)
                best = &progress;
        }
        if (best) {
            timeout.lastEnqueued = best->lastEnqueued;
            timeout.lastCompleted = best->lastCompleted;
            // Its progress names the group: the timeout's "[Rank 0]" was that group's rank, not the run's.
            if (best->rank.group > 0 && said.group < 0) {
                timeout.rank = said.prefix.rank;
                timeout.group = best->rank.group;
                timeout.groupRank = best->rank.text;
            }
        }
        if (said.group > 0) {
            timeout.group = said.group;
            timeout.groupRank = said.text;
        }
        // The rank is the prefix's where the text's is another group's or none: torchrun's is a local rank.
        if (said.prefix.kind == PrefixRank::Local && (said.text < 0 || timeout.group > 0))
            std::swap(timeout.rank, timeout.localRank);
    }
    std::stable_sort(result.begin(), result.end(), [](const CollectiveTimeout& a, const CollectiveTimeout& b) {
        return a.rank != b.rank ? a.rank < b.rank : a.seq < b.seq;
    });
    return result;
}

} // namespace rankscope
