// SPDX-License-Identifier: MIT
// The diagnostics panel: findings kept one row a key as the diagnosis says them again, a root cause's last lines
// under it, colours by kind and state, notes, the rank a click asks for (real clicks on the rows), and the words
// painted while it is empty.
#include "diagnosticspanel.h"

#include "core/arrivalorder.h"

#include <QAbstractItemModelTester>
#include <QImage>
#include <QSignalSpy>
#include <QtTest>

using rankscope::Diagnosis;
using rankscope::DiagnosisKind;
using rankscope::RankStream;
using rankscope::StoredLine;
using rankscope::gui::DiagnosticsPanel;

namespace {

Diagnosis finding(DiagnosisKind kind, const QString& key, QVector<int> ranks, const QString& message) {
    Diagnosis d;
    d.kind = kind;
    d.key = key;
    d.ranks = std::move(ranks);
    d.message = message;
    return d;
}

Diagnosis rootCause(QVector<StoredLine> lastLines) {
    Diagnosis d = finding(DiagnosisKind::RootCause, QStringLiteral("root-cause"), {1, 0},
                          QStringLiteral("rank 1 on node-b failed first: exit status 1"));
    d.host = QStringLiteral("node-b");
    d.lastLines = std::move(lastLines);
    return d;
}

Diagnosis hang(bool resolved) {
    Diagnosis d = finding(DiagnosisKind::Hang, QStringLiteral("hang:41"), {3, 0, 1, 2},
                          QStringLiteral("rank 3 on node-b stuck at step 5 in phase backward (collective #41)"));
    d.resolved = resolved;
    return d;
}

QColor kindColour(const QTreeWidgetItem* item) {
    return item->foreground(DiagnosticsPanel::KindColumn).color();
}

// Whether anything but the panel's background is painted below `top` in its viewport.
bool paintedBelow(DiagnosticsPanel& panel, int top) {
    const QImage image = panel.viewport()->grab().toImage();
    const QRgb background = image.pixel(image.width() - 2, image.height() - 2);
    for (int y = top; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x)
            if (image.pixel(x, y) != background)
                return true;
    return false;
}

} // namespace

class TestDiagnosticsPanel final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Not under QAbstractItemModelTester: a root cause's lines are children of its row, and QTreeWidget's own model
    // gives every column of a row its children, which the tester's "second column has other children" check takes
    // for a fault.
    void findingsChangeWhereTheyAre() {
        DiagnosticsPanel panel;
        panel.addDiagnoses({rootCause({{RankStream::Out, QStringLiteral("epoch 1 step 4"), 1.0},
                                       {RankStream::Err, QStringLiteral("error: injected failure"), 2.0}}),
                            hang(false)});
        QCOMPARE(panel.topLevelItemCount(), 2);
        const QTreeWidgetItem* cause = panel.findingOf(QStringLiteral("root-cause"));
        QVERIFY(cause);
        QCOMPARE(cause->text(DiagnosticsPanel::KindColumn), QStringLiteral("root-cause"));
        QCOMPARE(cause->text(DiagnosticsPanel::RanksColumn), QStringLiteral("1,0"));
        QCOMPARE(cause->text(DiagnosticsPanel::WhatColumn),
                 QStringLiteral("rank 1 on node-b failed first: exit status 1"));
        // What the rank said last, a row a line, shown at once, the first labelled.
        QVERIFY(cause->isExpanded());
        QCOMPARE(cause->childCount(), 2);
        QCOMPARE(cause->child(0)->text(DiagnosticsPanel::KindColumn), QStringLiteral("rank 1 said last"));
        QCOMPARE(cause->child(0)->text(DiagnosticsPanel::WhatColumn), QStringLiteral("[out] epoch 1 step 4"));
        QCOMPARE(cause->child(1)->text(DiagnosticsPanel::KindColumn), QString());
        QCOMPARE(cause->child(1)->text(DiagnosticsPanel::WhatColumn), QStringLiteral("[err] error: injected failure"));

        const QTreeWidgetItem* stuck = panel.findingOf(QStringLiteral("hang:41"));
        QVERIFY(stuck);
        QCOMPARE(stuck->text(DiagnosticsPanel::KindColumn), QStringLiteral("hang"));
        QCOMPARE(kindColour(stuck), kindColour(cause)); // both stand: red
        const QColor standing = kindColour(stuck);

        // Said again: the same rows, changed. The hang resolved is grey; the root cause's lines are the new ones.
        panel.addDiagnoses({hang(true), rootCause({{RankStream::Err, QStringLiteral("Traceback"), 3.0}})});
        QCOMPARE(panel.topLevelItemCount(), 2);
        QCOMPARE(panel.findingOf(QStringLiteral("hang:41")), stuck);
        QCOMPARE(stuck->text(DiagnosticsPanel::KindColumn), QStringLiteral("hang (resolved)"));
        QVERIFY(kindColour(stuck) != standing);
        QCOMPARE(panel.findingOf(QStringLiteral("root-cause")), cause);
        QCOMPARE(cause->childCount(), 1);
        QCOMPARE(cause->child(0)->text(DiagnosticsPanel::WhatColumn), QStringLiteral("[err] Traceback"));
        // The lines are what the rank said, not findings: grey, as what passed, under the red of their cause.
        QCOMPARE(kindColour(cause->child(0)), kindColour(stuck));
        QVERIFY(kindColour(cause->child(0)) != kindColour(cause));

        // A straggler is neither the red of a failure nor the grey of what passed.
        panel.addDiagnoses({finding(DiagnosisKind::Straggler, QStringLiteral("straggler:2"), {2},
                                    QStringLiteral("rank 2 is a straggler: 1.6x the median step time of the others"))});
        const QTreeWidgetItem* slow = panel.findingOf(QStringLiteral("straggler:2"));
        QVERIFY(slow);
        QVERIFY(kindColour(slow) != standing && kindColour(slow) != kindColour(stuck));
        QCOMPARE(panel.findingOf(QStringLiteral("straggler:3")), nullptr);
    }

    void aClickAsksForTheRanksLog() {
        DiagnosticsPanel panel;
        panel.resize(900, 300);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        // A hang known from NCCL's watchdog timeouts only: no rank to show.
        const Diagnosis watchdog = finding(DiagnosisKind::Hang, QStringLiteral("hang:watchdog"), {},
                                           QStringLiteral("NCCL's watchdog timed out"));
        panel.addDiagnoses({rootCause({{RankStream::Err, QStringLiteral("error: injected failure"), 2.0}}), watchdog});
        QSignalSpy requested(&panel, &DiagnosticsPanel::rankRequested);
        const auto click = [&panel](const QTreeWidgetItem* item) {
            QTest::mouseClick(panel.viewport(), Qt::LeftButton, {},
                              panel.visualItemRect(item).topLeft() + QPoint(20, 4));
        };
        const QTreeWidgetItem* cause = panel.findingOf(QStringLiteral("root-cause"));
        click(cause);
        click(cause->child(0));
        click(panel.findingOf(QStringLiteral("hang:watchdog")));
        QCOMPARE(requested.size(), 3);
        QCOMPARE(requested.at(0).at(0).toInt(), 1); // the culprit, not the ranks that failed alike
        QCOMPARE(requested.at(1).at(0).toInt(), 1);
        QCOMPARE(requested.at(2).at(0).toInt(), -1);
    }

    void notesAreRowsOfTheirOwn() {
        DiagnosticsPanel panel;
        QAbstractItemModelTester tester(panel.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        panel.addDiagnoses({hang(false)});
        panel.addNote(QStringLiteral("debugger"), QStringLiteral("debugger"), 1,
                      QStringLiteral("rank 1 on node-b waits for a debugger at 127.0.0.1:40001: gdb -q …"));
        QCOMPARE(panel.topLevelItemCount(), 2);
        const QTreeWidgetItem* note = panel.findingOf(QStringLiteral("debugger"));
        QVERIFY(note);
        QCOMPARE(note->text(DiagnosticsPanel::KindColumn), QStringLiteral("debugger"));
        QCOMPARE(note->text(DiagnosticsPanel::RanksColumn), QStringLiteral("1"));
        QCOMPARE(note->data(DiagnosticsPanel::RanksColumn, DiagnosticsPanel::RankRole).toInt(), 1);
        panel.addNote(QStringLiteral("debugger"), QStringLiteral("debugger"), 1,
                      QStringLiteral("rank 1 on node-b waits for a debugger at 127.0.0.1:40002: gdb -q …"));
        QCOMPARE(panel.topLevelItemCount(), 2);
        QVERIFY(note->text(DiagnosticsPanel::WhatColumn).contains(QLatin1String(":40002")));
        // Rank 0 is a rank like any other; a note about no rank has none to show or ask for.
        panel.addNote(QStringLiteral("debugger:0"), QStringLiteral("debugger"), 0,
                      QStringLiteral("rank 0 on node-a waits for a debugger at 127.0.0.1:40003: gdb -q …"));
        QCOMPARE(panel.findingOf(QStringLiteral("debugger:0"))->text(DiagnosticsPanel::RanksColumn),
                 QStringLiteral("0"));
        panel.addNote(QStringLiteral("store"), QStringLiteral("run store"), -1,
                      QStringLiteral("the run is stored in …"));
        const QTreeWidgetItem* store = panel.findingOf(QStringLiteral("store"));
        QCOMPARE(store->text(DiagnosticsPanel::RanksColumn), QString());
        QCOMPARE(store->data(DiagnosticsPanel::RanksColumn, DiagnosticsPanel::RankRole).toInt(), -1);
    }

    // Empty, the panel says what would appear in it (words over several lines at this width); with a finding, only
    // its row is painted.
    void emptySaysWhatWouldAppear() {
        DiagnosticsPanel panel;
        panel.resize(420, 240);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QVERIFY(paintedBelow(panel, 40));
        panel.addDiagnoses({finding(DiagnosisKind::Divergence, QStringLiteral("divergence"), {1},
                                    QStringLiteral("replicas diverged"))});
        const QRect row = panel.visualItemRect(panel.topLevelItem(0));
        QVERIFY(row.height() > 0 && row.bottom() < 40);
        QVERIFY(!paintedBelow(panel, 40));
        panel.clear();
        QVERIFY(paintedBelow(panel, 40));
    }

    // A long finding is shown whole, over as many lines as the What column's width needs, and again when that
    // width changes: its end (where a root cause names the rank that left early) is not cut off.
    void aLongFindingWrapsToItsColumn() {
        DiagnosticsPanel panel;
        panel.resize(700, 400);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        const QString words =
            QStringLiteral("rank 0 on localhost failed first: exit status 1 (collective: broadcast "
                           "of buffers from rank 0 (collective #92) failed on rank 0: "
                           "[./gloo/transport/tcp/pair.cc:598] Connection closed by peer); rank 1 "
                           "had ended well before it (after 29 steps, of the 938 rank 0 was to take)");
        panel.addDiagnoses({finding(DiagnosisKind::RootCause, QStringLiteral("root-cause"), {0}, words)});
        const int line = panel.fontMetrics().height();
        const int width = panel.columnWidth(DiagnosticsPanel::WhatColumn);
        const int lines = panel.fontMetrics().horizontalAdvance(words) / width + 1;
        QTRY_VERIFY2(panel.visualItemRect(panel.topLevelItem(0)).height() >= lines * line,
                     qPrintable(QStringLiteral("%1 px for %2 lines of %3 px")
                                    .arg(panel.visualItemRect(panel.topLevelItem(0)).height())
                                    .arg(lines)
                                    .arg(line)));
        const int tall = panel.visualItemRect(panel.topLevelItem(0)).height();
        panel.resize(1400, 400);
        QTRY_VERIFY(panel.visualItemRect(panel.topLevelItem(0)).height() < tall);
        panel.resize(500, 400);
        QTRY_VERIFY(panel.visualItemRect(panel.topLevelItem(0)).height() > tall);
    }
};

QTEST_MAIN(TestDiagnosticsPanel)
#include "tst_diagnosticspanel.moc"
