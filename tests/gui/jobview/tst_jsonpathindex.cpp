// SPDX-License-Identifier: MIT
// Where each JSON path of a job's text starts: what a click on a problem without a form field moves the cursor
// to. Offsets are written as the place of a marker in the text, so that each row reads as the text it tests.
#include "jsonpathindex.h"

#include <QtTest>

using rankscope::gui::indexJsonPaths;
using rankscope::gui::jsonPathOffset;

namespace {

// The offset of the n-th (from 0) occurrence of marker in text.
int offsetOf(const QString& text, const QString& marker, int n = 0) {
    int at = -1;
    for (int i = 0; i <= n; ++i)
        at = static_cast<int>(text.indexOf(marker, at + 1));
    return at;
}

// A key nested `levels` objects deep: {"k": {"k": … 1 …}}.
QString nested(int levels) {
    return QString(QStringLiteral("{\"k\": ")).repeated(levels) + QStringLiteral("1") +
           QString(levels, QLatin1Char('}'));
}

QString keyPath(int levels) {
    QStringList keys;
    for (int i = 0; i < levels; ++i)
        keys << QStringLiteral("k");
    return keys.join(QLatin1Char('.'));
}

} // namespace

class tst_JsonPathIndex final : public QObject {
    Q_OBJECT

private slots:
    // Every path of a small document, and nothing else: members at their key's quote, elements at their value.
    void everyPathOfADocument() {
        const QString text = QStringLiteral("{\"a\": [10, {\"b\": 2}], \"c\": \"s\", \"d\": {\"e\": null}}");
        const QHash<QString, int> expected{
            {QStringLiteral("a"), offsetOf(text, QStringLiteral("\"a\""))},
            {QStringLiteral("a[0]"), offsetOf(text, QStringLiteral("10"))},
            {QStringLiteral("a[1]"), offsetOf(text, QStringLiteral("{\"b\""))},
            {QStringLiteral("a[1].b"), offsetOf(text, QStringLiteral("\"b\""))},
            {QStringLiteral("c"), offsetOf(text, QStringLiteral("\"c\""))},
            {QStringLiteral("d"), offsetOf(text, QStringLiteral("\"d\""))},
            {QStringLiteral("d.e"), offsetOf(text, QStringLiteral("\"e\""))},
        };
        QCOMPARE(indexJsonPaths(text), expected);
    }

    void offsetOfAPath_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("path");
        QTest::addColumn<QString>("marker"); // where the path must lead: the first occurrence of this
        QTest::addColumn<int>("occurrence");

        const QString job =
            QStringLiteral("{\n  \"name\": \"x\",\n  \"nodes\": [\n    {\"host\": \"a\", \"port\": 22},\n"
                           "    {\"host\": \"b\", \"port\": 0}\n  ],\n  \"hostfile\": \"hosts\",\n"
                           "  \"trainer\": {\"epochs\": 2}\n}\n");
        QTest::newRow("top-level member") << job << "name"
                                          << "\"name\"" << 0;
        QTest::newRow("member of an element") << job << "nodes[1].port"
                                              << "\"port\"" << 1;
        QTest::newRow("element") << job << "nodes[1]"
                                 << "{\"host\": \"b\"" << 0;
        QTest::newRow("first element") << job << "nodes[0]"
                                       << "{\"host\": \"a\"" << 0;
        QTest::newRow("nested member") << job << "trainer.epochs"
                                       << "\"epochs\"" << 0;
        QTest::newRow("absent member: its object") << job << "nodes[1].gpus"
                                                   << "{\"host\": \"b\"" << 0;
        QTest::newRow("absent element: its array") << job << "nodes[5]"
                                                   << "\"nodes\"" << 0;
        QTest::newRow("absent member of a member") << job << "trainer.lr"
                                                   << "\"trainer\"" << 0;
        QTest::newRow("absent two deep") << job << "trainer.optimizer.beta"
                                         << "\"trainer\"" << 0;
        QTest::newRow("absent element of a member") << job << "trainer.epochs[3]"
                                                    << "\"epochs\"" << 0;
        QTest::newRow("hostfile line") << job << "hostfile:7"
                                       << "\"hostfile\"" << 0;

        // What a reader must step over to find the key after it.
        QTest::newRow("escaped quote in a key") << "{\"a\\\"b\": 1, \"c\": 2}"
                                                << "c"
                                                << "\"c\"" << 0;
        QTest::newRow("brackets and a quote in a string") << "{\"a\": \"x\\\"]},\", \"c\": 2}"
                                                          << "c"
                                                          << "\"c\"" << 0;
        QTest::newRow("array closed right after a number") << "{\"a\": [1,2],\"c\": 3}"
                                                           << "c"
                                                           << "\"c\"" << 0;
        QTest::newRow("object closed right after a number") << "{\"a\": {\"x\": 1},\"c\": 3}"
                                                            << "c"
                                                            << "\"c\"" << 0;
        QTest::newRow("object in an object") << "{\"a\": {\"x\": 1}, \"c\": 3}"
                                             << "c"
                                             << "\"c\"" << 0;
        QTest::newRow("array in an object") << "{\"a\": [1, [2]], \"c\": 3}"
                                            << "c"
                                            << "\"c\"" << 0;
        QTest::newRow("element after an array") << "{\"a\": [[1], 2]}"
                                                << "a[1]"
                                                << "2" << 0;
        QTest::newRow("nested element") << "{\"a\": [[1, 7]]}"
                                        << "a[0][1]"
                                        << "7" << 0;
        QTest::newRow("white space everywhere") << " \n{ \"a\" :\t[ 1 , 2 ] ,\n \"c\" : 3 }"
                                                << "a[1]"
                                                << "2" << 0;

        // A text being typed is indexed as far as it can be read.
        QTest::newRow("cut in a value") << "{\"name\": \"x\", \"nodes\": [{\"port\": "
                                        << "nodes[0].port"
                                        << "\"port\"" << 0;
        QTest::newRow("cut in a key") << "{\"name\": \"x\", \"nod"
                                      << "name"
                                      << "\"name\"" << 0;
    }

    void offsetOfAPath() {
        QFETCH(QString, text);
        QFETCH(QString, path);
        QFETCH(QString, marker);
        QFETCH(int, occurrence);
        const int expected = offsetOf(text, marker, occurrence);
        QVERIFY2(expected >= 0, qPrintable(marker));
        QCOMPARE(jsonPathOffset(text, path), expected);
    }

    void nothingFoundIsTheStart_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("path");
        QTest::newRow("absent top-level member") << "{\"a\": 1}"
                                                 << "b";
        QTest::newRow("empty path") << "{\"a\": 1}"
                                    << "";
        QTest::newRow("empty text") << ""
                                    << "a";
        QTest::newRow("not JSON") << "oops"
                                  << "a.b[1]";
        QTest::newRow("an array, not an object") << "[1, 2]"
                                                 << "a";
    }

    void nothingFoundIsTheStart() {
        QFETCH(QString, text);
        QFETCH(QString, path);
        QCOMPARE(jsonPathOffset(text, path), 0);
    }

    // A deep text is read to a bounded depth (the reader is recursive): what is shallow is still found.
    void deepNestingIsBounded() {
        const QString text = nested(200);
        const QHash<QString, int> paths = indexJsonPaths(text);
        QVERIFY(paths.contains(keyPath(10)));
        QCOMPARE(paths.value(keyPath(10)), offsetOf(text, QStringLiteral("\"k\""), 9));
        QVERIFY(!paths.contains(keyPath(100)));
        QVERIFY(paths.size() < 100);
        QCOMPARE(jsonPathOffset(text, keyPath(150)), paths.value(keyPath(paths.size())));
    }
};

QTEST_GUILESS_MAIN(tst_JsonPathIndex)
#include "tst_jsonpathindex.moc"
