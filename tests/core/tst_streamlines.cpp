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
