// SPDX-License-Identifier: MIT
#include "heartbeat.h"

namespace rankscope::trainer {

Heartbeat::Heartbeat(EventWriter& events, const Progress& progress, const CollectiveCounter& collectives,
                     std::chrono::milliseconds interval)
    : m_events(events), m_progress(progress), m_interval(interval), m_collectives(collectives),
      m_thread([this] { loop(); }) {}

Heartbeat::~Heartbeat() {
    stop();
}

void Heartbeat::stop() {
    std::lock_guard<std::mutex> stopping(m_stopMutex);
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    if (m_thread.joinable())
        m_thread.join();
}

void Heartbeat::beat() {
    JsonObject fields;
    fields.add(schema::heartbeat::kPhase, m_progress.phase())
        .add(schema::heartbeat::kStep, m_progress.step())
        .add(schema::heartbeat::kCollectiveStarted, m_collectives.started.load())
        .add(schema::heartbeat::kCollectiveFinished, m_collectives.finished.load());
    m_events.emit(schema::type::kHeartbeat, fields);
}

// The first beat goes out at once, so that a rank is seen alive before rendezvous, data loading or a
// hang in either.
void Heartbeat::loop() {
    std::unique_lock<std::mutex> lock(m_mutex);
    do {
        lock.unlock();
        beat();
        lock.lock();
    } while (!m_wake.wait_for(lock, m_interval, [this] { return m_stop; }));
}

} // namespace rankscope::trainer
