// SPDX-License-Identifier: MIT
#include "core/linesplitter.h"

#include <QTest>

using rankscope::LinePiece;
using rankscope::LineSplitter;

namespace {

// A piece that does not end its line is shown with this suffix, so one list says both bytes and flag.
const QByteArray kCut = "<cut>";

QByteArrayList render(const QVector<LinePiece>& pieces) {
    QByteArrayList out;
    for (const LinePiece& piece : pieces)
        out.append(piece.endsLine ? piece.bytes : piece.bytes + kCut);
    return out;
}

QByteArrayList feedChunks(const QList<QByteArrayView>& chunks, qsizetype cap) {
    LineSplitter splitter(cap);
    QVector<LinePiece> pieces;
    for (const QByteArrayView chunk : chunks)
        pieces.append(splitter.feed(chunk));
    pieces.append(splitter.finish());
    return render(pieces);
}

} // namespace

class tst_LineSplitter final : public QObject {
    Q_OBJECT

private slots:
    void wholeFeed_data() { addCases(); }
    void wholeFeed();
    void everySplitPair_data() { addCases(); }
    void everySplitPair();
    void byteByByte_data() { addCases(); }
    void byteByByte();
    void defaultCapIsOneMebibyte();
    void memoryStaysBoundedByCap();
    void hugeSingleChunkIsCutInPieces();
    void finishResetsForNextStream();

private:
    static void addCases();
};

void tst_LineSplitter::addCases() {
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<qsizetype>("cap");
    QTest::addColumn<QByteArrayList>("expected");

    const qsizetype big = LineSplitter::kDefaultMaxLineBytes;
    QTest::newRow("empty") << QByteArray() << big << QByteArrayList{};
    QTest::newRow("lf") << QByteArray("a\nbc\n") << big << QByteArrayList{"a", "bc"};
    QTest::newRow("crlf") << QByteArray("a\r\nbc\r\n") << big << QByteArrayList{"a", "bc"};
    QTest::newRow("mixed endings") << QByteArray("x\r\ny\nz") << big << QByteArrayList{"x", "y", "z"};
    QTest::newRow("unterminated last line") << QByteArray("a\nb") << big << QByteArrayList{"a", "b"};
    QTest::newRow("empty lines") << QByteArray("\n\r\n\n") << big << QByteArrayList{"", "", ""};
    QTest::newRow("bare cr kept") << QByteArray("a\rb\n") << big << QByteArrayList{"a\rb"};
    QTest::newRow("cr before crlf kept") << QByteArray("a\r\r\n") << big << QByteArrayList{"a\r"};
    QTest::newRow("trailing cr at end of stream") << QByteArray("a\r") << big << QByteArrayList{"a"};
    QTest::newRow("utf8 untouched") << QByteArray("\xc3\xa9\n\xf0\x9f\x94\xa5\n") << big
                                    << QByteArrayList{"\xc3\xa9", "\xf0\x9f\x94\xa5"};
    QTest::newRow("invalid bytes untouched")
        << QByteArray("\xff\xfe\x00z\n", 5) << big << QByteArrayList{QByteArray("\xff\xfe\x00z", 4)};
    QTest::newRow("cap: pieces") << QByteArray("abcdefghij\n") << qsizetype(4)
                                 << QByteArrayList{"abcd" + kCut, "efgh" + kCut, "ij"};
    QTest::newRow("cap: exactly cap is whole")
        << QByteArray("abcd\nef\n") << qsizetype(4) << QByteArrayList{"abcd", "ef"};
    QTest::newRow("cap: exactly cap with crlf")
        << QByteArray("abcd\r\nef") << qsizetype(4) << QByteArrayList{"abcd", "ef"};
    QTest::newRow("cap: exactly cap, cr at end of stream")
        << QByteArray("abcd\r") << qsizetype(4) << QByteArrayList{"abcd"};
    QTest::newRow("cap: one over") << QByteArray("abcde\n") << qsizetype(4) << QByteArrayList{"abcd" + kCut, "e"};
    QTest::newRow("cap: bare cr counts as content")
        << QByteArray("abcd\re\n") << qsizetype(4) << QByteArrayList{"abcd" + kCut, "\re"};
    QTest::newRow("cap: never inside a utf8 sequence")
        << QByteArray("ab\xe2\x82\xacx\n") << qsizetype(4) << QByteArrayList{"ab" + kCut, "\xe2\x82\xacx"};
    QTest::newRow("cap: 4-byte sequences") << QByteArray("\xf0\x9f\x94\xa5\xf0\x9f\x94\xa5\n") << qsizetype(4)
                                           << QByteArrayList{"\xf0\x9f\x94\xa5" + kCut, "\xf0\x9f\x94\xa5"};
    QTest::newRow("cap: three bytes back to a sequence's start")
        << QByteArray("a\xf0\x9f\x94\xa5\n") << qsizetype(4) << QByteArrayList{"a" + kCut, "\xf0\x9f\x94\xa5"};
    QTest::newRow("cap: stray continuation bytes") << QByteArray("\x80\x80\x80\x80\x80\x80\n") << qsizetype(4)
                                                   << QByteArrayList{"\x80\x80\x80\x80" + kCut, "\x80\x80"};
    QTest::newRow("cap: unterminated long line")
        << QByteArray("abcdefg") << qsizetype(4) << QByteArrayList{"abcd" + kCut, "efg"};
    QTest::newRow("cap: below minimum is raised to 4")
        << QByteArray("abcdef\n") << qsizetype(1) << QByteArrayList{"abcd" + kCut, "ef"};
}

void tst_LineSplitter::wholeFeed() {
    QFETCH(QByteArray, input);
    QFETCH(qsizetype, cap);
    QFETCH(QByteArrayList, expected);
    QCOMPARE(feedChunks({input}, cap), expected);
}

// Two cut points anywhere, so chunks end mid-CRLF, mid-UTF-8 and at the cap in every combination.
void tst_LineSplitter::everySplitPair() {
    QFETCH(QByteArray, input);
    QFETCH(qsizetype, cap);
    QFETCH(QByteArrayList, expected);
    const QByteArrayView all(input);
    for (qsizetype first = 0; first <= all.size(); ++first) {
        for (qsizetype second = first; second <= all.size(); ++second) {
            const QByteArrayList actual =
                feedChunks({all.first(first), all.sliced(first, second - first), all.sliced(second)}, cap);
            QVERIFY2(actual == expected, qPrintable(QStringLiteral("cuts at %1 and %2").arg(first).arg(second)));
        }
    }
}

void tst_LineSplitter::byteByByte() {
    QFETCH(QByteArray, input);
    QFETCH(qsizetype, cap);
    QFETCH(QByteArrayList, expected);
    QList<QByteArrayView> chunks;
    for (qsizetype i = 0; i < input.size(); ++i)
        chunks.append(QByteArrayView(input).sliced(i, 1));
    QCOMPARE(feedChunks(chunks, cap), expected);
}

void tst_LineSplitter::defaultCapIsOneMebibyte() {
    const qsizetype mib = 1024 * 1024;
    LineSplitter splitter;
    QCOMPARE(splitter.maxLineBytes(), mib);
    const QVector<LinePiece> pieces = splitter.feed(QByteArray(mib, 'x') + "y\n");
    QCOMPARE(pieces.size(), 2);
    QCOMPARE(pieces[0].bytes, QByteArray(mib, 'x'));
    QVERIFY(!pieces[0].endsLine);
    QCOMPARE(pieces[1].bytes, QByteArray("y"));
    QVERIFY(pieces[1].endsLine);
}

// A rank that prints without newlines must not make the splitter hold more than one cap of bytes.
void tst_LineSplitter::memoryStaysBoundedByCap() {
    const qsizetype cap = 1000;
    LineSplitter splitter(cap);
    const QByteArray chunk(333, 'x');
    qsizetype emitted = 0;
    for (int i = 0; i < 3000; ++i) {
        for (const LinePiece& piece : splitter.feed(chunk)) {
            QVERIFY(!piece.endsLine);
            QCOMPARE(piece.bytes.size(), cap);
            emitted += piece.bytes.size();
        }
        QVERIFY2(splitter.bufferedBytes() <= cap, qPrintable(QString::number(splitter.bufferedBytes())));
    }
    for (const LinePiece& piece : splitter.finish())
        emitted += piece.bytes.size();
    QCOMPARE(emitted, 3000 * chunk.size());
    QCOMPARE(splitter.bufferedBytes(), 0);
}

void tst_LineSplitter::hugeSingleChunkIsCutInPieces() {
    const qsizetype cap = 4096;
    LineSplitter splitter(cap);
    const QVector<LinePiece> pieces = splitter.feed(QByteArray(10 * cap + 5, 'z'));
    QCOMPARE(pieces.size(), 10);
    QCOMPARE(splitter.bufferedBytes(), 5);
    const QVector<LinePiece> rest = splitter.finish();
    QCOMPARE(rest.size(), 1);
    QCOMPARE(rest[0].bytes, QByteArray(5, 'z'));
    QVERIFY(rest[0].endsLine);
}

void tst_LineSplitter::finishResetsForNextStream() {
    LineSplitter splitter;
    QVERIFY(splitter.feed("ab").isEmpty());
    QCOMPARE(render(splitter.finish()), QByteArrayList{"ab"});
    QCOMPARE(splitter.bufferedBytes(), 0);
    QCOMPARE(render(splitter.feed("c\n")), QByteArrayList{"c"});
    QVERIFY(splitter.finish().isEmpty());
}

QTEST_GUILESS_MAIN(tst_LineSplitter)
#include "tst_linesplitter.moc"
