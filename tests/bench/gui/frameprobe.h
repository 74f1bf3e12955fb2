// SPDX-License-Identifier: MIT
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QVector>

class QTimer;

namespace rankscope::bench {

// How long the GUI thread makes a frame wait. A precise 16 ms timer runs on the GUI thread and records the
// real interval between its timeouts: an idle thread fires every ~16 ms; a thread busy with a tick, a model
// insertion or a repaint fires late by exactly as long as it was busy. So each interval is the time a 60 Hz
// frame scheduled then would have taken to get the thread (p99 under 33 ms: at most one frame dropped).
class FrameProbe final : public QObject {
    Q_OBJECT

public:
    explicit FrameProbe(int periodMs = 16, QObject* parent = nullptr);

    void start();
    void stop();
    [[nodiscard]] int periodMs() const { return m_periodMs; }
    [[nodiscard]] const QVector<double>& intervalsMs() const { return m_intervals; }

private:
    void onTimeout();

    int m_periodMs;
    QTimer* m_timer;
    QElapsedTimer m_clock;
    qint64 m_lastNs = 0;
    QVector<double> m_intervals;
};

} // namespace rankscope::bench
