// SPDX-License-Identifier: MIT
// The form's edits written into a job file as a user wrote it: only what changed changes.
#include "jsontextedit.h"

#include <QJsonDocument>
#include <QtTest>

using rankscope::gui::editJsonText;

namespace {

QJsonObject object(const QString& json) {
    QJsonParseError error;
    const QJsonDocument document = QJsonDocument::fromJson(json.toUtf8(), &error);
    if (!document.isObject())
        qFatal("not a JSON object (%s): %s", qPrintable(error.errorString()), qPrintable(json));
    return document.object();
}

} // namespace

class tst_JsonTextEdit final : public QObject {
    Q_OBJECT

private slots:
    void onlyWhatChangesIsWritten_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("target"); // the object the text must come to hold
        QTest::addColumn<QString>("expected");

        const QString abc = QStringLiteral("{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3\n}\n");
        QTest::newRow("nothing changes") << "{ \"a\" :1 ,\"b\":[ 1,2 ] }"
                                         << "{\"a\": 1, \"b\": [1, 2]}"
                                         << "{ \"a\" :1 ,\"b\":[ 1,2 ] }";
        QTest::newRow("a value, comments and blank lines kept")
            << "{\n  \"//\": \"c\",\n  \"a\": 1,\n\n  \"b\": \"x\"\n}\n"
            << "{\"//\": \"c\", \"a\": 2, \"b\": \"x\"}"
            << "{\n  \"//\": \"c\",\n  \"a\": 2,\n\n  \"b\": \"x\"\n}\n";
        QTest::newRow("order kept") << "{\"z\": 1, \"a\": 1}"
                                    << "{\"z\": 2, \"a\": 1}"
                                    << "{\"z\": 2, \"a\": 1}";
        QTest::newRow("a nested value") << "{\"t\": {\"e\": 1, \"f\": 2}}"
                                        << "{\"t\": {\"e\": 3, \"f\": 2}}"
                                        << "{\"t\": {\"e\": 3, \"f\": 2}}";
        QTest::newRow("a value of another type") << "{\"a\": {\"x\": 1}}"
                                                 << "{\"a\": \"s\"}"
                                                 << "{\"a\": \"s\"}";
        QTest::newRow("members of array elements") << "{\"n\": [{\"p\": 1}, {\"p\": 2, \"h\": \"b\"}]}"
                                                   << "{\"n\": [{\"p\": 3}, {\"p\": 3, \"h\": \"b\"}]}"
                                                   << "{\"n\": [{\"p\": 3}, {\"p\": 3, \"h\": \"b\"}]}";
        QTest::newRow("an array of another length") << "{\"x\": [1, 2], \"y\": 0}"
                                                    << "{\"x\": [3], \"y\": 0}"
                                                    << "{\"x\": [3], \"y\": 0}";
        QTest::newRow("elements that stay are left as written") << "{\"x\": [1.0, 2], \"y\": 0}"
                                                                << "{\"x\": [1, 3], \"y\": 0}"
                                                                << "{\"x\": [1.0, 3], \"y\": 0}";
        const QString nodes = QStringLiteral("{\"n\": [\n  {\"h\": \"a\"},\n  {\"h\": \"b\"},\n  {\"h\": \"c\"}\n]}");
        QTest::newRow("an element removed") << nodes << "{\"n\": [{\"h\": \"a\"}, {\"h\": \"c\"}]}"
                                            << "{\"n\": [\n  {\"h\": \"a\"},\n  {\"h\": \"c\"}\n]}";
        QTest::newRow("the first element removed") << nodes << "{\"n\": [{\"h\": \"b\"}, {\"h\": \"c\"}]}"
                                                   << "{\"n\": [\n  {\"h\": \"b\"},\n  {\"h\": \"c\"}\n]}";
        QTest::newRow("the last element removed") << nodes << "{\"n\": [{\"h\": \"a\"}, {\"h\": \"b\"}]}"
                                                  << "{\"n\": [\n  {\"h\": \"a\"},\n  {\"h\": \"b\"}\n]}";
        QTest::newRow("an object appended")
            << nodes << "{\"n\": [{\"h\": \"a\"}, {\"h\": \"b\"}, {\"h\": \"c\"}, {\"h\": \"d\", \"p\": 2}]}"
            << "{\"n\": [\n  {\"h\": \"a\"},\n  {\"h\": \"b\"},\n  {\"h\": \"c\"},\n  {\n    \"h\": \"d\",\n    \"p\": "
               "2\n  }\n]}";
        QTest::newRow("an element appended on the same line") << "{\"x\": [1, 2]}"
                                                              << "{\"x\": [1, 2, 3]}"
                                                              << "{\"x\": [1, 2, 3]}";
        QTest::newRow("elements reordered: each where it stands") << "{\"x\": [1,  2]}"
                                                                  << "{\"x\": [2, 1]}"
                                                                  << "{\"x\": [2,  1]}";
        QTest::newRow("another element between: written anew") << "{\"x\": [1,  2]}"
                                                               << "{\"x\": [1, 3, 2]}"
                                                               << "{\"x\": [1, 3, 2]}";
        QTest::newRow("every element removed") << "{\"x\": [1,  2]}"
                                               << "{\"x\": []}"
                                               << "{\"x\": []}";
        QTest::newRow("added to an empty array") << "{\"x\": []}"
                                                 << "{\"x\": [1]}"
                                                 << "{\"x\": [1]}";
        QTest::newRow("the middle one removed") << abc << "{\"a\": 1, \"c\": 3}"
                                                << "{\n  \"a\": 1,\n  \"c\": 3\n}\n";
        QTest::newRow("the first one removed") << abc << "{\"b\": 2, \"c\": 3}"
                                               << "{\n  \"b\": 2,\n  \"c\": 3\n}\n";
        QTest::newRow("the last one removed") << abc << "{\"a\": 1, \"b\": 2}"
                                              << "{\n  \"a\": 1,\n  \"b\": 2\n}\n";
        QTest::newRow("the last two removed") << abc << "{\"a\": 1}"
                                              << "{\n  \"a\": 1\n}\n";
        QTest::newRow("the first and last removed") << abc << "{\"b\": 2}"
                                                    << "{\n  \"b\": 2\n}\n";
        QTest::newRow("all removed") << abc << "{}"
                                     << "{}\n";
        QTest::newRow("one removed, one changed, one added") << abc << "{\"a\": 1, \"c\": 4, \"d\": 5}"
                                                             << "{\n  \"a\": 1,\n  \"c\": 4,\n  \"d\": 5\n}\n";
        QTest::newRow("the last removed and one added") << abc << "{\"a\": 1, \"b\": 2, \"d\": 5}"
                                                        << "{\n  \"a\": 1,\n  \"b\": 2,\n  \"d\": 5\n}\n";
        QTest::newRow("added on a line of its own") << "{\n  \"a\": 1\n}"
                                                    << "{\"a\": 1, \"b\": true}"
                                                    << "{\n  \"a\": 1,\n  \"b\": true\n}";
        QTest::newRow("added on the same line") << "{\"a\": 1}"
                                                << "{\"a\": 1, \"b\": null}"
                                                << "{\"a\": 1, \"b\": null}";
        QTest::newRow("added to an empty object") << "{}"
                                                  << "{\"a\": 1}"
                                                  << "{\n    \"a\": 1\n}";
        QTest::newRow("added in an empty nested object") << "{\n  \"a\": 1,\n  \"t\": {}\n}"
                                                         << "{\"a\": 1, \"t\": {\"e\": 2}}"
                                                         << "{\n  \"a\": 1,\n  \"t\": {\n    \"e\": 2\n  }\n}";
        QTest::newRow("a new object, laid out as the file")
            << "{\n  \"a\": 1\n}"
            << "{\"a\": 1, \"t\": {\"e\": 1, \"f\": [\"x\", 2]}}"
            << "{\n  \"a\": 1,\n  \"t\": {\n    \"e\": 1,\n    \"f\": [\"x\", 2]\n  }\n}";
        QTest::newRow("a line of blanks sets no step") << "{\n   \n  \"a\": 1\n}"
                                                       << "{\"a\": 1, \"t\": {\"e\": 1}}"
                                                       << "{\n   \n  \"a\": 1,\n  \"t\": {\n    \"e\": 1\n  }\n}";
        QTest::newRow("written anew at the first line's indent") << "{\"a\": 1}\n  "
                                                                 << "{\"b\": {\"c\": 1}}"
                                                                 << "{\n    \"b\": {\n        \"c\": 1\n    }\n}\n  ";
        QTest::newRow("tabs") << "{\n\t\"a\": 1\n}"
                              << "{\"a\": 1, \"t\": {\"e\": 1}}"
                              << "{\n\t\"a\": 1,\n\t\"t\": {\n\t\t\"e\": 1\n\t}\n}";
        QTest::newRow("CRLF") << "{\r\n  \"a\": 1\r\n}\r\n"
                              << "{\"a\": 1, \"t\": {\"e\": 1}}"
                              << "{\r\n  \"a\": 1,\r\n  \"t\": {\r\n    \"e\": 1\r\n  }\r\n}\r\n";
        QTest::newRow("environment: its order kept, a new variable last")
            << "{\"env\": {\"//\": \"c\", \"B\": \"1\", \"A\": \"2\"}}"
            << "{\"env\": {\"//\": \"c\", \"B\": \"1\", \"A\": \"3\", \"C\": \"4\"}}"
            << "{\"env\": {\"//\": \"c\", \"B\": \"1\", \"A\": \"3\", \"C\": \"4\"}}";
        QTest::newRow("a key twice: the last is the value") << "{\"a\": 1, \"a\": 2}"
                                                            << "{\"a\": 3}"
                                                            << "{\"a\": 1, \"a\": 3}";
        QTest::newRow("a key twice, removed") << "{\"a\": 1, \"b\": 0, \"a\": 2}"
                                              << "{\"b\": 0}"
                                              << "{\"b\": 0}";
        QTest::newRow("escapes in keys and strings") << "{\"a\\\"b\": \"}\\\"\", \"c\\u00e9\": 1}"
                                                     << "{\"a\\\"b\": \"}\\\"\", \"c\\u00e9\": 2}"
                                                     << "{\"a\\\"b\": \"}\\\"\", \"c\\u00e9\": 2}";
        QTest::newRow("text in a new string escaped") << "{\"a\": 1}"
                                                      << "{\"a\": \"q\\\"\\n\"}"
                                                      << "{\"a\": \"q\\\"\\n\"}";
        QTest::newRow("numbers") << "{\"lr\": 0.001, \"n\": 1}"
                                 << "{\"lr\": 1e-05, \"n\": -2}"
                                 << "{\"lr\": 1e-05, \"n\": -2}";
    }

    void onlyWhatChangesIsWritten() {
        QFETCH(QString, text);
        QFETCH(QString, target);
        QFETCH(QString, expected);
        const QString written = editJsonText(text, object(target));
        QCOMPARE(written, expected);
        QCOMPARE(object(written), object(target));
    }

    void textThatIsNoObjectIsWrittenWhole_data() {
        QTest::addColumn<QString>("text");
        QTest::newRow("empty") << QString();
        QTest::newRow("an array") << QStringLiteral("[1]");
        QTest::newRow("a syntax error") << QStringLiteral("{\"a\": 1,}");
    }

    void textThatIsNoObjectIsWrittenWhole() {
        QFETCH(QString, text);
        const QJsonObject target = object(QStringLiteral("{\"a\": 1, \"t\": {\"e\": [1, 2]}}"));
        QCOMPARE(editJsonText(text, target), QString::fromUtf8(QJsonDocument(target).toJson()));
    }
};

QTEST_GUILESS_MAIN(tst_JsonTextEdit)
#include "tst_jsontextedit.moc"
