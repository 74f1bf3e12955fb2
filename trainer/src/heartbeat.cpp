// SPDX-License-Identifier: MIT
#include "heartbeat.h"

namespace rankscope::trainer {

Heartbeat::Heartbeat(EventWriter& events, const Progress& progress, const CollectiveCounter& collectives,
                     std::chrono::milliseconds interval)
    : m_events(events), m_progress(progress), m_interval(interval), m_collectives(collectives),
      m_thread([this] { loop(); }) {}

Heartbeat::~Heartbeat() {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
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

void Heartbeat::loop() {
    std::unique_lock<std::mutex> lock(m_mutex);
    while (!m_wake.wait_for(lock, m_interval, [this] { return m_stop; })) {
        lock.unlock();
        beat();
        lock.lock();
    }
}

} // namespace rankscope::trainer
