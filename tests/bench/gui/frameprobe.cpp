// SPDX-License-Identifier: MIT
#include "frameprobe.h"

#include <QTimer>

namespace rankscope::bench {

FrameProbe::FrameProbe(int periodMs, QObject* parent)
    : QObject(parent), m_periodMs(periodMs), m_timer(new QTimer(this)) {
    m_timer->setTimerType(Qt::PreciseTimer);
    m_timer->setInterval(m_periodMs);
    connect(m_timer, &QTimer::timeout, this, &FrameProbe::onTimeout);
}

void FrameProbe::start() {
    m_intervals.clear();
    m_clock.start();
    m_lastNs = 0;
    m_timer->start();
}

void FrameProbe::stop() {
    m_timer->stop();
}

void FrameProbe::onTimeout() {
    const qint64 now = m_clock.nsecsElapsed();
    m_intervals.append(double(now - m_lastNs) / 1e6);
    m_lastNs = now;
}

} // namespace rankscope::bench
