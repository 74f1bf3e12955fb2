// SPDX-License-Identifier: MIT
#pragma once

#include "core/loglines.h"

#include <QList>
#include <QString>

#include <optional>

namespace rankscope {

// One entry of torchrun's failure table ("Failures:" and "Root Cause (first observed failure):").
struct ElasticFailure {
    QString time; // as printed: "2023-05-19_16:39:58"
    QString host;
    int rank = -1;
    int localRank = -1;
    std::optional<int> exitCode;
    QString signal; // "SIGKILL": from "Signal 9 (SIGKILL) received by PID …" or a negative exit code
    qint64 pid = -1;
    bool rootCause = false;

    [[nodiscard]] bool operator==(const ElasticFailure& other) const {
        return time == other.time && host == other.host && rank == other.rank && localRank == other.localRank &&
               exitCode == other.exitCode && signal == other.signal && pid == other.pid &&
               rootCause == other.rootCause;
    }
};

// torchrun / torch.distributed.elastic failure tables. Entries repeated by several agents are kept once. The agent's
// one-line report of a worker's end ("failed (exitcode: 1) local_rank: 2 (pid: 5939) of binary: …") is an entry too
// (local rank, exit code or signal, pid; no rank, host or time), unless a table names the same pid: a log cut
// before the table still says which process failed.
class ElasticLogParser final : public LogLineSink {
public:
    ElasticLogParser();

    void feed(QByteArrayView chunk) { m_scanner.feed(chunk); }
    void finish() { m_scanner.finish(); }

    [[nodiscard]] QList<ElasticFailure> failures() const;

    [[nodiscard]] QList<QByteArray> keywords() const override;
    [[nodiscard]] bool wantsEveryLine() const override { return m_inTable; }
    void takeLine(const LogLine& line) override;
    void endOfStream() override;

private:
    // The fields of an entry: those read, and error_file, which is not but is no other line of the table either.
    enum class Field { None, Time, Host, Rank, ExitCode, ErrorFile, Traceback };

    static Field fieldNamed(QByteArrayView key);
    void takeField(Field field, QByteArrayView value);
    void flushEntry();
    void takeAgentReport(QByteArrayView text); // text: from "failed (exitcode:" on

    LogLineScanner m_scanner;
    QList<ElasticFailure> m_failures;
    QList<ElasticFailure> m_agentReports;
    ElasticFailure m_entry;
    bool m_haveEntry = false;
    bool m_inTable = false;
    bool m_rootCauseSection = false;
    int m_otherLines = 0; // lines in the table that are not part of it (other ranks' output in between)
};

} // namespace rankscope
