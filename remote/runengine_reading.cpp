// SPDX-License-Identifier: MIT
// RunEngine: what the followed run says, live or replayed from the run store: the ranks' streams (events, log lines,
// NCCL's lines and PyTorch's watchdog), the nodes' GPU samples, the ranks' exits and who failed first, the
// diagnoses, and the stacks captured of a hang. The run's course on its nodes is in runengine.cpp.
#include "remote/runengine.h"

#include "core/arrivalorder.h"

#include <QDateTime>
#include <QFile>
#include <QJsonObject>
#include <QMetaObject>
#include <QTimer>

#include <rankscope/event_schema.h>

#include <algorithm>

namespace rankscope::remote {

void RunEngine::startDiagnosis() {
    m_diagnostics.setRankHosts(m_record.rankHosts());
    m_diagnosisTimer->start();
}

void RunEngine::checkNccl(double now, bool force) {
    if (!m_nccl.hasNewBytes() || (!force && m_ncclClock.isValid() && m_ncclClock.elapsed() < 1000))
        return;
    m_ncclClock.start();
    const QVector<Diagnosis> changed = m_nccl.changedFindings(m_record.rankHosts(), int(m_record.nodes.size()), now);
    if (!changed.isEmpty())
        emit diagnoses(changed);
    emit ncclFacts(m_nccl.rankFacts());
}

void RunEngine::diagnose(double now) {
    // Each node's ranks are known as far as this machine's copy of the node goes: a link that is down (before SSH
    // gives up on it), a node not caught up since an attach or a reconnect. Their stillness past it is the copy's,
    // no hang (nor a reason to stop the ranks in gdb for their stacks).
    for (int node = 0; node < std::min(m_workers.size(), m_record.nodes.size()); ++node)
        if (const NodeWorker* worker = m_workers[node])
            for (const int rank : m_record.nodes[node].ranks)
                m_diagnostics.setRankKnownUntil(rank, worker->copiedUntil());
    checkNccl(now, m_finished);
    m_diagnostics.setEndingSince(endingSince()); // no hang is made of the ranks' stillness while they are ended
    QVector<Diagnosis> changed = m_diagnostics.update(now);
    if (changed.isEmpty())
        return;
    // A rank stopped in a debugger is no hang to look into, and its peers wait for it as they should. Only where it
    // is the one stuck (or the one waited for is not known: a hang known from watchdog timeouts): a hang of another
    // rank that the debugged one waits on, as the others do, is a hang.
    const int debugRank = m_record.debugRank;
    for (Diagnosis& diagnosis : changed)
        if (debugRank >= 0 && diagnosis.kind == DiagnosisKind::Hang &&
            (diagnosis.culprits > 0 ? diagnosis.culpritRanks().contains(debugRank)
                                    : !diagnosis.ranks.contains(debugRank)))
            diagnosis.message +=
                QStringLiteral(" (rank %1 is under the debugger: the others wait for it while it is stopped)")
                    .arg(debugRank);
    emit diagnoses(changed);
    // Not while the ranks are being ended: their stacks would show the teardown, or nothing.
    if (!m_options.captureStacksOnHang || !isActive() || m_offlineEvents || debugRank >= 0 || m_tearingDown ||
        m_stopRequested)
        return;
    for (const Diagnosis& diagnosis : changed) {
        if (diagnosis.kind == DiagnosisKind::Hang && !diagnosis.resolved && !m_stackedHangs.contains(diagnosis.key)) {
            m_stackedHangs.insert(diagnosis.key);
            captureStacks();
            return; // one capture shows every hang of this moment
        }
    }
}

bool RunEngine::captureStacks(QString* error) {
    if (!isActive()) {
        if (error)
            *error = QStringLiteral("no run is being followed");
        return false;
    }
    const int job = ++m_stackJob;
    // The debugger holds each rank for a moment, and its peers wait for it: no hang of their stillness meanwhile.
    const double now = static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000.0;
    m_diagnostics.pauseRanks(now);
    m_stackTree = StackTree();
    m_stackTree.runId = m_record.id;
    m_stackNodesPending.clear();
    const int timeout = m_options.stackTimeoutSeconds;
    for (int i = 0; i < m_workers.size(); ++i) {
        NodeWorker* worker = m_workers[i];
        if (!worker)
            continue;
        m_stackNodesPending.insert(i);
        QMetaObject::invokeMethod(
            worker, [worker, job, timeout] { worker->captureStacks(job, timeout); }, Qt::QueuedConnection);
    }
    if (m_stackNodesPending.isEmpty())
        m_diagnostics.resumeRanks(now);
    return true;
}

void RunEngine::onStacksCaptured(int node, int job, const QVector<RankStackCapture>& captures) {
    if (job != m_stackJob || !m_stackNodesPending.remove(node))
        return; // superseded
    const QString host = m_record.nodes.value(node).host;
    for (const RankStackCapture& capture : captures) {
        if (capture.error.isEmpty())
            m_stackTree.addRank(capture.rank, capture.stacks);
        else
            m_stackTree.addError(capture.rank, QStringLiteral("%1: %2").arg(host, capture.error));
        if (!capture.note.isEmpty())
            m_stackTree.addNote(capture.rank, QStringLiteral("%1: %2").arg(host, capture.note));
    }
    if (!m_stackNodesPending.isEmpty())
        return;
    const QDateTime now = QDateTime::currentDateTimeUtc();
    m_diagnostics.resumeRanks(static_cast<double>(now.toMSecsSinceEpoch()) / 1000.0);
    m_stackTree.capturedAt = static_cast<double>(now.toMSecsSinceEpoch()) / 1000.0;
    // A capture with no stack of any rank (every process gone, or no debugger) is reported, not stored: the run's
    // stored captures are the ones worth opening.
    QString path;
    if (!m_stackTree.isEmpty()) {
        QString error;
        path = m_store->saveStacks(m_record.id, m_stackTree.toJson(), now, &error);
        if (path.isEmpty())
            emit stacksError(error);
    } else {
        emit stacksError(QStringLiteral("no stacks from any rank"));
    }
    emit stacksCaptured(m_stackTree, path);
}

void RunEngine::replayStored() {
    replayStreams();
    replayExits();
    for (const KernelLogCapture& capture : m_store->kernelLogs(m_record.id))
        m_diagnostics.addKernelLog(capture);
}

void RunEngine::replayStreams() {
    // Everything already on disk goes through the same parsers first, so that a front end attaching to a
    // run sees its history, and a line cut by the interruption is completed by the bytes that follow. In the
    // order the bytes arrived, each piece with its time: the ranks' lines interleave as they did live.
    QVector<int> ranks;
    for (const RunNodeRecord& node : std::as_const(m_record.nodes))
        ranks += node.ranks;
    const QVector<RankStream> streams(std::begin(kRankStreams), std::end(kRankStreams));
    visitStoredPieces(*m_store, m_record.id, ranks, streams,
                      [this](const StoredPiece& piece, QByteArrayView bytes, bool /*last*/) {
                          deliver(m_replayParsers.feed(piece.rank, piece.stream, bytes, piece.arrivedAt));
                      });
    for (int node = 0; node < m_record.nodes.size(); ++node) {
        QFile file(m_store->nodeStreamPath(m_record.id, node, kGpuStream));
        if (file.open(QIODevice::ReadOnly))
            parseGpu(node, file.readAll());
        QFile errors(m_store->nodeStreamPath(m_record.id, node, kGpuErrStream));
        if (errors.open(QIODevice::ReadOnly))
            parseGpuErrors(node, errors.readAll());
    }
}

void RunEngine::replayExits() {
    for (auto it = m_record.exits.cbegin(); it != m_record.exits.cend(); ++it) {
        m_diagnostics.rankExited(it.key(), it.value().status); // once more is harmless
        emit rankExited(it.key(), hostOfRank(it.key()), it.value().status, it.value().stopped);
    }
}

void RunEngine::chooseStreamsToRead() {
    // NCCL writes its INFO and WARN lines on stdout. A job on Gloo has none: it is spared the parsing, unless its
    // ranks get NCCL_DEBUG, from the job's env or from a verbose debug run (the rank plan's rule, verbose by default).
    const QJsonObject trainer = m_record.job.value(QStringLiteral("trainer")).toObject();
    const bool verboseDebug =
        m_record.mode == QLatin1String("debug") &&
        m_record.job.value(QStringLiteral("debug")).toObject().value(QStringLiteral("verbose")).toBool(true);
    m_watchNccl = trainer.value(QStringLiteral("backend")).toString() != QLatin1String("gloo") || verboseDebug ||
                  m_record.job.value(QStringLiteral("env")).toObject().contains(QStringLiteral("NCCL_DEBUG"));
    // PyTorch's NCCL watchdog writes on stderr (readWatchdog): read in every job, whose stderr is the trainer's few
    // lines, since a job's backend can also come from its extra arguments.
    for (const RunNodeRecord& node : std::as_const(m_record.nodes))
        for (const int rank : node.ranks) {
            m_replayParsers.keepRaw(rank, RankStream::Err);
            if (m_watchNccl)
                m_replayParsers.keepRaw(rank, RankStream::Out);
        }
}

RankStreamParsers RunEngine::parsersFor(const QVector<int>& ranks) {
    return m_replayParsers.take(ranks);
}

void RunEngine::onParsed(int /*node*/, int generation, const RankStreamChunk& chunk) {
    if (generation == m_generation)
        deliver(chunk);
}

QByteArrayView RunEngine::storeNodeStream(int node, const QString& stream, qint64 offset, const QByteArray& bytes) {
    QString error;
    qint64 appended = 0;
    if (!m_store->appendNodeStream(m_record.id, node, stream, offset, bytes, &error, &appended)) {
        qWarning("rankscope: %s", qPrintable(error));
        return {};
    }
    return QByteArrayView(bytes).last(appended);
}

void RunEngine::onGpuData(int node, qint64 offset, const QByteArray& bytes) {
    if (const QByteArrayView fresh = storeNodeStream(node, kGpuStream, offset, bytes); !fresh.isEmpty())
        parseGpu(node, fresh);
}

void RunEngine::onGpuErrors(int node, qint64 offset, const QByteArray& bytes) {
    if (const QByteArrayView fresh = storeNodeStream(node, kGpuErrStream, offset, bytes); !fresh.isEmpty())
        parseGpuErrors(node, fresh);
}

void RunEngine::parseGpuErrors(int node, QByteArrayView bytes) {
    const QString host = m_record.nodes.value(node).host;
    for (const LinePiece& piece : m_gpuErrSplitters[node].feed(bytes))
        if (const QString line = QString::fromUtf8(piece.bytes).trimmed(); !line.isEmpty())
            emit gpuTelemetryError(node, host, line);
}

void RunEngine::parseGpu(int node, QByteArrayView bytes) {
    // The supervisor's query has a header; its fields are the fallback should a header ever be missing.
    QVector<GpuSample> samples = m_gpuParsers.try_emplace(node, nvidiaSmiQueryFields()).first->second.feed(bytes);
    if (samples.isEmpty())
        return;
    const RunNodeRecord record = m_record.nodes.value(node);
    const double now = static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000.0;
    for (GpuSample& sample : samples) {
        sample.node = record.name;
        if (!GpuSample::has(sample.time))
            sample.time = now; // output without a timestamp column: placed when it was read
    }
    emit gpuSamples(node, record.host, samples);
}

void RunEngine::deliver(const RankStreamChunk& chunk) {
    const int rank = chunk.rank;
    if (!chunk.events.isEmpty()) {
        // A rank carries on after an error that is not fatal (a replica check that failed, a corrupt checkpoint
        // skipped): what it failed of, if it fails, comes later.
        for (const TrainerEvent& event : chunk.events)
            if (event.type == TrainerEventType::Error && event.boolean(schema::error::kFatal, true) &&
                !m_firstErrors.contains(event.rank))
                m_firstErrors.insert(event.rank,
                                     {QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(event.time * 1000), Qt::UTC),
                                      event.string("kind"), event.string("message")});
        if (m_offlineEvents)
            *m_offlineEvents += chunk.events;
        else
            m_diagnostics.addEvents(chunk.events);
        emit events(chunk.events);
    }
    if (!chunk.decodeErrors.isEmpty())
        emit decodeErrors(rank, chunk.decodeErrors);
    if (chunk.stream == RankStream::Out && m_watchNccl && !chunk.raw.isEmpty())
        m_nccl.feed(rank, chunk.raw);
    if (chunk.stream == RankStream::Err) {
        // A line completes in a chunk that has lines: theirs is its time (0 for a run stored before arrival times
        // were kept: at once).
        if (!chunk.raw.isEmpty())
            readWatchdog(rank, chunk.raw,
                         chunk.lines.isEmpty() ? static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000.0
                                               : chunk.lines.back().receivedAt);
        const bool debugged = m_debug && rank == m_debug->rank();
        for (const RankLogLine& line : chunk.lines) {
            if (debugged)
                m_debug->stderrPiece(line.text.toUtf8(), line.endsLine);
            if (const QString text = line.text.trimmed(); !text.isEmpty())
                m_lastStderrLine.insert(rank, text.left(300));
        }
    }
    if (!chunk.lines.isEmpty())
        emit logLines(chunk.lines);
}

// A collective that PyTorch's NCCL watchdog gave up on ("Watchdog caught collective operation timeout: WorkNCCL(…)"),
// in the rank's stderr: it feeds the hang diagnosis from when its bytes arrived. The rank is the stream's.
void RunEngine::readWatchdog(int rank, QByteArrayView stderrBytes, double arrivedAt) {
    WatchdogLogParser& parser = m_watchdogs[rank];
    const qsizetype known = parser.timeoutsRead().size();
    const qsizetype blamesKnown = parser.desyncBlamesRead().size();
    parser.feed(stderrBytes);
    parser.forgetErrors(); // `inspect` reports them; here only the timeouts and the desync reports count
    for (qsizetype i = blamesKnown; i < parser.desyncBlamesRead().size(); ++i)
        m_diagnostics.addDesyncBlame(parser.desyncBlamesRead().at(i), arrivedAt);
    for (qsizetype i = known; i < parser.timeoutsRead().size(); ++i) {
        const CollectiveTimeout& timeout = parser.timeoutsRead().at(i);
        m_diagnostics.addCollectiveTimeout(rank, timeout, arrivedAt);
        // The watchdog then aborts the rank (SIGABRT) without an error event: it failed of waiting, a consequence
        // (findFirstFailure), not on its own.
        if (!m_firstErrors.contains(rank))
            m_firstErrors.insert(rank,
                                 {arrivedAt > 0.0 ? QDateTime::fromMSecsSinceEpoch(qint64(arrivedAt * 1000.0), Qt::UTC)
                                                  : QDateTime::currentDateTimeUtc(),
                                  QStringLiteral("collective"),
                                  QStringLiteral("NCCL's watchdog timed out in ") + describeTimeout(timeout)});
    }
}

void RunEngine::onRankExited(int /*node*/, int rank, int status, double unixTime) {
    if (m_record.exits.contains(rank))
        return; // seen before this attach
    const QDateTime when = QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(unixTime * 1000), Qt::UTC);
    if (status != 0)
        noticeStopRequest();
    const bool genuine = status != 0 && !m_stopRequested &&
                         (!m_tearingDown || when < m_teardownAt ||
                          killedBeforeTheTeardownCould(RankExit{status, when}, m_teardownAt, teardownGraceMs()));
    const bool stopped =
        endedByTeardown(rank, RankExit{status, when}) || consequenceOfFirstFailure(rank, RankExit{status, when});
    m_record.exits.insert(rank, RankExit{status, when, stopped});
    m_diagnostics.rankExited(rank, status);
    emit rankExited(rank, hostOfRank(rank), status, stopped);
    if (m_debug && rank == m_debug->rank())
        m_debug->rankExited(status);
    if (genuine) {
        // Before the teardown, which the worker runs after it: the node's kernel log as the death left it.
        m_kernelLogs->rankDied(m_record, rank, status, m_firstErrors.contains(rank),
                               m_workers.value(m_record.nodeOfRank(rank)));
        judgeExits(false); // the first failure, which may be this rank, of peers whose ends were seen first
        // The peers of a failed rank fail in their next collective when it died, but one that is stuck (hung, in a
        // debugger's day-long collectives, or in a NCCL kernel that never learns of the death) would wait for the
        // collective timeout, 30 minutes by default, or forever, with the run's root cause unsaid: end them, in a
        // debug run as in a submitted one.
        if (!m_tearingDown)
            teardown(m_options.failureGraceSeconds);
    }
    saveRecord();
}

void RunEngine::noticeStopRequest() {
    // Another front end (`rankscope-cli stop` beside a `run`) may have asked: the ranks then end by its teardown.
    if (m_stopRequested || m_record.id.isEmpty())
        return;
    m_stopRequestedAt = m_store->stopRequestedAt(m_record.id);
    m_stopRequested = m_stopRequestedAt.isValid();
}

double RunEngine::endingSince() const {
    QDateTime from = endsFrom();
    if (m_offlineEndingSince.isValid() && (!from.isValid() || m_offlineEndingSince < from))
        from = m_offlineEndingSince;
    return from.isValid() ? static_cast<double>(from.toMSecsSinceEpoch()) / 1000.0
                          : std::numeric_limits<double>::infinity();
}

QDateTime RunEngine::endsFrom() const {
    const QDateTime teardown = m_tearingDown ? m_teardownAt : QDateTime();
    if (!m_stopRequestedAt.isValid())
        return teardown;
    return teardown.isValid() ? std::min(teardown, m_stopRequestedAt) : m_stopRequestedAt;
}

bool RunEngine::endedByTeardown(int rank, const RankExit& exit) const {
    const QDateTime from = endsFrom();
    if (exit.status == 0 || exit.status == kLostExitStatus || !from.isValid())
        return false;
    if (erredBefore(rank, from))
        return false;
    if (m_stopRequested)
        return true;
    return exit.seenAt >= from && !killedBeforeTheTeardownCould(exit, from, teardownGraceMs());
}

qint64 RunEngine::teardownGraceMs() const {
    return qint64(m_teardownGraceSeconds) * 1000;
}

bool RunEngine::erredBefore(int rank, const QDateTime& time) const {
    const auto error = m_firstErrors.constFind(rank);
    return error != m_firstErrors.cend() && time.isValid() && error->time < time;
}

// The teardown begins when the engine reads the culprit's exit, tens of milliseconds after its death, while its
// peers' collectives fail at once and its node's supervisor ends the node's other ranks at once: whether such a
// peer erred before the teardown or after it is a race, which is not what makes it a failure or not.
bool RunEngine::consequenceOfFirstFailure(int rank, const RankExit& exit) const {
    const int first = m_record.firstFailedRank;
    if (first < 0 || rank == first || exit.status == 0 || !m_record.exits.contains(first))
        return false;
    const auto ownFailure = [this](int r, const RankExit& e) {
        const auto error = m_firstErrors.constFind(r);
        return failedOnItsOwn(e, error != m_firstErrors.cend() ? &*error : nullptr, m_lastStderrLine.value(r));
    };
    return ownFailure(first, m_record.exits.value(first)) && !ownFailure(rank, exit);
}

void RunEngine::judgeExits(bool final) {
    QHash<int, bool> before;
    for (auto it = m_record.exits.begin(); it != m_record.exits.end(); ++it) {
        before.insert(it.key(), it->stopped);
        if (final && it->stopped && erredBefore(it.key(), endsFrom()))
            it->stopped = false; // a culprit, which noteFailure must see
    }
    noteFailure();
    for (auto it = m_record.exits.begin(); it != m_record.exits.end(); ++it) {
        it->stopped = it->stopped || consequenceOfFirstFailure(it.key(), *it);
        if (it->stopped != before.value(it.key()))
            emit rankExitJudged(it.key(), hostOfRank(it.key()), it->status, it->stopped);
    }
}

void RunEngine::noteFailure() {
    const std::optional<FirstFailure> first =
        findFirstFailure(m_record.exits, m_firstErrors, m_lastStderrLine, endsFrom(), teardownGraceMs());
    if (!first)
        return;
    m_record.firstFailedRank = first->rank;
    m_record.failedAlike = first->alike;
    m_record.summary = describeFirstFailure(*first, hostOfRank(first->rank), m_record.worldSize);
}

} // namespace rankscope::remote
