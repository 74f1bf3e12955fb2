// SPDX-License-Identifier: MIT
#include "chartlatencyprobe.h"

#include "benchcommon.h"
#include "runsession.h"
#include "runview/runcharts.h"
#include "runview/runview.h"

#include <QLineSeries>
#include <QTimer>

namespace rankscope::bench {

ChartLatencyProbe::ChartLatencyProbe(gui::RunSession* session, gui::RunView* view, QObject* parent)
    : QObject(parent), m_view(view) {
    connect(session, &gui::RunSession::events, this, &ChartLatencyProbe::onEvents);
    // The run view keeps its tick timer private (its direct QTimer child); that timer draws the charts too
    // (RunCharts' own timer is stopped while the view drives it).
    for (QTimer* timer : view->findChildren<QTimer*>(QString(), Qt::FindDirectChildrenOnly)) {
        connect(timer, &QTimer::timeout, this, &ChartLatencyProbe::check);
        ++m_hookedTimers;
    }
}

void ChartLatencyProbe::onEvents(const QVector<TrainerEvent>& events) {
    for (const TrainerEvent& event : events) {
        if (event.type != TrainerEventType::Step)
            continue;
        ++m_stepEvents;
        m_pending[event.rank].push_back({event.integer("step"), event.time * 1000.0});
    }
}

void ChartLatencyProbe::check() {
    const double now = wallMs();
    for (auto it = m_pending.begin(); it != m_pending.end(); ++it) {
        std::deque<Pending>& pending = it.value();
        if (pending.empty())
            continue;
        const QLineSeries* series = m_view->charts()->lossSeries(it.key());
        if (!series || series->count() == 0)
            continue;
        const double lastStep = series->at(series->count() - 1).x();
        while (!pending.empty() && double(pending.front().step) <= lastStep) {
            m_samples.append({pending.front().eventMs, now});
            pending.pop_front();
        }
    }
}

qint64 ChartLatencyProbe::pending() const {
    qint64 count = 0;
    for (const std::deque<Pending>& pending : m_pending)
        count += qint64(pending.size());
    return count;
}

} // namespace rankscope::bench
