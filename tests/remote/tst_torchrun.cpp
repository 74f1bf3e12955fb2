// SPDX-License-Identifier: MIT
// The torchrun launcher: one real torchrun (Debian's, /usr/bin/torchrun) per node starting the node's ranks
// through the supervisor's `rank` entry point, over a real sshd on loopback and across two network
// namespaces. Real trainer runs on Gloo; the rendezvous goes through torchrun's own agent store.
#include "enginetestutil.h"
#include "fixtures/netnsfixture.h"
#include "fixtures/sshdfixture.h"

#include <QProcess>
#include <QTemporaryDir>

using namespace rankscope;
using namespace rankscope::test;

namespace {

const QString kTrainer = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-trainer");
const QString kTorchrun = QStringLiteral("/usr/bin/torchrun");

QJsonObject trainerJson(int maxSteps, const QJsonArray& extra = {}) {
    return QJsonObject{{"dataset", "synthetic"}, {"model", "mlp"},    {"epochs", 1},    {"max_steps", maxSteps},
                       {"batch_size", 16},       {"backend", "gloo"}, {"device", "cpu"}, {"extra_args", extra}};
}

// The start event of a rank's stored events, as JSON.
QJsonObject startEvent(const QByteArray& events) {
    for (const QByteArray& line : events.split('\n'))
        if (line.startsWith("@rankscope ") && line.contains("\"type\":\"start\""))
            return QJsonDocument::fromJson(line.mid(11)).object();
    return {};
}

} // namespace

class tst_Torchrun final : public QObject {
    Q_OBJECT

private:
    QJsonObject loopbackNode(int procs) const {
        return m_sshd.nodeJson(QStringLiteral("loop"), m_dir.filePath(QStringLiteral("work 'dir'")), procs);
    }
    QJsonObject loopbackJob(const QString& name, const QJsonObject& trainer) const {
        return QJsonObject{{"version", 1},          {"name", name},
                           {"mode", "submit"},      {"deploy", "binary"},
                           {"launcher", "torchrun"}, {"torchrun", kTorchrun},
                           {"master_port", freePort()}, {"nodes", QJsonArray{loopbackNode(2)}},
                           {"trainer", trainer}};
    }
    remote::EngineOptions engineOptions(const QString& knownHosts) const {
        remote::EngineOptions options;
        options.knownHostsPath = knownHosts;
        options.sshConfigPath = QStringLiteral("none");
        options.localTrainer = kTrainer;
        return options;
    }
    static RunRecord waitForEnd(remote::RunEngine& engine, int timeoutMs) {
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        if (finished.isEmpty())
            finished.wait(timeoutMs);
        return finished.isEmpty() ? RunRecord() : finished.front().front().value<RunRecord>();
    }
    // Processes of a run still alive on this machine (loopback nodes share it).
    static QString leftovers(const QString& runId) {
        QProcess pgrep;
        pgrep.start(QStringLiteral("pgrep"), {QStringLiteral("-af"), runId});
        pgrep.waitForFinished(5000);
        return QString::fromUtf8(pgrep.readAllStandardOutput()).trimmed();
    }

    SshdFixture m_sshd;
    QTemporaryDir m_dir;

private slots:
    void initTestCase() {
        if (!QFileInfo(kTorchrun).isExecutable())
            QSKIP("no /usr/bin/torchrun (Debian's python3-torch) on this machine");
        qRegisterMetaType<RunRecord>();
        QString error;
        QVERIFY2(m_sshd.start(&error), qPrintable(error));
        QVERIFY(QFileInfo(kTrainer).isExecutable());
    }
    void cleanupTestCase() { QProcess::execute(QStringLiteral("pkill"), {QStringLiteral("-f"), m_dir.path()}); }

    // Every rank started by torchrun, its files followed and stored like a direct launch, with the ranks and
    // world size torchrun gave it, and nothing left running.
    void torchrunStartsEveryRankOfTheNode() {
        RunStore store(m_dir.filePath(QStringLiteral("store-ok")));
        remote::RunEngine engine(&store, engineOptions(m_sshd.knownHostsPath()));
        QString error;
        QVERIFY2(engine.launch(jobFrom(loopbackJob("torchrun-ok", trainerJson(8))), RunMode::Submit, &error),
                 qPrintable(error));
        const RunRecord record = waitForEnd(engine, 180000);
        QCOMPARE(record.state, QStringLiteral("finished"));
        QCOMPARE(record.exits.size(), 2);
        for (const RankExit& exit : record.exits)
            QCOMPARE(exit.status, 0);
        QString mismatch;
        QVERIFY2(storeMatchesNodes(store, record, &mismatch), qPrintable(mismatch));
        const QString runDir = record.nodes.front().runDir;
        QVERIFY2(readAll(runDir + "/launcher.cmd").contains("--nproc_per_node=2"), runDir.toUtf8());
        for (int rank = 0; rank < 2; ++rank) {
            const QByteArray events = readAll(store.streamPath(record.id, rank, RankStream::Events));
            int steps = 0;
            QVERIFY(stepsAreContiguous(events, &steps));
            QCOMPARE(steps, 8);
            const QJsonObject start = startEvent(events);
            QCOMPARE(start.value("rank").toInt(), rank);
            QCOMPARE(start.value("world_size").toInt(), 2);
            // torchrun's environment, not the engine's: no rank flags or variables in the rank's command.
            const QByteArray command = readAll(runDir + QStringLiteral("/rank%1.cmd").arg(rank));
            QVERIFY2(!command.isEmpty() && !command.contains("--rank") && !command.contains("'RANK="),
                     command.constData());
        }
        QTRY_COMPARE_WITH_TIMEOUT(leftovers(record.id), QString(), 10000); // the supervisor exits just after
    }

    // A rank that fails is named with its own error, and torchrun ends the node's other rank.
    void failedRankIsNamedAndThePeerEnded() {
        RunStore store(m_dir.filePath(QStringLiteral("store-fail")));
        remote::RunEngine engine(&store, engineOptions(m_sshd.knownHostsPath()));
        const QJsonObject job =
            loopbackJob("torchrun-fail", trainerJson(200, QJsonArray{"--fail-at-step", "3", "--fail-rank", "1"}));
        QString error;
        QVERIFY2(engine.launch(jobFrom(job), RunMode::Submit, &error), qPrintable(error));
        const RunRecord record = waitForEnd(engine, 180000);
        QCOMPARE(record.state, QStringLiteral("failed"));
        QCOMPARE(record.firstFailedRank, 1);
        QVERIFY2(record.summary.contains(QLatin1String("rank 1")), qPrintable(record.summary));
        QCOMPARE(record.exits.size(), 2);
        QTRY_COMPARE_WITH_TIMEOUT(leftovers(record.id), QString(), 10000); // the supervisor exits just after
    }

    // torchrun missing on the node: every rank fails with the launcher's own words, not silence.
    void missingTorchrunIsExplainedPerRank() {
        RunStore store(m_dir.filePath(QStringLiteral("store-missing")));
        remote::RunEngine engine(&store, engineOptions(m_sshd.knownHostsPath()));
        QJsonObject job = loopbackJob("torchrun-missing", trainerJson(4));
        job.insert("torchrun", "/nonexistent/torchrun");
        QString error;
        QVERIFY2(engine.launch(jobFrom(job), RunMode::Submit, &error), qPrintable(error));
        const RunRecord record = waitForEnd(engine, 60000);
        QCOMPARE(record.state, QStringLiteral("failed"));
        QCOMPARE(record.exits.size(), 2);
        for (const RankExit& exit : record.exits)
            QCOMPARE(exit.status, 127);
        for (int rank = 0; rank < 2; ++rank) {
            const QByteArray err = readAll(store.streamPath(record.id, rank, RankStream::Err));
            QVERIFY2(err.contains("launcher") && err.contains("/nonexistent/torchrun"), err.constData());
        }
    }

    // Stopping a torchrun run ends torchrun and every rank, verified on the node.
    void stopEndsTorchrunAndItsRanks() {
        RunStore store(m_dir.filePath(QStringLiteral("store-stop")));
        remote::RunEngine engine(&store, engineOptions(m_sshd.knownHostsPath()));
        QSignalSpy events(&engine, &remote::RunEngine::events);
        QSignalSpy stopped(&engine, &remote::RunEngine::stopped);
        QString error;
        QVERIFY2(engine.launch(jobFrom(loopbackJob("torchrun-stop",
                                                   trainerJson(100000, QJsonArray{"--slow-rank", "0", "--slow-ms", "50"}))),
                               RunMode::Submit, &error),
                 qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(steppedTo(events, -1, 3), 120000);
        const QString runId = engine.record().id;
        QVERIFY(!leftovers(runId).isEmpty());
        engine.stop();
        QTRY_VERIFY_WITH_TIMEOUT(!stopped.isEmpty(), 60000);
        QCOMPARE(stopped.front().front().toInt(), 0);
        QCOMPARE(leftovers(runId), QString());
    }

    // Two nodes, one rank each: torchrun's static rendezvous across the namespace addresses, with node_rank
    // numbering the ranks as the engine's plan does.
    void twoNodesRendezvousThroughTorchrun() {
        if (const QString reason = NetnsFixture::skipReason(); !reason.isEmpty())
            QSKIP(qPrintable(reason));
        NetnsFixture nodes;
        QString error;
        QVERIFY2(nodes.start(2, &error), qPrintable(error));
        QJsonArray nodeList;
        for (int i = 0; i < 2; ++i)
            nodeList.append(
                nodes.nodeJson(i, QStringLiteral("n%1").arg(i), m_dir.filePath(QStringLiteral("netns%1").arg(i)), 1));
        const QJsonObject job{{"version", 1},           {"name", "torchrun-netns"}, {"mode", "submit"},
                              {"deploy", "binary"},     {"launcher", "torchrun"},   {"torchrun", kTorchrun},
                              {"master_port", freePort()}, {"nodes", nodeList},     {"trainer", trainerJson(6)}};
        RunStore store(m_dir.filePath(QStringLiteral("store-netns")));
        remote::RunEngine engine(&store, engineOptions(nodes.knownHostsPath()));
        QVERIFY2(engine.launch(jobFrom(job), RunMode::Submit, &error), qPrintable(error));
        const RunRecord record = waitForEnd(engine, 180000);
        QCOMPARE(record.state, QStringLiteral("finished"));
        for (int rank = 0; rank < 2; ++rank) {
            const QJsonObject start = startEvent(readAll(store.streamPath(record.id, rank, RankStream::Events)));
            QCOMPARE(start.value("rank").toInt(), rank);
            QCOMPARE(start.value("world_size").toInt(), 2);
            QCOMPARE(start.value("host").toString().isEmpty(), false);
            QCOMPARE(record.nodes[rank].ranks, QVector<int>{rank});
        }
    }
};

QTEST_GUILESS_MAIN(tst_Torchrun)
#include "tst_torchrun.moc"
