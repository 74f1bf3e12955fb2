// SPDX-License-Identifier: MIT
#include "runview.h"

#include "gpupanel.h"
#include "rankgrid.h"
#include "rankgridmodel.h"
#include "runcharts.h"

#include "core/runstore.h"

#include <QDateTime>
#include <QHBoxLayout>
#include <QLabel>
#include <QSplitter>
#include <QTimer>

#include <algorithm>
#include <QVBoxLayout>

namespace rankscope::gui {

namespace {

// Half ticks of 25 ms: new events are applied every 50 ms, just before the charts draw the loss chart; the charts
// take turns on the half ticks when they hold many points (RunCharts). An event reaches its chart within one
// 50 ms tick plus the engine's 20 ms poll (the pipeline benchmark: p99 128 ms with 100 ms ticks, 91 ms with 50 ms).
constexpr int kHalfTickMs = 25;

double wallClock() {
    return double(QDateTime::currentMSecsSinceEpoch()) / 1000.0;
}

} // namespace

RunView::RunView(QWidget* parent)
    : QWidget(parent), m_metrics(new RunMetrics(this)), m_gridModel(new RankGridModel(this)),
      m_grid(new RankGrid(m_gridModel, this)), m_charts(new RunCharts(m_metrics, this)), m_progress(new QLabel(this)),
      m_stateCounts(new QLabel(this)), m_splitter(new QSplitter(Qt::Horizontal, this)), m_tick(new QTimer(this)),
      m_clock(wallClock) {
    QFont progressFont = m_progress->font();
    progressFont.setPointSizeF(progressFont.pointSizeF() * 1.25);
    progressFont.setBold(true);
    m_progress->setFont(progressFont);
    m_progress->setText(tr("waiting for the first event"));
    m_stateCounts->setObjectName(QStringLiteral("stateCounts"));
    m_stateCounts->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    m_stateCounts->setTextFormat(Qt::RichText);

    auto* header = new QHBoxLayout;
    header->setContentsMargins(6, 2, 6, 2);
    header->addWidget(m_progress);
    header->addStretch(1);
    header->addWidget(m_stateCounts);

    m_splitter->addWidget(m_grid);
    m_splitter->addWidget(m_charts);
    m_splitter->setStretchFactor(0, 0);
    m_splitter->setStretchFactor(1, 1);
    m_splitter->setSizes({340, 1060});
    m_grid->setMinimumWidth(200);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->setSpacing(4);
    layout->addLayout(header);
    layout->addWidget(m_splitter, 1);

    // A click on a tile or on a rank's line focuses every view on the rank; a second click lets go.
    const auto select = [this](int rank) {
        focusRank(rank == m_focusedRank ? -1 : rank);
        emit rankSelected(rank);
    };
    connect(m_grid, &RankGrid::rankSelected, this, select);
    connect(m_charts, &RunCharts::rankClicked, this, select);
    connect(m_charts, &RunCharts::rankHovered, m_grid, &RankGrid::setHoveredRank);
    connect(m_grid, &RankGrid::rankPointed, m_charts, &RunCharts::pointAtRank); // and the other way
    m_charts->setTickDriven(true);
    connect(m_tick, &QTimer::timeout, this, &RunView::tick);
    m_tick->setTimerType(Qt::PreciseTimer);
    m_tick->start(kHalfTickMs);
}

void RunView::addEvents(const QVector<TrainerEvent>& events) {
    m_pendingEvents += events;
}

void RunView::rankExited(int rank, const QString& host, int status, bool stopped) {
    m_pendingExits.append({rank, host, status, stopped});
}

void RunView::setRankHosts(const QHash<int, QString>& hosts) {
    m_plannedRanks = hosts.keys();
    m_gridModel->setRankHosts(hosts);
}

void RunView::addDiagnoses(const QVector<Diagnosis>& diagnoses) {
    m_pendingDiagnoses += diagnoses;
}

void RunView::addGpuSamples(const QVector<GpuSample>& samples) {
    m_charts->addGpuSamples(samples);
}

void RunView::addGpuError(const QString& host, const QString& message) {
    m_charts->gpuPanel()->addNodeError(host, message);
}

void RunView::focusRank(int rank) {
    m_focusedRank = rank;
    m_grid->setFocusedRank(rank);
    m_charts->focusRank(rank);
}

void RunView::setClock(std::function<double()> clock) {
    m_clock = clock ? std::move(clock) : std::function<double()>(wallClock);
}

void RunView::setStatusOptions(const RankStatusOptions& options) {
    m_gridModel->setOptions(options);
}

void RunView::clear() {
    m_pendingEvents.clear();
    m_pendingExits.clear();
    m_pendingDiagnoses.clear();
    m_charts->clear();
    m_metrics->clear();
    m_gridModel->clear();
    m_grid->setHoveredRank(-1);
    m_outcome.clear();
    focusRank(-1);
    updateLabels();
}

void RunView::setOutcome(const RunRecord& run) {
    m_outcome = run.inProgress() ? QString() : run.state;
    updateLabels();
}

void RunView::tick() {
    m_halfTick = !m_halfTick;
    // A whole tick applies what is queued, right before the charts draw the loss chart when they take turns.
    const bool whole = m_charts->ticksTakeTurns() ? m_charts->nextTickDrawsLoss() : !m_halfTick;
    if (whole) {
        applyPending();
        m_gridModel->setNow(m_clock()); // heartbeat ages move with the clock alone
        updateLabels();
    }
    m_charts->tick();
    if (!whole)
        emit lightTick();
}

void RunView::setTickInterval(int milliseconds) {
    m_tick->setInterval(std::clamp(milliseconds, 10, 100) / 2); // every chart at least 10 times a second
}

int RunView::tickInterval() const {
    return m_tick->interval() * 2;
}

void RunView::flush() {
    applyPending();
    m_gridModel->setNow(m_clock());
    m_charts->refresh();
    updateLabels();
}

void RunView::applyPending() {
    if (!m_pendingEvents.isEmpty()) {
        const QVector<TrainerEvent> batch = std::exchange(m_pendingEvents, {});
        m_metrics->addEvents(batch);
        m_gridModel->addEvents(batch);
    }
    for (const PendingExit& exit : std::exchange(m_pendingExits, {})) {
        m_metrics->rankExited(exit.rank, exit.status);
        m_gridModel->rankExited(exit.rank, exit.host, exit.status, exit.stopped);
    }
    if (!m_pendingDiagnoses.isEmpty())
        m_gridModel->addDiagnoses(std::exchange(m_pendingDiagnoses, {}));
}

QString RunView::progressText() const {
    return m_progress->text();
}

// Every rank of the run (as planned, else as seen) has exited.
bool RunView::everyRankEnded() const {
    const QMap<int, RankLiveStatus>& ranks = m_gridModel->tracker().ranks();
    const QList<int> all = m_plannedRanks.isEmpty() ? ranks.keys() : m_plannedRanks;
    return !all.isEmpty() && std::all_of(all.cbegin(), all.cend(), [&ranks](int rank) {
        const auto found = ranks.constFind(rank);
        return found != ranks.cend() && found->exitStatus.has_value();
    });
}

void RunView::updateLabels() {
    const QMap<int, RankLiveStatus>& ranks = m_gridModel->tracker().ranks();
    if (!m_metrics->summary().ranks().isEmpty()) {
        RunProgress progress = m_metrics->progress(m_clock());
        progress.outcome = m_outcome;
        m_progress->setText(formatProgress(progress));
    } else if (everyRankEnded())
        m_progress->setText(tr("every rank ended before its first event (the Logs tab says why)"));
    else
        m_progress->setText(tr("waiting for the first event"));
    QMap<int, int> counts;
    for (const RankLiveStatus& status : ranks)
        ++counts[int(status.state)];
    QStringList parts;
    for (auto it = counts.cbegin(); it != counts.cend(); ++it) {
        const QColor color = rankStateColor(RankLiveState(it.key())).darker(150);
        parts << QStringLiteral("<span style='color:%1'>&#9632;</span> %2 %3")
                     .arg(color.name())
                     .arg(it.value())
                     .arg(rankLiveStateName(RankLiveState(it.key())));
    }
    m_stateCounts->setText(parts.join(QStringLiteral(" &nbsp; ")));
}

} // namespace rankscope::gui
