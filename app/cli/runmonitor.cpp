// SPDX-License-Identifier: MIT
#include "runmonitor.h"

#include "cli.h"
#include "core/diagnostics.h"
#include "texttable.h"

#include <QDateTime>

#include <rankscope/event_schema.h>

#include <algorithm>
#include <cmath>

namespace rankscope::cli {

namespace {

QString bar(double fraction, int width) {
    const int filled = static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * width));
    return QString(filled, QChar(0x2588)) + QString(width - filled, QChar(0x2591));
}

// How a rank ended, and whether the run's end ended it (a stop, the teardown, its peer's failure): the grid's
// "stopped", where the one or few ranks that failed by themselves are what to look at.
QString exitCell(const RunRecord& record, int rank) {
    const auto exit = record.exits.constFind(rank);
    if (exit == record.exits.cend())
        return QStringLiteral("?");
    const QString status = shortExitStatus(exit->status);
    return exit->stopped ? status + QStringLiteral(", stopped") : status;
}

// The word after a rank's progress: the app's grid's name for its state (rankLiveStateName), in capitals where
// something is wrong that the rank does not recover from by itself, and "done" for finished, as the CLI always
// said. Nothing for a rank that starts or runs.
QString stateWord(RankLiveState state) {
    switch (state) {
    case RankLiveState::Starting:
    case RankLiveState::Running:
        return {};
    case RankLiveState::Finished:
        return QStringLiteral("done");
    case RankLiveState::Slow:
    case RankLiveState::Stopped:
        return rankLiveStateName(state);
    case RankLiveState::Diverged:
    case RankLiveState::Hung:
    case RankLiveState::Failed:
    case RankLiveState::Lost:
        return rankLiveStateName(state).toUpper();
    }
    return {};
}

} // namespace

QString lastLinesBlock(const Diagnosis& diagnosis, const QString& runId) {
    if (diagnosis.lastLines.isEmpty() || diagnosis.ranks.isEmpty())
        return {};
    return QStringLiteral("  rank %1 said last (rankscope-cli logs %2 --rank %1):\n")
               .arg(diagnosis.ranks.front())
               .arg(runId) +
           formatStoredLines(diagnosis.lastLines, QStringLiteral("    "));
}

RunMonitor::RunMonitor(remote::RunEngine* engine, bool interactive, FILE* out)
    : m_engine(engine), m_interactive(interactive), m_out(out) {
    m_sincePlainReport.start();
    connect(engine, &remote::RunEngine::nodeProgress, this, [this](int, const QString& host, const QString& message) {
        printLine(QStringLiteral("[%1] %2").arg(host, message));
    });
    connect(engine, &remote::RunEngine::launched, this,
            [this](const QString& id) { printLine(QStringLiteral("run %1 started on every node").arg(id)); });
    connect(engine, &remote::RunEngine::events, this, [this](const QVector<TrainerEvent>& events) {
        m_summary.add(events);
        m_states.addEvents(events);
        if (m_replaying)
            return;
        // What the diagnostics report (a divergence, said by every rank at every check) comes as their finding. A
        // rank sent SIGTERM or SIGINT (the user's stop, the teardown, a scheduler) says where it was: no error of
        // its own, which its exit line then tells apart (stopped by the run's end, or ended by someone else).
        for (const TrainerEvent& event : events) {
            if (event.type != TrainerEventType::Error || RunDiagnostics::reportsError(event))
                continue;
            const QString kind = event.string(schema::error::kKind);
            const QString message = event.string(schema::error::kMessage);
            if (kind == jsonKey(schema::error_kind::kTerminated))
                printLine(QStringLiteral("rank %1 told to stop: %2").arg(event.rank).arg(message));
            else
                printLine(QStringLiteral("rank %1 error (%2): %3").arg(event.rank).arg(kind, message));
        }
    });
    // A rank's end as it happened, and as the engine judges it again (a failure it later takes for the teardown's).
    connect(engine, &remote::RunEngine::rankExitJudged, this,
            [this](int rank, const QString& host, int status, bool stopped) {
                m_states.rankExited(rank, status, host, stopped);
            });
    connect(engine, &remote::RunEngine::rankExited, this,
            [this](int rank, const QString& host, int status, bool stopped) {
                m_states.rankExited(rank, status, host, stopped);
                if (status != 0 && !m_replaying)
                    printLine(QStringLiteral("rank %1 on %2 %3: %4")
                                  .arg(rank)
                                  .arg(host, stopped ? QStringLiteral("stopped") : QStringLiteral("ended"),
                                       shortExitStatus(status)));
            });
    connect(engine, &remote::RunEngine::diagnoses, this, [this](const QVector<Diagnosis>& found) {
        for (const Diagnosis& diagnosis : found) {
            printLine(QStringLiteral("diagnosis: ") + diagnosis.toString());
            if (const QString lines = lastLinesBlock(diagnosis, m_engine->record().id); !lines.isEmpty())
                printBlock(lines);
        }
        foldFindings(m_findings, found);
        m_states.applyDiagnoses(found); // a hung, slow, diverged or failing rank says so on its line
    });
    connect(engine, &remote::RunEngine::stacksCaptured, this, [this](const StackTree& tree, const QString& path) {
        // An empty capture was said by stacksError ("no stacks from any rank"); only each rank's reason follows.
        // The main threads say where each rank is stuck; the helpers (Gloo's loops, heartbeats, NCCL's proxies)
        // are dozens of lines more, saved with the rest and one command away.
        if (!tree.isEmpty())
            printLine(QStringLiteral("stacks of every rank's main thread, merged%1:")
                          .arg(path.isEmpty() ? QString() : QStringLiteral(" (saved to %1)").arg(path)));
        printBlock(tree.render(true));
        if (const int helpers = tree.helperThreads(); helpers > 0)
            printLine(QStringLiteral("the ranks' %1 other threads as well: rankscope-cli stacks %2")
                          .arg(helpers)
                          .arg(m_engine->record().id));
    });
    connect(engine, &remote::RunEngine::debugServerReady, this, [this](const remote::DebugServer& server) {
        printLine(QStringLiteral("rank %1 on %2 waits for a debugger at %3; attach with:")
                      .arg(server.rank)
                      .arg(server.host, server.address));
        printBlock(QStringLiteral("  %1\n").arg(server.gdbCommand)); // bare, to copy and paste
    });
    connect(engine, &remote::RunEngine::debugServerError, this,
            [this](const QString& message) { printLine(QStringLiteral("debugger: ") + message); });
    connect(engine, &remote::RunEngine::stacksError, this,
            [this](const QString& message) { printLine(QStringLiteral("stacks: ") + message); });
    connect(engine, &remote::RunEngine::linkLost, this, [this](int, const QString& host, const QString& message) {
        printLine(QStringLiteral("[%1] link lost (%2); the run goes on, reconnecting").arg(host, message));
    });
    connect(engine, &remote::RunEngine::gpuTelemetryError, this,
            [this](int, const QString& host, const QString& message) { printLine(QStringLiteral("[%1] gpu: %2").arg(host, message)); });
    connect(engine, &remote::RunEngine::linkRestored, this,
            [this](int, const QString& host) { printLine(QStringLiteral("[%1] reconnected, catching up").arg(host)); });
    connect(engine, &remote::RunEngine::stopped, this, [this](int left) {
        printLine(left == 0  ? QStringLiteral("teardown verified: no process of the run is left on any node")
                  : left < 0 ? QStringLiteral("teardown could not be verified on every node")
                             : QStringLiteral("teardown: %1 process group(s) still alive").arg(left));
    });
    connect(engine, &remote::RunEngine::finished, this, [this, engine](const RunRecord& record) {
        m_tick.stop();
        redraw();
        printSummary(record);
        m_exitCode = record.state == QLatin1String("finished") ? kExitOk
                     : engine->launchFailed()                  ? kExitLaunchFailed
                                                               : kExitRunFailed;
        emit done(m_exitCode);
    });
    m_tick.setInterval(m_interactive ? 100 : 1000);
    connect(&m_tick, &QTimer::timeout, this, &RunMonitor::redraw);
    m_tick.start();
}

QString RunMonitor::rankLine(int rank, int hostWidth) const {
    const RankState* state = m_summary.rank(rank);
    const QString host = m_engine->hostOfRank(rank);
    const RankLiveStatus* live = m_states.rank(rank);
    const QString word = live ? stateWord(live->state) : QString();
    // Until its first step a rank has no place in its epochs to show; it can fail, or be stopped, before it.
    if (!state || !state->started || state->epoch == 0)
        return QStringLiteral("rank %1 %2  %3")
            .arg(rank, 3)
            .arg(host, -hostWidth)
            .arg(word.isEmpty() ? QStringLiteral("starting") : word);
    const qint64 total = state->totalSteps > 0 ? state->totalSteps : 0;
    const qint64 done = state->step; // counted across epochs
    const double fraction = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0.0;
    QString line = QStringLiteral("rank %1 %2 %3 %4%  ")
                       .arg(rank, 3)
                       .arg(host, -hostWidth)
                       .arg(bar(fraction, 20))
                       .arg(static_cast<int>(fraction * 100), 3);
    // "35%" beside "step 35/469" of the epoch would not add up when max_steps ends the run first.
    if (state->cappedByMaxSteps())
        line += QStringLiteral("step %1/%2 (max_steps)  epoch %3/%4")
                    .arg(done)
                    .arg(total)
                    .arg(state->epoch)
                    .arg(state->epochs);
    else
        line += QStringLiteral("epoch %1/%2 step %3/%4")
                    .arg(state->epoch)
                    .arg(state->epochs)
                    .arg(state->stepInEpoch())
                    .arg(state->stepsPerEpoch);
    if (state->loss)
        line += QStringLiteral("  loss %1").arg(*state->loss, 0, 'f', 4);
    if (state->imagesPerSec)
        line += QStringLiteral("  %1 img/s").arg(*state->imagesPerSec, 0, 'f', 0);
    if (!word.isEmpty())
        line += QStringLiteral("  ") + word;
    return line;
}

void RunMonitor::clearBars() {
    if (!m_interactive || m_barLines == 0)
        return;
    std::fprintf(m_out, "\x1b[%dA\x1b[J", m_barLines);
    m_barLines = 0;
}

void RunMonitor::printLine(const QString& line) {
    printBlock(QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss ")) + line + QLatin1Char('\n'));
}

void RunMonitor::printBlock(const QString& text) {
    clearBars();
    std::fputs(text.toUtf8().constData(), m_out);
    // Said now, also into a pipe (`| tee run.log`) or a file: a hang's diagnosis and stacks are the last lines of a
    // run whose bars no longer move, and would otherwise wait in the buffer until the run ends; whoever waits for a
    // gdb command line reads it at once.
    std::fflush(m_out);
    redraw();
}

void RunMonitor::redraw() {
    const int world = std::max(m_engine->record().worldSize, m_summary.worldSize());
    if (world == 0 || m_engine->record().state == QLatin1String("launching"))
        return; // deploying: the node messages say what happens
    int hostWidth = 12;
    for (int rank = 0; rank < world; ++rank)
        hostWidth = std::max(hostWidth, static_cast<int>(m_engine->hostOfRank(rank).size()));
    if (!m_interactive) {
        // Every 10 s into a file or a CI log, and only what moved: a rank stuck for an hour is reported once, not
        // 360 times (its hang is said as a finding).
        if (m_sincePlainReport.elapsed() < 10000)
            return;
        m_sincePlainReport.restart();
        QString report;
        for (int rank = 0; rank < world; ++rank)
            report += rankLine(rank, hostWidth) + QLatin1Char('\n');
        if (report == m_lastPlainReport)
            return;
        m_lastPlainReport = report;
        std::fputs(report.toUtf8().constData(), m_out);
        std::fflush(m_out);
        return;
    }
    clearBars();
    for (int rank = 0; rank < world; ++rank)
        std::fprintf(m_out, "%s\x1b[K\n", rankLine(rank, hostWidth).toUtf8().constData());
    m_barLines = world;
    std::fflush(m_out);
}

void RunMonitor::printSummary(const RunRecord& record) {
    clearBars();
    m_interactive = false;
    std::fprintf(m_out, "\nrun %s: %s\n", qPrintable(record.id), qPrintable(record.state));
    QVector<QStringList> rows{{QStringLiteral("rank"), QStringLiteral("host"), QStringLiteral("final loss"),
                               QStringLiteral("val acc"), QStringLiteral("img/s"), QStringLiteral("wall s"),
                               QStringLiteral("exit")}};
    const auto number = [](const std::optional<double>& value, int decimals) {
        return value ? QString::number(*value, 'f', decimals) : QStringLiteral("-");
    };
    for (int rank = 0; rank < record.worldSize; ++rank) {
        const RankState* state = m_summary.rank(rank);
        rows.append({QString::number(rank), m_engine->hostOfRank(rank), number(state ? state->loss : std::nullopt, 4),
                     number(state ? state->valAccuracy : std::nullopt, 4),
                     number(state ? state->endImagesPerSec : std::nullopt, 1),
                     number(state ? state->wallSeconds : std::nullopt, 1), exitCell(record, rank)});
    }
    // Columns as wide as their cells: a long host name does not push the rest out of line.
    std::fputs(qPrintable(formatTable(rows, {Align::Right, Align::Left, Align::Right, Align::Right, Align::Right,
                                             Align::Right, Align::Left})),
               m_out);
    // The run's summary line, unless a finding says it and more: that finding is listed below.
    const bool saidByFinding = findingSaying(record) != nullptr;
    if (!record.summary.isEmpty() && !saidByFinding)
        std::fprintf(m_out, "%s\n", qPrintable(record.summary));
    // What was found and still stands, again: said once as it happened, it may be screens away by now. A finding
    // the run's summary line already says is not repeated.
    bool heading = false;
    for (const Diagnosis& finding : std::as_const(m_findings)) {
        if (finding.resolved || (!saidByFinding && record.summary.contains(finding.message)))
            continue;
        if (!heading)
            std::fprintf(m_out, "findings:\n");
        heading = true;
        std::fprintf(m_out, "  %s\n", qPrintable(finding.toString()));
    }
    std::fprintf(m_out, "logs: rankscope-cli logs %s [--rank R]\n", qPrintable(record.id));
    std::fflush(m_out);
}

const Diagnosis* RunMonitor::findingSaying(const RunRecord& record) const {
    if (record.summary.isEmpty())
        return nullptr;
    const auto found = std::find_if(m_findings.cbegin(), m_findings.cend(), [&record](const Diagnosis& finding) {
        return !finding.resolved && finding.message.startsWith(record.summary);
    });
    return found != m_findings.cend() ? &*found : nullptr;
}

} // namespace rankscope::cli
