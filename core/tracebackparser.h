// SPDX-License-Identifier: MIT
#pragma once

#include "core/loglines.h"
#include "core/watchdogparser.h"

#include <QHash>
#include <QList>
#include <QString>

namespace rankscope {

// Python tracebacks (their final exception line) and C++ exceptions that ended a process
// ("terminate called after throwing an instance of 'T'" and its "what():" line). Lines of different ranks
// may interleave: a traceback is followed per rank named by the launcher prefix.
class TracebackLogParser final : public LogLineSink {
public:
    TracebackLogParser();

    void setSource(const QString& file) { m_source = file; }
    void feed(QByteArrayView chunk) { m_scanner.feed(chunk); }
    void finish() { m_scanner.finish(); }

    [[nodiscard]] QList<LogError> errors() const { return m_errors; }

    [[nodiscard]] QList<QByteArray> keywords() const override;
    [[nodiscard]] bool wantsEveryLine() const override { return !m_open.isEmpty(); }
    void takeLine(const LogLine& line) override;
    void endOfStream() override;

private:
    void addError(const LogLine& line, const QString& text);

    LogLineScanner m_scanner;
    QString m_source;
    QHash<int, int> m_open;             // rank (-1: none named) -> lines of its open traceback so far
    QHash<int, QString> m_pendingThrow; // rank -> exception type of "terminate called after throwing"
    QList<LogError> m_errors;
};

} // namespace rankscope
