// SPDX-License-Identifier: MIT
#pragma once

#include "distributed.h"
#include "event_writer.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string_view>
#include <thread>

namespace rankscope::trainer {

// What the training loop is doing, readable from the heartbeat thread at any time.
class Progress {
public:
    void setPhase(std::string_view phase) { m_phase.store(phase.data()); }
    std::string_view phase() const { return m_phase.load(); }
    void setStep(int64_t step) { m_step.store(step); }
    int64_t step() const { return m_step.load(); }

private:
    // Phase names are the schema's string literals, so a pointer to one is always valid.
    std::atomic<const char*> m_phase{schema::phase::kInit.data()};
    std::atomic<int64_t> m_step{0};
};

// Emits a heartbeat event every interval from its own thread, whatever the loop is doing: a rank stuck
// in a collective keeps beating with the same step and collective numbers, which is how a hang is seen.
class Heartbeat {
public:
    Heartbeat(EventWriter& events, const Progress& progress, const CollectiveCounter& collectives,
              std::chrono::milliseconds interval);
    ~Heartbeat();
    Heartbeat(const Heartbeat&) = delete;
    Heartbeat& operator=(const Heartbeat&) = delete;

    void beat();
    // Stops the thread and waits for it; idempotent. Called before the end event, which must be last.
    void stop();

private:
    void loop();

    EventWriter& m_events;
    const Progress& m_progress;
    std::chrono::milliseconds m_interval;
    const CollectiveCounter& m_collectives;
    std::mutex m_stopMutex; // stop() may be called from the training and the signal thread at once
    std::mutex m_mutex;
    std::condition_variable m_wake;
    bool m_stop = false;
    std::thread m_thread;
};

} // namespace rankscope::trainer
