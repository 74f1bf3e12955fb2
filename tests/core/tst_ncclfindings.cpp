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
};

QTEST_APPLESS_MAIN(tst_NcclFindings)
#include "tst_ncclfindings.moc"
