// SPDX-License-Identifier: MIT
#pragma once

#include "core/trainerevent.h"

#include <QHash>
#include <QObject>
#include <QVector>

#include <deque>

namespace rankscope::gui {
class RunSession;
class RunView;
} // namespace rankscope::gui

namespace rankscope::bench {

// From a step event's `time` to the moment its point is in the chart's loss series of its rank. The step
// numbers and times are taken from the session's `events` signal (what the run view queues); the series are
// checked right after each tick of the run view, which draws the charts (this probe connects to its timer after
// the app did, so it runs after the charts' refresh in the same timeout). A rank's series always ends with its
// newest step (downsampling keeps the last point), so every queued step up to the series' last x is in.
class ChartLatencyProbe final : public QObject {
    Q_OBJECT

public:
    struct Sample {
        double eventMs = 0;   // the event's `time`
        double inChartMs = 0; // when its point was first seen in the series
    };

    ChartLatencyProbe(gui::RunSession* session, gui::RunView* view, QObject* parent = nullptr);

    // The tick timers it follows: 1 (the run view's); anything else means the views changed shape and the
    // figures would be wrong.
    [[nodiscard]] int hookedTimers() const { return m_hookedTimers; }

    void check(); // also callable after the run, once the view is flushed
    [[nodiscard]] const QVector<Sample>& samples() const { return m_samples; }
    [[nodiscard]] qint64 stepEvents() const { return m_stepEvents; }
    [[nodiscard]] qint64 pending() const;

private:
    struct Pending {
        qint64 step = 0;
        double eventMs = 0;
    };
    void onEvents(const QVector<TrainerEvent>& events);

    gui::RunView* m_view;
    QHash<int, std::deque<Pending>> m_pending;
    QVector<Sample> m_samples;
    qint64 m_stepEvents = 0;
    int m_hookedTimers = 0;
};

} // namespace rankscope::bench
