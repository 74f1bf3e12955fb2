// SPDX-License-Identifier: MIT
// RunDiagnostics, the hang: how long each rank has been still and silent, and the finding that names the ranks at
// fault (checkHang). The rest of the diagnostics is in diagnostics.cpp.
#include "core/diagnostics.h"

#include "core/ranklist.h"

#include <rankscope/event_schema.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace rankscope {

// How long a rank is known to have been still at `now`: up to where its copy goes, not beyond, and not while the
// ranks were held on purpose (pauseRanks).
double RunDiagnostics::stillFor(const RankState& state, double now) const {
    return heldFor(state, state.lastMove, now);
}

// How long no heartbeat of the rank has come, counted as stillFor counts.
double RunDiagnostics::silentFor(const RankState& state, double now) const {
    return heldFor(state, state.lastHeartbeat, now);
}

double RunDiagnostics::heldFor(const RankState& state, double since, double now) const {
    const double until = std::min(now, state.knownUntil);
    double held = until - since;
    for (const auto& [from, to] : m_pauses)
        held -= std::max(0.0, std::min(until, to) - std::max(since, from));
    return held;
}

// The shortest silence of `ranks` (silentFor).
double RunDiagnostics::quietest(const QVector<int>& ranks, double now) const {
    double quiet = std::numeric_limits<double>::infinity();
    for (const int rank : ranks)
        quiet = std::min(quiet, silentFor(*m_ranks.constFind(rank), now));
    return quiet;
}

// "rank 1 has sent no heartbeat for 3.2 s while the other ranks still do: …", for ranks found silent.
QString RunDiagnostics::silenceOf(const QVector<int>& silent, double now) const {
    const bool one = silent.size() == 1;
    QString said = QStringLiteral("%1 sent no heartbeat for %2 s while the other ranks still do: %3 stopped (Ctrl-Z, "
                                  "SIGSTOP, a debugger) or frozen, or %4 output no longer reaches this machine")
                       .arg(one ? QStringLiteral("rank %1 has").arg(silent.front())
                                : QStringLiteral("ranks %1 have").arg(formatRankList(silent)))
                       .arg(quietest(silent, now), 0, 'f', 1)
                       .arg(one ? QStringLiteral("its process is") : QStringLiteral("their processes are"))
                       .arg(one ? QStringLiteral("its") : QStringLiteral("their"));
    if (const auto pid = m_pids.constFind(silent.front()); one && pid != m_pids.cend()) {
        const QString host = m_hosts.value(silent.front());
        said += QStringLiteral(" (a stopped one goes on after kill -CONT %1%2)")
                    .arg(*pid)
                    .arg(host.isEmpty() ? QString() : QStringLiteral(" on ") + host);
    }
    return said;
}

// "no rank has sent a heartbeat for 3.2 s: …", for `ranks` (every one followed) all found silent.
QString RunDiagnostics::silenceOfAll(const QVector<int>& ranks, double now) const {
    return QStringLiteral("no rank has sent a heartbeat for %1 s: the ranks are stopped (Ctrl-Z in the terminal that "
                          "started them, SIGSTOP, a debugger) or frozen, or their output no longer reaches this "
                          "machine")
        .arg(quietest(ranks, now), 0, 'f', 1);
}

// When a hang found at diagnosis.time became one: when the last of its ranks had been still for the threshold.
// A hang found late (a front end that catches up on a run it is stopping) still began before the ranks were ended.
double RunDiagnostics::hangBegan(const Diagnosis& diagnosis) const {
    const double threshold = hangThresholdSeconds();
    double began = -std::numeric_limits<double>::infinity();
    for (const int rank : diagnosis.ranks) {
        const auto state = m_ranks.constFind(rank);
        if (state != m_ranks.cend())
            began = std::max(began, std::min(diagnosis.time, state->knownUntil) - stillFor(*state, diagnosis.time) +
                                        threshold);
    }
    return std::isfinite(began) ? began : diagnosis.time;
}

void RunDiagnostics::checkHang(double now, QVector<Diagnosis>& changed) {
    const double beat = heartbeatSeconds();
    const double still = hangThreshold(beat);
    QVector<int> waiting;
    qint64 collective = 0;
    for (auto it = m_ranks.cbegin(); it != m_ranks.cend(); ++it) {
        const RankState& s = it.value();
        if (!s.ended && s.seenHeartbeat && s.started > s.finished && stillFor(s, now) >= still) {
            waiting.append(it.key());
            collective = std::max(collective, s.started);
        }
    }
    const QString key = QStringLiteral("hang:%1").arg(collective);
    for (const Diagnosis& d : std::as_const(m_all)) {
        if (d.kind != DiagnosisKind::Hang || d.resolved || (!waiting.isEmpty() && d.key == key))
            continue;
        // Over when a rank at fault moved on. Not when ranks merely ended: a hung run that is stopped stays a
        // hung run, and a stuck rank stays stuck when the ranks waiting for it time out and exit.
        if (newestMove(d) > m_hangStill.value(d.key))
            resolve(d.key, now, changed);
    }
    if (waiting.isEmpty())
        return;

    QVector<int> inside; // waiting in the newest collective
    QVector<int> behind; // never started it, and not moving either
    bool moving = false; // a live rank still on its way to the collective
    for (auto it = m_ranks.cbegin(); it != m_ranks.cend(); ++it) {
        const RankState& s = it.value();
        if (s.ended || !s.seenHeartbeat)
            continue;
        // `waiting` is in rank order, as m_ranks is: a search, not a walk, with thousands of ranks waiting.
        if (s.started >= collective && std::binary_search(waiting.cbegin(), waiting.cend(), it.key()))
            inside.append(it.key());
        else if (s.started < collective && stillFor(s, now) >= still)
            behind.append(it.key());
        else
            moving = true;
    }
    if (moving)
        return; // not yet: someone is still getting there
    const double silentAfter = std::max(still, m_options.silentIntervals * beat);
    if (behind.isEmpty()) {
        const bool noStepDone =
            std::all_of(m_ranks.cbegin(), m_ranks.cend(), [](const RankState& s) { return s.stepMs.empty(); });
        if (noStepDone) {
            double insideStill = std::numeric_limits<double>::infinity();
            for (const int rank : std::as_const(inside))
                insideStill = std::min(insideStill, stillFor(*m_ranks.constFind(rank), now));
            if (insideStill < std::max(still, m_options.setupGraceSeconds))
                return; // the set-up (see setupGraceSeconds)
        }
        // Ranks silent while the others beat stopped inside the collective as a whole: the others wait for them.
        // Which ones is known only once a stopped rank has missed its beats: a verdict that blames no rank waits
        // as long as silence takes (a rank stopped after a beat that showed it still is heard until then).
        for (const int rank : std::as_const(inside))
            if (stillFor(*m_ranks.constFind(rank), now) < silentAfter)
                return;
        const Silence silence = silenceAmong(inside, now, beat, silentAfter);
        if (!silence.late.isEmpty())
            return; // not yet: a rank that missed a beat may be stopped, or merely late
        if (!silence.silent.isEmpty() && !silence.heard.isEmpty()) {
            const QVector<int>& silent = silence.silent;
            report({DiagnosisKind::Hang, key, silent + silence.heard, m_hosts.value(silent.front()), now,
                    QStringLiteral("%1 stuck %2%3; %4 waiting in collective #%5. %6")
                        .arg(where(silent.front()), stuckAt(*m_ranks.constFind(silent.front()), true))
                        .arg(silent.size() == 1 ? QString()
                                                : QStringLiteral(", and ranks ") + formatRankList(silent.mid(1)))
                        .arg((silence.heard.size() == 1 ? QStringLiteral("rank ") : QStringLiteral("ranks ")) +
                             formatRankList(silence.heard))
                        .arg(collective)
                        .arg(silenceOf(silent, now)),
                    false, int(silent.size())},
                   changed);
            return;
        }
        // Every one silent: stopped or frozen alike, not a fault of the communication between them. Ranks that
        // ended (cleanly: a failure's end is the teardown's, no hang) without entering the collective are missing
        // from it: the others wait for them.
        const bool allSilent = silence.silent.size() == inside.size();
        const QString gone = endedOutside(collective);
        report({DiagnosisKind::Hang, key, inside, QString(), now,
                QStringLiteral("every running rank (%1) is stuck inside collective #%2%3")
                    .arg(formatRankList(inside))
                    .arg(collective)
                    .arg(allSilent        ? QStringLiteral(". ") + silenceOfAll(inside, now)
                         : gone.isEmpty() ? QStringLiteral(": no rank is missing from it, so look at the "
                                                           "communication itself (NCCL logs, the network)")
                                          : QStringLiteral("; ") + gone),
                false, int(inside.size())},
               changed);
        return;
    }
    // Of the ranks behind, the ones inside no collective (stuck in their own code: a sleep, a data loader, a
    // deadlock) are the ones at fault, the furthest behind first; one inside an older collective waits in it for
    // them. In a broadcast from rank 0 to ranks 1 and 2 where rank 1 never came, rank 2 has its data and is in the
    // next collective, and rank 0 is still sending in this one: it is not the hung rank. Only when every rank
    // behind is inside a collective are they all named.
    QVector<int> stuck;
    QVector<int> olderInside;
    for (const int rank : std::as_const(behind)) {
        const RankState& s = *m_ranks.constFind(rank);
        (s.started > s.finished ? olderInside : stuck).append(rank);
    }
    if (stuck.isEmpty())
        std::swap(stuck, olderInside);
    std::stable_sort(stuck.begin(), stuck.end(),
                     [this](int a, int b) { return m_ranks.constFind(a)->started < m_ranks.constFind(b)->started; });
    // The ranks at fault that are silent as well are said to be (how to tell a rank stopped from one stuck in its
    // own code), once the others have been heard since.
    const Silence atFault = silenceAmong(stuck, now, beat, silentAfter);
    const Silence waiters = silenceAmong(olderInside + inside, now, beat, silentAfter);
    const bool othersHeard = !atFault.heard.isEmpty() || !waiters.heard.isEmpty();
    if (!atFault.late.isEmpty())
        return;
    const QVector<int> silent = othersHeard ? atFault.silent : QVector<int>();
    const bool allSilent =
        atFault.silent.size() == stuck.size() && waiters.silent.size() == olderInside.size() + inside.size();
    const int culprit = stuck.front();
    const RankState& c = m_ranks[culprit];
    QStringList others;
    for (qsizetype i = 1; i < stuck.size(); ++i)
        others << where(stuck[i]);
    // "ranks 0,2-7 waiting in collective #13", or by collective where the waiting ranks are in several.
    QMap<qint64, QVector<int>> waitingIn;
    for (const int rank : std::as_const(olderInside))
        waitingIn[m_ranks.constFind(rank)->started].append(rank);
    for (const int rank : std::as_const(inside))
        waitingIn[collective].append(rank);
    QStringList waits;
    for (auto it = waitingIn.cbegin(); it != waitingIn.cend(); ++it)
        waits << QStringLiteral("%1 waiting in collective #%2")
                     .arg((it->size() == 1 ? QStringLiteral("rank ") : QStringLiteral("ranks ")) + formatRankList(*it))
                     .arg(it.key());
    QVector<int> ranks = stuck;
    ranks += olderInside;
    ranks += inside;
    report({DiagnosisKind::Hang, key, ranks, m_hosts.value(culprit), now,
            QStringLiteral("%1 stuck %2%3; %4%5")
                .arg(where(culprit), stuckAt(c, false))
                .arg(others.isEmpty() ? QString() : QStringLiteral(", and ") + others.join(QStringLiteral(", ")))
                .arg(waits.join(QStringLiteral(", ")))
                .arg(allSilent          ? QStringLiteral(". ") + silenceOfAll(stuck + olderInside + inside, now)
                     : silent.isEmpty() ? QString()
                                        : QStringLiteral(". ") + silenceOf(silent, now)),
            false, int(stuck.size())},
           changed);
}

QString RunDiagnostics::leftTheLoopEarly() {
    return QStringLiteral("a rank that leaves the training loop early (inputs uneven across ranks, an early return or "
                          "exit) leaves the others waiting in their next collective");
}

// "rank 1 ended without entering it (after step 2, exit status 0): …", for the ranks that ended before they
// started `collective`; empty when none did.
QString RunDiagnostics::endedOutside(qint64 collective) const {
    QVector<int> ranks;
    QStringList how;
    for (auto it = m_ranks.cbegin(); it != m_ranks.cend(); ++it) {
        if (!it->ended || it->started >= collective)
            continue;
        ranks.append(it.key());
        how << QStringLiteral("after step %1%2")
                   .arg(it->step)
                   .arg(it->exitStatus ? QStringLiteral(", ") + describeExitStatus(*it->exitStatus) : QString());
    }
    return ranks.isEmpty()
               ? QString()
               : sayOfRanks(QStringLiteral("%1 ended without entering it (%2): ") + leftTheLoopEarly(), ranks, how);
}

QString RunDiagnostics::sayOfRanks(const QString& said, const QVector<int>& ranks, QStringList each) {
    if (ranks.size() > 1)
        for (qsizetype i = 0; i < ranks.size(); ++i)
            each[i] = QStringLiteral("rank %1 %2").arg(ranks[i]).arg(each[i]);
    return said.arg((ranks.size() == 1 ? QStringLiteral("rank ") : QStringLiteral("ranks ")) + formatRankList(ranks),
                    each.join(QStringLiteral("; ")));
}

// Where a rank is stuck, as its last heartbeat says: the step it is in (a heartbeat counts the steps done: what its
// step event, its log and --hang-at-step say), its phase and its collective. A step event after that heartbeat (a
// rank stopped between two beats) makes them out of date: then the step it finished is all that is known. `inside`:
// "inside collective #12 at step 8 in phase backward", else "at step 8 in phase backward (collective #12)".
QString RunDiagnostics::stuckAt(const RankState& state, bool inside) {
    if (state.lastStep > state.lastHeartbeat)
        return QStringLiteral("after step %1 (no heartbeat since)").arg(state.step);
    const QByteArray phase = state.phase.toUtf8();
    const qint64 step = schema::phase::isInsideAStep(std::string_view(phase.constData(), size_t(phase.size())))
                            ? state.step + 1
                            : state.step;
    const QString at = QStringLiteral("at step %1 in phase %2")
                           .arg(step)
                           .arg(state.phase.isEmpty() ? QStringLiteral("?") : state.phase);
    return inside ? QStringLiteral("inside collective #%1 %2").arg(state.started).arg(at)
                  : QStringLiteral("%1 (collective #%2)").arg(at).arg(state.started);
}

RunDiagnostics::Silence RunDiagnostics::silenceAmong(const QVector<int>& ranks, double now, double beat,
                                                     double silentAfter) const {
    Silence silence;
    for (const int rank : ranks) {
        const RankState& s = *m_ranks.constFind(rank);
        const double quiet = silentFor(s, now);
        // Heard: a beat on time, and one since its last move (a rank stopped just after a beat that moved has not
        // missed one yet, but is no more heard still than it is seen moving).
        if (quiet >= silentAfter)
            silence.silent.append(rank);
        else if (quiet < 1.5 * beat && s.lastHeartbeat > s.lastMove)
            silence.heard.append(rank);
        // Silent soon, or heard, in a copy that is current. In one that stands still (a link that is down) it would
        // be late for as long: it is taken as heard, and the finding is what it was without.
        else if (now - std::min(now, s.knownUntil) < silentAfter)
            silence.late.append(rank);
        else
            silence.heard.append(rank);
    }
    return silence;
}

} // namespace rankscope
