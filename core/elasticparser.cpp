// SPDX-License-Identifier: MIT
#include "core/elasticparser.h"

#include "core/runstore.h" // signalName

#include <algorithm>
#include <utility>

namespace rankscope {

namespace {

constexpr int kMaxOtherLines = 20;
// keywords()[2]: "failed (", of "failed (exitcode: …". The whole text as the keyword cost an inspection of the
// bench's mixed log 5 % more instructions (its fingerprint widened a bucket of the search); this one, nothing
// measurable (docs/benchmarks.md, "Counting instructions").
constexpr int kAgentReport = 2;

std::optional<qint64> leadingNumber(QByteArrayView text, qsizetype* end = nullptr) {
    text = trimmedBlanks(text);
    qsizetype i = text.startsWith('-') ? 1 : 0;
    const qsizetype digitsStart = i;
    qint64 value = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i < 18)
        value = value * 10 + (text[i++] - '0');
    if (i == digitsStart)
        return std::nullopt;
    if (end)
        *end = i;
    return digitsStart == 1 ? -value : value;
}

// "N" in "… (key: N)".
std::optional<qint64> parenthesized(QByteArrayView text, QByteArrayView key) {
    const qsizetype at = findBytes(text, key);
    return at < 0 ? std::nullopt : leadingNumber(text.sliced(at + key.size()));
}

} // namespace

ElasticLogParser::ElasticLogParser() : m_scanner({this}) {}

QList<QByteArray> ElasticLogParser::keywords() const {
    return {QByteArrayLiteral("Failures:"), QByteArrayLiteral("Root Cause"), QByteArrayLiteral("failed (")};
}

QList<ElasticFailure> ElasticLogParser::failures() const {
    QList<ElasticFailure> failures = m_failures;
    for (const ElasticFailure& report : m_agentReports) {
        const bool known = std::any_of(failures.cbegin(), failures.cend(),
                                       [&report](const ElasticFailure& f) { return f.pid == report.pid; });
        if (!known)
            failures.append(report);
    }
    return failures;
}

// "failed (exitcode: -11) local_rank: 0 (pid: 2128869) of binary: …". A launcher's prefix before it names the
// agent's process (srun's task id), not the worker's rank, so no rank is taken.
void ElasticLogParser::takeAgentReport(QByteArrayView text) {
    ElasticFailure report;
    if (const auto code = leadingNumber(text.sliced(sizeof "failed (exitcode:" - 1))) {
        report.exitCode = static_cast<int>(*code);
        if (*code < 0)
            report.signal = signalName(static_cast<int>(-*code));
    }
    const auto pid = parenthesized(text, "(pid:");
    if (!report.exitCode || !pid)
        return;
    report.pid = *pid;
    if (const auto local = parenthesized(text, ") local_rank:"))
        report.localRank = static_cast<int>(*local);
    if (!m_agentReports.contains(report))
        m_agentReports.append(report);
}

void ElasticLogParser::takeLine(const LogLine& line) {
    const QByteArrayView text = trimmedBlanks(line.text);
    for (qsizetype at = line.indexOf(kAgentReport); at >= 0; at = line.indexOf(kAgentReport, at + 1)) {
        if (startsWithLiteral(line.text.sliced(at), "failed (exitcode:")) {
            takeAgentReport(line.text.sliced(at));
            return;
        }
    }
    if (startsWithLiteral(text, "Failures:") || startsWithLiteral(text, "Root Cause")) {
        flushEntry();
        m_inTable = true;
        m_rootCauseSection = startsWithLiteral(text, "Root Cause");
        m_otherLines = 0;
        return;
    }
    if (!m_inTable)
        return;
    if (startsWithLiteral(text, "====")) {
        flushEntry();
        m_inTable = false;
        return;
    }
    if (startsWithLiteral(text, "----")) {
        flushEntry();
        return;
    }
    if (text.startsWith('[') && text.endsWith("]:")) {
        flushEntry();
        m_haveEntry = true;
        m_entry.rootCause = m_rootCauseSection;
        return;
    }
    if (m_haveEntry) {
        const qsizetype at = indexOfByte(text, ':');
        if (at > 0) {
            if (const Field field = fieldNamed(trimmedBlanks(text.first(at))); field != Field::None) {
                takeField(field, trimmedBlanks(text.sliced(at + 1)));
                return;
            }
        }
    }
    if (sameBytes(text, "<NO_OTHER_FAILURES>"))
        return;
    if (++m_otherLines > kMaxOtherLines) {
        flushEntry();
        m_inTable = false;
    }
}

// Compared inline, once: QByteArrayView's == measures a literal and compares out of line.
ElasticLogParser::Field ElasticLogParser::fieldNamed(QByteArrayView key) {
    for (const auto& [name, field] : {std::pair{QByteArrayView("time"), Field::Time}, {"host", Field::Host},
                                      {"rank", Field::Rank}, {"exitcode", Field::ExitCode},
                                      {"error_file", Field::ErrorFile}, {"traceback", Field::Traceback}}) {
        if (sameBytes(key, name))
            return field;
    }
    return Field::None;
}

void ElasticLogParser::takeField(Field field, QByteArrayView value) {
    if (field == Field::Time) {
        m_entry.time = QString::fromUtf8(value);
    } else if (field == Field::Host) {
        m_entry.host = QString::fromUtf8(value);
    } else if (field == Field::Rank) {
        if (const auto rank = leadingNumber(value))
            m_entry.rank = static_cast<int>(*rank);
        if (const auto local = parenthesized(value, "local_rank:"))
            m_entry.localRank = static_cast<int>(*local);
    } else if (field == Field::ExitCode) {
        if (const auto code = leadingNumber(value)) {
            m_entry.exitCode = static_cast<int>(*code);
            if (*code < 0 && m_entry.signal.isEmpty())
                m_entry.signal = signalName(static_cast<int>(-*code));
        }
        if (const auto pid = parenthesized(value, "pid:"))
            m_entry.pid = *pid;
    } else if (field == Field::Traceback) {
        // "Signal 9 (SIGKILL) received by PID 1234"
        const qsizetype open = findBytes(value, "(SIG");
        const qsizetype close = open < 0 ? -1 : value.indexOf(')', open);
        if (value.startsWith("Signal ") && close > open)
            m_entry.signal = QString::fromUtf8(value.sliced(open + 1, close - open - 1));
    }
}

void ElasticLogParser::flushEntry() {
    if (m_haveEntry && (m_entry.rank >= 0 || !m_entry.host.isEmpty() || m_entry.exitCode) &&
        !m_failures.contains(m_entry))
        m_failures.append(m_entry);
    m_entry = {};
    m_haveEntry = false;
}

void ElasticLogParser::endOfStream() {
    flushEntry();
    m_inTable = false;
    m_rootCauseSection = false;
}

} // namespace rankscope
