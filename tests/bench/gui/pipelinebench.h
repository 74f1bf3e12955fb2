// SPDX-License-Identifier: MIT
#pragma once

#include "benchcommon.h"

#include <QJsonObject>
#include <QString>

namespace rankscope::bench {

// One configuration of the desktop app's pipeline benchmark: N emitter ranks replayed into a real MainWindow.
struct PipelineConfig {
    int ranks = 16;
    int ratePerRank = 5000; // lines/s per rank, events included
    double seconds = 60;
    qint64 totalLines = 0;               // all ranks together; 0: ranks * rate * seconds
    int eventEvery = 10;                 // one line in N is a step event
    int tickMs = 100;                    // the run view's tick (charts and log flush ride on it)
    QString tab = QStringLiteral("run"); // the tab shown during the run: run (as Debug leaves it) or logs
    bool overSsh = false;                // submit to 2 namespace nodes instead of a local debug run
    int nodes = 2;
    int tailPollMs = 10; // the local baseline's poll interval
    QString emitter;
    QString chartsDir;        // where to save every chart as a PNG after the run; empty: nowhere
    int chartPointBudget = 0; // the charts' tick point budget (RunCharts); 0: the app's own

    [[nodiscard]] qint64 linesPerRank() const;
    [[nodiscard]] qint64 stepsPerRank() const { return linesPerRank() / eventEvery; }
    [[nodiscard]] static PipelineConfig fromArgs(const BenchArgs& args);
};

// Runs it once and returns the figures, or an empty object with *error set.
[[nodiscard]] QJsonObject runPipelineBench(const PipelineConfig& config, QString* error);

} // namespace rankscope::bench
