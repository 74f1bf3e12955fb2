// SPDX-License-Identifier: MIT
#pragma once

#include <rankscope/event_schema.h>

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rankscope::trainer {

// Builds one flat JSON object. The trainer only writes JSON (core/ reads it with Qt's parser), and a GPU
// node has LibTorch but no JSON library, so this serializer covers exactly what events need.
class JsonObject {
public:
    JsonObject& add(std::string_view key, std::string_view value);
    JsonObject& add(std::string_view key, const char* value) { return add(key, std::string_view(value)); }
    JsonObject& add(std::string_view key, const std::string& value) { return add(key, std::string_view(value)); }
    JsonObject& add(std::string_view key, double value); // non-finite values become "nan", "inf", "-inf"
    JsonObject& add(std::string_view key, int64_t value);
    JsonObject& add(std::string_view key, int value) { return add(key, static_cast<int64_t>(value)); }
    JsonObject& add(std::string_view key, bool value);
    JsonObject& add(std::string_view key, const JsonObject& object);

    std::string str() const { return "{" + m_body + "}"; }

    static std::string quote(std::string_view text);

private:
    void key(std::string_view key);
    std::string m_body;
};

// Writes event lines (schema::kLinePrefix + JSON) to stdout or a file, one flush per line so that a
// reader tailing the stream sees every event at once. Thread-safe: the heartbeat thread writes too.
class EventWriter {
public:
    // target: "stdout", "none", or a file path (created or truncated).
    EventWriter(const std::string& target, int rank);
    ~EventWriter();
    EventWriter(const EventWriter&) = delete;
    EventWriter& operator=(const EventWriter&) = delete;

    void emit(std::string_view type, const JsonObject& fields);

    static double unixTime();

private:
    std::mutex m_mutex;
    FILE* m_file = nullptr;
    bool m_owned = false;
    int m_rank = 0;
};

} // namespace rankscope::trainer
