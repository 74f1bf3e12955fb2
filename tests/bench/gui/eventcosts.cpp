// SPDX-License-Identifier: MIT
#include "eventcosts.h"

#include "benchcommon.h"

#include <QEvent>
#include <QJsonObject>
#include <QMetaEnum>
#include <QThread>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <numeric>

namespace rankscope::bench {

namespace {

// Taken before delivery: the receiver may be gone after it (a deferred delete).
struct Kind {
    const char* who = nullptr;
    const char* owner = nullptr;
    int type = 0;
    int depth = 0;
    [[nodiscard]] QString text() const {
        QString name = QString::fromLatin1(who);
        if (owner)
            name += QLatin1Char('<') + QString::fromLatin1(owner);
        const char* key = QMetaEnum::fromType<QEvent::Type>().valueToKey(type);
        return QStringLiteral("%1 %2 %3").arg(depth).arg(name, key ? QString::fromLatin1(key) : QString::number(type));
    }
};

// The GUI thread's own CPU time: what an event cost without the time other threads and processes took the core.
double threadCpuMs() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return double(now.tv_sec) * 1e3 + double(now.tv_nsec) / 1e6;
}

QJsonObject cpuSummary(const QVector<double>& values) {
    const auto at = [&values](double p) { return std::round(percentile(values, p) * 100) / 100; };
    const double total = std::accumulate(values.begin(), values.end(), 0.0);
    return {{"p50", at(50)}, {"p99", at(99)}, {"max", at(100)}, {"total", std::round(total)}};
}

} // namespace

bool TimedApplication::notify(QObject* receiver, QEvent* event) {
    if (!m_on || m_depth > 2 || QThread::currentThread() != thread()) // the GUI thread's events only
        return QApplication::notify(receiver, event);
    if (!m_clock.isValid())
        m_clock.start();
    Kind kind{receiver->metaObject()->className(), nullptr, int(event->type()), m_depth};
    if (QObject* owner = receiver->parent(); owner && event->type() == QEvent::Timer)
        kind.owner = owner->metaObject()->className();
    const qint64 start = m_clock.nsecsElapsed();
    const double cpuStart = threadCpuMs();
    ++m_depth;
    const bool handled = QApplication::notify(receiver, event);
    --m_depth;
    const double ms = double(m_clock.nsecsElapsed() - start) / 1e6;
    if (ms >= 0.05) {
        const double cpuMs = threadCpuMs() - cpuStart;
        Cost& cost = m_costs[kind.text()];
        ++cost.n;
        cost.totalMs += ms;
        cost.maxMs = std::max(cost.maxMs, ms);
        cost.over16 += ms > 16.0 ? 1 : 0;
        cost.cpuMs.append(cpuMs);
    }
    return handled;
}

QJsonArray TimedApplication::top(int count) const {
    QVector<QPair<QString, Cost>> all;
    for (auto it = m_costs.cbegin(); it != m_costs.cend(); ++it)
        all.append({it.key(), it.value()});
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.second.totalMs > b.second.totalMs; });
    QJsonArray out;
    for (int i = 0; i < std::min(count, int(all.size())); ++i)
        out.append(QJsonObject{{"what", all[i].first},
                               {"n", double(all[i].second.n)},
                               {"total_ms", std::round(all[i].second.totalMs)},
                               {"max_ms", std::round(all[i].second.maxMs * 10) / 10},
                               {"over_16ms", double(all[i].second.over16)},
                               {"cpu_ms", cpuSummary(all[i].second.cpuMs)}});
    return out;
}

} // namespace rankscope::bench
