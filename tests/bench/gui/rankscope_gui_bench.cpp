// SPDX-License-Identifier: MIT
// rankscope_gui_bench: the desktop app's pipeline under a replayed load, one configuration per run; prints the
// figures as one JSON line (tests/bench/gui/gui_pipeline.py runs several and prints the table).
//
//   rankscope_gui_bench [--ranks 16] [--rate 5000] [--seconds 60 | --total-lines N] [--event-every 10]
//                       [--tick-ms 100] [--tab run|logs] [--tail-poll-ms 10] [--emitter PATH] [--quick]
//                       [--chart-point-budget N]  the charts take turns past N points (huge: never)
//                       [--save-charts DIR]  every chart as a PNG after the run (chart0.png: loss)
//                       [--event-costs 1]   also the GUI thread's time per kind of event (key "event_costs")
//   rankscope_gui_bench --latency [same flags]     the same over SSH to 2 namespace nodes (needs root)
//
// Runs under QT_QPA_PLATFORM=offscreen unless told otherwise, with HOME pointed at a temporary directory (the
// local debug node's work directory and the app's settings go there, and go away after).
#include "eventcosts.h"
#include "pipelinebench.h"

#include <QApplication>
#include <QJsonDocument>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <cstdio>

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QTemporaryDir home;
    if (!home.isValid()) {
        std::fprintf(stderr, "rankscope_gui_bench: cannot create a temporary directory\n");
        return 1;
    }
    qputenv("HOME", home.path().toLocal8Bit());
    rankscope::bench::TimedApplication app(argc, argv);
    QStandardPaths::setTestModeEnabled(true);
    const rankscope::bench::BenchArgs args(app.arguments().mid(1));
    const auto config = rankscope::bench::PipelineConfig::fromArgs(args);
    app.enable(args.integer(QStringLiteral("event-costs"), 0) != 0);
    QString error;
    QJsonObject result = rankscope::bench::runPipelineBench(config, &error);
    if (result.isEmpty()) {
        std::fprintf(stderr, "rankscope_gui_bench: %s\n", qPrintable(error));
        return 1;
    }
    if (args.integer(QStringLiteral("event-costs"), 0) != 0)
        result.insert(QStringLiteral("event_costs"), app.top(25));
    std::printf("%s\n", QJsonDocument(result).toJson(QJsonDocument::Compact).constData());
    return 0;
}
