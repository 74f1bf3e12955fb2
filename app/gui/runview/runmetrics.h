// SPDX-License-Identifier: MIT
#pragma once

#include "seriesbuffer.h"

#include "core/nvidiasmi.h"
#include "core/runsummary.h"
#include "core/trainerevent.h"

#include <QMap>
#include <QObject>
#include <QPair>
#include <QString>
#include <QVector>

#include <array>
#include <deque>
#include <optional>

namespace rankscope::gui {

// The parts of a step's time, in the order the breakdown chart stacks them.
enum class StepPart { Data, Forward, Backward, CommWait, Optimizer };
inline constexpr int kStepPartCount = 5;
[[nodiscard]] QString stepPartName(StepPart part); // "data", "forward", ...

enum class GpuMetric { Utilization, Memory, Power };

// One step of one rank as the trainer reported it: the rows of the CSV export.
struct StepRow {
    qint64 step = 0;
    qint64 epoch = 0;
    double time = 0.0;
    float loss = 0.0f;
    float imagesPerSec = 0.0f;
    float stepMs = 0.0f;
    std::array<float, kStepPartCount> partsMs{};
};

struct RunProgress {
    qint64 epoch = 0;
    qint64 epochs = 0; // 0 when the start events did not say
    qint64 step = 0;   // the furthest rank's global step
    qint64 totalSteps = 0;
    std::optional<double> stepsPerSecond; // over the last rate window
    std::optional<double> secondsLeft;
    bool done = false;       // every rank that started has ended
    bool finishedOk = false; // ... and each with an end event saying "ok" (not failed, not stopped)
    // The run's end as its engine judged it ("finished", "failed", "stopped", "lost"); empty while not known.
    QString outcome;
};
// "epoch 2/5 · step 340/1000 · 12.3 it/s · ~54 s left"; once the run ended, "… · done" (finished) or "… · failed",
// "… · stopped", "… · lost" as its outcome says; without one, "… · done" once every rank finished, "… · ended" once
// all ended but not every one finished
[[nodiscard]] QString formatProgress(const RunProgress& progress);

// The numbers of a live run, per rank, held in bounded buffers: the charts draw from here, the CSV export
// writes from here. Fed with the engine's event batches; emits changed() at most once per batch.
class RunMetrics final : public QObject {
    Q_OBJECT

public:
    struct RankSeries {
        SeriesBuffer loss;         // x: global step
        SeriesBuffer imagesPerSec; // x: global step
        std::array<SeriesBuffer, kStepPartCount> partsMs;
        std::deque<StepRow> rows; // the last window() steps, full resolution
        qint64 lastStep = 0;
        bool ended = false;
    };

    explicit RunMetrics(QObject* parent = nullptr);

    void addEvents(const QVector<rankscope::TrainerEvent>& events);
    void rankExited(int rank, int status);
    // Series per GPU named "node/gpuN"; a value nvidia-smi did not report (NaN) adds no point.
    void addGpuSamples(const QVector<rankscope::GpuSample>& samples);
    void clear();

    // How many recent steps per rank stay at full resolution (series and CSV rows); older chart points are
    // merged into min/max pairs. Bounds memory: about 300 bytes per step per rank.
    void setWindow(int steps);
    [[nodiscard]] int window() const { return m_window; }

    [[nodiscard]] QList<int> ranks() const { return m_ranks.keys(); }
    [[nodiscard]] const RankSeries* rank(int rank) const;
    // The mean over ranks of each part, per step; a step enters when every running rank has passed it (and every
    // rank of the world has been heard from). A rank's step that comes after its mean entered stays out of it.
    [[nodiscard]] const SeriesBuffer& meanPartMs(StepPart part) const { return m_meanParts[int(part)]; }
    [[nodiscard]] const QVector<QPointF>& validationAccuracy() const { return m_valAccuracy; } // x: epoch
    [[nodiscard]] const RunSummary& summary() const { return m_summary; }
    // `now` (Unix seconds): while the run goes on and the next step is later than a step's time, the rate is
    // measured up to then (less a step's time), so that it falls, and the time left grows, while no step comes (a
    // hang); without it, or between steps, up to the newest step.
    [[nodiscard]] RunProgress progress(std::optional<double> now = std::nullopt) const;
    // The run's last step, as its start events say (progress().totalSteps), 0 before they do. Kept as start events
    // come: the charts ask at every tick.
    [[nodiscard]] qint64 totalSteps() const { return m_totalSteps; }

    [[nodiscard]] bool hasGpuSamples() const { return !m_gpus.isEmpty(); }
    // Series per GPU, named "node/gpuN", x: seconds since the first sample.
    [[nodiscard]] QMap<QString, const SeriesBuffer*> gpuSeries(GpuMetric metric) const;

    // rank,host,epoch,step,time,loss,images_per_sec,step_ms,data_ms,...: one row per kept step, by rank and step.
    [[nodiscard]] QString toCsv() const;
    bool exportCsv(const QString& path, QString* error) const;

signals:
    void changed();

private:
    struct MeanAccumulator {
        std::array<double, kStepPartCount> sum{};
        int count = 0;
    };
    struct GpuSeries {
        SeriesBuffer utilization;
        SeriesBuffer memory;
        SeriesBuffer power;
    };

    void addStep(const rankscope::TrainerEvent& event);
    void flushMeans(bool all);
    RankSeries& ensure(int rank);

    QMap<int, RankSeries> m_ranks;
    RunSummary m_summary;
    std::array<SeriesBuffer, kStepPartCount> m_meanParts;
    QMap<qint64, MeanAccumulator> m_pendingMeans; // steps not every running rank has reported yet
    QVector<QPointF> m_valAccuracy;
    std::deque<QPair<double, qint64>> m_rateSamples; // (time, furthest step), the last rate window
    double m_lastTime = 0.0;
    qint64 m_totalSteps = 0;
    qsizetype m_worldSize = 0; // as the start events say; 0 before they do
    qint64 m_lastMeanStep = 0; // the last step of the means drawn
    QMap<QString, GpuSeries> m_gpus;
    double m_gpuEpoch = 0.0;
    int m_window = 5000;
};

} // namespace rankscope::gui
