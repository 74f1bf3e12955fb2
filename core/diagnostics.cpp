// SPDX-License-Identifier: MIT
#include "core/diagnostics.h"

#include "core/kernelverdict.h"
#include "core/ranklist.h"

#include <QJsonArray>
#include <QLocale>

#include <rankscope/event_schema.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace rankscope {

namespace {

// The hang that NCCL watchdog's timeouts make when the heartbeats found none (checkWatchdogTimeouts).
const QString kWatchdogHangKey = QStringLiteral("hang:watchdog");

double median(std::vector<double> values) {
    if (values.empty())
        return 0.0;
    const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
    std::nth_element(values.begin(), middle, values.end());
    if (values.size() % 2 == 1)
        return *middle;
    const double upper = *middle;
    const double lower = *std::max_element(values.begin(), middle);
    return (lower + upper) / 2.0;
}

} // namespace

QString diagnosisKindName(DiagnosisKind kind) {
    switch (kind) {
    case DiagnosisKind::RootCause:
        return QStringLiteral("root-cause");
    case DiagnosisKind::Hang:
        return QStringLiteral("hang");
    case DiagnosisKind::Straggler:
        return QStringLiteral("straggler");
    case DiagnosisKind::Divergence:
        return QStringLiteral("divergence");
    case DiagnosisKind::Network:
        return QStringLiteral("network");
    }
    return {};
}

QJsonObject Diagnosis::toJson() const {
    QJsonArray rankArray;
    for (const int rank : ranks)
        rankArray.append(rank);
    QJsonObject object{{"kind", diagnosisKindName(kind)}, {"key", key},         {"ranks", rankArray},
                       {"message", message},              {"resolved", resolved}, {"time", time},
                       {"culprits", culprits}};
    if (!host.isEmpty())
        object.insert(QStringLiteral("host"), host);
    if (!lastLines.isEmpty()) {
        QJsonArray lines;
        for (const StoredLine& line : lastLines) {
            QJsonObject entry{{"stream", rankStreamSuffix(line.stream)}, {"text", line.text}};
            if (line.arrivedAt > 0.0)
                entry.insert(QStringLiteral("time"), line.arrivedAt);
            lines.append(entry);
        }
        object.insert(QStringLiteral("last_lines"), lines);
    }
    return object;
}

QString Diagnosis::toString() const {
    return diagnosisKindName(kind) + QStringLiteral(": ") + message + (resolved ? QStringLiteral(" (resolved)") : QString());
}

RunDiagnostics::RunDiagnostics(DiagnosticsOptions options) : m_options(options) {}

void RunDiagnostics::clear() {
    m_ranks.clear();
    m_all.clear();
    m_pending.clear();
    m_hangStill.clear();
    m_hosts.clear();
    m_pids.clear();
    m_erred.clear();
    m_kernelLogs.clear();
    m_endingSince = std::numeric_limits<double>::infinity();
    m_pauses.clear();
    m_replicaChecks.clear();
    m_watchdogTimeouts.clear();
    m_desyncBlames.clear();
    m_watchdogSaid.clear();
    m_watchdogSaidIn.clear();
}

void RunDiagnostics::pauseRanks(double time) {
    if (!m_pauses.isEmpty() && m_pauses.back().second >= time)
        m_pauses.back().second = std::numeric_limits<double>::infinity(); // one pause runs on into the next
    else
        m_pauses.append({time, std::numeric_limits<double>::infinity()});
}

void RunDiagnostics::resumeRanks(double time) {
    if (!m_pauses.isEmpty() && std::isinf(m_pauses.back().second))
        m_pauses.back().second = std::max(time, m_pauses.back().first);
}

double RunDiagnostics::heartbeatSeconds() const {
    std::vector<double> gaps;
    for (const RankState& state : m_ranks)
        gaps.insert(gaps.end(), state.heartbeatGaps.begin(), state.heartbeatGaps.end());
    const double measured = median(gaps);
    return measured > 0.0 ? measured : m_options.defaultHeartbeatSeconds;
}

double RunDiagnostics::hangThresholdSeconds() const {
    return hangThreshold(heartbeatSeconds());
}

double RunDiagnostics::hangThreshold(double heartbeat) const {
    std::vector<double> steps;
    for (const RankState& state : m_ranks)
        steps.insert(steps.end(), state.stepMs.begin(), state.stepMs.end());
    return std::max(m_options.hangIntervals * heartbeat, 2.0 * median(steps) / 1000.0);
}

QString RunDiagnostics::where(int rank) const {
    const QString host = m_hosts.value(rank);
    return host.isEmpty() ? QStringLiteral("rank %1").arg(rank) : QStringLiteral("rank %1 on %2").arg(rank).arg(host);
}

bool RunDiagnostics::reportsError(const TrainerEvent& event) {
    return event.type == TrainerEventType::Error &&
           event.string(schema::error::kKind) == jsonKey(schema::error_kind::kReplicaDivergence);
}

void RunDiagnostics::addEvents(const QVector<TrainerEvent>& events) {
    for (const TrainerEvent& event : events) {
        RankState& state = m_ranks[event.rank];
        switch (event.type) {
        case TrainerEventType::Start:
            if (const QString host = event.string(schema::start::kHost); !host.isEmpty() && !m_hosts.contains(event.rank))
                m_hosts.insert(event.rank, host);
            if (event.has(schema::start::kPid))
                m_pids.insert(event.rank, event.integer(schema::start::kPid));
            state.totalSteps = event.integer(schema::start::kTotalSteps);
            break;
        case TrainerEventType::Heartbeat:
            applyHeartbeat(event, state);
            break;
        case TrainerEventType::Step:
            applyStep(event, state);
            break;
        case TrainerEventType::Error:
            if (event.boolean(schema::error::kFatal, true))
                m_erred.insert(event.rank);
            if (event.string(schema::error::kKind) == jsonKey(schema::error_kind::kReplicaDivergence) &&
                event.has(schema::error::kStep) && event.has(schema::error::kChecksum)) {
                // Every rank says so at the same check: which replica is apart is known once they have. After the
                // first check is reported, the later ones (the same replicas apart still) are not kept.
                if (std::any_of(m_all.cbegin(), m_all.cend(),
                                [](const Diagnosis& d) { return d.key == QLatin1String("divergence:check"); }))
                    break;
                ReplicaCheck& check = m_replicaChecks[event.integer(schema::error::kStep)];
                if (check.checksums.isEmpty() || event.time < check.firstSaid)
                    check.firstSaid = event.time;
                check.checksums.insert(event.rank, event.number(schema::error::kChecksum));
            } else if (event.string(schema::error::kKind) == jsonKey(schema::error_kind::kReplicaDivergence)) {
                // Events 1.0: no checksum, so no replica apart is known; the rank that says so is not at fault
                // (every rank says the same).
                report({DiagnosisKind::Divergence,
                        QStringLiteral("divergence:check"),
                        {event.rank},
                        m_hosts.value(event.rank),
                        event.time,
                        QStringLiteral("replicas diverged: %1 reports %2")
                            .arg(where(event.rank), event.string(schema::error::kMessage)),
                        false,
                        0},
                       m_pending);
            }
            break;
        case TrainerEventType::End:
            state.ended = true;
            // Only a good end is recorded: a rank that ended in error has no checksum of its parameters either (the
            // trainer writes NaN there).
            if (event.string(schema::end::kStatus) != jsonKey(schema::status::kOk))
                break;
            state.endedWellAt = event.time;
            if (event.has(schema::end::kParamChecksum))
                state.endChecksum = event.number(schema::end::kParamChecksum);
            break;
        default:
            break;
        }
    }
}

void RunDiagnostics::applyHeartbeat(const TrainerEvent& event, RankState& state) {
    const qint64 step = event.integer(schema::heartbeat::kStep);
    const QString phase = event.string(schema::heartbeat::kPhase);
    const qint64 started = event.integer(schema::heartbeat::kCollectiveStarted);
    const qint64 finished = event.integer(schema::heartbeat::kCollectiveFinished);
    if (state.seenHeartbeat) {
        state.heartbeatGaps.push_back(event.time - state.lastHeartbeat);
        if (state.heartbeatGaps.size() > 32)
            state.heartbeatGaps.pop_front();
    }
    if (!state.seenHeartbeat || step != state.step || phase != state.phase || started != state.started ||
        finished != state.finished)
        state.lastMove = event.time;
    state.step = step;
    state.phase = phase;
    state.started = started;
    state.finished = finished;
    state.lastHeartbeat = event.time;
    state.seenHeartbeat = true;
}

void RunDiagnostics::applyStep(const TrainerEvent& event, RankState& state) {
    state.step = event.integer(schema::step::kStep);
    state.lastMove = std::max(state.lastMove, event.time);
    state.lastStep = std::max(state.lastStep, event.time);
    const double stepMs = event.number(schema::step::kStepMs);
    const double waitMs = event.number(schema::step::kCommWaitMs, 0.0);
    if (!std::isfinite(stepMs))
        return;
    state.stepMs.push_back(stepMs);
    if (static_cast<int>(state.stepMs.size()) > m_options.stragglerWindow)
        state.stepMs.pop_front();
    state.window.push_back({stepMs - (std::isfinite(waitMs) ? waitMs : 0.0), stepMs});
    state.windowMs += stepMs;
    // The oldest step leaves once the window holds enough steps and enough time without it.
    const double spanMs = m_options.stragglerSeconds * 1000.0;
    while (static_cast<int>(state.window.size()) > m_options.stragglerMaxSteps ||
           (static_cast<int>(state.window.size()) > m_options.stragglerWindow &&
            state.windowMs - state.window.front().stepMs >= spanMs)) {
        state.windowMs -= state.window.front().stepMs;
        state.window.pop_front();
    }
}

void RunDiagnostics::rankExited(int rank, int status) {
    RankState& state = m_ranks[rank];
    state.ended = true;
    state.exitStatus = status;
}

void RunDiagnostics::runEnded(const RunRecord& record, const QVector<StoredLine>& lastLines) {
    if (!record.failedOrLost() || record.firstFailedRank < 0)
        return;
    const int rank = record.firstFailedRank;
    QString message = record.summary;
    if (const QString kernel = kernelSays(record, rank); !kernel.isEmpty())
        message += QStringLiteral("; ") + kernel;
    // The first rank to fail may have failed of waiting: its collective timed out on a peer that was found stuck
    // before. The hang came first, and the cause of the failure is the rank it names.
    for (const Diagnosis& hang : std::as_const(m_all)) {
        if (hang.kind == DiagnosisKind::Hang && !hang.resolved && hang.culprits > 0 &&
            !hang.culpritRanks().contains(rank)) {
            message += QStringLiteral("; it was waiting on a hung rank: ") + hang.message;
            break;
        }
    }
    message += leftBefore(record, rank);
    // Ranks that failed alike are culprits with it: none of them is the others' victim.
    const QVector<int> ranks = QVector<int>{rank} + record.failedAlike;
    Diagnosis cause{DiagnosisKind::RootCause,
                    QStringLiteral("root-cause"),
                    ranks,
                    m_hosts.value(rank),
                    record.ended.isValid() ? record.ended.toMSecsSinceEpoch() / 1000.0 : 0.0,
                    message,
                    false};
    cause.culprits = static_cast<int>(ranks.size());
    cause.lastLines = lastLines;
    report(cause, m_pending);
}

// "; rank 1 had ended well before it (after 29 steps, of the 200 rank 0 was to take): …": the ranks that left short of
// the steps the failed rank was to take, before it failed, while it had not ended well itself (a rank whose inputs ran
// out first, an early return): in the collective they never entered, the failed rank lost its peer or waited for it.
// Empty when none did, or when the failed rank's plan is not known (0: no step falls short of it).
QString RunDiagnostics::leftBefore(const RunRecord& record, int failed) const {
    const auto state = m_ranks.constFind(failed);
    if (state == m_ranks.cend() || state->endedWellAt)
        return {};
    const RankExit exit = record.exits.value(failed);
    const double failedAt = exit.seenAt.isValid() ? static_cast<double>(exit.seenAt.toMSecsSinceEpoch()) / 1000.0
                                                  : std::numeric_limits<double>::infinity();
    QVector<int> ranks;
    QStringList how;
    for (auto it = m_ranks.cbegin(); it != m_ranks.cend(); ++it)
        if (it.key() != failed && it->endedWellAt && *it->endedWellAt <= failedAt && it->step < state->totalSteps) {
            ranks.append(it.key());
            how << QStringLiteral("after %1 steps").arg(it->step);
        }
    return ranks.isEmpty()
               ? QString()
               : sayOfRanks(QStringLiteral("; %1 had ended well before it (%2, of the ") +
                                QString::number(state->totalSteps) + QStringLiteral(" rank ") +
                                QString::number(failed) + QStringLiteral(" was to take): ") + leftTheLoopEarly(),
                            ranks, how);
}

// What the kernel log of the rank's node says about a death by a signal without an error of the rank's own.
QString RunDiagnostics::kernelSays(const RunRecord& record, int rank) const {
    const RankExit exit = record.exits.value(rank);
    if (exit.signal() == 0 || m_erred.contains(rank))
        return {};
    const QString host = m_hosts.value(rank);
    const auto capture = m_kernelLogs.constFind(host);
    if (capture == m_kernelLogs.cend())
        return exit.signal() != 9 ? QString()
                                  : QStringLiteral("SIGKILL without an error of its own is often the kernel's OOM "
                                                   "killer: look for \"Out of memory\" or GPU Xid lines in dmesg on %1")
                                        .arg(host.isEmpty() ? QStringLiteral("its node") : host);
    RankDeath death;
    death.rank = rank;
    death.host = host;
    death.pid = m_pids.value(rank, capture->rankPids.value(rank, -1));
    death.signal = exit.signal();
    if (exit.seenAt.isValid())
        death.diedAt = static_cast<double>(exit.seenAt.toMSecsSinceEpoch()) / 1000.0;
    if (record.created.isValid())
        death.runStarted = static_cast<double>(record.created.toMSecsSinceEpoch()) / 1000.0;
    return kernelLogVerdict(death, *capture);
}

QVector<Diagnosis> RunDiagnostics::update(double now) {
    QVector<Diagnosis> changed = std::exchange(m_pending, {});
    checkHang(now, changed);
    checkStragglers(now, changed);
    checkChecksums(now, changed);
    checkReplicaChecks(now, changed);
    checkWatchdogTimeouts(now, changed);
    return changed;
}

void RunDiagnostics::addCollectiveTimeout(int rank, const CollectiveTimeout& timeout, double time) {
    if (!m_watchdogTimeouts.contains(rank))
        m_watchdogTimeouts.insert(rank, {timeout, time});
}

void RunDiagnostics::addDesyncBlame(const DesyncBlame& blame, double time) {
    if (std::none_of(m_desyncBlames.cbegin(), m_desyncBlames.cend(),
                     [&blame](const TimedBlame& known) { return known.blame.text == blame.text; }))
        m_desyncBlames.append({blame, time});
}

// "rank 7 on node-b is behind, as PyTorch's desync report says: "[7] finished collective #182, …"; NCCL's watchdog
// timed out on ranks 0,2 in ALLREDUCE (SeqNum 808) after 600035 ms (timeout 600000 ms)", a part for each collective
// named, in the order the ranks said so. PyTorch's SeqNum counts the process group's collectives, not the
// trainer's collective numbers of the heartbeats.
QString RunDiagnostics::watchdogSays(double now, QVector<int>& timedOut, QVector<int>& blamed) const {
    struct Said {
        const CollectiveTimeout* first;
        double time;
        QVector<int> ranks;
    };
    QVector<Said> parts;
    for (auto it = m_watchdogTimeouts.cbegin(); it != m_watchdogTimeouts.cend(); ++it) {
        if (it->time > now)
            continue; // a stored run replayed: not yet
        const CollectiveTimeout& t = it->timeout;
        const auto same = std::find_if(parts.begin(), parts.end(),
                                       [&t](const Said& s) { return s.first->seq == t.seq && s.first->op == t.op; });
        if (same != parts.end()) {
            same->ranks.append(it.key());
            same->time = std::min(same->time, it->time);
        } else {
            parts.append({&t, it->time, {it.key()}});
        }
    }
    std::stable_sort(parts.begin(), parts.end(), [](const Said& a, const Said& b) { return a.time < b.time; });
    QStringList blames;
    for (const TimedBlame& item : std::as_const(m_desyncBlames)) {
        if (item.time > now)
            continue;
        for (const int rank : item.blame.ranks)
            if (!blamed.contains(rank))
                blamed.append(rank);
        blames << QStringLiteral("\"%1\"").arg(item.blame.text);
    }
    QStringList said;
    if (!blamed.isEmpty())
        said << QStringLiteral("%1 behind, as PyTorch's desync report says: %2")
                    .arg(blamed.size() == 1 ? where(blamed.front()) + QStringLiteral(" is")
                                            : QStringLiteral("ranks %1 are").arg(formatRankList(blamed)),
                         blames.join(QStringLiteral(", ")));
    QStringList timeouts;
    for (const Said& part : std::as_const(parts)) {
        timeouts << QStringLiteral("%1 in %2")
                        .arg(part.ranks.size() == 1 ? where(part.ranks.front())
                                                    : QStringLiteral("ranks ") + formatRankList(part.ranks),
                             describeTimeout(*part.first));
        timedOut += part.ranks;
    }
    if (!timeouts.isEmpty())
        said << QStringLiteral("NCCL's watchdog timed out on ") + timeouts.join(QStringLiteral("; and on "));
    return said.join(QStringLiteral("; "));
}

void RunDiagnostics::checkWatchdogTimeouts(double now, QVector<Diagnosis>& changed) {
    if (m_watchdogTimeouts.isEmpty() && m_desyncBlames.isEmpty())
        return;
    QVector<int> timedOut;
    QVector<int> blamed;
    const QString said = watchdogSays(now, timedOut, blamed);
    if (said.isEmpty())
        return;
    // A hang the heartbeats found, standing: it says them as well, as the same finding changed.
    const auto hang = std::find_if(m_all.begin(), m_all.end(), [](const Diagnosis& d) {
        return d.kind == DiagnosisKind::Hang && !d.resolved && d.key != kWatchdogHangKey;
    });
    const QString key = hang != m_all.end() ? hang->key : kWatchdogHangKey;
    if (m_watchdogSaidIn == key && m_watchdogSaid == said)
        return;
    if (hang != m_all.end()) {
        if (m_watchdogSaidIn == hang->key)
            hang->message.chop(m_watchdogSaid.size() + 2); // what it said of them before
        hang->message += QStringLiteral("; ") + said;
        changed.append(*hang);
    } else {
        // Its own finding: the ranks a desync report blames are at fault, before the ranks that timed out. Without
        // a report none is, and the ranks known that said nothing are named.
        QVector<int> ranks = blamed;
        for (const int rank : std::as_const(timedOut))
            if (!ranks.contains(rank))
                ranks.append(rank);
        QVector<int> quiet;
        for (auto it = m_ranks.cbegin(); it != m_ranks.cend(); ++it)
            if (!ranks.contains(it.key()))
                quiet.append(it.key());
        QString message = said;
        if (blamed.isEmpty() && !quiet.isEmpty())
            message +=
                QStringLiteral("; no timeout from %1 %2 (the rank they waited for may be among them)")
                    .arg(quiet.size() == 1 ? QStringLiteral("rank") : QStringLiteral("ranks"), formatRankList(quiet));
        const Diagnosis finding{DiagnosisKind::Hang, key, ranks, m_hosts.value(ranks.front()), now, message, false,
                                int(blamed.size())};
        const auto known =
            std::find_if(m_all.begin(), m_all.end(), [&key](const Diagnosis& d) { return d.key == key; });
        if (known != m_all.end())
            *known = finding;
        else
            m_all.append(finding);
        m_hangStill.insert(key, newestMove(finding)); // over when a rank at fault moves on (checkHang)
        changed.append(finding);
    }
    m_watchdogSaid = said;
    m_watchdogSaidIn = key;
}

double RunDiagnostics::newestMove(const Diagnosis& diagnosis) const {
    double newest = 0.0;
    for (const int rank : diagnosis.culpritRanks()) {
        const auto found = m_ranks.constFind(rank);
        if (found != m_ranks.cend() && !found->ended)
            newest = std::max(newest, found->lastMove);
    }
    return newest;
}

void foldFindings(QVector<Diagnosis>& known, const QVector<Diagnosis>& changed) {
    for (const Diagnosis& diagnosis : changed) {
        const auto same =
            std::find_if(known.begin(), known.end(), [&](const Diagnosis& d) { return d.key == diagnosis.key; });
        if (same != known.end())
            *same = diagnosis;
        else
            known.append(diagnosis);
    }
}

QString runVerdict(const RunRecord& record, const QVector<Diagnosis>& findings) {
    if (!record.ended.isValid() || record.state == QLatin1String("finished"))
        return {};
    for (const Diagnosis& finding : findings)
        if (finding.kind == DiagnosisKind::RootCause && !finding.resolved && !record.summary.isEmpty() &&
            finding.message.size() > record.summary.size() && finding.message.startsWith(record.summary))
            return finding.message;
    // A failed run's hang is in its root cause where it explains the failure (RunDiagnostics::runEnded); where the
    // failed rank is the hung one, the root cause names it already.
    if (record.state != QLatin1String("stopped") && record.state != QLatin1String("lost"))
        return {};
    for (const Diagnosis& finding : findings)
        if (finding.kind == DiagnosisKind::Hang && !finding.resolved)
            return (record.summary.isEmpty() ? record.state : record.summary) + QStringLiteral("; ") +
                   finding.toString();
    return {};
}

void RunDiagnostics::report(Diagnosis diagnosis, QVector<Diagnosis>& changed) {
    const auto it = std::find_if(m_all.begin(), m_all.end(), [&](const Diagnosis& d) { return d.key == diagnosis.key; });
    if (it != m_all.end() && !it->resolved)
        return; // already reported and still standing
    if (diagnosis.kind == DiagnosisKind::Hang && hangBegan(diagnosis) >= m_endingSince)
        return; // the stillness of ranks being ended
    if (diagnosis.kind == DiagnosisKind::Hang)
        m_hangStill.insert(diagnosis.key, newestMove(diagnosis));
    if (it != m_all.end())
        *it = diagnosis;
    else
        m_all.append(diagnosis);
    changed.append(diagnosis);
}

void RunDiagnostics::resolve(const QString& key, double now, QVector<Diagnosis>& changed) {
    for (Diagnosis& d : m_all)
        if (d.key == key && !d.resolved) {
            d.resolved = true;
            d.time = now;
            changed.append(d);
        }
}

// Runs ten times a second over every rank, so its cost is kept to O(ranks x window + ranks log ranks): a job of
// thousands of ranks is where a straggler is hardest to find by hand.
void RunDiagnostics::checkStragglers(double now, QVector<Diagnosis>& changed) {
    struct Window {
        int rank = -1;
        double median = 0.0;
        double lowerQuartile = 0.0;
        int steps = 0;
        double seconds = 0.0;
    };
    std::vector<Window> windows; // in rank order
    double slowest = 0.0;
    std::vector<double> values;
    for (auto it = m_ranks.cbegin(); it != m_ranks.cend(); ++it) {
        const int steps = static_cast<int>(it->window.size());
        // A full window only: enough steps and enough time (or the most steps kept, whatever they took).
        if (steps < m_options.stragglerWindow ||
            (steps < m_options.stragglerMaxSteps && it->windowMs < m_options.stragglerSeconds * 1000.0))
            continue;
        values.clear();
        for (const RankState::Step& step : it->window)
            values.push_back(step.computeMs);
        const auto quartile = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 4);
        std::nth_element(values.begin(), quartile, values.end());
        const double lowerQuartile = *quartile;
        windows.push_back({it.key(), median(values), lowerQuartile, steps, it->windowMs / 1000.0});
        slowest = std::max(slowest, windows.back().median);
    }
    if (windows.size() < 2)
        return;
    // The median of the others' medians: the medians sorted once, and the rank's own left out by its place.
    std::vector<double> sorted;
    sorted.reserve(windows.size());
    for (const Window& window : windows)
        sorted.push_back(window.median);
    std::sort(sorted.begin(), sorted.end());
    const size_t others = sorted.size() - 1;
    for (const Window& window : windows) {
        const size_t own =
            static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), window.median) - sorted.begin());
        const auto other = [&](size_t k) { return sorted[k < own ? k : k + 1]; };
        const double reference =
            others % 2 == 1 ? other(others / 2) : (other(others / 2 - 1) + other(others / 2)) / 2.0;
        if (reference <= 0.0)
            continue;
        const double ratio = window.median / reference;
        const QString key = QStringLiteral("straggler:%1").arg(window.rank);
        // Sustained: three quarters of its window above the factor, not a median pulled up by a few slow steps.
        // And the one the others wait for: in synchronous data parallelism that is the slowest rank, so a rank
        // merely slower than the median (a busy core's neighbour) is not blamed while a slower one holds all up.
        const bool sustained = window.lowerQuartile / reference >= m_options.stragglerFactor;
        const bool waitedFor = window.median >= m_options.stragglerSlowestShare * slowest;
        if (ratio >= m_options.stragglerFactor && sustained && waitedFor)
            report({DiagnosisKind::Straggler,
                    key,
                    {window.rank},
                    m_hosts.value(window.rank),
                    now,
                    QStringLiteral("%1 is a straggler: it computes %2x as long as the median of the others "
                                   "(%3 ms vs %4 ms per step over its last %5 steps, %6 s); the others wait for it")
                        .arg(where(window.rank))
                        .arg(ratio, 0, 'f', 2)
                        .arg(window.median, 0, 'f', 0)
                        .arg(reference, 0, 'f', 0)
                        .arg(window.steps)
                        .arg(window.seconds, 0, 'f', 1),
                    false},
                   changed);
        else if (ratio < m_options.stragglerRecovered)
            resolve(key, now, changed);
    }
}

namespace {

// Which replicas are apart, from each rank's parameter checksum: the ranks outside the largest group of equal
// checksums, when that group is larger than every other (a faulty GPU's rank among healthy ones); else all of
// them, for nothing says which replica is wrong (two replicas, or no majority). NaN checksums (replicas whose
// parameters blew up) are one group: replicas that all blew up alike are not apart.
struct ReplicaSplit {
    QVector<int> apart; // at fault, in rank order
    QVector<int> agree; // the majority, empty without one
    QString words;      // "rank 2 on node-b (checksum 1.5000001) differs from ranks 0-1 (checksum 1.5)"
};

ReplicaSplit splitReplicas(const QMap<int, double>& checksums, const std::function<QString(int)>& where) {
    QVector<QPair<double, QVector<int>>> groups; // by checksum, in the order of their first rank
    for (auto it = checksums.cbegin(); it != checksums.cend(); ++it) {
        const auto same = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
            return g.first == *it || (std::isnan(g.first) && std::isnan(*it));
        });
        (same == groups.end() ? groups.emplace_back(*it, QVector<int>{}).second : same->second).append(it.key());
    }
    const auto named = [&](const QVector<int>& ranks) {
        return ranks.size() == 1 ? where(ranks.front()) : QStringLiteral("ranks %1").arg(formatRankList(ranks));
    };
    const auto checksum = [](double value) {
        return QStringLiteral("checksum ") + QString::number(value, 'g', QLocale::FloatingPointShortest);
    };
    qsizetype largest = 0;
    bool majority = true;
    for (qsizetype i = 1; i < groups.size(); ++i) {
        if (groups[i].second.size() > groups[largest].second.size()) {
            largest = i;
            majority = true;
        } else if (groups[i].second.size() == groups[largest].second.size()) {
            majority = false;
        }
    }
    ReplicaSplit split;
    QStringList apart;
    for (qsizetype i = 0; i < groups.size(); ++i) {
        if (majority && i == largest)
            continue;
        split.apart += groups[i].second;
        apart << QStringLiteral("%1 (%2)").arg(named(groups[i].second), checksum(groups[i].first));
    }
    std::sort(split.apart.begin(), split.apart.end());
    if (majority) {
        split.agree = groups[largest].second;
        split.words = QStringLiteral("%1 %2 from %3 (%4)")
                          .arg(apart.join(QStringLiteral(", ")),
                               split.apart.size() == 1 ? QStringLiteral("differs") : QStringLiteral("differ"),
                               named(split.agree), checksum(groups[largest].first));
    } else {
        split.words =
            QStringLiteral("%1: no majority says which replica is wrong").arg(apart.join(QStringLiteral(", ")));
    }
    return split;
}

} // namespace

void RunDiagnostics::checkChecksums(double now, QVector<Diagnosis>& changed) {
    if (m_ranks.size() < 2)
        return;
    QMap<int, double> checksums;
    for (auto it = m_ranks.cbegin(); it != m_ranks.cend(); ++it) {
        if (!it->endChecksum)
            return; // not every rank has ended well yet
        checksums.insert(it.key(), *it->endChecksum);
    }
    const ReplicaSplit split = splitReplicas(checksums, [this](int rank) { return where(rank); });
    if (split.apart.isEmpty())
        return;
    Diagnosis found{DiagnosisKind::Divergence,
                    QStringLiteral("divergence:end"),
                    split.apart + split.agree,
                    split.apart.size() == 1 ? m_hosts.value(split.apart.front()) : QString(),
                    now,
                    QStringLiteral("the replicas ended with different parameters: %1").arg(split.words),
                    false,
                    int(split.apart.size())};
    report(found, changed);
}

// A replica check is reported once every rank has said what it found, or two heartbeat intervals after the first
// did (a rank that died meanwhile). The first check that found the replicas apart is the one: later ones find the
// same replicas apart still.
void RunDiagnostics::checkReplicaChecks(double now, QVector<Diagnosis>& changed) {
    if (m_replicaChecks.isEmpty())
        return;
    const qint64 step = m_replicaChecks.firstKey();
    const ReplicaCheck& check = m_replicaChecks.first();
    if (check.checksums.size() < m_ranks.size() && now - check.firstSaid < 2 * heartbeatSeconds())
        return;
    const ReplicaSplit split = splitReplicas(check.checksums, [this](int rank) { return where(rank); });
    QVector<int> ranks = split.apart.isEmpty() ? check.checksums.keys().toVector() : split.apart + split.agree;
    Diagnosis found{DiagnosisKind::Divergence,
                    QStringLiteral("divergence:check"),
                    ranks,
                    split.apart.size() == 1 ? m_hosts.value(split.apart.front()) : QString(),
                    now,
                    QStringLiteral("replicas diverged at step %1: %2")
                        .arg(step)
                        .arg(split.apart.isEmpty() ? QStringLiteral("the ranks' parameters differ") : split.words),
                    false,
                    int(split.apart.isEmpty() ? ranks.size() : split.apart.size())};
    report(found, changed);
    m_replicaChecks.clear();
}

} // namespace rankscope
