// SPDX-License-Identifier: MIT
// Network findings from NCCL's own lines, through the real parser: what each rule reports and when it stays
// silent, on written lines and on a public sample.
#include "core/ncclfindings.h"
#include "core/ncclparser.h"

#include <QFile>
#include <QtTest>

using namespace rankscope;

namespace {

NcclFacts parse(const QByteArray& text) {
    NcclLogParser parser;
    parser.feed(text);
    parser.finish();
    return parser.facts();
}

QByteArray socketOn(const QByteArray& host, const QByteArray& device) {
    return host + ":100:100 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n" + host +
           ":100:100 [0] NCCL INFO NET/Socket : Using [0]" + device + "<0>\n" + host +
           ":100:100 [0] NCCL INFO Using network Socket\n";
}

const Diagnosis* byKey(const QVector<Diagnosis>& found, const QString& key) {
    for (const Diagnosis& d : found)
        if (d.key == key)
            return &d;
    return nullptr;
}

const QHash<int, QString> kHosts{{0, "node-a"}, {1, "node-b"}};

} // namespace

class tst_NcclFindings final : public QObject {
    Q_OBJECT

private slots:
    void nothingWithoutNcclLines() {
        QVERIFY(ncclNetworkFindings({{0, parse("plain log line\n")}}, kHosts, 2, 1.0).isEmpty());
        QVERIFY(ncclNetworkFindings({}, kHosts, 2, 1.0).isEmpty());
    }

    void loopbackAcrossNodesIsReportedNotOnOneNode() {
        const QMap<int, NcclFacts> facts{{0, parse(socketOn("node-a", "lo:127.0.0.1"))},
                                         {1, parse(socketOn("node-b", "eth0:10.0.0.2"))}};
        const QVector<Diagnosis> found = ncclNetworkFindings(facts, kHosts, 2, 5.0);
        const Diagnosis* loopback = byKey(found, QStringLiteral("nccl:loopback"));
        QVERIFY(loopback);
        QCOMPARE(loopback->kind, DiagnosisKind::Network);
        QCOMPARE(loopback->ranks, QVector<int>{0});
        QCOMPARE(loopback->host, QStringLiteral("node-a"));
        QVERIFY(loopback->message.contains(QLatin1String("NCCL_SOCKET_IFNAME")));
        QCOMPARE(loopback->time, 5.0);
        QCOMPARE(diagnosisKindName(loopback->kind), QStringLiteral("network"));
        // The same lines in a one-node run: the loopback is fine there.
        QVERIFY(!byKey(ncclNetworkFindings(facts, kHosts, 1, 5.0), QStringLiteral("nccl:loopback")));
    }

    void aContainerBridgeIsNamed() {
        const QVector<Diagnosis> found =
            ncclNetworkFindings({{1, parse(socketOn("node-b", "docker0:172.17.0.1"))}}, kHosts, 2, 1.0);
        const Diagnosis* bridge = byKey(found, QStringLiteral("nccl:virtual-interface"));
        QVERIFY(bridge);
        QVERIFY(bridge->message.contains(QLatin1String("docker0")));
        QVERIFY(bridge->message.contains(QLatin1String("NCCL_SOCKET_IFNAME=^docker0")));
        QVERIFY(!byKey(found, QStringLiteral("nccl:loopback")));
    }

    void socketsBecauseNoInfinibandAcrossNodes() {
        const QByteArray lines = "node-a:7:7 [0] NCCL INFO NET/IB : No device found.\n" + socketOn("node-a", "eth0:10.0.0.1");
        const QVector<Diagnosis> found = ncclNetworkFindings({{0, parse(lines)}}, kHosts, 2, 1.0);
        const Diagnosis* fallback = byKey(found, QStringLiteral("nccl:socket-fallback"));
        QVERIFY(fallback);
        QVERIFY(fallback->message.contains(QLatin1String("node-a")));
        QVERIFY(!byKey(ncclNetworkFindings({{0, parse(lines)}}, kHosts, 1, 1.0), QStringLiteral("nccl:socket-fallback")));
    }

    void ranksThatDisagreeOnNetworkOrVersion() {
        const QByteArray ib = "node-a:1:1 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n"
                              "node-a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n"
                              "node-a:1:1 [0] NCCL INFO Using network IB\n";
        const QMap<int, NcclFacts> facts{{0, parse(ib)}, {1, parse(socketOn("node-b", "eth0:10.0.0.2"))}};
        const QVector<Diagnosis> found = ncclNetworkFindings(facts, kHosts, 2, 1.0);
        const Diagnosis* network = byKey(found, QStringLiteral("nccl:network-mismatch"));
        QVERIFY(network);
        QVERIFY2(network->message.contains(QLatin1String("IB on rank(s) 0")) &&
                     network->message.contains(QLatin1String("Socket on rank(s) 1")),
                 qPrintable(network->message));
        const Diagnosis* version = byKey(found, QStringLiteral("nccl:version-mismatch"));
        QVERIFY(version);
        QVERIFY(version->message.contains(QLatin1String("2.19.3")) && version->message.contains(QLatin1String("2.18.1")));
        // The groups in version order, as inspect lists versions: 2.9.6 before 2.18.1 (not so as text).
        const QMap<int, NcclFacts> versions{{0, parse("node-a:1:1 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n")},
                                            {1, parse("node-b:1:1 [0] NCCL INFO NCCL version 2.9.6+cuda11.4\n")}};
        const Diagnosis* ordered =
            byKey(ncclNetworkFindings(versions, kHosts, 2, 1.0), QStringLiteral("nccl:version-mismatch"));
        QVERIFY(ordered);
        QVERIFY2(ordered->message.contains(QLatin1String("(2.9.6 on rank(s) 1; 2.18.1 on rank(s) 0)")),
                 qPrintable(ordered->message));
        // The same network and version everywhere: neither.
        const QMap<int, NcclFacts> same{{0, parse(socketOn("node-a", "eth0:10.0.0.1"))},
                                        {1, parse(socketOn("node-b", "eth0:10.0.0.2"))}};
        QVERIFY(ncclNetworkFindings(same, kHosts, 2, 1.0).isEmpty());
    }

    void eachDistinctWarningOnceWithEveryRankThatPrintedIt() {
        // A public sample (tests/data/logs/nccl-public-samples.log: NVIDIA/nccl#857, ranks on one node):
        // each of the three ranks quoted failed to open libibverbs.
        QFile file(QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/logs/nccl-public-samples.log"));
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = file.readAll().split('\n');
        QMap<int, QByteArray> perRank;
        for (const QByteArray& line : lines)
            if (line.startsWith("ai:48085")) // the ranks: pid 480850 + rank
                perRank[line.mid(8, 1).toInt()] += line + '\n';
        QCOMPARE(perRank.size(), 3);
        QMap<int, NcclFacts> facts;
        for (auto it = perRank.begin(); it != perRank.end(); ++it)
            facts.insert(it.key(), parse(it.value()));
        const QVector<Diagnosis> found = ncclNetworkFindings(facts, {}, 1, 1.0);
        QVector<Diagnosis> warnings;
        for (const Diagnosis& d : found)
            if (d.key.startsWith(QLatin1String("nccl:warn:")))
                warnings.append(d);
        QCOMPARE(warnings.size(), 1);
        QCOMPARE(warnings.front().ranks, (QVector<int>{0, 1, 2}));
        QVERIFY2(warnings.front().message.contains(QLatin1String("Failed to open libibverbs.so[.1] [misc/ibvwrap.cc:63]")),
                 qPrintable(warnings.front().message));
        QCOMPARE(warnings.front().host, QStringLiteral("ai"));
        // Stable key: the same warning found again is the same finding.
        QCOMPARE(ncclNetworkFindings(facts, {}, 1, 2.0).front().key, found.front().key);
    }

    // Every kind of container or VM interface NCCL may take for sockets, and real interfaces that are none.
    void everyBridgeKindIsNamed_data() {
        QTest::addColumn<QByteArray>("device");
        QTest::addColumn<bool>("bridge");
        QTest::newRow("docker") << QByteArray("docker0:172.17.0.1") << true;
        QTest::newRow("libvirt") << QByteArray("virbr0:192.168.122.1") << true;
        QTest::newRow("veth pair") << QByteArray("veth1a2b3c:169.254.1.1") << true;
        QTest::newRow("docker network") << QByteArray("br-3f2e1d:172.18.0.1") << true;
        QTest::newRow("cni") << QByteArray("cni0:10.244.0.1") << true;
        QTest::newRow("flannel") << QByteArray("flannel.1:10.244.0.0") << true;
        QTest::newRow("calico") << QByteArray("cali1a2b3c4d:169.254.1.1") << true;
        QTest::newRow("ethernet") << QByteArray("eth0:10.0.0.1") << false;
        QTest::newRow("predictable name") << QByteArray("ens5:10.0.0.1") << false;
        QTest::newRow("bond") << QByteArray("bond0:10.0.0.1") << false;
        QTest::newRow("IPoIB") << QByteArray("ib0:10.1.0.1") << false;
    }
    void everyBridgeKindIsNamed() {
        QFETCH(QByteArray, device);
        QFETCH(bool, bridge);
        const QMap<int, NcclFacts> facts{{0, parse(socketOn("node-a", device))}};
        const Diagnosis* found =
            byKey(ncclNetworkFindings(facts, kHosts, 2, 1.0), QStringLiteral("nccl:virtual-interface"));
        QCOMPARE(found != nullptr, bridge);
        if (found) {
            const QByteArray name = device.left(device.indexOf(':'));
            QVERIFY2(found->message.contains(QLatin1String("uses %1, a container").arg(QLatin1String(name))),
                     qPrintable(found->message));
        }
        // On one node, a bridge is how its ranks may well reach each other: no finding.
        QVERIFY(!byKey(ncclNetworkFindings(facts, kHosts, 1, 1.0), QStringLiteral("nccl:virtual-interface")));
    }

    // Ranks on several bridges: one finding, each bridge named once, in name order, the first one to exclude.
    void ranksOnBridgesMakeOneFinding() {
        const QMap<int, NcclFacts> facts{{0, parse(socketOn("node-a", "virbr0:192.168.122.1"))},
                                         {1, parse(socketOn("node-b", "docker0:172.17.0.1"))},
                                         {2, parse(socketOn("node-b", "docker0:172.17.0.1"))}};
        const QVector<Diagnosis> found = ncclNetworkFindings(facts, kHosts, 2, 1.0);
        const Diagnosis* bridge = byKey(found, QStringLiteral("nccl:virtual-interface"));
        QVERIFY(bridge);
        QCOMPARE(bridge->ranks, (QVector<int>{0, 1, 2}));
        QVERIFY2(bridge->message.startsWith(QLatin1String("NCCL on rank(s) 0-2 (node-a) uses docker0, virbr0, a "
                                                          "container or VM bridge")),
                 qPrintable(bridge->message));
        QVERIFY2(bridge->message.contains(QLatin1String("NCCL_SOCKET_IFNAME=^docker0)")), qPrintable(bridge->message));
    }

    // "No device found" for InfiniBand is a fallback to sockets only where the rank then uses sockets: a plugin
    // network (AWS's libfabric here) is no such fallback.
    void noInfinibandWithAPluginNetworkIsNoSocketFallback() {
        const QByteArray lines = "node-a:7:7 [0] NCCL INFO NET/IB : No device found.\n"
                                 "node-a:7:7 [0] NCCL INFO NET/OFI Selected Provider is efa\n"
                                 "node-a:7:7 [0] NCCL INFO Using network AWS Libfabric\n";
        const NcclFacts facts = parse(lines);
        QCOMPARE(facts.network, QStringLiteral("AWS Libfabric"));
        QVERIFY(!byKey(ncclNetworkFindings({{0, facts}}, kHosts, 2, 1.0), QStringLiteral("nccl:socket-fallback")));
    }

    // A run across many hosts names the first six of them and counts the rest.
    void aLogOfManyHostsNamesSixOfThem() {
        QByteArray log;
        for (int host = 0; host < 8; ++host) {
            const QByteArray header = "node-" + QByteArray::number(host) + ":100:100";
            log += header + " [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>\n";
            log += header + " [0] NCCL INFO comm 0x1 rank " + QByteArray::number(host) +
                   " nranks 8 cudaDev 0 busId 1000 commId 0xabc - Init COMPLETE\n";
        }
        const Diagnosis* loopback = byKey(ncclLogFindings(parse(log)), QStringLiteral("nccl:loopback"));
        QVERIFY(loopback);
        QVERIFY2(loopback->message.startsWith(QLatin1String(
                     "NCCL on node-0 (rank(s) 0), node-1 (rank(s) 1), node-2 (rank(s) 2), node-3 (rank(s) 3), "
                     "node-4 (rank(s) 4), node-5 (rank(s) 5), 2 more hosts uses the loopback interface")),
                 qPrintable(loopback->message));
        QCOMPARE(loopback->ranks.size(), 8);
    }

    // A warning is told apart by its source and its text; a rank that printed it twice is named once, the host is
    // the one its record names, and a warning without a source location has none in brackets.
    void aWarningIsItsSourceAndText() {
        const QByteArray twice = "gpu-7:5:5 [0] misc/socket.cc:484 NCCL WARN Net : Connection closed by remote peer\n"
                                 "gpu-7:5:9 [0] misc/socket.cc:484 NCCL WARN Net : Connection closed by remote peer\n"
                                 "gpu-7:5:5 [0] transport/net_socket.cc:47 NCCL WARN Net : Connection closed by remote "
                                 "peer\n"
                                 "gpu-7:5:5 [0] NCCL WARN Cuda failure 'out of memory'\n";
        const QVector<Diagnosis> found = ncclNetworkFindings({{3, parse(twice)}}, kHosts, 2, 1.0);
        QVector<Diagnosis> warnings;
        for (const Diagnosis& d : found)
            if (d.key.startsWith(QLatin1String("nccl:warn:")))
                warnings.append(d);
        QCOMPARE(warnings.size(), 3);
        for (const Diagnosis& warning : std::as_const(warnings)) {
            QCOMPARE(warning.ranks, QVector<int>{3});
            QCOMPARE(warning.host, QStringLiteral("gpu-7"));
            QVERIFY2(warning.message.startsWith(QLatin1String("NCCL WARN on rank(s) 3 (gpu-7): ")),
                     qPrintable(warning.message));
        }
        QVERIFY(warnings[0].message.endsWith(QLatin1String("[misc/socket.cc:484]")));
        QVERIFY(warnings[1].message.endsWith(QLatin1String("[transport/net_socket.cc:47]")));
        QCOMPARE(warnings[2].message, QStringLiteral("NCCL WARN on rank(s) 3 (gpu-7): Cuda failure 'out of memory'"));
    }

    // A rank's facts for the NCCL panel: its GPU as the largest communicator it belongs to gives it (a job's
    // sub-groups are smaller), its host from there too where that line names one.
    void aRanksFactsAreThoseOfItsLargestCommunicator() {
        const QByteArray log = "node-a:9:9 [1] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 1 busId 2000 commId 0x1 - "
                               "Init COMPLETE\n"
                               "node-a:9:9 [1] NCCL INFO comm 0x2 rank 1 nranks 8 cudaDev 3 busId 4000 commId 0x2 - "
                               "Init COMPLETE\n"
                               "node-a:9:9 [1] NCCL INFO comm 0x3 rank 1 nranks 4 cudaDev 2 busId 3000 commId 0x3 - "
                               "Init COMPLETE\n";
        const RankNcclFacts facts = rankNcclFacts(1, parse(log));
        QCOMPARE(facts.rank, 1);
        QCOMPARE(facts.cudaDev, 3);
        QCOMPARE(facts.busId, QStringLiteral("4000"));
        QCOMPARE(facts.host, QStringLiteral("node-a"));
        // A communicator line without NCCL's "host:pid:tid" header (a launcher cut it) keeps the host the rank's
        // other records named.
        const RankNcclFacts headless = rankNcclFacts(
            1, parse("node-b:9:9 [1] NCCL INFO NCCL version 2.18.1+cuda12.1\n"
                     "[1] NCCL INFO comm 0x2 rank 1 nranks 8 cudaDev 3 busId 4000 commId 0x2 - Init COMPLETE\n"));
        QCOMPARE(headless.cudaDev, 3);
        QCOMPARE(headless.host, QStringLiteral("node-b"));
    }

    // The live watch: facts of the ranks whose output held NCCL lines only, and each finding once until it changes.
    void theWatchReportsWhatIsNewOrChanged() {
        NcclNetworkWatch watch;
        watch.feed(0, socketOn("node-a", "lo:127.0.0.1"));
        watch.feed(1, "epoch 1 step 10 loss 0.5\n");
        QVERIFY(watch.hasNewBytes());
        const QVector<RankNcclFacts> ranks = watch.rankFacts();
        QCOMPARE(ranks.size(), 1);
        QCOMPARE(ranks.front().rank, 0);
        const QVector<Diagnosis> first = watch.changedFindings(kHosts, 2, 1.0);
        QVERIFY(!watch.hasNewBytes());
        QCOMPARE(first.size(), 1);
        QCOMPARE(first.front().key, QStringLiteral("nccl:loopback"));
        QVERIFY(watch.changedFindings(kHosts, 2, 2.0).isEmpty()); // nothing new
        watch.feed(1, socketOn("node-b", "lo:127.0.0.1"));
        const QVector<Diagnosis> changed = watch.changedFindings(kHosts, 2, 3.0);
        QCOMPARE(changed.size(), 1); // the same finding, now of both ranks
        QCOMPARE(changed.front().ranks, (QVector<int>{0, 1}));
        watch.clear();
        QVERIFY(watch.rankFacts().isEmpty());
    }

    // A log of several hosts, where no run says which rank ran where: each process "host:pid" is told apart by its
    // records' headers and named by its host and the rank its communicator line gave it. A process without one
    // (node-c here: another job's log, or a snippet) is not taken for one of the run's.
    void logFindingsNameEachProcessByHost() {
        QByteArray log;
        log += socketOn("node-a", "eth0:10.0.0.1"); // pid 100
        log += "node-b:200:200 [0] NCCL INFO NCCL version 2.19.3+cuda12.2\n"
               "node-b:200:200 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>\n"
               "node-b:200:200 [0] NCCL INFO Using network Socket\n"
               "node-b:201:201 [1] NCCL INFO NET/IB : No device found.\n"
               "node-b:201:201 [1] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0> [1]docker0:172.17.0.1<0>\n"
               "node-b:201:201 [1] NCCL INFO Using network Socket\n"
               "node-c:300:300 [0] NCCL INFO NCCL version 2.4.7+cuda10.0\n"
               "node-c:300:300 [0] NCCL INFO NET/Socket : Using [0]virbr0:192.168.122.1<0>\n"
               "node-c:300:300 [0] NCCL INFO Using network IB\n";
        for (const auto& [header, rank] :
             {std::pair{"node-a:100:100", 0}, {"node-b:200:200", 1}, {"node-b:201:201", 2}})
            log += QByteArray(header) + " [0] NCCL INFO comm 0x" + QByteArray::number(rank) + " rank " +
                   QByteArray::number(rank) + " nranks 3 cudaDev 0 busId 1000 commId 0xabc - Init COMPLETE\n";
        const NcclFacts facts = parse(log);
        QCOMPARE(facts.processes.size(), 4);
        const NcclProcess& b201 = facts.processes[2];
        QCOMPARE(b201.host, QStringLiteral("node-b"));
        QCOMPARE(b201.pid, 201);
        QCOMPARE(b201.rank, 2);
        QCOMPARE(b201.interfaces, (QStringList{"docker0", "lo"}));
        QVERIFY(b201.ibNoDevice);
        QCOMPARE(b201.networks, QStringList{"Socket"});
        QCOMPARE(facts.processes[1].versions, QStringList{"2.19.3"});
        QCOMPARE(facts.processes[0].interfaces, QStringList{"eth0"});
        QCOMPARE(facts.processes[3].host, QStringLiteral("node-c"));
        QCOMPARE(facts.processes[3].rank, -1);

        const QVector<Diagnosis> found = ncclLogFindings(facts);
        const Diagnosis* loopback = byKey(found, QStringLiteral("nccl:loopback"));
        QVERIFY(loopback);
        QVERIFY2(loopback->message.startsWith(QLatin1String("NCCL on node-b (rank(s) 1-2) uses the loopback "
                                                            "interface for its sockets in a run across 2 nodes")),
                 qPrintable(loopback->message));
        QCOMPARE(loopback->ranks, (QVector<int>{1, 2}));
        QCOMPARE(loopback->host, QStringLiteral("node-b"));
        const Diagnosis* bridge = byKey(found, QStringLiteral("nccl:virtual-interface"));
        QVERIFY(bridge);
        QVERIFY2(bridge->message.startsWith(QLatin1String("NCCL on node-b (rank(s) 2) uses docker0,")),
                 qPrintable(bridge->message)); // not node-c's virbr0
        const Diagnosis* fallback = byKey(found, QStringLiteral("nccl:socket-fallback"));
        QVERIFY(fallback);
        QVERIFY2(fallback->message.contains(QLatin1String("no InfiniBand device for node-b (rank(s) 2)")),
                 qPrintable(fallback->message));
        const Diagnosis* version = byKey(found, QStringLiteral("nccl:version-mismatch"));
        QVERIFY(version);
        QVERIFY2(
            version->message.contains(QLatin1String("(2.18.1 on node-a (rank(s) 0); 2.19.3 on node-b (rank(s) 1))")),
            qPrintable(version->message));
        QVERIFY(!byKey(found, QStringLiteral("nccl:network-mismatch"))); // Socket on all three, node-c's IB aside
        QCOMPARE(found.size(), 4);

        // One host: the loopback is how its ranks reach each other, not a finding; the summed facts alone could
        // not tell the two logs apart.
        QByteArray oneHost = socketOn("node-a", "lo:127.0.0.1");
        oneHost += "node-a:100:100 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 busId 1000 commId 0xa - Init "
                   "COMPLETE\n";
        QCOMPARE(parse(oneHost).processes.value(0).rank, 0);
        QVERIFY(ncclLogFindings(parse(oneHost)).isEmpty());
        QVERIFY(ncclLogFindings(parse("node-a:1:1 [0] NCCL INFO Using network Socket\nplain\n")).isEmpty());
    }
};

QTEST_APPLESS_MAIN(tst_NcclFindings)
#include "tst_ncclfindings.moc"
