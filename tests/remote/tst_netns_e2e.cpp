// SPDX-License-Identifier: MIT
// End to end on two nodes: two network namespaces on a bridge, each with its own sshd, the ranks
// rendezvousing across the namespace addresses. Needs root (skips with the reason otherwise).
#include "enginetestutil.h"
#include "fixtures/netnsfixture.h"

#include <QElapsedTimer>
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>

#include <csignal>

using namespace rankscope;
using namespace rankscope::test;

class tst_NetnsEndToEnd final : public QObject {
    Q_OBJECT

private:
    QJsonObject job(const QString& name, const QString& deploy, const QJsonObject& trainer) const {
        QJsonArray nodes;
        // One work directory for both, as with an NFS home: built once, under a lock.
        for (int i = 0; i < m_nodes.nodeCount(); ++i)
            nodes.append(m_nodes.nodeJson(i, QStringLiteral("node-%1").arg(QChar('a' + i)),
                                          m_dir.filePath(QStringLiteral("shared home/rankscope")), 1));
        return QJsonObject{{"version", 1},
                           {"name", name},
                           {"mode", "submit"},
                           {"deploy", deploy},
                           {"master_port", 20000 + QRandomGenerator::global()->bounded(20000)},
                           {"nodes", nodes},
                           {"trainer", trainer}};
    }
    static QJsonObject trainer(int steps, int slowMs) {
        QJsonObject trainer{{"dataset", "synthetic"}, {"model", "mlp"},   {"epochs", 1},
                            {"max_steps", steps},     {"batch_size", 16}, {"backend", "gloo"}};
        if (slowMs > 0)
            trainer.insert("extra_args", QJsonArray{"--slow-rank", "0", "--slow-ms", QString::number(slowMs)});
        return trainer;
    }
    remote::EngineOptions options() const {
        remote::EngineOptions o;
        o.knownHostsPath = m_nodes.knownHostsPath();
        o.sshConfigPath = QStringLiteral("none");
        o.localTrainer = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-trainer");
        return o;
    }
    static QByteArray processesOf(const QString& runId) {
        QProcess pgrep;
        pgrep.start(QStringLiteral("pgrep"), {QStringLiteral("-af"), runId});
        pgrep.waitForFinished();
        return pgrep.readAllStandardOutput();
    }

    // What the engine says, in the test log: a failure here is diagnosed from it.
    static void narrate(remote::RunEngine& engine) {
        QObject::connect(&engine, &remote::RunEngine::nodeProgress, &engine,
                         [](int, const QString& host, const QString& message) {
                             qInfo("[%s] %s", qPrintable(host), qPrintable(message));
                         });
        QObject::connect(&engine, &remote::RunEngine::finished, &engine, [](const RunRecord& record) {
            qInfo("run %s %s: %s", qPrintable(record.id), qPrintable(record.state), qPrintable(record.summary));
        });
    }

    NetnsFixture m_nodes;
    QTemporaryDir m_dir;

private slots:
    void initTestCase() {
        qRegisterMetaType<RunRecord>();
        qRegisterMetaType<StackTree>();
        if (const QString reason = NetnsFixture::skipReason(); !reason.isEmpty())
            QSKIP(qPrintable(reason));
        QString error;
        QVERIFY2(m_nodes.start(2, &error), qPrintable(error));
    }

    void cliBuildsOnTheNodesAndTrainsAcrossThem() {
        // The real command line, building the trainer from source on the nodes against their LibTorch.
        const QString jobPath = m_dir.filePath(QStringLiteral("two-nodes.json"));
        QFile file(jobPath);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QJsonDocument(job(QStringLiteral("two-nodes"), QStringLiteral("build"), trainer(20, 0))).toJson());
        file.close();
        const QString home = m_dir.filePath(QStringLiteral("cli-home"));
        QProcess cli;
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("RANKSCOPE_HOME"), home);
        cli.setProcessEnvironment(environment);
        cli.setProcessChannelMode(QProcess::MergedChannels);
        cli.start(QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-cli"),
                  {QStringLiteral("run"), jobPath, QStringLiteral("--known-hosts"), m_nodes.knownHostsPath(),
                   QStringLiteral("--ssh-config"), QStringLiteral("none")});
        QVERIFY(cli.waitForFinished(20 * 60 * 1000));
        const QByteArray output = cli.readAll();
        if (cli.exitCode() != 0)
            qWarning("rankscope-cli said:\n%s", output.right(6000).constData()); // QVERIFY2 would cut it short
        QCOMPARE(cli.exitCode(), 0);
        QVERIFY2(output.contains("building the trainer on the node"), output.constData());

        RunStore store(home);
        const RunRecord record = store.list().value(0);
        QCOMPARE(record.state, QStringLiteral("finished"));
        QCOMPARE(record.nodes.size(), 2);
        QCOMPARE(record.nodes[1].host, m_nodes.nodeAddress(1));
        QString mismatch;
        QVERIFY2(storeMatchesNodes(store, record, &mismatch), qPrintable(mismatch));
        // Rank 1 reached rank 0 across the bridge: its start event names node 1's rendezvous with node 0.
        const QByteArray events = readAll(store.streamPath(record.id, 1, RankStream::Events));
        QVERIFY(events.contains(QStringLiteral("tcp://%1:").arg(m_nodes.nodeAddress(0)).toUtf8()));
        int steps = 0;
        QVERIFY(stepsAreContiguous(events, &steps));
        QCOMPARE(steps, 20);

        // Nothing changed: a second deploy uploads and builds nothing.
        cli.start(QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-cli"),
                  {QStringLiteral("run"), jobPath, QStringLiteral("--known-hosts"), m_nodes.knownHostsPath(),
                   QStringLiteral("--ssh-config"), QStringLiteral("none")});
        QVERIFY(cli.waitForFinished(5 * 60 * 1000));
        const QByteArray again = cli.readAll();
        QVERIFY2(cli.exitCode() == 0, again.constData());
        QVERIFY2(!again.contains("uploading") && !again.contains("building"), again.constData());
    }

    // The cut node's ranks fall silent at once, while SSH takes seconds to give up on the link: their silence is
    // the copy's, not a hang of theirs (RunEngine::diagnose reads how far each node's copy goes), with heartbeats
    // every 0.5 s, so that a hang would be said within a second of the cut.
    void droppedLinkIsNoticedAndCaughtUpWithNothingLost() {
        RunStore store(m_dir.filePath(QStringLiteral("store-link")));
        remote::RunEngine engine(&store, options());
        narrate(engine);
        QSignalSpy events(&engine, &remote::RunEngine::events);
        QSignalSpy diagnoses(&engine, &remote::RunEngine::diagnoses);
        QSignalSpy lost(&engine, &remote::RunEngine::linkLost);
        QSignalSpy restored(&engine, &remote::RunEngine::linkRestored);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QJsonObject training = trainer(120, 100);
        QJsonArray extra = training.value(QStringLiteral("extra_args")).toArray();
        extra << "--heartbeat-s"
              << "0.5";
        training.insert(QStringLiteral("extra_args"), extra);
        QString error;
        QVERIFY2(engine.launch(jobFrom(job(QStringLiteral("link"), QStringLiteral("binary"), training)),
                               RunMode::Submit, &error),
                 qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(steppedTo(events, 1, 5), 60000);

        QVERIFY(m_nodes.setLinkUp(1, false, &error));
        QElapsedTimer down;
        down.start();
        QTRY_VERIFY_WITH_TIMEOUT(!lost.isEmpty(), 15000);
        const qint64 noticedMs = down.elapsed();
        QCOMPARE(lost.front().at(1).toString(), m_nodes.nodeAddress(1));
        QVERIFY2(noticedMs <= 10000, qPrintable(QStringLiteral("dead link noticed after %1 ms").arg(noticedMs)));
        QVERIFY(m_nodes.setLinkUp(1, true, &error));
        for (const Diagnosis& hang : collected(diagnoses, DiagnosisKind::Hang))
            QFAIL(qPrintable(QStringLiteral("a hang while node 1 could not be read: ") + hang.message));
        QTRY_VERIFY_WITH_TIMEOUT(!restored.isEmpty(), 30000);

        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), 180000);
        const RunRecord record = finished.front().front().value<RunRecord>();
        QCOMPARE(record.state, QStringLiteral("finished"));
        QString mismatch;
        QVERIFY2(storeMatchesNodes(store, record, &mismatch), qPrintable(mismatch));
        for (int rank = 0; rank < 2; ++rank) {
            int steps = 0;
            QVERIFY(stepsAreContiguous(readAll(store.streamPath(record.id, rank, RankStream::Events)), &steps));
            QCOMPARE(steps, 120);
        }
    }

    // A stack capture that finds the link dead must not leave the node unfollowed: the worker reconnects as after a
    // failed poll, and the run is seen to its end with nothing lost.
    void linkCutDuringAStackCaptureIsReconnected() {
        RunStore store(m_dir.filePath(QStringLiteral("store-capture-link")));
        remote::EngineOptions o = options();
        o.stackTimeoutSeconds = 5;
        remote::RunEngine engine(&store, o);
        narrate(engine);
        QSignalSpy events(&engine, &remote::RunEngine::events);
        QSignalSpy captured(&engine, &remote::RunEngine::stacksCaptured);
        QSignalSpy restored(&engine, &remote::RunEngine::linkRestored);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QString error;
        QVERIFY2(engine.launch(jobFrom(job(QStringLiteral("capture-link"), QStringLiteral("binary"), trainer(120, 150))),
                               RunMode::Submit, &error),
                 qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(steppedTo(events, 1, 5), 60000);
        QVERIFY(m_nodes.setLinkUp(1, false, &error));
        QVERIFY2(engine.captureStacks(&error), qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(!captured.isEmpty(), 60000);
        const StackTree tree = captured.front().at(0).value<StackTree>();
        QVERIFY2(tree.errors().contains(1), qPrintable(tree.render())); // node 1 could not be reached
        QVERIFY(m_nodes.setLinkUp(1, true, &error));
        QTRY_VERIFY_WITH_TIMEOUT(!restored.isEmpty(), 30000);
        QCOMPARE(restored.front().at(1).toString(), m_nodes.nodeAddress(1));

        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), 180000);
        const RunRecord record = finished.front().front().value<RunRecord>();
        QCOMPARE(record.state, QStringLiteral("finished"));
        QString mismatch;
        QVERIFY2(storeMatchesNodes(store, record, &mismatch), qPrintable(mismatch));
        int steps = 0;
        QVERIFY(stepsAreContiguous(readAll(store.streamPath(record.id, 1, RankStream::Events)), &steps));
        QCOMPARE(steps, 120);
    }

    void killedRankIsReportedAndTheRunTornDown() {
        RunStore store(m_dir.filePath(QStringLiteral("store-kill")));
        remote::RunEngine engine(&store, options());
        narrate(engine);
        QSignalSpy events(&engine, &remote::RunEngine::events);
        QSignalSpy exited(&engine, &remote::RunEngine::rankExited);
        QSignalSpy stopped(&engine, &remote::RunEngine::stopped);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QString error;
        QVERIFY2(engine.launch(jobFrom(job(QStringLiteral("kill"), QStringLiteral("binary"), trainer(100000, 50))),
                               RunMode::Submit, &error),
                 qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(steppedTo(events, 0, 3) && steppedTo(events, 1, 3), 60000);
        const QString runDir = engine.record().nodes[1].runDir;
        const qint64 pid = readAll(runDir + QStringLiteral("/rank1.pid")).trimmed().toLongLong();
        QVERIFY(pid > 0);

        QElapsedTimer since;
        since.start();
        QCOMPARE(::kill(static_cast<pid_t>(pid), SIGKILL), 0);
        QTRY_VERIFY_WITH_TIMEOUT(!exited.isEmpty(), 5000);
        const qint64 reportedMs = since.elapsed();
        QCOMPARE(exited.front().at(0).toInt(), 1);
        QCOMPARE(exited.front().at(1).toString(), m_nodes.nodeAddress(1));
        QCOMPARE(exited.front().at(2).toInt(), 128 + SIGKILL);
        QVERIFY2(reportedMs <= 2000, qPrintable(QStringLiteral("reported after %1 ms").arg(reportedMs)));

        QTRY_VERIFY_WITH_TIMEOUT(!stopped.isEmpty(), 10000);
        const qint64 stoppedMs = since.elapsed();
        QCOMPARE(stopped.front().at(0).toInt(), 0); // verified on every node: nothing left
        QVERIFY2(stoppedMs <= 5000, qPrintable(QStringLiteral("others stopped after %1 ms").arg(stoppedMs)));
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), 30000);
        const RunRecord record = finished.front().front().value<RunRecord>();
        QCOMPARE(record.state, QStringLiteral("failed"));
        QCOMPARE(record.firstFailedRank, 1);
        QVERIFY2(record.summary.contains(QLatin1String("SIGKILL")) && record.summary.contains(m_nodes.nodeAddress(1)),
                 qPrintable(record.summary));
        QCOMPARE(processesOf(record.id), QByteArray());
    }
};

QTEST_GUILESS_MAIN(tst_NetnsEndToEnd)
#include "tst_netns_e2e.moc"
