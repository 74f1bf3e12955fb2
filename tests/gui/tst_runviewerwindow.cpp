// SPDX-License-Identifier: MIT
// The run viewer, a real window under the offscreen platform, on streams recorded from real runs.
#include "runviewerwindow.h"

#include <QChartView>
#include <QLineSeries>
#include <QTableWidget>
#include <QtTest>

using rankscope::gui::RunViewerWindow;

class TestRunViewerWindow final : public QObject {
    Q_OBJECT

private:
    static QString recording(const QString& name, int rank) {
        return QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/events/recorded-%1-rank%2.out").arg(name).arg(rank);
    }

private Q_SLOTS:
    void showsOneLossSeriesAndOneRowPerRank() {
        RunViewerWindow window;
        QCOMPARE(window.openEventFiles({recording("ok", 0), recording("ok", 1)}), QString());
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));

        auto* view = window.findChild<QChartView*>();
        QVERIFY(view);
        const auto series = view->chart()->series();
        QCOMPARE(series.size(), 2);
        for (int rank = 0; rank < 2; ++rank) {
            auto* line = qobject_cast<QLineSeries*>(series[rank]);
            QVERIFY(line);
            QCOMPARE(line->name(), QStringLiteral("rank %1").arg(rank));
            QCOMPARE(line->count(), 12); // one point per step of the recorded run
            QCOMPARE(line->at(11).x(), 12.0);
        }

        auto* table = window.findChild<QTableWidget*>();
        QVERIFY(table);
        QCOMPARE(table->rowCount(), 2);
        QCOMPARE(table->item(1, 0)->text(), QStringLiteral("1"));
        QCOMPARE(table->item(1, 1)->text(), QStringLiteral("node-a"));
        QCOMPARE(table->item(1, 2)->text(), QStringLiteral("finished"));
        QCOMPARE(table->item(1, 4)->text(), QStringLiteral("12"));
    }

    void failedRankIsShownAsFailed() {
        RunViewerWindow window;
        QCOMPARE(window.openEventFiles({recording("fail", 0), recording("fail", 1)}), QString());
        auto* table = window.findChild<QTableWidget*>();
        QCOMPARE(table->item(1, 2)->text(), QStringLiteral("failed"));
        QCOMPARE(table->item(1, 4)->text(), QStringLiteral("4")); // failed at step 5: four steps done
    }

    void missingFileIsNamed() {
        RunViewerWindow window;
        const QString error = window.openEventFiles({QStringLiteral("/nonexistent/rank0.events")});
        QVERIFY2(error.contains(QStringLiteral("/nonexistent/rank0.events")), qPrintable(error));
    }
};

QTEST_MAIN(TestRunViewerWindow)
#include "tst_runviewerwindow.moc"
