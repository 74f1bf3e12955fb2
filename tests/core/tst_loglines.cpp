// SPDX-License-Identifier: MIT
// LogLineScanner: which lines each sink gets, and the keywords it is told each line holds, whatever the chunking.
#include "core/loglines.h"

#include <QTest>

using namespace rankscope;

namespace {

// Records "number rank keywords text" per line it takes. Between a line holding "BEGIN" and one holding "END"
// it wants every line, as the table parsers do.
class RecordingSink final : public LogLineSink {
public:
    explicit RecordingSink(QList<QByteArray> keywords) : m_keywords(std::move(keywords)) {}

    [[nodiscard]] QList<QByteArray> keywords() const override { return m_keywords; }
    [[nodiscard]] bool wantsEveryLine() const override { return m_open; }
    void takeLine(const LogLine& line) override {
        m_lines.append(QStringLiteral("%1 %2 %3 %4")
                           .arg(line.number)
                           .arg(line.rank)
                           .arg(line.keywords, 0, 2)
                           .arg(QString::fromUtf8(line.text)));
        if (containsBytes(line.text, "BEGIN"))
            m_open = true;
        else if (containsBytes(line.text, "END"))
            m_open = false;
    }
    void endOfStream() override {
        m_lines.append(QStringLiteral("end"));
        m_open = false;
    }
    [[nodiscard]] QString lines() const { return m_lines.join(QLatin1Char('|')); }

private:
    QList<QByteArray> m_keywords;
    QStringList m_lines;
    bool m_open = false;
};

// Records, per line it takes, where its keywords are: "number:keyword@at keyword@at …".
class PositionSink final : public LogLineSink {
public:
    explicit PositionSink(QList<QByteArray> keywords) : m_keywords(std::move(keywords)) {}

    [[nodiscard]] QList<QByteArray> keywords() const override { return m_keywords; }
    [[nodiscard]] bool wantsEveryLine() const override { return false; }
    void takeLine(const LogLine& line) override {
        QStringList found;
        for (qsizetype i = 0; i < line.foundCount; ++i)
            found.append(QStringLiteral("%1@%2").arg(line.found[i].keyword).arg(line.found[i].at));
        m_lines.append(QStringLiteral("%1:%2").arg(line.number).arg(found.join(QLatin1Char(' '))));
        for (int k = 0; k < m_keywords.size(); ++k) {
            // indexOf agrees with the list, and with a search of the text.
            if (line.indexOf(k) != findBytes(line.text, m_keywords[k]))
                m_lines.append(QStringLiteral("indexOf(%1) wrong").arg(k));
        }
    }
    void endOfStream() override {}
    [[nodiscard]] QString lines() const { return m_lines.join(QLatin1Char('|')); }

private:
    QList<QByteArray> m_keywords;
    QStringList m_lines;
};

// Two sinks that list the same keywords in other orders, so that their indices differ from the scanner's.
QStringList positions(QByteArrayView log, qsizetype splitAt = -1) {
    PositionSink first({"NCCL", "NCCL version", "aa"});
    PositionSink second({"NCCL version", "x", "NCCL", "x"});
    LogLineScanner scanner({&first, &second}, 40);
    if (splitAt < 0) {
        scanner.feed(log);
    } else {
        scanner.feed(log.first(splitAt));
        scanner.feed(log.sliced(splitAt));
    }
    scanner.finish();
    return {first.lines(), second.lines()};
}

struct Scan {
    QString first;  // what a sink looking for NCCL, "NCCL version" and BEGIN got
    QString second; // what a sink looking for "Error" and NCCL got
    qint64 lines = 0;
};

// Feeds `log` whole (splitAt < 0) or in two pieces.
Scan scan(QByteArrayView log, qsizetype splitAt = -1, qsizetype maxLineBytes = LogLineScanner::kDefaultMaxLineBytes) {
    RecordingSink first({"NCCL", "NCCL version", "BEGIN"});
    RecordingSink second({"Error", "NCCL"});
    LogLineScanner scanner({&first, &second}, maxLineBytes);
    if (splitAt < 0) {
        scanner.feed(log);
    } else {
        scanner.feed(log.first(splitAt));
        scanner.feed(log.sliced(splitAt));
    }
    const qint64 lines = scanner.finish();
    return {first.lines(), second.lines(), lines};
}

} // namespace

class tst_LogLines final : public QObject {
    Q_OBJECT

private slots:
    void linesAndKeywords_data();
    void linesAndKeywords();
    void everySplitPointGivesTheSameLines();
    void longLinesAreCut();
    void aSinkMayLookForTheBytesTheScannerCleans();
    void countsLinesPerStream();
    void aBlockLeftOpenEndsWithItsStream();
    void linesFarApartKeepTheirNumbers();
    void keywordPositions_data();
    void keywordPositions();
    void keywordPositionsDoNotDependOnChunks();
};

void tst_LogLines::linesAndKeywords_data() {
    QTest::addColumn<QByteArray>("log");
    QTest::addColumn<QString>("first");
    QTest::addColumn<QString>("second");
    QTest::newRow("no keyword: nobody is asked") << QByteArray("hello\nworld\n") << "end"
                                                 << "end";
    QTest::newRow("each sink gets its own bits")
        << QByteArray("x\nh:1:2 [0] NCCL INFO NCCL version 2.18.1\nan Error\n")
        << "2 -1 11 h:1:2 [0] NCCL INFO NCCL version 2.18.1|end"
        << "2 -1 10 h:1:2 [0] NCCL INFO NCCL version 2.18.1|3 -1 1 an Error|end";
    QTest::newRow("a launcher prefix is not the text")
        << QByteArray("[1,3]<stdout>:NCCL INFO x\n") << "1 3 1 NCCL INFO x|end"
        << "1 3 10 NCCL INFO x|end";
    QTest::newRow("a keyword only in a prefix is not in the text")
        << QByteArray("(NCCL pid=12) hello\n(NCCL pid=12) Error\n") << "end"
        << "2 -1 1 Error|end";
    QTest::newRow("a keyword split by an escape sequence is found")
        << QByteArray("\x1b[1mNC\x1b[0mCL INFO x\n") << "1 -1 1 NCCL INFO x|end"
        << "1 -1 10 NCCL INFO x|end";
    QTest::newRow("a keyword that an escape sequence hides is not") << QByteArray("\x1b[NCCL Error\n") << "end"
                                                                    << "1 -1 1 CCL Error|end";
    QTest::newRow("a keyword before the last carriage return is overwritten")
        << QByteArray("NCCL 10%\rdone\r\nError 1%\rError 2%\n") << "end"
        << "2 -1 1 Error 2%|end";
    QTest::newRow("a block gets every line, without keywords")
        << QByteArray("BEGIN\nplain\nError\nEND\nplain\n") << "1 -1 100 BEGIN|2 -1 0 plain|3 -1 0 Error|4 -1 0 END|end"
        << "3 -1 1 Error|end";
    QTest::newRow("a keyword only in a prefix, with an escape sequence in the text")
        << QByteArray("(NCCL pid=12) \x1b[1mhello\x1b[0m\n(NCCL pid=12) \x1b[1mError\x1b[0m\n") << "end"
        << "2 -1 1 Error|end";
    QTest::newRow("the last line needs no newline") << QByteArray("a\nError") << "end"
                                                    << "2 -1 1 Error|end";
}

void tst_LogLines::linesAndKeywords() {
    QFETCH(QByteArray, log);
    QFETCH(QString, first);
    QFETCH(QString, second);
    const Scan result = scan(log);
    QCOMPARE(result.first, first);
    QCOMPARE(result.second, second);
}

void tst_LogLines::everySplitPointGivesTheSameLines() {
    const QByteArray log = "h:1:2 [0] NCCL INFO NCCL version 2.18.1\r\n\x1b[1mNC\x1b[0mCL x\nBEGIN\nplain\n"
                           "[rank1]: Error\nEND\nNCCL 10%\rdone\nlast NCCL";
    const Scan whole = scan(log);
    QVERIFY(whole.first.count(QLatin1Char('|')) >= 6);
    for (qsizetype at = 0; at <= log.size(); ++at) {
        const Scan split = scan(log, at);
        QCOMPARE(split.first, whole.first);
        QCOMPARE(split.second, whole.second);
        QCOMPARE(split.lines, whole.lines);
    }
}

void tst_LogLines::longLinesAreCut() {
    // Cut after 20 bytes: a keyword past the cut, or across it, is not in the line. A '\r' that the cut leaves at
    // the line's end is not a CRLF's: it stays in the text, whether the line came in one piece or several.
    const QByteArray log = "0123456789012345 NCCL\n01234567890123456789 Error\nError\n0123456789 Error 12\r34567\n";
    const Scan whole = scan(log, -1, 20);
    QCOMPARE(whole.first, QStringLiteral("end"));
    QCOMPARE(whole.second, QStringLiteral("3 -1 1 Error|4 -1 1 0123456789 Error 12\r|end"));
    for (qsizetype at = 0; at <= log.size(); ++at) {
        const Scan split = scan(log, at, 20);
        QCOMPARE(split.first, whole.first);
        QCOMPARE(split.second, whole.second);
    }
}

void tst_LogLines::aSinkMayLookForTheBytesTheScannerCleans() {
    // The scanner looks for ESC and '\r' itself; a sink looking for them is told only of those left in the text.
    RecordingSink sink({"\x1b", "\r"});
    LogLineScanner scanner({&sink});
    scanner.feed("a\x1b[0m\nx\r\r\np\rq\nplain\n");
    scanner.finish();
    QCOMPARE(sink.lines(), QStringLiteral("2 -1 10 x\r|end"));
}

void tst_LogLines::countsLinesPerStream() {
    QCOMPARE(scan("a\nb\nc").lines, 3);
    QCOMPARE(scan("a\nb\n").lines, 2);
    QCOMPARE(scan("").lines, 0);
    RecordingSink sink({"x"});
    LogLineScanner scanner({&sink});
    scanner.feed("x\ny\n");
    QCOMPARE(scanner.lineCount(), 2);
    QCOMPARE(scanner.finish(), 2);
    scanner.feed("x\n"); // the next stream counts from 1 again
    QCOMPARE(scanner.finish(), 1);
    QCOMPARE(sink.lines(), QStringLiteral("1 -1 1 x|end|1 -1 1 x|end"));
}

// Outside blocks the scanner goes from one line with a hit to the next without walking the lines in between; the
// lines it gets to keep their numbers, near and far apart, across chunks, and a block still gets every line.
// A sink that wants every line (an open block) at a stream's end is asked again after endOfStream(): the next
// stream's lines without keywords are not its.
void tst_LogLines::aBlockLeftOpenEndsWithItsStream() {
    RecordingSink sink({"BEGIN", "NCCL"});
    LogLineScanner scanner({&sink});
    scanner.feed("BEGIN\nplain\n");
    QCOMPARE(scanner.finish(), 2);
    scanner.feed("plain\nNCCL x\n");
    QCOMPARE(scanner.finish(), 2);
    QCOMPARE(sink.lines(), QStringLiteral("1 -1 1 BEGIN|2 -1 0 plain|end|2 -1 10 NCCL x|end"));
}

void tst_LogLines::linesFarApartKeepTheirNumbers() {
    const QList<int> withError = {1, 2, 3, 17, 1000, 4097, 4098, 9000, 9999, 10000};
    QByteArray log;
    QStringList expected;
    for (int number = 1; number <= 10000; ++number) {
        QByteArray line = "plain line " + QByteArray::number(number);
        if (withError.contains(number))
            line += " Error";
        if (number == 5000)
            line = "BEGIN";
        if (number == 5003)
            line = "END";
        log += line + '\n';
        if (withError.contains(number))
            expected.append(QStringLiteral("%1 -1 1 %2").arg(number).arg(QString::fromUtf8(line)));
    }
    QStringList block;
    for (int number = 5000; number <= 5003; ++number) {
        const QByteArray line = log.split('\n')[number - 1];
        block.append(
            QStringLiteral("%1 -1 %2 %3").arg(number).arg(number == 5000 ? "100" : "0").arg(QString::fromUtf8(line)));
    }
    for (const qsizetype chunk : {log.size(), qsizetype(4093), qsizetype(65536)}) {
        RecordingSink first({"NCCL", "NCCL version", "BEGIN"});
        RecordingSink second({"Error"});
        LogLineScanner scanner({&first, &second});
        for (qsizetype at = 0; at < log.size(); at += chunk)
            scanner.feed(QByteArrayView(log).sliced(at, std::min(chunk, log.size() - at)));
        QCOMPARE(scanner.finish(), 10000);
        QCOMPARE(second.lines(), (expected + QStringList{QStringLiteral("end")}).join(QLatin1Char('|')));
        QCOMPARE(first.lines(), (block + QStringList{QStringLiteral("end")}).join(QLatin1Char('|')));
    }
}

void tst_LogLines::keywordPositions_data() {
    QTest::addColumn<QByteArray>("log");
    QTest::addColumn<QString>("first");
    QTest::addColumn<QString>("second");
    QTest::newRow("by position, then by the sink's index") << QByteArray("NCCL version NCCL\n") << "1:0@0 1@0 0@13"
                                                           << "1:0@0 2@0 2@13";
    QTest::newRow("overlapping occurrences") << QByteArray("aaaa\n") << "1:2@0 2@1 2@2"
                                             << "";
    QTest::newRow("a keyword listed twice") << QByteArray("x\n") << ""
                                            << "1:1@0 3@0";
    QTest::newRow("positions are in the text, after a launcher prefix")
        << QByteArray("[1,3]<stdout>:NCCL INFO\n[rank2]:x NCCL\n") << "1:0@0|2:0@2"
        << "1:2@0|2:1@0 3@0 2@2";
    QTest::newRow("after a launcher prefix, with an escape sequence")
        << QByteArray("(NCCL pid=12) x \x1b[1mNC\x1b[0mCL\n") << "1:0@2"
        << "1:1@0 3@0 2@2";
    QTest::newRow("crlf") << QByteArray("a NCCL\r\n") << "1:0@2"
                          << "1:2@2";
    QTest::newRow("a keyword split by an escape sequence, in the cleaned text")
        << QByteArray("x \x1b[1mNC\x1b[0mCL\n") << "1:0@2"
        << "1:1@0 3@0 2@2";
    QTest::newRow("a progress bar's overwritten text is not counted") << QByteArray("NCCL 1%\rNCCL 2%\n") << "1:0@0"
                                                                      << "1:2@0";
    QTest::newRow("not past the line cap") << QByteArray("0123456789012345678901234567890123456 NCCL\n") << ""
                                           << "";
    QTest::newRow("the cap cuts a keyword") << QByteArray("012345678901234567890123456789012345 NCCL x\n") << ""
                                            << "";
    QTest::newRow("a keyword that ends at the cap")
        << QByteArray("01234567890123456789012345678901234 NCCL x\n") << "1:0@36"
        << "1:2@36";
    QTest::newRow("an unterminated last line") << QByteArray("a\nb NCCL") << "2:0@2"
                                               << "2:2@2";
}

void tst_LogLines::keywordPositions() {
    QFETCH(QByteArray, log);
    QFETCH(QString, first);
    QFETCH(QString, second);
    const QStringList found = positions(log);
    QCOMPARE(found[0], first);
    QCOMPARE(found[1], second);
}

void tst_LogLines::keywordPositionsDoNotDependOnChunks() {
    const QByteArray log = "NCCL version NCCL\r\naaaa x\n[rank2]:x NCCL\nx \x1b[1mNC\x1b[0mCL\n"
                           "0123456789012345678901234567890123456 NCCL\nNCCL 1%\rNCCL 2%\nb NCCL";
    const QStringList whole = positions(log);
    QVERIFY(whole[0].count(QLatin1Char('|')) >= 5);
    for (qsizetype at = 0; at <= log.size(); ++at)
        QCOMPARE(positions(log, at), whole);
}

QTEST_GUILESS_MAIN(tst_LogLines)
#include "tst_loglines.moc"
