// SPDX-License-Identifier: MIT
// KeywordSearch (every occurrence of a set of keywords in one search) against a naive search at every position,
// on written cases, the recorded logs of tests/data and generated text that is full of near misses; each
// method this CPU has (portable, SSSE3, AVX2) must find exactly the same, and the same line ends. findBytes
// likewise, from every place in haystacks built around the 16-byte steps of a vector search.
#include "core/keywordsearch.h"

#include <QDirIterator>
#include <QFile>
#include <QRandomGenerator>
#include <QTest>

#include <limits>
#include <optional>
#include <vector>

using namespace rankscope;

namespace {

using Hits = std::vector<KeywordSearch::Hit>;

// Every position, every keyword: sorted by start, then keyword, as findAll promises.
Hits naiveHits(QByteArrayView text, const QList<QByteArray>& keywords) {
    Hits hits;
    for (qsizetype at = 0; at < text.size(); ++at) {
        for (qsizetype k = 0; k < keywords.size(); ++k) {
            if (!keywords[k].isEmpty() && text.sliced(at).startsWith(keywords[k]))
                hits.push_back({at, static_cast<int>(k)});
        }
    }
    return hits;
}

using Method = KeywordSearch::Method;

QString describe(const Hits& hits) {
    QStringList parts;
    for (const KeywordSearch::Hit& hit : hits)
        parts.append(QStringLiteral("%1@%2").arg(hit.keyword).arg(hit.start));
    return parts.join(QLatin1Char(' '));
}

QList<Method> availableMethods() {
    QList<Method> methods;
    for (const Method method : {Method::Portable, Method::Ssse3, Method::Avx2, Method::Avx512}) {
        if (KeywordSearch::isAvailable(method))
            methods.append(method);
    }
    return methods;
}

Hits hitsBy(Method method, QByteArrayView text, const QList<QByteArray>& keywords) {
    KeywordSearch search(keywords, method);
    if (search.method() != method)
        return {{-1, -1}};
    // findAll appends: what was there stays first, even where it would sort after what is found.
    const KeywordSearch::Hit before{std::numeric_limits<qsizetype>::max(), -7};
    Hits hits{before};
    search.findAll(text, hits);
    if (hits.empty() || !(hits.front() == before))
        return {{-1, -1}};
    hits.erase(hits.begin());
    return hits;
}

// Where each method finds the line ends, found with the keywords, and where they are.
void compareLineEnds(QByteArrayView text, const QList<QByteArray>& keywords) {
    std::vector<qsizetype> expected;
    for (qsizetype at = 0; at < text.size(); ++at) {
        if (text[at] == '\n')
            expected.push_back(at);
    }
    for (const Method method : availableMethods()) {
        Hits hits;
        std::vector<qsizetype> lineEnds{-3}; // appended to
        KeywordSearch(keywords, method).findAll(text, hits, &lineEnds);
        QCOMPARE(lineEnds.front(), -3);
        lineEnds.erase(lineEnds.begin());
        QCOMPARE(lineEnds, expected);
        QCOMPARE(describe(hits), describe(hitsBy(method, text, keywords)));
    }
}

// What the portable method finds, when every other method here finds the same; else which one differs.
QString foundHits(QByteArrayView text, const QList<QByteArray>& keywords) {
    const QString portable = describe(hitsBy(Method::Portable, text, keywords));
    for (const Method method : availableMethods()) {
        const QString other = describe(hitsBy(method, text, keywords));
        if (other != portable)
            return QStringLiteral("method %1 found %2, the portable one %3").arg(int(method)).arg(other, portable);
    }
    return portable;
}

// The keywords LogInspector's parsers look for, and the escape byte the scanner adds.
QList<QByteArray> parserKeywords() {
    return {"NCCL",
            "NCCL version",
            "atchdog caught",
            "last enqueued",
            "caused the desync are:",
            "NCCL error in:",
            "async exception: NCCL error",
            "DistBackendError:",
            "Failures:",
            "Root Cause",
            "Traceback (most recent call last)",
            "terminate called after throwing an instance of '",
            "what():",
            "NVIDIA-SMI",
            "utilization.gpu",
            "\x1b"};
}

// Text made of the keywords' own bytes, pieces of them and whole ones, so that most candidates almost match.
QByteArray textOfKeywordPieces(const QList<QByteArray>& keywords, quint32 seed, qsizetype size) {
    QRandomGenerator random(seed);
    QByteArray text;
    while (text.size() < size) {
        const QByteArray& keyword = keywords[random.bounded(static_cast<int>(keywords.size()))];
        switch (random.bounded(4)) {
        case 0:
            text += keyword;
            break;
        case 1:
            text += keyword.first(random.bounded(static_cast<int>(keyword.size())) + 1);
            break;
        case 2:
            text += keyword.at(random.bounded(static_cast<int>(keyword.size())));
            break;
        default:
            text += random.bounded(3) == 0 ? '\n' : ' ';
        }
    }
    return text;
}

// The needles the tests of findBytes search for: parsers' ones, their rarest byte in the middle or last, and one byte.
constexpr Needle kNeedles[] = {Needle(" via "), Needle("comm 0x"),       Needle(" coll channels"),
                               Needle("rank"),  Needle("Init COMPLETE"), Needle("x")};

// findBytes by its definition: the first start from `from` on where the needle is.
qsizetype naiveFind(QByteArrayView text, QByteArrayView needle, qsizetype from) {
    if (from < 0 || from > text.size())
        return -1;
    for (qsizetype at = from; at + needle.size() <= text.size(); ++at) {
        if (text.sliced(at, needle.size()) == needle)
            return at;
    }
    return -1;
}

// `length` dots with `needle` at `at`.
QByteArray dotsWith(qsizetype length, const QByteArray& needle, qsizetype at) {
    QByteArray text(length, '.');
    return text.replace(at, needle.size(), needle);
}

// The needle with one byte changed that is neither its first, its last nor its rarest: a search that compares only
// those stops there and must go on.
QByteArray spoiled(const QByteArray& needle, qsizetype rareOffset) {
    QByteArray copy = needle;
    for (qsizetype i = 1; i + 1 < copy.size(); ++i) {
        if (i != rareOffset) {
            copy[i] = '#';
            break;
        }
    }
    return copy;
}

} // namespace

class tst_KeywordSearch final : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void written_data();
    void written();
    void recordedLogs();
    void generatedText_data();
    void generatedText();
    void sixtyFourKeywords();
    void maskOf();
    void decimalValueOfDigitsOnly();
    void findBytesOnLongAndShortText();
    void needleFindsWhatTheBytesFind();
    void findBytesFromEveryPlace_data();
    void findBytesFromEveryPlace();
    void fingerprintsMoveOffCommonBytes();
    void fingerprintsMoveAFewTimesOnly();
    void tunedSearchesFindWhatANaiveSearchFinds();
    void aFingerprintMovesToThePlaceTheTextHoldsLeast();
    void aSearchBuiltAgainStartsAsBuilt();
    void aSearchOutlivesTheOneItCopied();
    void hashOfBytesTakesEveryByte();
    void hashedBytesKeysFindTheirEntries();
};

void tst_KeywordSearch::initTestCase() {
    QStringList names;
    for (const Method method : availableMethods())
        names.append(method == Method::Avx512  ? "AVX-512"
                     : method == Method::Avx2  ? "AVX2"
                     : method == Method::Ssse3 ? "SSSE3"
                                               : "portable");
    qInfo("methods on this CPU: %s", qPrintable(names.join(QStringLiteral(", "))));
}

void tst_KeywordSearch::written_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QList<QByteArray>>("keywords");
    QTest::addColumn<QString>("expected");
    QTest::newRow("none") << QByteArray("hello world") << QList<QByteArray>{"NCCL"} << "";
    QTest::newRow("empty text") << QByteArray() << QList<QByteArray>{"NCCL"} << "";
    QTest::newRow("at both ends") << QByteArray("NCCL x NCCL") << QList<QByteArray>{"NCCL"} << "0@0 0@7";
    QTest::newRow("overlapping") << QByteArray("aaaa") << QList<QByteArray>{"aa"} << "0@0 0@1 0@2";
    QTest::newRow("one holds another") << QByteArray("a NCCL version 2.18 NCCL INFO")
                                       << QList<QByteArray>{"NCCL version", "NCCL"} << "0@2 1@2 1@20";
    QTest::newRow("held in the middle") << QByteArray("x async exception: NCCL error y")
                                        << QList<QByteArray>{"async exception: NCCL error", "NCCL"} << "0@2 1@19";
    QTest::newRow("the holder cut by the end")
        << QByteArray("NCCL versio") << QList<QByteArray>{"NCCL", "NCCL version"} << "0@0";
    QTest::newRow("the holder cut at the start")
        << QByteArray("CCL error in:") << QList<QByteArray>{"NCCL error in:", "CCL"} << "1@0";
    QTest::newRow("equal keywords") << QByteArray("ab ab") << QList<QByteArray>{"ab", "ab"} << "0@0 1@0 0@3 1@3";
    QTest::newRow("one byte") << QByteArray("a\x1b[0mb\x1b") << QList<QByteArray>{"\x1b", "b"} << "0@1 1@5 0@6";
    QTest::newRow("empty keyword is never found") << QByteArray("abc") << QList<QByteArray>{"", "b"} << "1@1";
    QTest::newRow("same start, keyword order")
        << QByteArray("what():") << QList<QByteArray>{"what():", "what"} << "0@0 1@0";
}

void tst_KeywordSearch::written() {
    QFETCH(QByteArray, text);
    QFETCH(QList<QByteArray>, keywords);
    QFETCH(QString, expected);
    QCOMPARE(foundHits(text, keywords), expected);
    QCOMPARE(describe(naiveHits(text, keywords)), expected);
}

void tst_KeywordSearch::recordedLogs() {
    const QList<QByteArray> keywords = parserKeywords();
    QByteArray all;
    QDirIterator files(QStringLiteral(RANKSCOPE_TEST_DATA_DIR), QDir::Files, QDirIterator::Subdirectories);
    int count = 0;
    while (files.hasNext()) {
        QFile file(files.next());
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray bytes = file.readAll();
        QCOMPARE(foundHits(bytes, keywords), describe(naiveHits(bytes, keywords)));
        all += bytes;
        ++count;
    }
    QVERIFY(count > 20);
    const Hits expected = naiveHits(all, keywords); // one long text
    QVERIFY(expected.size() > 200);
    QCOMPARE(foundHits(all, keywords), describe(expected));
    compareLineEnds(all, keywords);
}

void tst_KeywordSearch::generatedText_data() {
    QTest::addColumn<quint32>("seed");
    QTest::addColumn<int>("size");
    for (quint32 seed = 1; seed <= 20; ++seed)
        QTest::addRow("seed %u", seed) << seed << (seed % 2 ? 100 : 5000);
}

void tst_KeywordSearch::generatedText() {
    QFETCH(quint32, seed);
    QFETCH(int, size);
    QList<QByteArray> keywords = parserKeywords();
    keywords += QList<QByteArray>{"a", "NC", "CCL", "e"}; // short ones, and ones held by many others
    const QByteArray text = textOfKeywordPieces(keywords, seed, size);
    const Hits expected = naiveHits(text, keywords);
    QVERIFY(!expected.empty());
    QCOMPARE(foundHits(text, keywords), describe(expected));
    // Every start and end of the text, so that a search cannot read or match past either.
    for (qsizetype cut = 0; cut < 40; ++cut) {
        const QByteArrayView head = QByteArrayView(text).first(text.size() - cut);
        const QByteArrayView tail = QByteArrayView(text).sliced(cut);
        QCOMPARE(foundHits(head, keywords), describe(naiveHits(head, keywords)));
        QCOMPARE(foundHits(tail, keywords), describe(naiveHits(tail, keywords)));
        compareLineEnds(head, keywords);
        if (QTest::currentTestFailed())
            return;
    }
}

void tst_KeywordSearch::sixtyFourKeywords() {
    // Many fingerprints share each of the filter's 8 buckets.
    QRandomGenerator random(64);
    QList<QByteArray> keywords;
    while (keywords.size() < KeywordSearch::kMaxKeywords) {
        QByteArray keyword;
        const int size = random.bounded(1, 7);
        for (int i = 0; i < size; ++i)
            keyword += "abcdeNCL:( \n"[random.bounded(12)];
        keywords.append(keyword);
    }
    const QByteArray text = textOfKeywordPieces(keywords, 7, 3000);
    QCOMPARE(foundHits(text, keywords), describe(naiveHits(text, keywords)));
}

// A number that stands alone: 1 to 18 decimal digits and nothing else, or -1.
void tst_KeywordSearch::decimalValueOfDigitsOnly() {
    QCOMPARE(decimalValue("0"), qint64(0));
    QCOMPARE(decimalValue("007"), qint64(7));
    QCOMPARE(decimalValue("123456789012345678"), qint64(123456789012345678LL));
    QCOMPARE(decimalValue("1234567890123456789"), qint64(-1)); // more than 18 digits
    QCOMPARE(decimalValue(""), qint64(-1));
    QCOMPARE(decimalValue("12a"), qint64(-1));
    QCOMPARE(decimalValue(" 12"), qint64(-1));
    QCOMPARE(decimalValue("-1"), qint64(-1));
    QCOMPARE(decimalValue("9/"), qint64(-1)); // the bytes beside '0' and '9'
    QCOMPARE(decimalValue(":9"), qint64(-1));
}

void tst_KeywordSearch::maskOf() {
    for (const Method method : availableMethods()) {
        KeywordSearch search({"NCCL", "NCCL version", "what():", "x"}, method);
        QCOMPARE(search.maskOf("nothing here"), quint64(0));
        QCOMPARE(search.maskOf("NCCL version 2.18.1"), quint64(0b0011));
        QCOMPARE(search.maskOf("  what(): NCCL"), quint64(0b0101));
        QCOMPARE(search.maskOf("x"), quint64(0b1000));
    }
}

void tst_KeywordSearch::findBytesOnLongAndShortText() {
    const QByteArray longText = QByteArray(2000, 'a') + "needle" + QByteArray(10, 'b') + "needle";
    QCOMPARE(findBytes(longText, "needle"), 2000);
    QCOMPARE(findBytes(longText, "needle", 2001), 2016);
    QCOMPARE(findBytes(longText, "needle", 2017), -1);
    QCOMPARE(findBytes("short needle", "needle"), 6);
    QCOMPARE(findBytes("short needle", "needles"), -1);
    QCOMPARE(findBytes("abc", "", 2), 2);
    QCOMPARE(findBytes("abc", "a", 4), -1);
}

void tst_KeywordSearch::needleFindsWhatTheBytesFind() {
    static constexpr Needle kSpaced{" coll channels"};
    static constexpr Needle kWord{"rank"};
    static constexpr Needle kOne{"x"};
    static_assert(kSpaced.rareOffset() != 0 && kSpaced.size() == 14);
    static_assert(Needle("NVIDIA").rareOffset() == 1); // 'V' is rarer than N, I, D and A in the logs
    QFile file(QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/logs/nccl-public-samples.log"));
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray text = file.readAll() + " coll channels rank x";
    for (const Needle& needle : {kSpaced, kWord, kOne}) {
        int found = 0;
        for (qsizetype from = -1; from <= text.size() + 1; ++from) {
            const qsizetype at = findBytes(text, needle, from);
            QCOMPARE(at, findBytes(text, needle.bytes(), from));
            found += at >= 0 ? 1 : 0;
            // On a line, where the search does not skip by its rarest byte.
            const QByteArrayView line =
                QByteArrayView(text)
                    .sliced(std::max<qsizetype>(0, from - 100))
                    .first(std::min<qsizetype>(200, text.size() - std::max<qsizetype>(0, from - 100)));
            QCOMPARE(findBytes(line, needle), findBytes(line, needle.bytes()));
        }
        QVERIFY(found > 0);
    }
}

// Haystacks for findBytes around multiples of 16 bytes, where a vector search steps: the needle at every start 0 to
// 40 of lengths about one, two and three steps (so that its bytes fall either side of a step's end), last in
// haystacks from too short for one step to longer than a line; near misses, which have a needle's ends and rarest
// byte but not the rest, alone and before the needle; the needle cut short at the end.
void tst_KeywordSearch::findBytesFromEveryPlace_data() {
    QTest::addColumn<QByteArray>("needle");
    QTest::addColumn<QByteArray>("haystack");
    QList<QByteArray> needles;
    for (const Needle& needle : kNeedles)
        needles.append(needle.bytes().toByteArray());
    needles += {"ab", "0123456789abcdefghijklmnopqrst"};
    for (const QByteArray& needle : std::as_const(needles)) {
        const qsizetype size = needle.size();
        const QByteArray near = spoiled(needle, detail::rarestByteOffset(needle.constData(), size));
        const auto row = [&](const QString& what) -> QTestData& {
            return QTest::newRow(qPrintable(QString::fromLatin1(needle) + QStringLiteral(": ") + what)) << needle;
        };
        for (const qsizetype length : {15, 16, 17, 31, 32, 33, 48}) {
            for (qsizetype at = 0; at <= 40 && at + size <= length; ++at)
                row(QStringLiteral("at %1 of %2").arg(at).arg(length)) << dotsWith(length, needle, at);
        }
        for (const qsizetype length : QList<qsizetype>{size, size + 14, size + 15, size + 16, 47, 100, 300, 512, 513})
            row(QStringLiteral("last of %1").arg(length)) << dotsWith(length, needle, length - size);
        if (near == needle)
            continue;
        for (qsizetype at = 0; at <= 20; ++at)
            row(QStringLiteral("near miss at %1 of 40").arg(at)) << dotsWith(40, near, at);
        for (qsizetype gap = 1; gap <= 17; ++gap) {
            row(QStringLiteral("near miss at 10, needle at %1").arg(10 + gap))
                << dotsWith(60, near, 10).replace(10 + gap, size, needle);
        }
        row(QStringLiteral("near misses only")) << near.repeated(64 / size + 1).first(64);
        row(QStringLiteral("cut short at the end")) << dotsWith(40, needle.chopped(1), 40 - size + 1);
    }
}

// What findBytes finds, by bytes and, for a Needle, by the Needle, is what a search at every start finds, from
// every place (and from before and after the text).
void tst_KeywordSearch::findBytesFromEveryPlace() {
    QFETCH(QByteArray, needle);
    QFETCH(QByteArray, haystack);
    // A copy of the exact size: under a sanitizer a read past its end fails.
    const std::vector<char> exact(haystack.cbegin(), haystack.cend());
    const QByteArrayView text(exact.data(), static_cast<qsizetype>(exact.size()));
    const Needle* known = nullptr;
    for (const Needle& candidate : kNeedles)
        known = candidate.bytes() == needle ? &candidate : known;
    QList<qsizetype> expected;
    QList<qsizetype> byBytes;
    QList<qsizetype> byNeedle;
    for (qsizetype from = -2; from <= text.size() + 2; ++from) {
        expected.append(naiveFind(text, needle, from));
        byBytes.append(findBytes(text, needle, from));
        byNeedle.append(known ? findBytes(text, *known, from) : expected.back());
    }
    QCOMPARE(byBytes, expected);
    QCOMPARE(byNeedle, expected);
}


// "ugh", the rarest bytes of "atchdog caught" by the byte table, is in every "throughput" of a progress log: after
// one big text the vector methods look for the keyword elsewhere, and find the same as before and as a naive search,
// in that text and in the next ones. "NCCL", found wherever its fingerprint is, keeps it.
void tst_KeywordSearch::fingerprintsMoveOffCommonBytes() {
    const QList<QByteArray> keywords = {"atchdog caught", "NCCL", "caused the desync are:"};
    QByteArray progress;
    for (int step = 0; progress.size() < 2 * KeywordSearch::kTuningText; ++step)
        progress += "[rank3]: step " + QByteArray::number(step) + " loss 0.25 throughput 1234.5 samples/s NCCL\n";
    progress.insert(progress.size() / 2, "Watchdog caught collective operation timeout NCCL\n");
    QByteArray later = "atchdog caughtatchdog caught NCCLatchdog caught throughput NCCL ";
    later = later.repeated(3) + "caused the desync are:atchdog caught";
    for (const Method method : availableMethods()) {
        if (method == Method::Portable)
            continue;
        KeywordSearch search(keywords, method);
        QCOMPARE(search.fingerprintOffset(0), 10); // "ugh"
        for (const QByteArray& text : {progress, later, progress}) {
            Hits hits;
            search.findAll(text, hits);
            QCOMPARE(describe(hits), describe(naiveHits(text, keywords)));
        }
        const QByteArray print = keywords[0].sliced(search.fingerprintOffset(0), 3);
        QVERIFY2(progress.count(print) * 100 < progress.count("ugh"), print.constData());
        QCOMPARE(search.fingerprintOffset(1), KeywordSearch(keywords, method).fingerprintOffset(1)); // it stays
    }
}

// A text full of a keyword's fingerprint moves it, at most kMaxTunings times: then the tables stay as they are.
void tst_KeywordSearch::fingerprintsMoveAFewTimesOnly() {
    const QByteArray keyword = "terminate called after throwing";
    for (const Method method : availableMethods()) {
        if (method == Method::Portable)
            continue;
        KeywordSearch search({keyword}, method);
        QList<qsizetype> offsets = {search.fingerprintOffset(0)};
        for (int text = 0; text < KeywordSearch::kMaxTunings + 3; ++text) {
            const QByteArray print = keyword.sliced(offsets.back(), 3);
            const QByteArray common = (print + " ").repeated(KeywordSearch::kTuningText / 4 + 1);
            Hits hits;
            search.findAll(common, hits);
            QCOMPARE(describe(hits), describe(naiveHits(common, {keyword})));
            offsets.append(search.fingerprintOffset(0));
        }
        qsizetype moves = 0;
        for (qsizetype i = 1; i < offsets.size(); ++i)
            moves += offsets[i] != offsets[i - 1];
        QCOMPARE(moves, qsizetype(KeywordSearch::kMaxTunings));
        QCOMPARE(offsets.back(), offsets[KeywordSearch::kMaxTunings]);
    }
}

// One search object over texts of keyword pieces (prefixes and single bytes of the parsers' keywords: places that
// fail), one after another: its fingerprints move, and each text, searched with the tables of the texts before it,
// gives what a naive search gives.
void tst_KeywordSearch::tunedSearchesFindWhatANaiveSearchFinds() {
    QList<QByteArray> keywords = parserKeywords();
    keywords += QList<QByteArray>{"a", "NC", "CCL", "e"};
    for (const Method method : availableMethods()) {
        if (method == Method::Portable)
            continue;
        KeywordSearch search(keywords, method);
        QList<qsizetype> first;
        for (int k = 0; k < keywords.size(); ++k)
            first.append(search.fingerprintOffset(k));
        for (quint32 seed = 1; seed <= 6; ++seed) {
            const QByteArray text = textOfKeywordPieces(keywords, seed, KeywordSearch::kTuningText + 9000);
            Hits hits;
            search.findAll(text, hits);
            QCOMPARE(describe(hits), describe(naiveHits(text, keywords)));
        }
        bool moved = false;
        for (int k = 0; k < keywords.size(); ++k)
            moved = moved || search.fingerprintOffset(k) != first[k];
        QVERIFY2(moved, "the texts moved no fingerprint: the tuned tables were not searched");
    }
}

// A text full of a keyword's fingerprint, and of each of its other places but one: the fingerprint moves to that one,
// the only place of the keyword the text does not hold, wherever it is in the keyword.
void tst_KeywordSearch::aFingerprintMovesToThePlaceTheTextHoldsLeast() {
    const QByteArray keyword = "terminate called after throwing";
    const auto window = [&keyword](qsizetype offset) { return keyword.sliced(offset, 3); };
    for (const Method method : availableMethods()) {
        if (method == Method::Portable)
            continue;
        const qsizetype initial = KeywordSearch({keyword}, method).fingerprintOffset(0);
        int tried = 0;
        for (qsizetype target = 0; target + 3 <= keyword.size(); ++target) {
            if (target == initial || keyword.count(window(target)) != 1)
                continue;
            // Every place but the target, each on a line of its own ('\n' is in no place), the fingerprint most.
            QByteArray block = (window(initial) + '\n').repeated(40);
            for (qsizetype offset = 0; offset + 3 <= keyword.size(); ++offset) {
                if (offset != target)
                    block += (window(offset) + '\n').repeated(1 + offset % 3);
            }
            const QByteArray text = block.repeated(KeywordSearch::kTuningText / block.size() + 2);
            QVERIFY(!text.contains(window(target)));
            KeywordSearch search({keyword}, method);
            Hits hits;
            search.findAll(text, hits);
            QVERIFY(hits.empty());
            QCOMPARE(search.fingerprintOffset(0), target);
            ++tried;
        }
        QVERIFY(tried > 10);
    }
}

// A search for the keywords and method of one built before takes that one's tables as they were built, not as its
// texts tuned them since; and each tunes its own.
void tst_KeywordSearch::aSearchBuiltAgainStartsAsBuilt() {
    const QByteArray keyword = "terminate called after throwing";
    for (const Method method : availableMethods()) {
        if (method == Method::Portable)
            continue;
        KeywordSearch first({keyword}, method);
        const qsizetype built = first.fingerprintOffset(0);
        const QByteArray common = (keyword.sliced(built, 3) + " ").repeated(KeywordSearch::kTuningText / 4 + 1);
        Hits hits;
        first.findAll(common, hits);
        const qsizetype tuned = first.fingerprintOffset(0);
        QVERIFY(tuned != built);

        KeywordSearch second({keyword}, method);
        QCOMPARE(second.method(), method);
        QCOMPARE(second.fingerprintOffset(0), built);
        second.findAll(common, hits);
        QCOMPARE(second.fingerprintOffset(0), tuned);
        // The first, moved again by another text, leaves the second where its own text moved it.
        const QByteArray other = (keyword.sliced(tuned, 3) + " ").repeated(KeywordSearch::kTuningText / 4 + 1);
        first.findAll(other, hits);
        QVERIFY(first.fingerprintOffset(0) != tuned);
        QCOMPARE(second.fingerprintOffset(0), tuned);
        // The same keywords by another method are searched by that one.
        QCOMPARE(KeywordSearch({keyword}, Method::Portable).method(), Method::Portable);
        QCOMPARE(KeywordSearch({keyword}, Method::Portable).fingerprintOffset(0), qsizetype(-1));
    }
}

// A search built from the tables of an earlier one still finds its keywords once that one is gone and no longer kept
// (more lists of keywords were searched since than are kept), and its bytes are handed out again and overwritten.
// Each list's keywords are bytes of their own, so that the kept search's are freed with it: a copy whose tables
// pointed into them would then compare keywords with whatever was written there since.
void tst_KeywordSearch::aSearchOutlivesTheOneItCopied() {
    const QList<QByteArray> keywords = parserKeywords();
    const auto ownBytes = [&keywords] {
        QList<QByteArray> copy;
        for (const QByteArray& keyword : keywords)
            copy.append(QByteArray(keyword.constData(), keyword.size()));
        return copy;
    };
    const QByteArray text = textOfKeywordPieces(keywords, 3, 20000) + keywords.join(' ');
    for (const Method method : availableMethods()) {
        std::optional<KeywordSearch> first(std::in_place, ownBytes(), method);
        KeywordSearch second(ownBytes(), method);
        first.reset();
        for (int i = 0; i < 40; ++i) {
            const KeywordSearch unrelated({"other " + QByteArray::number(i), "keywords"}, method);
            Q_UNUSED(unrelated);
        }
        std::vector<QByteArray> reused;
        for (int i = 0; i < 64; ++i) {
            for (const QByteArray& keyword : keywords)
                reused.emplace_back(keyword.size(), '\x01');
        }
        Hits hits;
        second.findAll(text, hits);
        QCOMPARE(describe(hits), describe(naiveHits(text, keywords)));
    }
}

// The parsers' tables hash host names and ids with hashBytes: every byte of a key of any size up to a few words
// must count, and the seed too, or names that differ in one byte would all land in one bucket.
void tst_KeywordSearch::hashOfBytesTakesEveryByte() {
    QRandomGenerator random(7);
    for (int size = 0; size <= 40; ++size) {
        QByteArray key(size, Qt::Uninitialized);
        for (char& c : key)
            c = static_cast<char>(random.bounded(256));
        const std::string_view view(key.constData(), static_cast<size_t>(size));
        const quint64 hash = hashBytes(view, 12345);
        // The same bytes elsewhere in memory, at another alignment, hash the same.
        const QByteArray shifted = "x" + key;
        QCOMPARE(hashBytes(std::string_view(shifted.constData() + 1, static_cast<size_t>(size)), 12345), hash);
        QVERIFY2(hashBytes(view, 54321) != hash, qPrintable(QStringLiteral("size %1: the seed is ignored").arg(size)));
        for (int at = 0; at < size; ++at) {
            for (const int flip : {0x01, 0x80}) {
                QByteArray changed = key;
                changed[at] = static_cast<char>(changed[at] ^ flip);
                QVERIFY2(hashBytes(std::string_view(changed.constData(), static_cast<size_t>(size)), 12345) != hash,
                         qPrintable(QStringLiteral("size %1: byte %2 does not count").arg(size).arg(at)));
            }
        }
        // One byte more (a zero byte, as far as the words go) is another key.
        const QByteArray longer = key + '\0';
        QVERIFY(hashBytes(std::string_view(longer.constData(), static_cast<size_t>(size + 1)), 12345) != hash);
    }
}

// HashedBytes as a QHash key: keys looked up through views of other copies of their bytes (viewAsKey) find their
// entries; bytes that are not a key find none.
void tst_KeywordSearch::hashedBytesKeysFindTheirEntries() {
    QRandomGenerator random(11);
    QHash<HashedBytes, int> table;
    QList<QByteArray> keys;
    for (int i = 0; i < 3000; ++i) {
        QByteArray key = "node" + QByteArray::number(i);
        if (i % 3 == 0) // a tail of one repeated byte, any byte, NUL included
            key += QByteArray(random.bounded(30), static_cast<char>(random.bounded(256)));
        table.insert({key}, i);
        keys.append(key);
    }
    QCOMPARE(table.size(), keys.size());
    for (int i = 0; i < keys.size(); ++i) {
        const QByteArray copy(keys[i].constData(), keys[i].size()); // the same bytes in other memory
        QCOMPARE(table.value(viewAsKey(copy), -1), i);
    }
    QCOMPARE(table.value(viewAsKey("node-1"), -1), -1);
    QCOMPARE(table.value(viewAsKey(""), -1), -1);
}

QTEST_GUILESS_MAIN(tst_KeywordSearch)
#include "tst_keywordsearch.moc"
