// SPDX-License-Identifier: MIT
// RankStreamParsers: the engine's per-rank parsing, run on the node workers' threads. Its output must not depend
// on how the bytes were chunked, nor on the thread hand-over (take()) between the replay and the live follow.
#include "core/logclassify.h"
#include "core/rankstreams.h"

#include <QFile>
#include <QtTest>

using namespace rankscope;

namespace {

QByteArray recorded(const QString& name) {
    QFile file(QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/events/") + name);
    if (!file.open(QIODevice::ReadOnly))
        qFatal("missing recording %s", qPrintable(file.fileName()));
    return file.readAll();
}

// Everything a run of chunks gave, concatenated.
struct Fed {
    QVector<TrainerEvent> events;
    QVector<RankLogLine> lines;
    int decodeErrors = 0;
    QByteArray raw;
};

void collect(Fed& into, const RankStreamChunk& chunk) {
    into.events += chunk.events;
    into.lines += chunk.lines;
    into.decodeErrors += int(chunk.decodeErrors.size());
    into.raw += chunk.raw;
}

Fed feedInChunks(RankStreamParsers& parsers, int rank, RankStream stream, const QByteArray& bytes, qsizetype size) {
    Fed fed;
    for (qsizetype at = 0; at < bytes.size(); at += size)
        collect(fed, parsers.feed(rank, stream, QByteArrayView(bytes).sliced(at, std::min(size, bytes.size() - at)), 1.0));
    return fed;
}

QStringList texts(const QVector<RankLogLine>& lines) {
    QStringList out;
    for (const RankLogLine& line : lines)
        out << QStringLiteral("%1:%2:%3:%4:%5").arg(line.lineNumber).arg(line.severity).arg(line.nccl).arg(line.endsLine).arg(line.text);
    return out;
}

} // namespace

class TestRankStreams final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void chunkingDoesNotChangeTheResult_data() {
        QTest::addColumn<int>("stream");
        QTest::addColumn<QString>("file");
        QTest::newRow("events") << int(RankStream::Events) << QStringLiteral("recorded-fail-rank1.out");
        QTest::newRow("events with bad lines") << int(RankStream::Events) << QStringLiteral("malformed.events");
        QTest::newRow("stdout, CRLF and invalid UTF-8") << int(RankStream::Out) << QStringLiteral("crlf-invalid-utf8.events");
        QTest::newRow("stderr") << int(RankStream::Err) << QStringLiteral("error-with-logs.events");
    }

    void chunkingDoesNotChangeTheResult() {
        QFETCH(int, stream);
        QFETCH(QString, file);
        const QByteArray bytes = recorded(file);
        const auto kind = RankStream(stream);
        RankStreamParsers whole;
        const Fed once = feedInChunks(whole, 3, kind, bytes, bytes.size());
        QVERIFY(!once.lines.isEmpty() || !once.events.isEmpty());
        for (const qsizetype size : {qsizetype(1), qsizetype(7), qsizetype(4096)}) {
            RankStreamParsers chunked;
            const Fed fed = feedInChunks(chunked, 3, kind, bytes, size);
            QCOMPARE(fed.events.size(), once.events.size());
            for (qsizetype i = 0; i < fed.events.size(); ++i)
                QCOMPARE(fed.events[i].fields, once.events[i].fields);
            QCOMPARE(texts(fed.lines), texts(once.lines));
            QCOMPARE(fed.decodeErrors, once.decodeErrors);
        }
    }

    // Lines are numbered per stream from 1, stamped, and classified as the inspector needs them.
    void linesAreNumberedAndClassified() {
        RankStreamParsers parsers;
        const RankStreamChunk first =
            parsers.feed(2, RankStream::Err, "starting\nRuntimeError: NCCL error in: ProcessGroupNCCL.cpp\npart", 42.0);
        QCOMPARE(first.rank, 2);
        QCOMPARE(first.stream, RankStream::Err);
        QCOMPARE(first.lines.size(), 2);
        QCOMPARE(first.lines[0].lineNumber, 1);
        QCOMPARE(first.lines[0].receivedAt, 42.0);
        QCOMPARE(first.lines[0].severity, int(classifyLogLine(u"starting").severity));
        QCOMPARE(first.lines[1].lineNumber, 2);
        QCOMPARE(first.lines[1].severity, int(LogSeverity::Error));
        QVERIFY(first.lines[1].nccl);
        QVERIFY(first.raw.isEmpty()); // not asked for
        const RankStreamChunk rest = parsers.feed(2, RankStream::Err, "ial line\n", 43.0);
        QCOMPARE(rest.lines.size(), 1);
        QCOMPARE(rest.lines[0].lineNumber, 3);
        QCOMPARE(rest.lines[0].text, QStringLiteral("partial line"));
        // Another stream of the same rank counts on its own.
        QCOMPARE(parsers.feed(2, RankStream::Out, "x\n", 44.0).lines[0].lineNumber, 1);
    }

    // A line longer than the splitter's cap comes in pieces with one number; the last piece ends it.
    void overlongLineComesInPieces() {
        RankStreamParsers parsers;
        const QByteArray line = QByteArray(LineSplitter::kDefaultMaxLineBytes + 10, 'a') + "\nnext\n";
        const RankStreamChunk chunk = parsers.feed(0, RankStream::Out, line, 1.0);
        QCOMPARE(chunk.lines.size(), 3);
        QCOMPARE(chunk.lines[0].lineNumber, 1);
        QVERIFY(!chunk.lines[0].endsLine);
        QCOMPARE(chunk.lines[1].lineNumber, 1);
        QVERIFY(chunk.lines[1].endsLine);
        QCOMPARE(chunk.lines[2].lineNumber, 2);
    }

    void rawBytesOnlyWhereAsked() {
        RankStreamParsers parsers;
        parsers.keepRaw(1, RankStream::Out);
        QCOMPARE(parsers.feed(1, RankStream::Out, "NCCL INFO a\nNCCL", 1.0).raw, QByteArray("NCCL INFO a\nNCCL"));
        QVERIFY(parsers.feed(0, RankStream::Out, "NCCL INFO b\n", 1.0).raw.isEmpty());
        QVERIFY(parsers.feed(1, RankStream::Err, "err\n", 1.0).raw.isEmpty());
        parsers.keepRaw(1, RankStream::Err);
        QCOMPARE(parsers.feed(1, RankStream::Err, "NCCL WARN c\n", 1.0).raw, QByteArray("NCCL WARN c\n"));
        QCOMPARE(parsers.feed(1, RankStream::Out, "x\n", 1.0).raw, QByteArray("x\n")); // stdout's wish stays
    }

    // A rank's stdout and stderr are two streams: a line stdout has not ended yet is not continued by stderr's
    // bytes, and each ends its own.
    void aRanksStreamsAreSplitApart() {
        RankStreamParsers parsers;
        QVERIFY(parsers.feed(3, RankStream::Out, "epoch 1 step 7 lo", 1.0).lines.isEmpty()); // not ended yet
        const RankStreamChunk err = parsers.feed(3, RankStream::Err, "UserWarning: x\n", 2.0);
        QCOMPARE(err.lines.size(), 1);
        QCOMPARE(err.lines[0].text, QStringLiteral("UserWarning: x"));
        QCOMPARE(err.lines[0].lineNumber, 1);
        QVERIFY(err.lines[0].endsLine);
        const RankStreamChunk out = parsers.feed(3, RankStream::Out, "ss 0.25\n", 3.0);
        QCOMPARE(out.lines.size(), 1);
        QCOMPARE(out.lines[0].text, QStringLiteral("epoch 1 step 7 loss 0.25"));
        QCOMPARE(out.lines[0].lineNumber, 1);
    }

    // An events stream's line that is no valid event is reported with its line, and kept as a log line.
    void badEventsAreReported() {
        RankStreamParsers parsers;
        const RankStreamChunk chunk =
            parsers.feed(0, RankStream::Events, "plain text\n@rankscope {\"v\": 1, \"type\":\n", 1.0);
        QCOMPARE(chunk.decodeErrors.size(), 1);
        QCOMPARE(chunk.decodeErrors[0].lineNumber, 2);
        QCOMPARE(chunk.lines.size(), 2);
        QCOMPARE(chunk.lines[1].text, QStringLiteral("@rankscope {\"v\": 1, \"type\":"));
    }

    // The replay parses the stored bytes, then the node's ranks are taken to its worker thread: a line cut by
    // the interruption is completed there, with its number, and the other ranks stay behind untouched.
    void takeHandsTheStateOver() {
        RankStreamParsers replay;
        replay.keepRaw(1, RankStream::Out);
        QCOMPARE(replay.feed(1, RankStream::Out, "one\ntw", 1.0).lines.size(), 1);
        QCOMPARE(replay.feed(4, RankStream::Out, "four\n", 1.0).lines.size(), 1);
        RankStreamParsers node = replay.take({1, 2});
        const RankStreamChunk completed = node.feed(1, RankStream::Out, "o\n", 2.0);
        QCOMPARE(completed.lines.size(), 1);
        QCOMPARE(completed.lines[0].text, QStringLiteral("two"));
        QCOMPARE(completed.lines[0].lineNumber, 2);
        QCOMPARE(completed.raw, QByteArray("o\n")); // the wish for raw bytes goes along
        QCOMPARE(node.feed(2, RankStream::Out, "fresh\n", 2.0).lines[0].lineNumber, 1);
        QCOMPARE(replay.feed(4, RankStream::Out, "again\n", 2.0).lines[0].lineNumber, 2);
        // What was taken is gone from the replay: rank 1 starts over there.
        QCOMPARE(replay.feed(1, RankStream::Out, "x\n", 2.0).lines[0].lineNumber, 1);
    }
};

QTEST_GUILESS_MAIN(TestRankStreams)
#include "tst_rankstreams.moc"
