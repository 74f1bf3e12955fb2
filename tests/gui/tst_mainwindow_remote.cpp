// SPDX-License-Identifier: MIT
// Submit distributed to two nodes in network namespaces (real sshd, real trainer over Gloo), close the main
// window mid-run, open a new one: it reattaches by itself, and the loss series has no gap and no repeat.
#include "fixtures/netnsfixture.h"
#include "jobview/jobeditor.h"
#include "mainwindow.h"
#include "runsession.h"
#include "runview/rankgridmodel.h"
#include "runview/runmetrics.h"
#include "runview/runview.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using namespace rankscope;
using namespace rankscope::gui;
using rankscope::test::NetnsFixture;

namespace {

const QString kTrainer = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-trainer");
constexpr int kSteps = 60;

qint64 highestStep(const RunMetrics* metrics) {
    qint64 highest = 0;
    for (const int rank : metrics->ranks())
        highest = std::max(highest, metrics->rank(rank)->lastStep);
    return highest;
}

} // namespace

class tst_MainWindowRemote final : public QObject {
    Q_OBJECT

private:
    NetnsFixture m_nodes;
    QTemporaryDir m_dir;

    MainWindow::Options options() const {
        MainWindow::Options o;
        o.storeRoot = m_dir.filePath(QStringLiteral("store"));
        o.localTrainer = kTrainer;
        o.sshConfigPath = QStringLiteral("none");
        o.knownHostsPath = m_nodes.knownHostsPath();
        o.restoreState = true; // as the app starts: layout, last job, and reattaching to a live run
        return o;
    }

    QString job() const {
        QJsonArray nodes;
        for (int i = 0; i < 2; ++i)
            nodes.append(
                m_nodes.nodeJson(i, QStringLiteral("n%1").arg(i), m_dir.filePath(QStringLiteral("node%1").arg(i)), 1));
        const QJsonObject job{
            {"version", 1},
            {"name", "gui-reattach"},
            {"mode", "submit"},
            {"deploy", "binary"},
            {"master_port", 29300 + QRandomGenerator::global()->bounded(200)},
            {"nodes", nodes},
            {"trainer", QJsonObject{{"dataset", "synthetic"}, {"model", "mlp"}, {"batch_size", 16}, {"backend", "gloo"},
                                    {"device", "cpu"}, {"max_steps", kSteps},
                                    {"extra_args", QJsonArray{"--threads", "1", "--slow-rank", "0", "--slow-ms", "80"}}}}};
        return QString::fromUtf8(QJsonDocument(job).toJson());
    }

private slots:
    void initTestCase() {
        if (const QString reason = NetnsFixture::skipReason(); !reason.isEmpty())
            QSKIP(qPrintable(reason));
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
        QString error;
        QVERIFY2(m_nodes.start(2, &error), qPrintable(error));
    }
    void cleanupTestCase() { QProcess::execute(QStringLiteral("pkill"), {QStringLiteral("-f"), m_dir.path()}); }

    void closedMidRunReattachesWithoutGap() {
        QString runId;
        {
            MainWindow window(options());
            window.show();
            window.jobEditor()->setJsonText(job());
            QTRY_VERIFY_WITH_TIMEOUT(window.jobEditor()->isValid(), 5000);
            QString error;
            QVERIFY2(window.submitRun(&error), qPrintable(error));
            runId = window.session()->record().id;
            QTRY_VERIFY_WITH_TIMEOUT(highestStep(window.runView()->metrics()) >= 8, 60000);
            QVERIFY(window.session()->isActive());
            QVERIFY(window.close()); // the run goes on on its nodes
        }
        QTest::qWait(1000); // steps the closed window never saw

        MainWindow window(options());
        window.show();
        QVERIFY(window.session()->isActive()); // reattached on start, without being asked
        QCOMPARE(window.session()->record().id, runId);
        QSignalSpy finished(window.session(), &RunSession::finished);
        QVERIFY(finished.wait(120000));
        QCOMPARE(finished.front().front().value<RunRecord>().state, QStringLiteral("finished"));
        window.runView()->flush();
        const RunMetrics* metrics = window.runView()->metrics();
        QCOMPARE(metrics->ranks(), (QList<int>{0, 1}));
        for (const int rank : metrics->ranks()) {
            const QVector<QPointF>& loss = metrics->rank(rank)->loss.points();
            QCOMPARE(loss.size(), kSteps);
            for (int i = 0; i < kSteps; ++i)
                QCOMPARE(loss[i].x(), double(i + 1)); // every step once, in order: no gap, no repeat
        }
    }
};

QTEST_MAIN(tst_MainWindowRemote)
#include "tst_mainwindow_remote.moc"
