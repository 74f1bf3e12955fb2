// SPDX-License-Identifier: MIT
#include "core/hostfile.h"

#include <QTest>

using rankscope::HostfileResult;
using rankscope::JobIssue;
using rankscope::parseHostfile;

namespace {

QStringList issueTexts(const QVector<JobIssue>& issues) {
    QStringList texts;
    for (const JobIssue& issue : issues)
        texts.append(issue.toString());
    return texts;
}

} // namespace

class tst_Hostfile final : public QObject {
    Q_OBJECT

private slots:
    void parse_data();
    void parse();
    void nodeNameIsHost();
};

void tst_Hostfile::parse_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QStringList>("hosts");
    QTest::addColumn<QList<int>>("slotCounts"); // 0: no slots on the line
    QTest::addColumn<QList<int>>("lines");
    QTest::addColumn<QStringList>("issues");

    QTest::newRow("empty") << QByteArray() << QStringList() << QList<int>() << QList<int>() << QStringList();
    QTest::newRow("two hosts") << QByteArray("worker-1 slots=4\nworker-2 slots=2\n")
                               << QStringList{"worker-1", "worker-2"} << QList<int>{4, 2} << QList<int>{1, 2}
                               << QStringList();
    QTest::newRow("comments and blank lines")
        << QByteArray("# the cluster\n\n  w1 slots=1   # the head node\n\t\nw2 slots=8#no space\n   # end\n")
        << QStringList{"w1", "w2"} << QList<int>{1, 8} << QList<int>{3, 5} << QStringList();
    QTest::newRow("crlf") << QByteArray("w1 slots=2\r\nw2 slots=3\r\n") << QStringList{"w1", "w2"} << QList<int>{2, 3}
                          << QList<int>{1, 2} << QStringList();
    QTest::newRow("no slots") << QByteArray("10.0.0.7\n") << QStringList{"10.0.0.7"} << QList<int>{0} << QList<int>{1}
                              << QStringList();
    QTest::newRow("largest slots") << QByteArray("w1 slots=4096") << QStringList{"w1"} << QList<int>{4096}
                                   << QList<int>{1} << QStringList();

    const auto badSlots = [](const char* value) {
        QTest::addRow("slots=%s", value) << QByteArray("w1 slots=") + value << QStringList() << QList<int>()
                                         << QList<int>()
                                         << QStringList{QStringLiteral("hostfile:1: bad slots \"%1\" (must be an "
                                                                       "integer 1-4096)")
                                                            .arg(QLatin1String(value))};
    };
    for (const char* value : {"0", "-1", "x", "", "2.5", "4097", "99999999999", "4294967297", "+3", "0x10"})
        badSlots(value);

    QTest::newRow("slots twice") << QByteArray("w1 slots=2 slots=2") << QStringList() << QList<int>() << QList<int>()
                                 << QStringList{"hostfile:1: slots given twice"};
    QTest::newRow("slots twice, the second bad") << QByteArray("w1 slots=2 slots=x") << QStringList() << QList<int>()
                                                 << QList<int>() << QStringList{"hostfile:1: slots given twice"};
    QTest::newRow("a rejected line's host is free for a later line")
        << QByteArray("w1 slots=x\nw1 slots=2\n") << QStringList{"w1"} << QList<int>{2} << QList<int>{2}
        << QStringList{"hostfile:1: bad slots \"x\" (must be an integer 1-4096)"};
    QTest::newRow("unknown token") << QByteArray("w1 gpus=2") << QStringList() << QList<int>() << QList<int>()
                                   << QStringList{"hostfile:1: unknown token \"gpus=2\" (expected slots=N)"};
    QTest::newRow("duplicate host") << QByteArray("w1 slots=1\nw1 slots=2\n") << QStringList{"w1"} << QList<int>{1}
                                    << QList<int>{1} << QStringList{"hostfile:2: duplicate host \"w1\" (also line 1)"};
    QTest::newRow("missing host") << QByteArray("slots=2") << QStringList() << QList<int>() << QList<int>()
                                  << QStringList{"hostfile:1: missing host before \"slots=2\""};
    QTest::newRow("option as host") << QByteArray("-oProxyCommand=x slots=1") << QStringList() << QList<int>()
                                    << QList<int>()
                                    << QStringList{"hostfile:1: host \"-oProxyCommand=x\" must not start with '-'"};
    QTest::newRow("every problem reported, good lines kept")
        << QByteArray("w1 slots=2\nw2 slots=zero\n# fine\nw3 slots=1 extra\nw1 slots=4\nw4\n")
        << QStringList{"w1", "w4"} << QList<int>{2, 0} << QList<int>{1, 6}
        << QStringList{"hostfile:2: bad slots \"zero\" (must be an integer 1-4096)",
                       "hostfile:4: unknown token \"extra\" (expected slots=N)",
                       "hostfile:5: duplicate host \"w1\" (also line 1)"};
}

void tst_Hostfile::parse() {
    QFETCH(QByteArray, text);
    QFETCH(QStringList, hosts);
    QFETCH(QList<int>, slotCounts);
    QFETCH(QList<int>, lines);
    QFETCH(QStringList, issues);

    const HostfileResult result = parseHostfile(text);
    QCOMPARE(issueTexts(result.issues), issues);
    QCOMPARE(result.ok(), issues.isEmpty());
    QCOMPARE(result.nodes.size(), hosts.size());
    QCOMPARE(result.lines, lines);
    for (qsizetype i = 0; i < hosts.size(); ++i) {
        QCOMPARE(result.nodes[i].host, hosts[i]);
        // slots=N means N GPUs and one rank on each.
        QCOMPARE(result.nodes[i].gpus, slotCounts[i]);
        QCOMPARE(result.nodes[i].procs, slotCounts[i]);
    }
}

void tst_Hostfile::nodeNameIsHost() {
    const HostfileResult result = parseHostfile("gpu-a slots=2\n");
    QCOMPARE(result.nodes.size(), 1);
    QCOMPARE(result.nodes[0].name, QStringLiteral("gpu-a"));
    QCOMPARE(result.nodes[0].workDir, QStringLiteral("rankscope"));
    QCOMPARE(result.nodes[0].port, 0);
}

QTEST_GUILESS_MAIN(tst_Hostfile)
#include "tst_hostfile.moc"
