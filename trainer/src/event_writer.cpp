// SPDX-License-Identifier: MIT
#include "event_writer.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace rankscope::trainer {

std::string JsonObject::quote(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 2);
    out += '"';
    for (const char c : text) {
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
                out += buf;
            } else {
                out += c; // UTF-8 passes through unchanged
            }
        }
    }
    out += '"';
    return out;
}

void JsonObject::key(std::string_view key) {
    if (!m_body.empty())
        m_body += ',';
    m_body += quote(key);
    m_body += ':';
}

JsonObject& JsonObject::add(std::string_view k, std::string_view value) {
    key(k);
    m_body += quote(value);
    return *this;
}

JsonObject& JsonObject::add(std::string_view k, double value) {
    key(k);
    if (std::isnan(value)) {
        m_body += "\"nan\"";
    } else if (std::isinf(value)) {
        m_body += value > 0 ? "\"inf\"" : "\"-inf\"";
    } else {
        char buf[32];
        const auto result = std::to_chars(buf, buf + sizeof buf, value); // shortest text that round-trips
        m_body.append(buf, result.ptr);
    }
    return *this;
}

JsonObject& JsonObject::add(std::string_view k, int64_t value) {
    key(k);
    m_body += std::to_string(value);
    return *this;
}

JsonObject& JsonObject::add(std::string_view k, bool value) {
    key(k);
    m_body += value ? "true" : "false";
    return *this;
}

JsonObject& JsonObject::add(std::string_view k, const JsonObject& object) {
    key(k);
    m_body += object.str();
    return *this;
}

EventWriter::EventWriter(const std::string& target, int rank) : m_rank(rank) {
    if (target == "stdout") {
        m_file = stdout;
    } else if (target != "none") {
        m_file = std::fopen(target.c_str(), "w");
        if (m_file == nullptr)
            throw std::runtime_error("--events: cannot open '" + target + "' for writing: " + std::strerror(errno));
        m_owned = true;
    }
}

EventWriter::~EventWriter() {
    if (m_owned)
        std::fclose(m_file);
}

double EventWriter::unixTime() {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    return static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(now).count()) / 1000.0;
}

void EventWriter::emit(std::string_view type, const JsonObject& fields) {
    if (m_file == nullptr)
        return;
    JsonObject head;
    head.add(schema::field::kVersion, schema::kVersion)
        .add(schema::field::kType, type)
        .add(schema::field::kRank, m_rank)
        .add(schema::field::kTime, unixTime());
    std::string line(schema::kLinePrefix);
    std::string body = head.str();
    const std::string rest = fields.str();
    if (rest.size() > 2) { // merge "{a}" and "{b}" into "{a,b}"
        body.pop_back();
        body += ',';
        body.append(rest, 1, std::string::npos);
    }
    line += body;
    line += '\n';
    std::lock_guard<std::mutex> lock(m_mutex);
    std::fwrite(line.data(), 1, line.size(), m_file);
    std::fflush(m_file);
}

} // namespace rankscope::trainer
