// SPDX-License-Identifier: MIT
// The run viewer, a real window under the offscreen platform, on streams recorded from real runs.
#include "runviewerwindow.h"

#include <QChartView>
#include <QLineSeries>
#include <QStatusBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QValueAxis>
#include <QtTest>

using rankscope::gui::RunViewerWindow;

class TestRunViewerWindow final : public QObject {
    Q_OBJECT

private:
    static QString recording(const QString& name, int rank) {
        return QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/events/recorded-%1-rank%2.out").arg(name).arg(rank);
    }
    static QStringList rowText(const QTableWidget* table, int row) {
        QStringList cells;
        for (int column = 0; column < table->columnCount(); ++column)
            cells << (table->item(row, column) ? table->item(row, column)->text() : QStringLiteral("(none)"));
        return cells;
    }
    static QList<QLineSeries*> lines(const RunViewerWindow& window) {
        QList<QLineSeries*> result;
        for (QAbstractSeries* series : window.findChild<QChartView*>()->chart()->series())
            result << qobject_cast<QLineSeries*>(series);
        return result;
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

    // A rank still running (no end), a step whose loss is NaN, an evaluation, and a rank seen only by its heartbeat.
    void eachCellSaysWhatTheEventsSay() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("rank0.events"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        const auto step = [](int epoch, int step, const char* loss, double imagesPerSec) {
            return QStringLiteral(R"(@rankscope {"v":"1.0","type":"step","rank":0,"time":%1,"epoch":%2,"step":%3,)"
                                  R"("loss":%4,"lr":0.01,"images_per_sec":%5,"step_ms":10,"data_ms":1,"forward_ms":3,)"
                                  R"("backward_ms":4,"comm_wait_ms":1,"optimizer_ms":1})")
                .arg(step + 1)
                .arg(epoch)
                .arg(step)
                .arg(QLatin1String(loss))
                .arg(imagesPerSec)
                .toUtf8();
        };
        file.write(R"(@rankscope {"v":"1.0","type":"start","rank":0,"time":1.0,"world_size":3,"local_rank":0,)"
                   R"("host":"gpu-1","pid":7,"backend":"gloo","device":"cpu","torch_version":"2.11","config":{},)"
                   R"("steps_per_epoch":2})"
                   "\n");
        file.write(step(1, 1, "1.5", 99.6) + "\n");
        file.write("[rank 0] an ordinary line between the events\n");
        file.write(step(1, 2, "\"nan\"", 100) + "\n"); // a diverged step: no point on the line
        file.write(step(2, 3, "0.5", 120.4) + "\n");
        file.write(R"(@rankscope {"v":"1.0","type":"eval","rank":0,"time":5.0,"epoch":1,"val_loss":0.7,)"
                   R"("val_accuracy":0.8125})"
                   "\n");
        file.write(R"(@rankscope {"v":"1.0","type":"heartbeat","rank":2,"time":5.5,"phase":"init","step":0,)"
                   R"("collective_started":0,"collective_finished":0})"
                   "\n");
        file.close();
        RunViewerWindow window;
        QCOMPARE(window.openEventFiles({path}), QString());
        QCOMPARE(window.windowTitle(), QStringLiteral("RankScope"));
        QCOMPARE(window.statusBar()->currentMessage(), QStringLiteral("6 event(s) from 1 file(s)"));

        auto* table = window.findChild<QTableWidget*>();
        QStringList headers;
        for (int column = 0; column < table->columnCount(); ++column)
            headers << table->horizontalHeaderItem(column)->text();
        QCOMPARE(headers, (QStringList{"rank", "host", "state", "epoch", "step", "loss", "images/s", "val accuracy"}));
        QCOMPARE(table->rowCount(), 2);
        // The step counts across epochs, as the events do (step 3 is the first of epoch 2).
        QCOMPARE(rowText(table, 0), (QStringList{"0", "gpu-1", "running", "2", "3", "0.5000", "120", "0.8125"}));
        QCOMPARE(rowText(table, 1), (QStringList{"2", "", "starting", "0", "0", "\u2013", "\u2013", "\u2013"}));

        // One line, of the rank with steps; the NaN step is left out, not drawn at 0.
        const QList<QLineSeries*> series = lines(window);
        QCOMPARE(series.size(), 1);
        QCOMPARE(series[0]->name(), QStringLiteral("rank 0"));
        QCOMPARE(series[0]->points(), (QList<QPointF>{{1, 1.5}, {3, 0.5}}));
        const auto axis = [&](Qt::Orientation orientation) {
            return qobject_cast<QValueAxis*>(window.findChild<QChartView*>()->chart()->axes(orientation).value(0));
        };
        QCOMPARE(axis(Qt::Horizontal)->min(), 0.0);
        QCOMPARE(axis(Qt::Horizontal)->max(), 3.0);
        QCOMPARE(axis(Qt::Vertical)->min(), 0.0);
        QVERIFY2(qAbs(axis(Qt::Vertical)->max() - 1.575) < 1e-6,
                 qPrintable(QString::number(axis(Qt::Vertical)->max())));
        QCOMPARE(series[0]->attachedAxes().size(), 2);
    }

    // Opening another run replaces the last one's lines and rows; a rank's images/s is the end event's average
    // once it has one (151.6 for rank 1 of the recorded run, whose last step made 158).
    void openingAnotherRunReplacesTheLast() {
        RunViewerWindow window;
        QCOMPARE(window.openEventFiles({recording("ok", 0), recording("ok", 1)}), QString());
        QCOMPARE(window.openEventFiles({recording("fail", 0)}), QString());
        QCOMPARE(lines(window).size(), 1);
        auto* table = window.findChild<QTableWidget*>();
        QCOMPARE(table->rowCount(), 1);
        QCOMPARE(window.openEventFiles({recording("ok", 0), recording("ok", 1)}), QString());
        QCOMPARE(lines(window).size(), 2);
        QCOMPARE(table->rowCount(), 2);
        QCOMPARE(table->item(1, 6)->text(), QStringLiteral("152"));
        QCOMPARE(table->item(1, 5)->text(), QStringLiteral("0.7414"));
        QVERIFY2(window.statusBar()->currentMessage().endsWith(QLatin1String(" event(s) from 2 file(s)")),
                 qPrintable(window.statusBar()->currentMessage()));
    }

    void missingFileIsNamed() {
        RunViewerWindow window;
        const QString error = window.openEventFiles({recording("ok", 0), QStringLiteral("/nonexistent/rank1.events")});
        QVERIFY2(error.contains(QStringLiteral("/nonexistent/rank1.events")), qPrintable(error));
    }
};

QTEST_MAIN(TestRunViewerWindow)
#include "tst_runviewerwindow.moc"
