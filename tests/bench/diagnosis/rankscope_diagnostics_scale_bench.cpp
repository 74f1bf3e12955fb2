// SPDX-License-Identifier: MIT
// What the live diagnosis costs per tick as a job grows: RunDiagnostics::update(), which the engine calls ten times a
// second on the thread that follows the run (the app's GUI thread), with every rank's straggler window full, for 64
// to 4096 ranks at two paces of steps (500 ms, and 5 ms, where a window holds its most steps, 1000), and during a
// hang (every rank but one waiting in a collective, beating once a second, for 10 s). Beside it, the
// baseline of the same tick: taking in that tick's step events (RunDiagnostics::addEvents), which no diagnosis can
// skip. Means over 50 ticks (at 500 ms a step, one tick in five has steps to take in); run on one core by
// `tests/bench/run diagnostics-scale`.
//
//   rankscope_diagnostics_scale_bench [--ranks 64,256,1024,4096] [--ticks 50]
#include "core/diagnostics.h"
#include "core/trainerevent.h"
#include "tests/bench/benchargs.h"

#include <rankscope/event_schema.h>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QStringList>

#include <algorithm>
#include <cstdio>
#include <utility>

using namespace rankscope;

namespace {

constexpr double kTickSeconds = 0.1; // RunEngine's diagnosis timer

// An event as the trainer's version 1 writes it, made without JSON text: a bench of millions of events times the
// diagnosis, not the decoding.
TrainerEvent event(TrainerEventType type, const char* name, int rank, double time, QJsonObject fields) {
    TrainerEvent made;
    made.type = type;
    made.typeName = QLatin1String(name);
    made.rank = rank;
    made.time = time;
    made.versionMajor = 1;
    made.fields = std::move(fields);
    return made;
}

TrainerEvent stepEvent(int rank, double time, qint64 step, double stepMs) {
    // Compute times spread by 20 % across ranks, none a straggler; a fifth of each step waiting for the others.
    const double computeMs = stepMs * (0.7 + 0.1 * ((rank * 7 + step) % 3));
    return event(TrainerEventType::Step, "step", rank, time,
                 {{jsonKey(schema::step::kStep), step},
                  {jsonKey(schema::step::kStepMs), stepMs},
                  {jsonKey(schema::step::kCommWaitMs), stepMs - computeMs}});
}

TrainerEvent heartbeatEvent(int rank, double time, qint64 step, qint64 started, qint64 finished) {
    return event(TrainerEventType::Heartbeat, "heartbeat", rank, time,
                 {{jsonKey(schema::heartbeat::kStep), step},
                  {jsonKey(schema::heartbeat::kPhase), QStringLiteral("backward")},
                  {jsonKey(schema::heartbeat::kCollectiveStarted), started},
                  {jsonKey(schema::heartbeat::kCollectiveFinished), finished}});
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

// After 10 s of 500 ms steps, rank 0 stops in its own code before collective #3N+1, where every other rank waits;
// all beat once a second. Times the ticks of the hang's 10 s after its threshold (two heartbeats) has passed.
Tick measureHang(int ranks, int ticks) {
    RunDiagnostics diagnostics;
    double now = 1000.0;
    qint64 step = 0;
    QVector<TrainerEvent> batch;
    for (; step < 20; ++step) {
        now += 0.5;
        for (int rank = 0; rank < ranks; ++rank) {
            batch.append(stepEvent(rank, now, step + 1, 500.0));
            batch.append(heartbeatEvent(rank, now, step + 1, 3 * (step + 1), 3 * (step + 1)));
        }
    }
    diagnostics.addEvents(batch);
    const qint64 done = 3 * step;
    const auto beats = [&](double time) {
        QVector<TrainerEvent> beat;
        for (int rank = 0; rank < ranks; ++rank)
            beat.append(rank == 0 ? heartbeatEvent(rank, time, step, done, done)
                                  : heartbeatEvent(rank, time, step, done + 1, done));
        return beat;
    };
    bool hung = false;
    for (int second = 1; second <= 3; ++second) {
        diagnostics.addEvents(beats(now + second));
        for (const Diagnosis& d : diagnostics.update(now + second))
            hung = hung || d.kind == DiagnosisKind::Hang;
    }
    if (!hung)
        std::fprintf(stderr, "no hang diagnosed with %d ranks: the figures below are not of a hang\n", ranks);
    now += 3.0;
    Tick total{0.0, 0.0};
    for (int i = 0; i < ticks; ++i) {
        now += kTickSeconds;
        const QVector<TrainerEvent> beat = i % 10 == 0 ? beats(now) : QVector<TrainerEvent>{};
        QElapsedTimer timer;
        timer.start();
        diagnostics.addEvents(beat);
        total.intakeMs += timer.nsecsElapsed() / 1e6;
        timer.restart();
        diagnostics.update(now);
        total.updateMs += timer.nsecsElapsed() / 1e6;
    }
    return {total.intakeMs / ticks, total.updateMs / ticks};
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    const auto option = [&args](const char* name, const QString& fallback) {
        return bench::option(args, name, fallback);
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
        const Tick hang = measureHang(ranks, ticks);
        std::printf("| %d | a hang | 20 | %.2f | %.2f | %.1fx | %.1f %% |\n", ranks, hang.updateMs, hang.intakeMs,
                    hang.updateMs / std::max(hang.intakeMs, 1e-6), 100.0 * hang.updateMs / (kTickSeconds * 1000.0));
        std::fflush(stdout);
    }
    return 0;
}
