// SPDX-License-Identifier: MIT
#include "core/eventstreamparser.h"

#include <QFile>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QTest>

#include <cmath>

using rankscope::DecodeError;
using rankscope::EventStreamParser;
using rankscope::OutputLine;
using rankscope::ParsedBatch;
using rankscope::TrainerEvent;
using rankscope::TrainerEventType;

namespace {

QByteArray readDataFile(const QString& name) {
    QFile file(QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/events/") + name);
    if (!file.open(QIODevice::ReadOnly))
        qFatal("cannot open test data %s", qPrintable(file.fileName()));
    return file.readAll();
}

ParsedBatch parseChunks(const QList<QByteArrayView>& chunks, qsizetype cap = 1024 * 1024) {
    EventStreamParser parser(cap);
    ParsedBatch all;
    for (const QByteArrayView chunk : chunks)
        all.append(parser.feed(chunk));
    all.append(parser.finish());
    return all;
}

// Everything a batch holds, one line per item, so a failed comparison shows the first difference.
QStringList dump(const ParsedBatch& batch) {
    QStringList out;
    for (const TrainerEvent& event : batch.events) {
        out << QStringLiteral("event %1: %2 rank %3 time %4 %5")
                   .arg(event.lineNumber)
                   .arg(event.typeName)
                   .arg(event.rank)
                   .arg(event.time, 0, 'f', 3)
                   .arg(QString::fromUtf8(QJsonDocument(event.fields).toJson(QJsonDocument::Compact)));
    }
    for (const OutputLine& line : batch.logLines)
        out << QStringLiteral("log %1: %2").arg(line.lineNumber).arg(line.text);
    for (const DecodeError& error : batch.errors)
        out << QStringLiteral("error %1: %2 | %3")
                   .arg(error.lineNumber)
                   .arg(error.message, QString::fromUtf8(error.rawLine));
    return out;
}

QList<qint64> eventLines(const ParsedBatch& batch) {
    QList<qint64> lines;
    for (const TrainerEvent& event : batch.events)
        lines << event.lineNumber;
    return lines;
}

QList<qint64> logLineNumbers(const ParsedBatch& batch) {
    QList<qint64> lines;
    for (const OutputLine& line : batch.logLines)
        lines << line.lineNumber;
    return lines;
}

const QStringList kDataFiles = {"clean-rank0.events", "clean-rank1.events", "error-with-logs.events",
                                "crlf-invalid-utf8.events", "malformed.events"};

} // namespace

class tst_EventStreamParser final : public QObject {
    Q_OBJECT

private slots:
    void everySplitPointMatchesWholeFeed_data();
    void everySplitPointMatchesWholeFeed();
    void randomChunkingMatchesWholeFeed_data();
    void randomChunkingMatchesWholeFeed();
    void dataFileContents_data();
    void dataFileContents();
    void malformedLinesAreReportedAndKept();
    void crlfAndInvalidUtf8();
    void errorRunKeepsEveryLogLine();
    void overlongEventLineIsReportedAndKept();
    void prefixMustStartTheLine();
    void finishStartsANewStream();
};

void tst_EventStreamParser::everySplitPointMatchesWholeFeed_data() {
    QTest::addColumn<QString>("file");
    for (const QString& file : kDataFiles)
        QTest::newRow(qPrintable(file)) << file;
}

void tst_EventStreamParser::everySplitPointMatchesWholeFeed() {
    QFETCH(QString, file);
    const QByteArray data = readDataFile(file);
    const QStringList whole = dump(parseChunks({data}));
    QVERIFY(!whole.isEmpty());
    const QByteArrayView all(data);
    for (qsizetype cut = 0; cut <= all.size(); ++cut) {
        const QStringList split = dump(parseChunks({all.first(cut), all.sliced(cut)}));
        if (split != whole)
            QCOMPARE(split, whole); // only on failure, to keep thousands of passing comparisons cheap
    }
}

void tst_EventStreamParser::randomChunkingMatchesWholeFeed_data() {
    everySplitPointMatchesWholeFeed_data();
}

void tst_EventStreamParser::randomChunkingMatchesWholeFeed() {
    QFETCH(QString, file);
    const QByteArray data = readDataFile(file);
    const QStringList whole = dump(parseChunks({data}));
    QRandomGenerator random(20241122); // fixed, so a failure can be reproduced
    for (int round = 0; round < 200; ++round) {
        QList<QByteArrayView> chunks;
        for (qsizetype pos = 0; pos < data.size();) {
            const qsizetype size = std::min<qsizetype>(random.bounded(1, 40), data.size() - pos);
            chunks << QByteArrayView(data).sliced(pos, size);
            pos += size;
        }
        const QStringList chunked = dump(parseChunks(chunks));
        if (chunked != whole)
            QCOMPARE(chunked, whole);
    }
}

void tst_EventStreamParser::dataFileContents_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<int>("events");
    QTest::addColumn<int>("logLines");
    QTest::addColumn<int>("errors");
    QTest::newRow("clean rank 0") << "clean-rank0.events" << 15 << 0 << 0;
    QTest::newRow("clean rank 1") << "clean-rank1.events" << 13 << 0 << 0;
    QTest::newRow("error with logs") << "error-with-logs.events" << 9 << 13 << 0;
    QTest::newRow("crlf, invalid utf8") << "crlf-invalid-utf8.events" << 4 << 4 << 0;
    QTest::newRow("malformed") << "malformed.events" << 3 << 6 << 5;
}

void tst_EventStreamParser::dataFileContents() {
    QFETCH(QString, file);
    QFETCH(int, events);
    QFETCH(int, logLines);
    QFETCH(int, errors);
    const ParsedBatch batch = parseChunks({readDataFile(file)});
    QCOMPARE(batch.events.size(), events);
    QCOMPARE(batch.logLines.size(), logLines);
    QCOMPARE(batch.errors.size(), errors);
    // Every line is either an event or a log line, exactly once; a line that failed to decode is a log line.
    QList<qint64> lines = eventLines(batch) + logLineNumbers(batch);
    std::sort(lines.begin(), lines.end());
    QList<qint64> expectedLines;
    for (qint64 line = 1; line <= events + logLines; ++line)
        expectedLines << line;
    QCOMPARE(lines, expectedLines);
    for (const DecodeError& error : batch.errors)
        QVERIFY(logLineNumbers(batch).contains(error.lineNumber));
}

void tst_EventStreamParser::malformedLinesAreReportedAndKept() {
    const ParsedBatch batch = parseChunks({readDataFile("malformed.events")});
    QList<qint64> errorLines;
    QStringList messages;
    for (const DecodeError& error : batch.errors) {
        errorLines << error.lineNumber;
        messages << error.message;
        QVERIFY(error.rawLine.startsWith("@rankscope {"));
    }
    QCOMPARE(errorLines, (QList<qint64>{3, 4, 5, 6, 7}));
    QVERIFY2(messages[0].startsWith("invalid JSON: "), qPrintable(messages[0]));
    QCOMPARE(messages.mid(1), (QStringList{
                                  "step event: unsupported schema version \"2.0\" (this reader knows major version 1)",
                                  "step event: missing field 'loss'",
                                  "step event: field 'loss' must be a number",
                                  "heartbeat event: field 'step' must be a non-negative integer",
                              }));
    QCOMPARE(eventLines(batch), (QList<qint64>{1, 2, 9}));
    QCOMPARE(logLineNumbers(batch), (QList<qint64>{3, 4, 5, 6, 7, 8}));
    // The kept log line is the raw line itself, prefix included: nothing is lost.
    for (qsizetype i = 0; i < batch.errors.size(); ++i)
        QCOMPARE(batch.logLines[i].text, QString::fromUtf8(batch.errors[i].rawLine));
    QCOMPARE(batch.logLines.last().text, QStringLiteral("plain log line between bad events"));
}

void tst_EventStreamParser::crlfAndInvalidUtf8() {
    const ParsedBatch batch = parseChunks({readDataFile("crlf-invalid-utf8.events")});
    QCOMPARE(batch.errors.size(), 0);
    QStringList texts;
    for (const OutputLine& line : batch.logLines)
        texts << line.text;
    const QString replacement(QChar::ReplacementCharacter);
    QCOMPARE(texts, (QStringList{
                        "node-c:777:777 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.3<0>",
                        "progress: " + replacement + replacement + " broken bytes " + replacement + " end",
                        QString::fromUtf8("temp\xc3\xa9rature \xf0\x9f\x94\xa5 ok"),
                        "",
                    }));
    QCOMPARE(logLineNumbers(batch), (QList<qint64>{1, 3, 4, 7}));
    QCOMPARE(eventLines(batch), (QList<qint64>{2, 5, 6, 8})); // 8 has no line ending at all
    QCOMPARE(batch.events[0].string("host"), QString::fromUtf8("n\xc5\x93ud-c"));
    QVERIFY(std::isnan(batch.events[2].number("loss")));
    QCOMPARE(batch.events[3].type, TrainerEventType::Eval);
    QCOMPARE(batch.events[3].number("val_loss"), std::numeric_limits<double>::infinity());
}

void tst_EventStreamParser::errorRunKeepsEveryLogLine() {
    const QByteArray data = readDataFile("error-with-logs.events");
    const ParsedBatch batch = parseChunks({data});
    // Reassembling events and log lines in line order gives back the file.
    QMap<qint64, QByteArray> lines;
    for (const OutputLine& line : batch.logLines)
        lines.insert(line.lineNumber, line.text.toUtf8());
    for (const TrainerEvent& event : batch.events)
        lines.insert(event.lineNumber, "@rankscope " + QJsonDocument(event.fields).toJson(QJsonDocument::Compact));
    const QByteArrayList original = data.trimmed().split('\n');
    QCOMPARE(lines.size(), original.size());
    for (qsizetype i = 0; i < original.size(); ++i) {
        if (!original[i].startsWith("@rankscope "))
            QCOMPARE(lines.value(i + 1), original[i]);
    }
    QCOMPARE(batch.logLines.first().text,
             QStringLiteral("node-b:5151:5151 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>"));
    QCOMPARE(batch.logLines.last().text, QStringLiteral("SystemExit: 3"));
}

void tst_EventStreamParser::overlongEventLineIsReportedAndKept() {
    const qsizetype cap = 64;
    const QByteArray longEvent = R"(@rankscope {"v":"1.0","type":"error","rank":0,"time":1.0,"kind":"internal",)"
                                 R"("message":"a message long enough to pass the cap of this parser"})";
    QVERIFY(longEvent.size() > 2 * cap && longEvent.size() <= 3 * cap); // so it comes in three pieces
    const QByteArray data = "before\n" + longEvent + "\nafter\n";
    const ParsedBatch batch = parseChunks({data}, cap);
    QCOMPARE(batch.events.size(), 0);
    QCOMPARE(batch.errors.size(), 1);
    QCOMPARE(batch.errors[0].lineNumber, qint64(2));
    QCOMPARE(batch.errors[0].message, QStringLiteral("event line longer than 64 bytes; kept as log output"));
    QCOMPARE(logLineNumbers(batch), (QList<qint64>{1, 2, 2, 2, 3}));
    QCOMPARE(batch.logLines[1].text + batch.logLines[2].text + batch.logLines[3].text, QString::fromUtf8(longEvent));
    QCOMPARE(batch.logLines[4].text, QStringLiteral("after"));

    // The same with a line that is not an event: pieces, no error.
    const ParsedBatch plain = parseChunks({QByteArray(150, 'x') + "\nend"}, cap);
    QCOMPARE(plain.errors.size(), 0);
    QCOMPARE(logLineNumbers(plain), (QList<qint64>{1, 1, 1, 2}));

    // A long line whose cut leaves an event's text at the start of its last piece: that piece is the line's end, not
    // an event of its own, and no error.
    const QByteArray event = R"(@rankscope {"v":"1.0","type":"error","rank":1,"time":2.5,"kind":"data","message":"m"})";
    QVERIFY(event.size() <= 2 * cap);
    const ParsedBatch cut = parseChunks({QByteArray(2 * cap, 'x') + event + "\n"}, 2 * cap);
    QCOMPARE(cut.events.size(), 0);
    QCOMPARE(cut.errors.size(), 0);
    QCOMPARE(logLineNumbers(cut), (QList<qint64>{1, 1}));
    QCOMPARE(cut.logLines[1].text, QString::fromUtf8(event));
}

void tst_EventStreamParser::prefixMustStartTheLine() {
    const ParsedBatch batch = parseChunks({R"( @rankscope {"v":"1.0"})"
                                           "\n"
                                           R"(@rankscope{"v":"1.0"})"
                                           "\n"
                                           "@RANKSCOPE x\n"});
    QCOMPARE(batch.events.size(), 0);
    QCOMPARE(batch.errors.size(), 0);
    QCOMPARE(batch.logLines.size(), 3);
}

void tst_EventStreamParser::finishStartsANewStream() {
    EventStreamParser parser;
    const QByteArray event = R"(@rankscope {"v":"1.0","type":"error","rank":1,"time":2.5,"kind":"data","message":"m"})";
    ParsedBatch first = parser.feed("log\n" + event);
    QCOMPARE(first.logLines.size(), 1);
    QCOMPARE(first.events.size(), 0); // not complete until a newline or finish()
    first.append(parser.finish());
    QCOMPARE(eventLines(first), (QList<qint64>{2}));
    QCOMPARE(parser.lineCount(), qint64(0));

    const ParsedBatch second = parser.feed(event + "\n");
    QCOMPARE(eventLines(second), (QList<qint64>{1}));
    QVERIFY(parser.finish().isEmpty());
}

QTEST_GUILESS_MAIN(tst_EventStreamParser)
#include "tst_eventstreamparser.moc"
