// SPDX-License-Identifier: MIT
#pragma once

#include "core/runsummary.h"

#include <QMainWindow>
#include <QMap>
#include <QPointF>
#include <QVector>

class QChart;
class QTableWidget;
class QValueAxis;

namespace rankscope::gui {

// Shows a recorded run (the event streams of its ranks): loss per rank against the global step, and
// one row per rank with its state. The live run view of the desktop app grows out of this window.
class RunViewerWindow final : public QMainWindow {
    Q_OBJECT

public:
    explicit RunViewerWindow(QWidget* parent = nullptr);

    // Reads every file completely; returns an error message naming the file, or an empty string.
    QString openEventFiles(const QStringList& paths);

private:
    void chooseFiles();
    void refresh();

    RunSummary m_summary;
    QMap<int, QVector<QPointF>> m_lossByRank;
    QChart* m_chart = nullptr;
    QValueAxis* m_stepAxis = nullptr;
    QValueAxis* m_lossAxis = nullptr;
    QTableWidget* m_ranks = nullptr;
};

} // namespace rankscope::gui
