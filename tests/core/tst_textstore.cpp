// SPDX-License-Identifier: MIT
// TextStore: the texts it makes are the bytes (and the strings QString::fromUtf8 makes) they were made of, with the
// 0 after them that QByteArray and QString promise; many share one block of memory, a repeat is the same text, and
// each is a value of its own: changed, copied and freed without touching its neighbours, also after the store is
// gone and when it is the last text left in its block.
#include "core/textstore.h"

#include <QRandomGenerator>
#include <QSet>
#include <QTest>

#include <vector>

using namespace rankscope;

namespace {

// The start of the block a text's characters are in (its QArrayData header): texts made apart from one another
// have a block each.
const void* blockOf(const QByteArray& text) {
    return const_cast<QByteArray&>(text).data_ptr().d_ptr();
}
const void* blockOf(const QString& text) {
    return const_cast<QString&>(text).data_ptr().d_ptr();
}

QByteArray randomBytes(QRandomGenerator& random, qsizetype size) {
    QByteArray bytes(size, Qt::Uninitialized);
    for (char& c : bytes)
        c = static_cast<char>(random.bounded(256));
    return bytes;
}

} // namespace

class TstTextStore : public QObject {
    Q_OBJECT

private slots:
    void aTextIsItsBytes_data() {
        QTest::addColumn<QByteArray>("text");
        QTest::newRow("a line") << QByteArrayLiteral("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191");
        QTest::newRow("one byte") << QByteArrayLiteral("x");
        QTest::newRow("zero bytes inside") << QByteArray("a\0b\0", 4);
        QTest::newRow("not UTF-8") << QByteArray("\xff\xfe caf\xc3", 8);
        QTest::newRow("longer than a block") << QByteArray(TextStore::kBlockBytes * 3 + 7, 'w');
        QTest::newRow("a block's size") << QByteArray(TextStore::kBlockBytes, 'b');
    }
    void aTextIsItsBytes() {
        QFETCH(QByteArray, text);
        TextStore store;
        const QByteArray before = store.bytes("before");
        const QByteArray kept = store.bytes(text);
        QCOMPARE(kept, text);
        QCOMPARE(kept.constData()[kept.size()], '\0');
        QCOMPARE(before, QByteArrayLiteral("before"));
        QCOMPARE(before.constData()[before.size()], '\0');
    }

    // A null view makes a null array and an empty one an empty one, as QByteArrayView::toByteArray() does.
    void anEmptyTextIsAsToByteArrayMakesIt() {
        TextStore store;
        QVERIFY(store.bytes(QByteArrayView()).isNull());
        const QByteArray empty = store.bytes(QByteArrayView("", 0));
        QVERIFY(empty.isEmpty());
        QVERIFY(!empty.isNull());
        QVERIFY(store.string(QByteArrayView()).isNull());
        QVERIFY(store.string(QByteArrayView("", 0)).isEmpty());
    }

    // Thousands of texts, each its own bytes, in a handful of blocks: one allocation per block, not per text.
    void textsShareBlocks() {
        QRandomGenerator random(7);
        TextStore store;
        std::vector<QByteArray> made;
        std::vector<QByteArray> expected;
        qsizetype bytes = 0;
        for (int i = 0; i < 5000; ++i) {
            const QByteArray text = randomBytes(random, 1 + random.bounded(200));
            expected.push_back(text);
            made.push_back(store.bytes(text));
            bytes += text.size() + 1;
        }
        QSet<const void*> blocks;
        for (size_t i = 0; i < made.size(); ++i) {
            QCOMPARE(made[i], expected[i]);
            QCOMPARE(made[i].constData()[made[i].size()], '\0');
            blocks.insert(blockOf(made[i]));
        }
        QVERIFY2(blocks.size() <= bytes / TextStore::kBlockBytes + 2,
                 qPrintable(QStringLiteral("%1 blocks for %2 bytes").arg(blocks.size()).arg(bytes)));
    }

    // The same exception from every rank: one text, shared.
    void aRepeatIsTheSameText() {
        TextStore store;
        const QByteArray first = store.bytes("ValueError: bad batch");
        const QByteArray other = store.bytes("KeyError: 'x'");
        const QByteArray again = store.bytes("ValueError: bad batch");
        QCOMPARE(again, first);
        // The same bytes in memory, not just equal ones (QCOMPARE of two char pointers compares their strings).
        QVERIFY(again.constData() == first.constData());
        QVERIFY(other.constData() != first.constData());
        const QString string = store.string("NET/IB : Got completion with error 12");
        QCOMPARE(store.string("NET/IB : Got completion with error 12").constData(), string.constData());
    }

    // Changing a text copies it first while its block is shared (its neighbours, the store): the others keep their
    // bytes. The last text of a block may grow into the block's free end, which nothing else uses any more.
    void aTextChangesAlone() {
        QByteArray first;
        QByteArray second;
        {
            TextStore store;
            first = store.bytes("first");
            second = store.bytes("second");
            QCOMPARE(blockOf(first), blockOf(second));
            const QByteArray third = store.bytes("third");
            first.append(" and more");
            first[0] = 'F';
            QCOMPARE(first, QByteArrayLiteral("First and more"));
            QCOMPARE(second, QByteArrayLiteral("second"));
            QCOMPARE(third, QByteArrayLiteral("third"));
            QCOMPARE(store.bytes("third"), QByteArrayLiteral("third"));
        }
        // The store is gone; `second` is the only text left in its block.
        QCOMPARE(second, QByteArrayLiteral("second"));
        second.append(QByteArray(100, '!'));
        second.prepend("a ");
        QCOMPARE(second, QByteArrayLiteral("a second") + QByteArray(100, '!'));
        second.squeeze();
        second.truncate(4);
        QCOMPARE(second, QByteArrayLiteral("a se"));
        QCOMPARE(second.constData()[second.size()], '\0');
    }

    // A run keeps a parser, so a store, for each of its ranks: one that has made nothing is a few words. clear() lets
    // go of the block and the texts to repeat: a text made before is then its block's only holder, and the same
    // bytes make a new text.
    void anEmptyStoreIsSmallAndClearLetsGo() {
        static_assert(sizeof(TextStore) <= 64);
        TextStore store;
        const QByteArray text = store.bytes("NCCL error in: a.cpp:1");
        const QString string = store.string("init.cc:840 -> 5");
        QVERIFY(!text.isDetached());
        QVERIFY(!string.isDetached());
        store.clear();
        QVERIFY(text.isDetached());
        QVERIFY(string.isDetached());
        QCOMPARE(text, QByteArrayLiteral("NCCL error in: a.cpp:1"));
        const QByteArray again = store.bytes("NCCL error in: a.cpp:1");
        QCOMPARE(again, text);
        QVERIFY(again.constData() != text.constData());
    }

    // A copy changed does not change what the store hands out for the same bytes next.
    void aChangedCopyIsNoRepeat() {
        TextStore store;
        QByteArray text = store.bytes("abc");
        text[1] = 'X';
        QCOMPARE(store.bytes("abc"), QByteArrayLiteral("abc"));
        QString string = store.string("abc");
        string[1] = u'X';
        QCOMPARE(store.string("abc"), QStringLiteral("abc"));
    }

    void aStringIsAsFromUtf8MakesIt_data() {
        QTest::addColumn<QByteArray>("utf8");
        QTest::newRow("ASCII") << QByteArrayLiteral("misc/ibvwrap.cc:63 NCCL WARN Call to ibv_create_cq failed");
        QTest::newRow("UTF-8") << QByteArrayLiteral("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x94\xa5");
        QTest::newRow("not UTF-8") << QByteArray("bad \xff\xfe bytes \xc3", 13);
        QTest::newRow("zero byte") << QByteArray("a\0b", 3);
        QTest::newRow("longer than a block") << QByteArray(TextStore::kBlockBytes, 's');
    }
    void aStringIsAsFromUtf8MakesIt() {
        QFETCH(QByteArray, utf8);
        TextStore store;
        const QString first = store.string(utf8);
        const QString again = store.string(utf8);
        QCOMPARE(first, QString::fromUtf8(utf8));
        QCOMPARE(again, QString::fromUtf8(utf8));
        QCOMPARE(first.utf16()[first.size()], u'\0');
    }

    // Strings of many warnings share blocks as bytes do.
    void stringsShareBlocks() {
        TextStore store;
        std::vector<QString> made;
        for (int i = 0; i < 2000; ++i)
            made.push_back(store.string(QByteArray::number(i) + " NCCL WARN NET/Socket : peer closed"));
        QSet<const void*> blocks;
        for (int i = 0; i < 2000; ++i) {
            QCOMPARE(made[size_t(i)], QString::number(i) + QStringLiteral(" NCCL WARN NET/Socket : peer closed"));
            blocks.insert(blockOf(made[size_t(i)]));
        }
        QVERIFY2(blocks.size() < 20, qPrintable(QString::number(blocks.size())));
    }
};

QTEST_GUILESS_MAIN(TstTextStore)
#include "tst_textstore.moc"
