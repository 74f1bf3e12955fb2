// SPDX-License-Identifier: MIT
#include "runmetrics.h"

#include <rankscope/event_schema.h>

#include <QFile>
#include <QSaveFile>
#include <QTextStream>

#include <algorithm>
#include <cmath>

namespace rankscope::gui {

namespace {

constexpr double kRateWindowSeconds = 20.0;
constexpr int kMaxPendingMeans = 1024; // a hung rank must not make the mean wait for ever

constexpr std::array<std::string_view, kStepPartCount> kPartFields = {
    schema::step::kDataMs, schema::step::kForwardMs, schema::step::kBackwardMs, schema::step::kCommWaitMs,
    schema::step::kOptimizerMs};

QString csvNumber(double value) {
    if (std::isnan(value))
        return QStringLiteral("nan");
    if (std::isinf(value))
        return value > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    return QString::number(value, 'g', 9);
}

QString csvText(QString text) {
    if (!text.contains(QLatin1Char(',')) && !text.contains(QLatin1Char('"')) && !text.contains(QLatin1Char('\n')))
        return text;
    return QLatin1Char('"') + text.replace(QLatin1Char('"'), QLatin1String("\"\"")) + QLatin1Char('"');
}

QString formatDuration(double seconds) {
    const qint64 s = qint64(std::llround(seconds));
    if (s < 90)
        return QStringLiteral("%1 s").arg(s);
    if (s < 90 * 60)
        return QStringLiteral("%1 min").arg(qint64(std::llround(seconds / 60.0)));
    return QStringLiteral("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
}

} // namespace

QString stepPartName(StepPart part) {
    switch (part) {
    case StepPart::Data:
        return QStringLiteral("data");
    case StepPart::Forward:
        return QStringLiteral("forward");
    case StepPart::Backward:
        return QStringLiteral("backward");
    case StepPart::CommWait:
        return QStringLiteral("comm wait");
    case StepPart::Optimizer:
        return QStringLiteral("optimizer");
    }
    return {};
}

QString formatProgress(const RunProgress& p) {
    QStringList parts;
    if (p.epochs > 0)
        parts << QStringLiteral("epoch %1/%2").arg(p.epoch).arg(p.epochs);
    else
        parts << QStringLiteral("epoch %1").arg(p.epoch);
    if (p.totalSteps > 0)
        parts << QStringLiteral("step %1/%2").arg(p.step).arg(p.totalSteps);
    else
        parts << QStringLiteral("step %1").arg(p.step);
    if (p.stepsPerSecond)
        parts << QStringLiteral("%1 it/s").arg(*p.stepsPerSecond, 0, 'f', *p.stepsPerSecond < 10 ? 2 : 1);
    if (!p.outcome.isEmpty())
        parts << (p.outcome == QLatin1String("finished") ? QStringLiteral("done") : p.outcome);
    else if (p.done)
        parts << (p.finishedOk ? QStringLiteral("done") : QStringLiteral("ended"));
    else if (p.secondsLeft)
        parts << QStringLiteral("~%1 left").arg(formatDuration(*p.secondsLeft));
    return parts.join(QStringLiteral(" · "));
}

RunMetrics::RunMetrics(QObject* parent) : QObject(parent) {
    setWindow(m_window);
}

void RunMetrics::setWindow(int steps) {
    m_window = std::max(steps, 16);
    for (RankSeries& series : m_ranks) {
        series.loss.setCapacity(m_window);
        series.imagesPerSec.setCapacity(m_window);
        for (SeriesBuffer& part : series.partsMs)
            part.setCapacity(m_window);
        while (series.rows.size() > size_t(m_window))
            series.rows.pop_front();
    }
    for (SeriesBuffer& part : m_meanParts)
        part.setCapacity(m_window);
}

const RunMetrics::RankSeries* RunMetrics::rank(int rank) const {
    const auto found = m_ranks.constFind(rank);
    return found != m_ranks.cend() ? &*found : nullptr;
}

RunMetrics::RankSeries& RunMetrics::ensure(int rank) {
    auto found = m_ranks.find(rank);
    if (found != m_ranks.end())
        return *found;
    RankSeries& series = *m_ranks.insert(rank, RankSeries{});
    series.loss.setCapacity(m_window);
    series.imagesPerSec.setCapacity(m_window);
    for (SeriesBuffer& part : series.partsMs)
        part.setCapacity(m_window);
    return series;
}

void RunMetrics::addEvents(const QVector<TrainerEvent>& events) {
    if (events.isEmpty())
        return;
    m_summary.add(events);
    if (std::any_of(events.cbegin(), events.cend(),
                    [](const TrainerEvent& e) { return e.type == TrainerEventType::Start; }))
        for (const RankState& state : m_summary.ranks()) {
            m_totalSteps = std::max(m_totalSteps, state.totalSteps);
            m_worldSize = std::max(m_worldSize, qsizetype(state.worldSize));
        }
    for (const TrainerEvent& event : events) {
        RankSeries& series = ensure(event.rank);
        m_lastTime = std::max(m_lastTime, event.time);
        switch (event.type) {
        case TrainerEventType::Step:
            addStep(event);
            break;
        case TrainerEventType::Eval: {
            const QPointF point(double(event.integer(schema::eval::kEpoch)), event.number(schema::eval::kValAccuracy));
            // Every rank reports the same all-reduced value: keep one point per epoch.
            const auto at = std::find_if(m_valAccuracy.begin(), m_valAccuracy.end(),
                                         [&](const QPointF& p) { return p.x() == point.x(); });
            if (at == m_valAccuracy.end() && std::isfinite(point.y()))
                m_valAccuracy.append(point);
            break;
        }
        case TrainerEventType::End:
            series.ended = true;
            break;
        case TrainerEventType::Error:
            if (event.boolean(schema::error::kFatal, true))
                series.ended = true;
            break;
        default:
            break;
        }
    }
    flushMeans(false);
    emit changed();
}

void RunMetrics::addStep(const TrainerEvent& event) {
    RankSeries& series = m_ranks[event.rank];
    StepRow row;
    row.step = event.integer(schema::step::kStep);
    row.epoch = event.integer(schema::step::kEpoch);
    row.time = event.time;
    row.loss = float(event.number(schema::step::kLoss));
    row.imagesPerSec = float(event.number(schema::step::kImagesPerSec));
    row.stepMs = float(event.number(schema::step::kStepMs));
    // A step whose mean is drawn already (this rank's report came after the others' had made it final) stays out
    // of it: the mean's line goes forward only.
    MeanAccumulator* mean = row.step > m_lastMeanStep ? &m_pendingMeans[row.step] : nullptr;
    for (int i = 0; i < kStepPartCount; ++i) {
        row.partsMs[i] = float(event.number(kPartFields[i]));
        series.partsMs[i].append(QPointF(double(row.step), double(row.partsMs[i])));
        if (mean && std::isfinite(row.partsMs[i]))
            mean->sum[i] += row.partsMs[i];
    }
    if (mean)
        ++mean->count;
    const double x = double(row.step);
    series.loss.append(QPointF(x, double(row.loss)));
    series.imagesPerSec.append(QPointF(x, double(row.imagesPerSec)));
    series.rows.push_back(row);
    if (series.rows.size() > size_t(m_window))
        series.rows.pop_front();
    series.lastStep = std::max(series.lastStep, row.step);

    const qint64 furthest = m_rateSamples.empty() ? row.step : std::max(m_rateSamples.back().second, row.step);
    m_rateSamples.emplace_back(event.time, furthest);
    while (m_rateSamples.size() > 2 && m_rateSamples.front().first < event.time - kRateWindowSeconds)
        m_rateSamples.pop_front();
}

// A step's mean is final once every rank still running has reported it; while a rank of the world the start
// events said has not been heard from, none is (a node whose stream starts late).
void RunMetrics::flushMeans(bool all) {
    qint64 complete = std::numeric_limits<qint64>::max();
    for (const RankSeries& series : std::as_const(m_ranks)) {
        if (!series.ended)
            complete = std::min(complete, series.lastStep);
    }
    if (m_ranks.size() < m_worldSize)
        complete = 0;
    while (!m_pendingMeans.isEmpty()) {
        const auto first = m_pendingMeans.begin();
        if (!all && first.key() > complete && m_pendingMeans.size() <= kMaxPendingMeans)
            break;
        for (int i = 0; i < kStepPartCount; ++i)
            m_meanParts[i].append(QPointF(double(first.key()), first->sum[i] / first->count));
        m_lastMeanStep = first.key();
        m_pendingMeans.erase(first);
    }
}

void RunMetrics::rankExited(int rank, int status) {
    Q_UNUSED(status);
    ensure(rank).ended = true;
    flushMeans(false);
    emit changed();
}

RunProgress RunMetrics::progress(std::optional<double> now) const {
    RunProgress p;
    bool anyRunning = false;
    bool allOk = true;
    for (const RankState& state : m_summary.ranks()) {
        allOk = allOk && state.status == RankStatus::FinishedOk;
        p.epoch = std::max(p.epoch, state.epoch);
        p.epochs = std::max(p.epochs, state.epochs);
        p.step = std::max(p.step, state.step);
        p.totalSteps = std::max(p.totalSteps, state.totalSteps);
        const RankSeries* series = rank(state.rank);
        if (state.status == RankStatus::Running && !(series && series->ended))
            anyRunning = true;
    }
    p.done = !m_summary.ranks().isEmpty() && !anyRunning;
    p.finishedOk = p.done && allOk;
    if (m_rateSamples.size() >= 2) {
        const auto& [t0, s0] = m_rateSamples.front();
        const auto& [t1, s1] = m_rateSamples.back();
        if (t1 > t0 && s1 > s0) {
            // A step late by more than a step's time counts against the rate from then on: no jitter between
            // steps, and a rate that falls while none comes.
            const double perStep = (t1 - t0) / double(s1 - s0);
            const double until = !p.done && now && *now - t1 > perStep ? *now - perStep : t1;
            p.stepsPerSecond = double(s1 - s0) / (until - t0);
        }
    }
    if (p.stepsPerSecond && p.totalSteps > 0)
        p.secondsLeft = double(std::max<qint64>(p.totalSteps - p.step, 0)) / *p.stepsPerSecond;
    return p;
}

void RunMetrics::addGpuSamples(const QVector<GpuSample>& samples) {
    if (samples.isEmpty())
        return;
    for (const GpuSample& sample : samples) {
        if (!GpuSample::has(sample.time))
            continue;
        if (m_gpus.isEmpty())
            m_gpuEpoch = sample.time;
        const QString name = QStringLiteral("%1/gpu%2").arg(sample.node).arg(sample.index);
        auto found = m_gpus.find(name);
        if (found == m_gpus.end()) {
            found = m_gpus.insert(name, GpuSeries{});
            found->utilization.setCapacity(m_window);
            found->memory.setCapacity(m_window);
            found->power.setCapacity(m_window);
        }
        const double x = sample.time - m_gpuEpoch;
        if (GpuSample::has(sample.utilizationPercent))
            found->utilization.append(QPointF(x, sample.utilizationPercent));
        if (GpuSample::has(sample.memoryUsedMiB))
            found->memory.append(QPointF(x, sample.memoryUsedMiB));
        if (GpuSample::has(sample.powerWatts))
            found->power.append(QPointF(x, sample.powerWatts));
    }
    emit changed();
}

QMap<QString, const SeriesBuffer*> RunMetrics::gpuSeries(GpuMetric metric) const {
    QMap<QString, const SeriesBuffer*> out;
    for (auto it = m_gpus.cbegin(); it != m_gpus.cend(); ++it) {
        const SeriesBuffer& buffer = metric == GpuMetric::Utilization ? it->utilization
                                     : metric == GpuMetric::Memory    ? it->memory
                                                                      : it->power;
        out.insert(it.key(), &buffer);
    }
    return out;
}

void RunMetrics::clear() {
    m_ranks.clear();
    m_summary = RunSummary{};
    for (SeriesBuffer& part : m_meanParts)
        part.clear();
    m_pendingMeans.clear();
    m_valAccuracy.clear();
    m_rateSamples.clear();
    m_lastTime = 0.0;
    m_totalSteps = 0;
    m_worldSize = 0;
    m_lastMeanStep = 0;
    m_gpus.clear();
    emit changed();
}

QString RunMetrics::toCsv() const {
    QString out;
    QTextStream stream(&out);
    stream << "rank,host,epoch,step,time,loss,images_per_sec,step_ms";
    for (std::string_view field : kPartFields)
        stream << ',' << QLatin1String(field.data(), qsizetype(field.size()));
    stream << '\n';
    for (auto it = m_ranks.cbegin(); it != m_ranks.cend(); ++it) {
        const RankState* state = m_summary.rank(it.key());
        const QString host = csvText(state ? state->host : QString());
        for (const StepRow& row : it->rows) {
            stream << it.key() << ',' << host << ',' << row.epoch << ',' << row.step << ','
                   << QString::number(row.time, 'f', 3) << ',' << csvNumber(row.loss) << ','
                   << csvNumber(row.imagesPerSec) << ',' << csvNumber(row.stepMs);
            for (float part : row.partsMs)
                stream << ',' << csvNumber(part);
            stream << '\n';
        }
    }
    stream.flush();
    return out;
}

bool RunMetrics::exportCsv(const QString& path, QString* error) const {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) {
        if (error)
            *error = QStringLiteral("cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    file.write(toCsv().toUtf8());
    if (!file.commit()) {
        if (error)
            *error = QStringLiteral("cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    return true;
}

} // namespace rankscope::gui
