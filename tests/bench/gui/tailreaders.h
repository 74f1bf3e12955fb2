// SPDX-License-Identifier: MIT
#pragma once

#include "benchcommon.h"

#include <QMutex>
#include <QString>
#include <QVector>

#include <atomic>
#include <memory>

class QThread;

namespace rankscope::bench {

// The baselines: the same rank files read by the plainest follower there is, on a thread of its own, with no
// parsing beyond counting lines and reading each step event's `time`. What it loses and how late it is
// are the floor the app's pipeline is compared with.
class TailReader {
public:
    struct Counts {
        qint64 logLines = 0;       // complete lines of the rankN.out files
        qint64 stepEvents = 0;     // step event lines of the rankN.events files
        QVector<double> eventMs;   // each step event's `time`
        QVector<double> arrivedMs; // when its line reached this process
    };

    virtual ~TailReader();
    // Stops following after one last read; then counts() is final.
    void stop();
    [[nodiscard]] Counts counts() const;
    [[nodiscard]] double readyMs() const { return m_readyMs.load(); } // when it began following, 0 before

protected:
    TailReader() = default;
    void start();              // runs follow() on the reader's thread
    virtual void follow() = 0; // until m_stop, then returns
    // Takes the bytes of one stream; only complete lines count.
    void consume(QByteArray& partial, const QByteArray& bytes, bool events, double now);

    std::atomic<bool> m_stop{false};
    std::atomic<double> m_readyMs{0};

private:
    mutable QMutex m_mutex;
    Counts m_counts;
    std::unique_ptr<QThread> m_thread;
};

// `tail -F` on this machine: polls every rank's .out and .events file in runDir by offset.
[[nodiscard]] std::unique_ptr<TailReader> startLocalTail(const QString& runDir, const QVector<int>& ranks, int pollMs);
// `ssh node tail -F` on every rank's .events file of one node (the kernel wakes tail on each write), one
// ssh process per node: the latency floor over the same network.
[[nodiscard]] std::unique_ptr<TailReader> startSshTail(const OpensshTarget& target, const QString& runDir,
                                                       const QVector<int>& ranks);

} // namespace rankscope::bench
