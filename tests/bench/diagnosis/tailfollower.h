// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArray>
#include <QHash>
#include <QStringList>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace rankscope::bench {

// Unix seconds, the clock of the events' `time`.
[[nodiscard]] double wallSeconds();

// The baseline: what a person sees with `tail -F rankR.events` beside the job. One GNU tail per file, each read
// on a thread of its own the moment tail prints, every line stamped with this machine's wall clock. It knows
// nothing of the run beyond the lines, and notes the first moment it could see each symptom: every rank's
// heartbeat stopped changing (two equal heartbeats in a row, after the first step), the first error event,
// every rank's end event.
class TailFollower final {
public:
    struct Seen {
        double allStill = 0.0; // 0: not seen (yet)
        double firstError = 0.0;
        int firstErrorRank = -1;
        double allEnded = 0.0;
    };

    TailFollower(const QStringList& files, int ranks);
    ~TailFollower(); // stops every tail
    TailFollower(const TailFollower&) = delete;
    TailFollower& operator=(const TailFollower&) = delete;

    [[nodiscard]] Seen seen() const;

private:
    struct RankView {
        QByteArray lastBeat; // step, phase and collective counters of the newest heartbeat
        bool still = false;
        bool ended = false;
    };

    void follow(const QString& file);
    void take(const QByteArray& line, double now);
    [[nodiscard]] int count(bool RankView::*flag) const;

    const int m_ranks;
    std::atomic<bool> m_stop{false};
    mutable std::mutex m_mutex; // guards m_seen and m_views
    Seen m_seen;
    QHash<int, RankView> m_views;
    std::vector<std::thread> m_threads;
};

} // namespace rankscope::bench
