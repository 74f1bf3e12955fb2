// SPDX-License-Identifier: MIT
#pragma once

#include <QApplication>
#include <QElapsedTimer>
#include <QHash>
#include <QJsonArray>
#include <QVector>

namespace rankscope::bench {

// The GUI thread's time per kind of event, to tell what makes a long frame: a QApplication whose notify() times
// every delivery, keyed by nesting depth, the receiver's class (a timer's or a chart item's owner too) and the
// event's type. Off unless enable() is called (rankscope_gui_bench --event-costs).
class TimedApplication final : public QApplication {
public:
    TimedApplication(int& argc, char** argv) : QApplication(argc, argv) {}
    bool notify(QObject* receiver, QEvent* event) override;

    void enable(bool on) { m_on = on; }
    void reset() { m_costs.clear(); }
    // The kinds that took the most time, each {"what", "n", "total_ms", "max_ms", "over_16ms", "cpu_ms"}: wall
    // times, and the distribution of the GUI thread's own CPU time per event (p50, p99, max: the work itself).
    [[nodiscard]] QJsonArray top(int count) const;

private:
    struct Cost {
        qint64 n = 0;
        double totalMs = 0;
        double maxMs = 0;
        qint64 over16 = 0;
        QVector<double> cpuMs; // the GUI thread's CPU time of each
    };
    bool m_on = false;
    int m_depth = 0;
    QElapsedTimer m_clock;
    QHash<QString, Cost> m_costs;
};

} // namespace rankscope::bench
