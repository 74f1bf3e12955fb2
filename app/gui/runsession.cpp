// SPDX-License-Identifier: MIT
#include "runsession.h"

#include <QFile>

namespace rankscope::gui {

RunSession::RunSession(RunStore* store, remote::EngineOptions options, QObject* parent)
    : QObject(parent), m_store(store), m_engine(new remote::RunEngine(store, std::move(options), this)) {
    connect(m_engine, &remote::RunEngine::events, this, &RunSession::events);
    connect(m_engine, &remote::RunEngine::logLines, this,
            [this](const QVector<RankLogLine>& lines) { m_pendingLines += lines; });
    const auto exited = [this](int rank, const QString& host, int status, bool stopped) {
        flush(); // the lines a rank wrote before it ended come before its end
        emit rankExited(rank, host, status, stopped);
    };
    connect(m_engine, &remote::RunEngine::rankExited, this, exited);
    connect(m_engine, &remote::RunEngine::rankExitJudged, this, exited); // the grid's state follows the judgement
    connect(m_engine, &remote::RunEngine::diagnoses, this, &RunSession::diagnoses);
    connect(m_engine, &remote::RunEngine::stacksCaptured, this, &RunSession::stacksCaptured);
    connect(m_engine, &remote::RunEngine::stacksError, this, &RunSession::stacksError);
    connect(m_engine, &remote::RunEngine::ncclFacts, this, &RunSession::ncclFacts);
    connect(m_engine, &remote::RunEngine::gpuSamples, this,
            [this](int, const QString&, const QVector<GpuSample>& samples) { emit gpuSamples(samples); });
    connect(m_engine, &remote::RunEngine::gpuTelemetryError, this,
            [this](int, const QString& host, const QString& message) { emit gpuTelemetryError(host, message); });
    connect(m_engine, &remote::RunEngine::nodeProgress, this,
            [this](int, const QString& host, const QString& text) { emit message(host + QStringLiteral(": ") + text); });
    connect(m_engine, &remote::RunEngine::linkLost, this, [this](int, const QString& host, const QString& text) {
        emit message(QStringLiteral("%1: link lost (%2); the run goes on, reconnecting").arg(host, text));
    });
    connect(m_engine, &remote::RunEngine::linkRestored, this, [this](int, const QString& host) {
        emit message(QStringLiteral("%1: reconnected, catching up").arg(host));
    });
    connect(m_engine, &remote::RunEngine::stopped, this, [this](int left) {
        emit message(left == 0    ? QStringLiteral("stopped: no process of the run is left on any node")
                     : left < 0   ? QStringLiteral("stopped, but a node could not confirm it")
                                  : QStringLiteral("stopped, but %1 process(es) survived").arg(left));
    });
    connect(m_engine, &remote::RunEngine::finished, this, [this](const RunRecord& record) {
        flush();
        emit finished(record);
    });
}

RunSession::~RunSession() {
    // Closing the window leaves a submitted run running on its nodes; reopening the app reattaches.
    if (m_engine->isActive())
        m_engine->detach();
}

void RunSession::flush() {
    if (m_pendingLines.isEmpty())
        return;
    const QVector<RankLogLine> lines = std::exchange(m_pendingLines, {});
    emit logBatch(lines);
}

bool RunSession::refuseWhileActive(QString* error) const {
    if (!m_engine->isActive())
        return false;
    if (error)
        *error = QStringLiteral("run %1 is still being followed: stop or detach it first").arg(record().id);
    return true;
}

bool RunSession::launch(const JobSpec& job, RunMode mode, QString* error) {
    return launch(job, mode, remote::LaunchOptions{}, error);
}

bool RunSession::launch(const JobSpec& job, RunMode mode, const remote::LaunchOptions& options, QString* error) {
    if (refuseWhileActive(error))
        return false;
    m_pendingLines.clear();
    if (!m_engine->launch(job, mode, options, error))
        return false;
    emit runStarting(record()); // the engine's data arrives through queued signals: after this
    return true;
}

bool RunSession::replay(const QString& runId, bool follow, QString* error) {
    if (refuseWhileActive(error))
        return false;
    // Attach and open replay the stored streams synchronously: the views must know the run before that.
    const QString id = m_store->resolveId(runId, error);
    if (id.isEmpty())
        return false;
    const auto stored = m_store->load(id, error);
    if (!stored)
        return false;
    m_pendingLines.clear();
    emit runStarting(*stored);
    const bool ok = follow ? m_engine->attach(id, error) : m_engine->open(id, error);
    flush();
    if (!ok)
        return false;
    // The engine does not replay captures: the stored run's newest one is shown as it was taken.
    QString stacksPath;
    if (const auto stacks = m_store->latestStacks(id, &stacksPath))
        emit stacksCaptured(*stacks, stacksPath);
    return true;
}

bool RunSession::attach(const QString& runId, QString* error) {
    return replay(runId, true, error);
}

bool RunSession::open(const QString& runId, QString* error) {
    return replay(runId, false, error);
}

void RunSession::stop() {
    m_engine->stop();
}

void RunSession::detach() {
    m_engine->detach();
    flush();
}

} // namespace rankscope::gui
