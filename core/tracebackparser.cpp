// SPDX-License-Identifier: MIT
#include "core/tracebackparser.h"

#include <QStringBuilder>

namespace rankscope {

namespace {

constexpr int kMaxTracebackLines = 5000;
constexpr qsizetype kMaxErrorText = 1000;

constexpr QByteArrayView kTerminate = "terminate called after throwing an instance of '";
// keywords()
enum Keyword { kTraceback, kTerminateKeyword, kWhat };

} // namespace

TracebackLogParser::TracebackLogParser() : m_scanner({this}) {}

QList<QByteArray> TracebackLogParser::keywords() const {
    return {QByteArrayLiteral("Traceback (most recent call last)"), kTerminate.toByteArray(),
            QByteArrayLiteral("what():")};
}

void TracebackLogParser::takeLine(const LogLine& line) {
    const QByteArrayView text = line.text;
    const int key = line.rank;
    if (line.holds(kTraceback)) {
        m_open.insert(key, 0);
        return;
    }
    if (line.holds(kTerminateKeyword)) {
        const qsizetype start = findBytes(text, kTerminate) + kTerminate.size();
        const qsizetype end = text.indexOf('\'', start);
        if (end > start)
            m_pendingThrow.insert(key, QString::fromUtf8(text.sliced(start, end - start)));
        return;
    }
    const QByteArrayView stripped = trimmedBlanks(text);
    if (line.holds(kWhat) && stripped.startsWith("what():")) {
        const QString message = QString::fromUtf8(trimmedBlanks(stripped.sliced(7)));
        const QString type = m_pendingThrow.take(key);
        addError(line, type.isEmpty() ? message : QString(type % QLatin1String(": ") % message)); // one allocation
        return;
    }
    const auto open = m_open.find(key);
    if (open == m_open.end())
        return;
    if (text.isEmpty() || text.startsWith(' ') || text.startsWith('\t')) {
        if (++*open > kMaxTracebackLines)
            m_open.erase(open);
        return;
    }
    // The first line that is not indented ends the traceback: it names the exception.
    addError(line, QString::fromUtf8(stripped));
    m_open.erase(open);
}

void TracebackLogParser::addError(const LogLine& line, const QString& text) {
    m_errors.append({m_source, line.number, line.rank, text.left(kMaxErrorText)});
}

void TracebackLogParser::endOfStream() {
    m_open.clear();
    m_pendingThrow.clear();
}

} // namespace rankscope
