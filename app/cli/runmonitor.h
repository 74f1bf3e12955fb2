// SPDX-License-Identifier: MIT
#pragma once

#include "core/rankstatus.h"
#include "core/runsummary.h"
#include "remote/runengine.h"

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <cstdio>

namespace rankscope::cli {

// Under a root cause, what its rank said last (Diagnosis::lastLines), with the command that shows the rest of its
// log; empty when nothing was kept. Each line ends in '\n'.
[[nodiscard]] QString lastLinesBlock(const Diagnosis& diagnosis, const QString& runId);

// What `run` and `attach` show in a terminal: a progress bar per rank, redrawn in place on a terminal (a
// line per rank every few seconds otherwise), the node and link messages as they happen, and at the end a
// summary per rank and the findings that still stand (the live lines may have scrolled away under a stack tree). It
// only formats: the engine and core did the work.
class RunMonitor final : public QObject {
    Q_OBJECT

public:
    RunMonitor(remote::RunEngine* engine, bool interactive, FILE* out = stdout);

    // While the engine replays what a run's store holds (attach): its events only fill the progress lines and the
    // summary; errors and exits already happened and are not printed as news.
    void setReplaying(bool replaying) { m_replaying = replaying; }
    // 0 when the run finished, 1 when it failed or was stopped; set when finished() was seen.
    [[nodiscard]] int exitCode() const { return m_exitCode; }
    [[nodiscard]] const RunSummary& summary() const { return m_summary; }
    // Each rank's state as the app's grid and the bridge show it (RankStatusTracker: events, exits, findings).
    [[nodiscard]] const RankStatusTracker& states() const { return m_states; }
    // The run's verdict in one line, as the engine stored it when the run ended (RunRecord::headline()): its
    // summary, or the standing finding that says it and more (the root cause with what the kernel log or a hang
    // before it adds: "…; it was waiting on a hung rank: rank 1 on node-b stuck at …"; a stopped run's hang).
    [[nodiscard]] QString verdict(const RunRecord& record) const { return record.headline(); }
    // One rank's progress line: its bar, step, loss and images/s, then its state where it is not simply running
    // (done, FAILED, HUNG, slow, ...). `hostWidth`: the widest host name of the run's ranks, so that the bars line up.
    [[nodiscard]] QString rankLine(int rank, int hostWidth) const;

signals:
    void done(int exitCode);

private:
    void redraw();
    void clearBars();
    void printLine(const QString& line); // with the time before it
    // Text as it is (each line ending in '\n'), below the bars, flushed.
    void printBlock(const QString& text);
    void printSummary(const RunRecord& record);
    // The standing finding whose message starts with the run's summary, if any: printSummary prints it in its place.
    [[nodiscard]] const Diagnosis* findingSaying(const RunRecord& record) const;

    remote::RunEngine* m_engine;
    bool m_interactive;
    FILE* m_out;
    RunSummary m_summary;
    RankStatusTracker m_states;
    QTimer m_tick;
    QElapsedTimer m_sincePlainReport;
    QString m_lastPlainReport; // not printed again while nothing in it moves (a hung run)
    int m_barLines = 0;
    int m_exitCode = 0;
    bool m_replaying = false;
    QVector<Diagnosis> m_findings; // each finding as last said, by key
};

} // namespace rankscope::cli
