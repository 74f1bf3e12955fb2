// SPDX-License-Identifier: MIT
// Paging a growing stream file by line number: across the index's strides, as the file grows, with a last
// line not yet ended, and past the end.
#include "core/streamlines.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

using namespace rankscope;

namespace {

void append(const QString& path, const QByteArray& bytes) {
    QFile file(path);
    QVERIFY(file.open(QIODevice::Append));
    file.write(bytes);
}

QByteArray numbered(int from, int to) {
    QByteArray text;
    for (int i = from; i <= to; ++i)
        text += "line " + QByteArray::number(i) + '\n';
    return text;
}

// A run in `store` with nothing stored yet.
QString newRun(RunStore& store) {
    RunRecord record;
    record.id = store.newRunId();
    return store.save(record) ? record.id : QString();
}

// Appends `bytes` to a rank's stored stream as the engine does, arrived at `at` (0: no time kept).
void put(RunStore& store, const QString& id, int rank, RankStream stream, const QByteArray& bytes, double at) {
    QString error;
    QVERIFY2(store.appendStream(id, rank, stream, store.streamSize(id, rank, stream), bytes, &error, nullptr, at),
             qPrintable(error));
}

// The texts of `lines`, in order.
QStringList textsOf(const QVector<RankLogLine>& lines) {
    QStringList texts;
    for (const RankLogLine& line : lines)
        texts << line.text;
    return texts;
}

} // namespace

class tst_StreamLines final : public QObject {
    Q_OBJECT

private slots:
    void pagesAcrossStridesAsTheFileGrows() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("rank0.out"));
        StreamLineReader reader(path);
        QCOMPARE(reader.lineCount(), 0); // no file yet: empty
        append(path, numbered(1, 3000));
        StreamLineReader::Page page = reader.read(1023, 4); // across the first stride
        QCOMPARE(page.total, 3000);
        QCOMPARE(page.first, 1023);
        QCOMPARE(page.lines, (QVector<QString>{"line 1023", "line 1024", "line 1025", "line 1026"}));
        QCOMPARE(reader.read(2049, 1).lines, QVector<QString>{"line 2049"});

        // A line still being written is not a line yet; once ended, it is, and later pages see the growth.
        append(path, "line 3001 (half");
        QCOMPARE(reader.lineCount(), 3000);
        QVERIFY(reader.read(3001, 5).lines.isEmpty());
        append(path, ")\r\n" + numbered(3002, 5000));
        page = reader.read(2999, 4);
        QCOMPARE(page.total, 5000);
        QCOMPARE(page.lines, (QVector<QString>{"line 2999", "line 3000", "line 3001 (half)", "line 3002"}));
        QCOMPARE(reader.read(4097, 2).lines, (QVector<QString>{"line 4097", "line 4098"}));
        // A fresh reader on the same file agrees with the one that grew with it.
        StreamLineReader fresh(path);
        QCOMPARE(fresh.read(4097, 2).lines, reader.read(4097, 2).lines);
    }

    // A file of several megabytes indexed in one go (the log viewer opened on a long run's stream): pages far into
    // it, at a stride's last line, and the byte offset where each line ends (what its arrival time is found by).
    void pagesOfAFileIndexedInOneGo() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("rank0.err"));
        const QByteArray text = numbered(1, 200000); // 2.4 MB: more than one read of the index
        append(path, text);
        QList<qint64> ends{0}; // ends[n]: the offset just past line n's newline
        for (qsizetype at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1))
            ends << at + 1;
        StreamLineReader reader(path);
        QCOMPARE(reader.lineCount(), 200000);
        for (const qint64 first : {qint64(1024), qint64(2048), qint64(150001), qint64(199999)}) {
            const StreamLineReader::Page page = reader.read(first, 2);
            QCOMPARE(page.first, first);
            QCOMPARE(page.lines, (QVector<QString>{QStringLiteral("line %1").arg(first),
                                                   QStringLiteral("line %1").arg(first + 1)}));
            QCOMPARE(page.ends, (QVector<qint64>{ends[first], ends[first + 1]}));
        }
    }

    // A line read back carries when its last byte arrived: a piece of several lines gives each its time, a line
    // cut across two pieces takes the second's, bytes written after the last recorded arrival take its time,
    // and a run stored before arrivals were kept reads as 0.
    void pagedLinesCarryTheirArrivalTimes() {
        QTemporaryDir dir;
        RunStore store(dir.path());
        const QString id = newRun(store);
        QVERIFY(!id.isEmpty());
        put(store, id, 0, RankStream::Out, "a1\na2\n", 100.0);
        put(store, id, 0, RankStream::Out, "a3 he", 101.0);
        put(store, id, 0, RankStream::Out, "ld\na4\n", 102.5);
        append(store.streamPath(id, 0, RankStream::Out), "a5\n"); // no arrival recorded
        put(store, id, 1, RankStream::Out, "b1\n", 0.0);          // stored without times
        RunLinePager pager(&store, id);
        const QVector<RankLogLine> lines = pager.before(0, RankStream::Out, 6, 5);
        QCOMPARE(lines.size(), 5);
        QCOMPARE(lines[2].text, QStringLiteral("a3 held"));
        const QVector<double> times = {100.0, 100.0, 102.5, 102.5, 102.5};
        for (int i = 0; i < 5; ++i) {
            QCOMPARE(lines[i].lineNumber, i + 1);
            QCOMPARE(lines[i].receivedAt, times[i]);
        }
        QCOMPARE(pager.before(1, RankStream::Out, 2, 5).value(0).receivedAt, 0.0);
    }

    // Several streams read back together come merged by arrival, and cut where one stream has more lines than were
    // asked for: no other stream's line older than its oldest one read comes back, so the result has no stretch
    // where one stream's lines are missing.
    void streamsReadBackTogetherAreMergedWithoutHoles() {
        QTemporaryDir dir;
        RunStore store(dir.path());
        const QString id = newRun(store);
        QVERIFY(!id.isEmpty());
        const auto line = [](int rank, int number) {
            return "r" + QByteArray::number(rank) + " " + QByteArray::number(number) + '\n';
        };
        for (int i = 1; i <= 10; ++i)
            put(store, id, 0, RankStream::Out, line(0, i), 10.0 + i); // 11 .. 20
        for (int i = 1; i <= 4; ++i)
            put(store, id, 1, RankStream::Err, line(1, i), 10.5 + 3 * i); // 13.5, 16.5, 19.5, 22.5
        put(store, id, 2, RankStream::Out, line(2, 1), 12.2);
        RunLinePager pager(&store, id);
        // Rank 0 before its line 10, 3 lines: 7, 8, 9 (17 .. 19); rank 1 before 5: 2 .. 4, line 2 at 16.5 is
        // older than rank 0's oldest line read and waits; rank 2's one line (its first) too.
        QCOMPARE(textsOf(pager.before({{0, RankStream::Out, 10}, {1, RankStream::Err, 5}, {2, RankStream::Out, 2}}, 3)),
                 (QStringList{"r0 7", "r0 8", "r0 9", "r1 3", "r1 4"}));
        // Reading on from there: rank 0 lines 4 .. 6 (14 .. 16) and rank 1 line 2 (16.5). Rank 0 has lines before
        // its line 4, so rank 1's line 1 (13.5) and rank 2's (12.2) wait again.
        QCOMPARE(textsOf(pager.before({{0, RankStream::Out, 7}, {1, RankStream::Err, 3}, {2, RankStream::Out, 2}}, 3)),
                 (QStringList{"r0 4", "r0 5", "r0 6", "r1 2"}));
        // Once every stream reaches its first line, nothing is cut.
        QCOMPARE(textsOf(pager.before({{0, RankStream::Out, 4}, {1, RankStream::Err, 2}, {2, RankStream::Out, 2}}, 3)),
                 (QStringList{"r0 1", "r0 2", "r2 1", "r0 3", "r1 1"}));
    }

    void outOfRangeAndBadBytes() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("rank1.err"));
        append(path, QByteArray("ok\n\xff\xfe bytes\n", 13));
        StreamLineReader reader(path);
        QCOMPARE(reader.read(0, 10).first, 1); // numbers start at 1
        QCOMPARE(reader.read(1, 10).lines.size(), 2);
        QVERIFY(reader.read(1, 10).lines.at(1).endsWith(QLatin1String(" bytes")));
        QVERIFY(reader.read(3, 10).lines.isEmpty());
        QVERIFY(reader.read(1, 0).lines.isEmpty());
        QCOMPARE(reader.read(3, 10).total, 2);
    }
};

QTEST_APPLESS_MAIN(tst_StreamLines)
#include "tst_streamlines.moc"
