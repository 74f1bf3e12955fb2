// SPDX-License-Identifier: MIT
// The engine's live diagnosis of the trainer's fault injection across two nodes: two network namespaces on a
// bridge, each with its own sshd, the ranks rendezvousing across the namespace addresses (Gloo, submit mode). A
// failing rank is the root cause, named with its host; a hung rank is named with its host within two
// heartbeat intervals, and the merged stacks the engine takes over SSH (gdb on the node) show it apart from the
// others; a slow rank is the only straggler. One fixture and one uploaded trainer serve every case; the
// fixture's names come from this process's pid, so this program runs beside tst_netns_e2e. Needs root (skips
// with the reason otherwise).
#include "core/ranklist.h"
#include "enginetestutil.h"
#include "fixtures/netnsfixture.h"

#include <QFileInfo>
#include <QRandomGenerator>
#include <QSet>
#include <QTemporaryDir>

using namespace rankscope;
using namespace rankscope::test;

namespace {

// Hang and failure: two ranks per node, the culprit node-b's second rank, beside a healthy rank of its own node.
constexpr int kRanksPerNode = 2;
constexpr int kRanks = 2 * kRanksPerNode;
constexpr int kCulprit = 3;
// Straggler: two ranks per node too, the slow one node-b's first. Four ranks share two loaded cores, so healthy
// ranks compute 5-6 ms against 4 ms (1.2x and more); the diagnosis blames only the rank the others wait for.
constexpr int kSlowRank = 2;

QSet<int> allRanksBut(int rank) {
    QSet<int> ranks;
    for (int r = 0; r < kRanks; ++r)
        if (r != rank)
            ranks.insert(r);
    return ranks;
}

void addRanks(const StackNode& node, QSet<int>& ranks) {
    for (const int rank : node.ranks())
        ranks.insert(rank);
}

// The ranks whose threads pass through a frame whose function holds `text`.
QSet<int> ranksAt(const StackTree& tree, const QString& text) {
    QSet<int> ranks;
    for (const StackNode* node : tree.find(text))
        addRanks(*node, ranks);
    return ranks;
}

// The ranks at frames labelled `wait` in the subtree of `node` (itself included).
void waitingIn(const StackNode& node, WaitKind wait, QSet<int>& ranks) {
    if (node.wait == wait)
        addRanks(node, ranks);
    for (const StackNode& child : node.children)
        waitingIn(child, wait, ranks);
}

QSet<int> waitingAt(const StackTree& tree, const QString& text, WaitKind wait) {
    QSet<int> ranks;
    for (const StackNode* node : tree.find(text))
        waitingIn(*node, wait, ranks);
    return ranks;
}

QString describe(const QSet<int>& ranks) {
    return formatRankList(QVector<int>(ranks.cbegin(), ranks.cend()));
}

// The split a hang must show: the hung rank alone in the injected sleep; every other rank, on both nodes, in the
// DDP reducer's c10d wait with its Gloo worker waiting for the ring; the training step shared by all.
bool showsHungRankApart(const StackTree& tree, QString* why) {
    const QSet<int> hung{kCulprit};
    const QSet<int> others = allRanksBut(kCulprit);
    QStringList problems;
    const auto expect = [&problems](const QString& what, const QSet<int>& got, const QSet<int>& wanted) {
        if (got != wanted)
            problems << QStringLiteral("%1: ranks [%2], expected [%3]").arg(what, describe(got), describe(wanted));
    };
    expect(QStringLiteral("Trainer::injectFaults"), ranksAt(tree, QStringLiteral("Trainer::injectFaults")), hung);
    expect(QStringLiteral("sleep below injectFaults"),
           waitingAt(tree, QStringLiteral("Trainer::injectFaults"), WaitKind::Sleep), hung);
    expect(QStringLiteral("c10d::Reducer::finalize_backward"),
           ranksAt(tree, QStringLiteral("c10d::Reducer::finalize_backward")), others);
    expect(QStringLiteral("c10d wait below finalize_backward"),
           waitingAt(tree, QStringLiteral("c10d::Reducer::finalize_backward"), WaitKind::C10d), others);
    QSet<int> gloo;
    waitingIn(tree.root(), WaitKind::Gloo, gloo);
    expect(QStringLiteral("gloo wait"), gloo, others);
    expect(QStringLiteral("Trainer::trainStep"), ranksAt(tree, QStringLiteral("Trainer::trainStep")), others + hung);
    *why = problems.join(QStringLiteral("; ")) + QStringLiteral("\n") + tree.render();
    return problems.isEmpty();
}

} // namespace

class tst_NetnsFaults final : public QObject {
    Q_OBJECT

private:
    QJsonObject job(const QString& name, int ranksPerNode, int steps, const QJsonArray& faults) const {
        QJsonArray nodes;
        // One work directory for both: the trainer is uploaded once, for every case.
        for (int i = 0; i < m_nodes.nodeCount(); ++i)
            nodes.append(m_nodes.nodeJson(i, QStringLiteral("node-%1").arg(QChar('a' + i)),
                                          m_dir.filePath(QStringLiteral("shared home/rankscope")), ranksPerNode));
        QJsonArray extra{"--threads", "1"};
        for (const QJsonValue& fault : faults)
            extra.append(fault);
        return QJsonObject{{"version", 1},
                           {"name", name},
                           {"mode", "submit"},
                           {"deploy", "binary"},
                           {"master_port", 20000 + QRandomGenerator::global()->bounded(20000)},
                           {"nodes", nodes},
                           {"trainer", QJsonObject{{"dataset", "synthetic"},
                                                   {"model", "mlp"},
                                                   // The synthetic set's 4,096 samples make 64 steps of 16 a
                                                   // rank: enough epochs for `steps`, which end the run.
                                                   {"epochs", steps / 64 + 1},
                                                   {"max_steps", steps},
                                                   {"batch_size", 16},
                                                   {"backend", "gloo"},
                                                   {"device", "cpu"},
                                                   {"extra_args", extra}}}};
    }
    remote::EngineOptions options() const {
        remote::EngineOptions o;
        o.knownHostsPath = m_nodes.knownHostsPath();
        o.sshConfigPath = QStringLiteral("none");
        o.localTrainer = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-trainer");
        return o;
    }
    // What the engine says, in the test log: a failure here is diagnosed from it.
    static void narrate(remote::RunEngine& engine) {
        QObject::connect(&engine, &remote::RunEngine::nodeProgress, &engine,
                         [](int, const QString& host, const QString& message) {
                             qInfo("[%s] %s", qPrintable(host), qPrintable(message));
                         });
        QObject::connect(&engine, &remote::RunEngine::diagnoses, &engine, [](const QVector<Diagnosis>& found) {
            for (const Diagnosis& d : found)
                qInfo("%s", qPrintable(d.toString()));
        });
        QObject::connect(&engine, &remote::RunEngine::finished, &engine, [](const RunRecord& record) {
            qInfo("run %s %s: %s", qPrintable(record.id), qPrintable(record.state), qPrintable(record.summary));
        });
    }
    QString hostOf(int rank, int ranksPerNode = kRanksPerNode) const {
        return m_nodes.nodeAddress(rank / ranksPerNode);
    }

    NetnsFixture m_nodes;
    QTemporaryDir m_dir;
    // One store for every case: the trainer's hash is cached there, taken once.
    RunStore m_store{m_dir.filePath(QStringLiteral("store"))};

private slots:
    void initTestCase() {
        qRegisterMetaType<RunRecord>();
        qRegisterMetaType<StackTree>();
        if (const QString reason = NetnsFixture::skipReason(); !reason.isEmpty())
            QSKIP(qPrintable(reason));
        QVERIFY(QFileInfo(options().localTrainer).isExecutable());
        QString error;
        QVERIFY2(m_nodes.start(2, &error), qPrintable(error));
    }

    void failingRankIsTheRootCauseWithItsHost() {
        remote::RunEngine engine(&m_store, options());
        narrate(engine);
        QSignalSpy diagnoses(&engine, &remote::RunEngine::diagnoses);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QString error;
        QVERIFY2(engine.launch(jobFrom(job(QStringLiteral("fail"), kRanksPerNode, 200,
                                           {"--fail-at-step", "4", "--fail-rank", QString::number(kCulprit)})),
                               RunMode::Submit, &error),
                 qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), 180000);
        const RunRecord record = finished.front().front().value<RunRecord>();
        QCOMPARE(record.state, QStringLiteral("failed"));
        QCOMPARE(record.firstFailedRank, kCulprit);

        const QVector<Diagnosis> causes = collected(diagnoses, DiagnosisKind::RootCause);
        QCOMPARE(causes.size(), 1);
        const Diagnosis& cause = causes.front();
        QCOMPARE(cause.ranks, QVector<int>{kCulprit});
        QCOMPARE(cause.host, hostOf(kCulprit));
        const QString named = QStringLiteral("rank %1 on %2 failed first").arg(kCulprit).arg(hostOf(kCulprit));
        QVERIFY2(cause.message.startsWith(named) && cause.message.contains(QLatin1String("--fail-at-step")),
                 qPrintable(cause.message));
    }

    void hungRankIsNamedWithinTwoHeartbeatsAndStandsApartInTheStacks() {
        remote::RunEngine engine(&m_store, options());
        narrate(engine);
        QSignalSpy diagnoses(&engine, &remote::RunEngine::diagnoses);
        QSignalSpy events(&engine, &remote::RunEngine::events);
        QSignalSpy captured(&engine, &remote::RunEngine::stacksCaptured);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QString error;
        QVERIFY2(engine.launch(jobFrom(job(QStringLiteral("hang"), kRanksPerNode, 1000,
                                           {"--hang-at-step", "6", "--hang-rank", QString::number(kCulprit)})),
                               RunMode::Submit, &error),
                 qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(!collected(diagnoses, DiagnosisKind::Hang).isEmpty(), 180000);
        const Diagnosis hang = collected(diagnoses, DiagnosisKind::Hang).front();
        QCOMPARE(hang.ranks.front(), kCulprit);
        QCOMPARE(QSet<int>(hang.ranks.cbegin(), hang.ranks.cend()), allRanksBut(kCulprit) + QSet<int>{kCulprit});
        QCOMPARE(hang.host, hostOf(kCulprit));
        const QString named =
            QStringLiteral("rank %1 on %2 stuck at step 6 in phase forward").arg(kCulprit).arg(hostOf(kCulprit));
        QVERIFY2(hang.message.startsWith(named), qPrintable(hang.message));
        QVERIFY2(hang.message.contains(QLatin1String("ranks 0-2 waiting in collective")), qPrintable(hang.message));

        // Within two of the intervals the trainer's heartbeats show, from the moment every rank showed the state
        // it stays in.
        const double interval = heartbeatInterval(events);
        const double since = stillSince(events, hang.time);
        QVERIFY(interval > 0.0 && since > 0.0);
        const double delay = hang.time - since;
        qInfo("hang diagnosed %.2f s (%.2f heartbeat intervals of %.2f s) after every rank was seen still", delay,
              delay / interval, interval);
        QVERIFY2(delay <= 2 * interval, qPrintable(QStringLiteral("%1 s, interval %2 s").arg(delay).arg(interval)));

        // The engine takes every rank's stacks over SSH by itself, once for this hang.
        QTRY_VERIFY_WITH_TIMEOUT(!captured.isEmpty(), 180000);
        const StackTree tree = captured.front().at(0).value<StackTree>();
        const QString path = captured.front().at(1).toString();
        engine.stop();
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), 60000);
        if (tree.isEmpty()) {
            QStringList causes;
            for (auto it = tree.errors().cbegin(); it != tree.errors().cend(); ++it)
                causes << QStringLiteral("rank %1: %2").arg(it.key()).arg(it.value());
            QSKIP(qPrintable(QStringLiteral("no stacks could be taken on the nodes: ") +
                             causes.join(QStringLiteral("; "))));
        }
        qInfo("main threads:\n%s", qPrintable(tree.render(true)));
        QVERIFY2(tree.errors().isEmpty(), qPrintable(tree.render()));
        QCOMPARE(tree.ranks().size(), kRanks);
        QString why;
        QVERIFY2(showsHungRankApart(tree, &why), qPrintable(why));
        QVERIFY2(path.startsWith(m_store.runDir(engine.record().id) + QStringLiteral("/stacks-")), qPrintable(path));
        QCOMPARE(captured.size(), 1);
    }

    void slowRankIsTheOnlyStraggler() {
        remote::RunEngine engine(&m_store, options());
        narrate(engine);
        QSignalSpy diagnoses(&engine, &remote::RunEngine::diagnoses);
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        QString error;
        QVERIFY2(engine.launch(jobFrom(job(QStringLiteral("slow"), kRanksPerNode, 200,
                                           {"--slow-rank", QString::number(kSlowRank), "--slow-ms", "40"})),
                               RunMode::Submit, &error),
                 qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), 180000);
        QCOMPARE(finished.front().front().value<RunRecord>().state, QStringLiteral("finished"));
        const QVector<Diagnosis> stragglers = collected(diagnoses, DiagnosisKind::Straggler);
        QVERIFY(!stragglers.isEmpty());
        for (const Diagnosis& d : stragglers)
            QVERIFY2(d.ranks == QVector<int>{kSlowRank}, qPrintable(d.toString()));
        const QString named = QStringLiteral("rank %1 on %2 is a straggler").arg(kSlowRank).arg(hostOf(kSlowRank));
        QVERIFY2(stragglers.front().message.startsWith(named), qPrintable(stragglers.front().message));
        QCOMPARE(stragglers.front().host, hostOf(kSlowRank));
        QVERIFY(collected(diagnoses, DiagnosisKind::Hang).isEmpty()); // a slow rank is not a hung one
    }
};

QTEST_GUILESS_MAIN(tst_NetnsFaults)
#include "tst_netns_faults.moc"
