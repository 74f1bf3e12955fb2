// SPDX-License-Identifier: MIT
#pragma once

#include "core/jobspec.h"
#include "core/runstore.h"
#include "core/stacks.h"
#include "core/trainerevent.h"
#include "remote/runengine.h"

#include <QHash>
#include <QObject>
#include <QVector>

#include <optional>


namespace rankscope::gui {

// The desktop app's one run at a time: the engine every front end uses, and the coalescing between it and
// the views. Events go straight on (the run view queues them for its own tick); log lines are gathered
// and handed over as one batch when the owner calls flush() (the main window: every 100 ms, on the run view's
// light ticks), however many the engine delivered in between.
class RunSession final : public QObject {
    Q_OBJECT

public:
    RunSession(RunStore* store, remote::EngineOptions options, QObject* parent = nullptr);
    ~RunSession() override;

    bool launch(const JobSpec& job, RunMode mode, QString* error);
    bool launch(const JobSpec& job, RunMode mode, const remote::LaunchOptions& options, QString* error);
    bool attach(const QString& runId, QString* error); // follow a run that goes on on its nodes
    bool open(const QString& runId, QString* error);   // a stored run, offline
    void stop();
    void detach();

    [[nodiscard]] bool isActive() const { return m_engine->isActive(); }
    [[nodiscard]] const RunRecord& record() const { return m_engine->record(); }
    // rank -> the host that runs it ("local" for this machine)
    [[nodiscard]] remote::RunEngine* engine() const { return m_engine; }
    [[nodiscard]] RunStore* store() const { return m_store; }
    // Hands over the log lines gathered so far, as one batch (logBatch); nothing when there are none.
    void flush();
    // Every rank's native stacks now, merged (stacksCaptured); only while a run is followed.
    bool captureStacks(QString* error = nullptr) { return m_engine->captureStacks(error); }

signals:
    // Before a run's first data: views clear themselves and learn which host runs which rank.
    void runStarting(const rankscope::RunRecord& record);
    void events(const QVector<rankscope::TrainerEvent>& events);
    void logBatch(const QVector<rankscope::RankLogLine>& lines);
    void rankExited(int rank, const QString& host, int status, bool stopped); // stopped: by the teardown
    // Straight on, like events: about one per GPU per second, and the charts draw on the run view's tick.
    void gpuSamples(const QVector<rankscope::GpuSample>& samples);
    void gpuTelemetryError(const QString& host, const QString& message);
    void diagnoses(const QVector<rankscope::Diagnosis>& diagnoses);
    // A merged stack capture and the file it is stored in: the engine's, or, when a run is opened or
    // attached, the newest one stored with it.
    void stacksCaptured(const rankscope::StackTree& tree, const QString& path);
    void stacksError(const QString& message);
    // What NCCL's lines said on each rank so far (RunEngine::ncclFacts), at most once a second.
    void ncclFacts(const QVector<rankscope::RankNcclFacts>& perRank);
    void message(const QString& text); // progress of the launch, lost and restored links, teardown
    void finished(const rankscope::RunRecord& record);

private:
    bool refuseWhileActive(QString* error) const;
    bool replay(const QString& runId, bool follow, QString* error);

    RunStore* m_store;
    remote::RunEngine* m_engine;
    QVector<RankLogLine> m_pendingLines;
};

} // namespace rankscope::gui
