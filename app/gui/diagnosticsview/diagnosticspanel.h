// SPDX-License-Identifier: MIT
#pragma once

#include "core/diagnostics.h"

#include <QTreeWidget>

namespace rankscope::gui {

// The diagnostics dock: one row per finding of the run's diagnosis (root cause, hang, straggler, divergence, network
// warning), updated in place as the engine says it again (same key: a hang resolved, a straggler that caught up);
// under a root cause, what its rank said last, a row per line. Notes of the run that are no diagnosis (a rank that
// waits for a debugger) are rows too. While empty it says what would appear in it, so that "nothing found" does not
// read as "not working". A click on a row or a line under it asks for the rank's log.
class DiagnosticsPanel final : public QTreeWidget {
    Q_OBJECT

public:
    enum Column { KindColumn, RanksColumn, WhatColumn };
    enum { KeyRole = Qt::UserRole };  // on KindColumn: the finding's key
    enum { RankRole = Qt::UserRole }; // on RanksColumn: the rank a click shows, -1 for none

    explicit DiagnosticsPanel(QWidget* parent = nullptr);

    // Adds each new finding, and changes a known one (by key) where it is.
    void addDiagnoses(const QVector<Diagnosis>& diagnoses);
    // A row of its own (`kind` in the first column) about `rank`, or the row of that key changed.
    void addNote(const QString& key, const QString& kind, int rank, const QString& text);

    [[nodiscard]] QTreeWidgetItem* findingOf(const QString& key) const; // nullptr where none has that key

signals:
    void rankRequested(int rank); // -1: the row names no rank

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    QTreeWidgetItem* rowOf(const QString& key); // the key's row, a new one where none has it
};

} // namespace rankscope::gui
