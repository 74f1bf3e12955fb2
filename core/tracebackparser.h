// SPDX-License-Identifier: MIT
#pragma once

#include "core/loglines.h"
#include "core/watchdogparser.h"

#include <QHash>
#include <QList>
#include <QString>

#include <vector>

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
    [[nodiscard]] bool wantsEveryLine() const override { return m_openTracebacks > 0; }
    void takeLine(const LogLine& line) override;
    void endOfStream() override;

private:
    // What is being read of one rank's output.
    struct RankState {
        int tracebackLines = -1; // lines of its open traceback so far; -1: none is open
        QString pendingThrow;    // exception type of "terminate called after throwing"
    };
    // The state of `rank` (-1: none named); nullptr where it has none yet and create is false.
    RankState* stateOf(int rank, bool create);
    void closeTraceback(RankState& state);
    void addError(const LogLine& line, QString text);

    LogLineScanner m_scanner;
    QString m_source;
    // Rank + 1 -> its state, for the ranks of most jobs: every line of an open traceback looks its rank up, and an
    // index costs less than a hash.
    std::vector<RankState> m_flatRanks;
    QHash<int, RankState> m_otherRanks; // any other rank a launcher prefix names
    int m_openTracebacks = 0;
    QList<LogError> m_errors;
};

} // namespace rankscope
