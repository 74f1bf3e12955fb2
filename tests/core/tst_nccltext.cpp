// SPDX-License-Identifier: MIT
// NCCL's record text at the byte level: communicator init lines (as printed and word by word), the steps of an
// error-code chain, and the 16-bytes-a-step blank and digit readers checked against a plain byte-by-byte reading at
// every length and offset.
#include "core/nccltext.h"

#include <QtTest>

using namespace rankscope::nccltext;

class TestNcclText final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void commInit_data() {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QByteArray>("rank");
        QTest::addColumn<QByteArray>("nranks");
        QTest::addColumn<QByteArray>("cudaDev");
        QTest::addColumn<QByteArray>("busId");
        QTest::addColumn<QByteArray>("commId");
        QTest::addColumn<bool>("start");
        QTest::addColumn<bool>("complete");
        // NCCL 2.18 and later, as printed.
        QTest::newRow("2.18 complete") << QByteArray("comm 0x55d4c0f0 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 4c000 "
                                                     "commId 0x7c1b2b5e1a3f4d2e - Init COMPLETE")
                                       << QByteArray("3") << QByteArray("8") << QByteArray("3") << QByteArray("4c000")
                                       << QByteArray("0x7c1b2b5e1a3f4d2e") << false << true;
        QTest::newRow("2.21 start with the call's name")
            << QByteArray("ncclCommInitRank comm 0x9a rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0xab - "
                          "Init START")
            << QByteArray("0") << QByteArray("2") << QByteArray("0") << QByteArray("1000") << QByteArray("0xab") << true
            << false;
        // NCCL 2.7: no nvmlDev, no commId.
        QTest::newRow("2.7 without commId")
            << QByteArray("comm 0x7f rank 1 nranks 4 cudaDev 1 busId 3b000 - Init COMPLETE") << QByteArray("1")
            << QByteArray("4") << QByteArray("1") << QByteArray("3b000") << QByteArray() << false << true;
        // NCCL 2.23 and later add words after the state: read word by word.
        QTest::newRow("words after the state")
            << QByteArray("comm 0x7f rank 5 nRanks 16 nranks 16 cudaDev 5 nvmlDev 5 busId 9a000 commId 0x1 localSize 8 "
                          "used 1234 bytes - Init COMPLETE extra")
            << QByteArray("5") << QByteArray("16") << QByteArray("5") << QByteArray("9a000") << QByteArray("0x1")
            << false << true;
        QTest::newRow("other order, two spaces")
            << QByteArray("rank 2  busId 1b000 comm 0x3 nranks 4 cudaDev 2 - Init START") << QByteArray("2")
            << QByteArray("4") << QByteArray("2") << QByteArray("1b000") << QByteArray() << true << false;
        // A value that is a key is not read as printed but word by word, where the first "busId " counts: the
        // same reading whichever way the line is printed.
        QTest::newRow("a value that is a key")
            << QByteArray("comm 0x3 rank busId nranks 4 cudaDev 0 busId 7 - Init COMPLETE") << QByteArray("busId")
            << QByteArray("4") << QByteArray("0") << QByteArray("nranks") << QByteArray() << false << true;
        QTest::newRow("a value that is the key rank")
            << QByteArray("comm rank rank 1 nranks 2 cudaDev 0 busId 7 - Init COMPLETE") << QByteArray("rank")
            << QByteArray("2") << QByteArray("0") << QByteArray("7") << QByteArray() << false << true;
        // ncclCommDestroy and ncclCommAbort end their line with a state too: neither is an init.
        QTest::newRow("destroy is no init")
            << QByteArray("comm 0x5598 rank 0 nranks 2 cudaDev 0 busId 7000 - Destroy COMPLETE") << QByteArray("0")
            << QByteArray("2") << QByteArray("0") << QByteArray("7000") << QByteArray() << false << false;
        QTest::newRow("a word that starts with the state")
            << QByteArray("comm 0x55 rank 0 nranks 2 cudaDev 0 busId 7000 STARTED COMPLETED") << QByteArray("0")
            << QByteArray("2") << QByteArray("0") << QByteArray("7000") << QByteArray() << false << false;
        QTest::newRow("not an init line") << QByteArray("Channel 00/02 : 0 1 2 3") << QByteArray() << QByteArray()
                                          << QByteArray() << QByteArray() << QByteArray() << false << false;
        QTest::newRow("a key at the end has no value")
            << QByteArray("comm 0x1 cudaDev") << QByteArray() << QByteArray() << QByteArray() << QByteArray()
            << QByteArray() << false << false;
    }

    void commInit() {
        QFETCH(QByteArray, text);
        const CommInitFields fields = readCommInit(text);
        QFETCH(QByteArray, rank);
        QFETCH(QByteArray, nranks);
        QFETCH(QByteArray, cudaDev);
        QFETCH(QByteArray, busId);
        QFETCH(QByteArray, commId);
        QFETCH(bool, start);
        QFETCH(bool, complete);
        QCOMPARE(fields.rank.toByteArray(), rank);
        QCOMPARE(fields.nranks.toByteArray(), nranks);
        QCOMPARE(fields.cudaDev.toByteArray(), cudaDev);
        QCOMPARE(fields.busId.toByteArray(), busId);
        QCOMPARE(fields.commId.toByteArray(), commId);
        QCOMPARE(fields.start, start);
        QCOMPARE(fields.complete, complete);
    }

    // A tab before a key (a log that a tool re-spaced) still starts its word, wherever the 16-byte steps put it: here
    // the tabbed key comes last, after the state, so that it falls in the bytes after the last whole step too.
    void aTabBeforeAKeyAtEveryOffset() {
        const QList<QByteArray> keys{"rank", "nranks", "cudaDev", "busId", "commId"};
        const QList<QByteArray> values{"3", "8", "2", "4c000", "0x7c1b"};
        for (int pad = 0; pad < 16; ++pad) {
            for (qsizetype tabbed = 0; tabbed < keys.size(); ++tabbed) {
                QByteArray text = "comm 0x" + QByteArray(pad + 1, 'f');
                for (qsizetype k = 0; k < keys.size(); ++k) {
                    if (k != tabbed)
                        text += ' ' + keys[k] + ' ' + values[k];
                }
                text += " - Init COMPLETE\t" + keys[tabbed] + ' ' + values[tabbed];
                const CommInitFields fields = readCommInit(text);
                const QList<QByteArray> read{fields.rank.toByteArray(), fields.nranks.toByteArray(),
                                             fields.cudaDev.toByteArray(), fields.busId.toByteArray(),
                                             fields.commId.toByteArray()};
                QVERIFY2(read == values && fields.complete && !fields.start, text.constData());
            }
        }
    }

    void chainStep_data() {
        QTest::addColumn<QByteArray>("message");
        QTest::addColumn<bool>("step");
        QTest::newRow("step") << QByteArray("init.cc:840 -> 5") << true;
        QTest::newRow("step of a thread") << QByteArray("group.cc:73 -> 5 [Async thread]") << true;
        QTest::newRow("negative code") << QByteArray("misc/socket.cc:484 -> -1") << true;
        QTest::newRow("a ring") << QByteArray("0[0] -> 7[7] via P2P/IPC") << false;
        QTest::newRow("no extension") << QByteArray("init:840 -> 5") << false;
        QTest::newRow("no line number") << QByteArray("init.cc -> 5") << false;
        QTest::newRow("no code") << QByteArray("init.cc:840 -> x") << false;
        QTest::newRow("arrow at the end") << QByteArray("init.cc:840 ->") << false;
        QTest::newRow("no arrow") << QByteArray("init.cc:840 returned 5") << false;
    }

    void chainStep() {
        QFETCH(QByteArray, message);
        QFETCH(bool, step);
        QCOMPARE(isChainStep(message), step);
    }

    // blankBefore and blankFrom read 16 bytes a step: every length, none, one or two blanks anywhere (spaces or tabs),
    // every start and end, against one byte a step.
    void blanksAtEveryOffset() {
        const auto isBlank = [](char c) { return c == ' ' || c == '\t'; };
        for (int size = 0; size <= 40; ++size) {
            for (int first = -1; first < size; ++first) {
                for (int second = first; second < size; ++second) {
                    QByteArray text(size, 'x');
                    if (first >= 0)
                        text[first] = ' ';
                    if (second > first)
                        text[second] = '\t';
                    for (int end = 0; end <= size; ++end) {
                        qsizetype before = end - 1;
                        while (before >= 0 && !isBlank(text[before]))
                            --before;
                        QCOMPARE(blankBefore(text.constData(), end), before);
                    }
                    for (int from = 0; from <= size; ++from) {
                        qsizetype after = from;
                        while (after < size && !isBlank(text[after]))
                            ++after;
                        QCOMPARE(blankFrom(text, from), after);
                    }
                }
            }
        }
    }

    // digitsBefore counts the digits among the 8 bytes before `end`; digitsValue reads the last `count` of them.
    void digitsOfEveryCount() {
        for (int count = 0; count <= 8; ++count) {
            for (const char before : {':', '/', 'a', ' ', char('9' + 1), char('0' - 1)}) {
                QByteArray text(8 - count, before);
                QByteArray digits;
                for (int i = 0; i < count; ++i)
                    digits += char('1' + (i * 3) % 9);
                text += digits;
                if (count == 8)
                    text = digits;
                QCOMPARE(digitsBefore(text.constData() + text.size()), count);
                if (count > 0)
                    QCOMPARE(digitsValue(text.constData() + text.size(), count), digits.toLongLong());
            }
        }
        const QByteArray zeros("pid:00000042");
        QCOMPARE(digitsValue(zeros.constData() + zeros.size(), 8), qint64(42));
    }
};

QTEST_GUILESS_MAIN(TestNcclText)
#include "tst_nccltext.moc"
