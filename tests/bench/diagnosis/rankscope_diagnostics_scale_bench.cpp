// SPDX-License-Identifier: MIT
// What the live diagnosis costs per tick as a job grows: RunDiagnostics::update(), which the engine calls ten times a
// second on the thread that follows the run (the app's GUI thread), with every rank's straggler window full, for 64
// to 4096 ranks at two paces of steps (500 ms, and 5 ms, where a window holds its most steps, 1000). Beside it, the
// baseline of the same tick: taking in that tick's step events (RunDiagnostics::addEvents), which no diagnosis can
// skip. Means over 50 ticks (at 500 ms a step, one tick in five has steps to take in); run on one core by
// `tests/bench/run diagnostics-scale`.
//
//   rankscope_diagnostics_scale_bench [--ranks 64,256,1024,4096] [--ticks 50]
#include "core/diagnostics.h"
#include "core/trainerevent.h"

#include <rankscope/event_schema.h>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QStringList>

#include <algorithm>
#include <cstdio>

using namespace rankscope;

namespace {

constexpr double kTickSeconds = 0.1; // RunEngine's diagnosis timer

TrainerEvent stepEvent(int rank, double time, qint64 step, double stepMs) {
    TrainerEvent event;
    event.type = TrainerEventType::Step;
    event.typeName = QStringLiteral("step");
    event.rank = rank;
    event.time = time;
    event.versionMajor = 1;
    // Compute times spread by 20 % across ranks, none a straggler; a fifth of each step waiting for the others.
    const double computeMs = stepMs * (0.7 + 0.1 * ((rank * 7 + step) % 3));
    event.fields = QJsonObject{{jsonKey(schema::step::kStep), step},
                               {jsonKey(schema::step::kStepMs), stepMs},
                               {jsonKey(schema::step::kCommWaitMs), stepMs - computeMs}};
    return event;
}

struct Tick {
    double intakeMs;
    double updateMs;
};

// Fills every rank's window with 10 s of steps, then times `ticks` ticks of 100 ms of steps each.
Tick measure(int ranks, double stepMs, int ticks) {
    RunDiagnostics diagnostics;
    double now = 1000.0;
    qint64 step = 0;
    const auto stepsUntil = [&](double until) {
        QVector<TrainerEvent> batch;
        while (now + stepMs / 1000.0 <= until) {
            now += stepMs / 1000.0;
            ++step;
            for (int rank = 0; rank < ranks; ++rank)
                batch.append(stepEvent(rank, now, step, stepMs));
        }
        return batch;
    };
    for (const double filled = now + 10.0; now + stepMs / 1000.0 <= filled;)
        diagnostics.addEvents(stepsUntil(std::min(filled, now + 0.5))); // half a second at a time: 4096 ranks' are many
    diagnostics.update(now);
    Tick total{0.0, 0.0};
    double tickEnd = now;
    for (int i = 0; i < ticks; ++i) {
        tickEnd += kTickSeconds;
        const QVector<TrainerEvent> batch = stepsUntil(tickEnd); // made before the clock starts
        QElapsedTimer timer;
        timer.start();
        diagnostics.addEvents(batch);
        total.intakeMs += timer.nsecsElapsed() / 1e6;
        timer.restart();
        const QVector<Diagnosis> found = diagnostics.update(tickEnd);
        total.updateMs += timer.nsecsElapsed() / 1e6;
        if (!found.isEmpty())
            std::fprintf(stderr, "unexpected: %s\n", qPrintable(found.front().toString()));
    }
    return {total.intakeMs / ticks, total.updateMs / ticks};
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    const auto option = [&](const char* name, const QString& fallback) {
        const qsizetype at = args.indexOf(QLatin1String(name));
        return at > 0 && at + 1 < args.size() ? args[at + 1] : fallback;
    };
    const int ticks = std::max(1, option("--ticks", QStringLiteral("50")).toInt());
    std::printf("Means over %d ticks of %.0f ms, every rank's straggler window full\n\n", ticks, kTickSeconds * 1000);
    std::printf("| ranks | step | steps a window | update() ms | intake ms (baseline) | update / intake | share of "
                "the tick |\n|---|---|---|---|---|---|---|\n");
    for (const QString& count : option("--ranks", QStringLiteral("64,256,1024,4096")).split(QLatin1Char(','))) {
        const int ranks = count.toInt();
        for (const double stepMs : {500.0, 5.0}) {
            const Tick tick = measure(ranks, stepMs, ticks);
            const int window = stepMs >= 250.0 ? 20 : 1000; // DiagnosticsOptions: 20 steps or 5 s, at most 1000
            std::printf("| %d | %.0f ms | %d | %.2f | %.2f | %.1fx | %.1f %% |\n", ranks, stepMs, window, tick.updateMs,
                        tick.intakeMs, tick.updateMs / std::max(tick.intakeMs, 1e-6),
                        100.0 * tick.updateMs / (kTickSeconds * 1000.0));
            std::fflush(stdout);
        }
    }
    return 0;
}
