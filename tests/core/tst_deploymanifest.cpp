// SPDX-License-Identifier: MIT
#include "core/deploymanifest.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <unistd.h>

using rankscope::DeployManifest;
using rankscope::ManifestEntry;

namespace {

// Digests from `sha256sum`, so the unit is checked against an implementation other than its own.
constexpr char kSha256Empty[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr char kSha256Abc[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr char kSha256Hello[] = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";     // "hello\n"
constexpr char kSha256HelloBang[] = "c8a31cb076b21999bd2cdcfa5f446a7a6644de88037087112fa18bd90cc13984"; // "hello!\n"

void writeFile(const QString& root, const QString& relative, const QByteArray& content) {
    const QString path = root + QLatin1Char('/') + relative;
    QVERIFY(QDir().mkpath(QFileInfo(path).absolutePath()));
    QFile file(path);
    QVERIFY2(file.open(QIODevice::WriteOnly | QIODevice::Truncate), qPrintable(file.errorString()));
    QCOMPARE(file.write(content), content.size());
}

// The nested tree most cases start from; ".hidden" checks that hidden files are deployed too.
void writeSampleTree(const QString& root) {
    writeFile(root, QStringLiteral("b.txt"), "abc");
    writeFile(root, QStringLiteral("a/hello.txt"), "hello\n");
    writeFile(root, QStringLiteral("a/z/empty"), "");
    writeFile(root, QStringLiteral(".hidden"), "hello!\n");
}

DeployManifest manifestOf(const QString& root) {
    QString error;
    const std::optional<DeployManifest> manifest = DeployManifest::fromDirectory(root, &error);
    if (!manifest)
        qWarning("fromDirectory(%s): %s", qPrintable(root), qPrintable(error));
    return manifest.value_or(DeployManifest());
}

QStringList pathsOf(const QVector<ManifestEntry>& entries) {
    QStringList paths;
    for (const ManifestEntry& entry : entries)
        paths.append(entry.path);
    return paths;
}

QByteArray line(const QByteArray& path, const QByteArray& size = "3", const QByteArray& hash = kSha256Abc) {
    return hash + ' ' + size + ' ' + path + '\n';
}

} // namespace

class tst_DeployManifest final : public QObject {
    Q_OBJECT

private slots:
    void fromDirectoryNestedFiles();
    void fromDirectoryMatchesSha256sum();
    void fromDirectoryWithoutFiles();
    void fromDirectoryRefusesAnUnreadableFile();
    void fromDirectoryRefusesAnUnsafeName_data();
    void fromDirectoryRefusesAnUnsafeName();
    void serializeFormat();
    void parseSerializeRoundTrip();
    void hashFollowsContent();
    void changedFrom();
    void parse_data();
    void parse();
    void isSafeRelativePath_data();
    void isSafeRelativePath();
};

void tst_DeployManifest::fromDirectoryNestedFiles() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    writeSampleTree(dir.path());

    QString error;
    const std::optional<DeployManifest> manifest = DeployManifest::fromDirectory(dir.path(), &error);
    QVERIFY2(manifest, qPrintable(error));
    const QVector<ManifestEntry>& entries = manifest->entries();
    QCOMPARE(pathsOf(entries), (QStringList{".hidden", "a/hello.txt", "a/z/empty", "b.txt"}));
    QCOMPARE(entries[0].sha256, QByteArray(kSha256HelloBang));
    QCOMPARE(entries[0].size, 7);
    QCOMPARE(entries[1].sha256, QByteArray(kSha256Hello));
    QCOMPARE(entries[1].size, 6);
    QCOMPARE(entries[2].sha256, QByteArray(kSha256Empty));
    QCOMPARE(entries[2].size, 0);
    QCOMPARE(entries[3].sha256, QByteArray(kSha256Abc));
    QCOMPARE(entries[3].size, 3);
}

void tst_DeployManifest::fromDirectoryMatchesSha256sum() {
    const QString sha256sum = QStandardPaths::findExecutable(QStringLiteral("sha256sum"));
    if (sha256sum.isEmpty())
        QSKIP("sha256sum is not installed");
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    writeSampleTree(dir.path());
    QByteArray binary;
    for (int i = 0; i < 70000; ++i) // larger than any single read buffer
        binary.append(char(i * 31 % 251));
    writeFile(dir.path(), QStringLiteral("a/z/blob.bin"), binary);

    const DeployManifest manifest = manifestOf(dir.path());
    QCOMPARE(manifest.entries().size(), 5);
    QProcess process;
    process.setWorkingDirectory(dir.path());
    process.start(sha256sum, pathsOf(manifest.entries()));
    QVERIFY(process.waitForFinished());
    QCOMPARE(process.exitCode(), 0);
    // sha256sum prints "HASH  PATH" for each argument, in argument order.
    const QList<QByteArray> lines = process.readAllStandardOutput().trimmed().split('\n');
    QCOMPARE(lines.size(), manifest.entries().size());
    for (qsizetype i = 0; i < lines.size(); ++i) {
        const ManifestEntry& entry = manifest.entries()[i];
        QCOMPARE(lines[i], entry.sha256 + "  " + entry.path.toUtf8());
        QCOMPARE(entry.size, QFileInfo(dir.filePath(entry.path)).size());
    }
}

void tst_DeployManifest::fromDirectoryWithoutFiles() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("only/directories")));
    QString error;
    QVERIFY(!DeployManifest::fromDirectory(dir.path(), &error));
    QVERIFY2(error.contains(dir.path()), qPrintable(error));

    error.clear();
    const QString missing = dir.filePath(QStringLiteral("missing"));
    QVERIFY(!DeployManifest::fromDirectory(missing, &error));
    QVERIFY2(error.contains(missing), qPrintable(error));
}

// A file of the tree that cannot be read stops the manifest, naming the file: a deploy never ships it as empty.
void tst_DeployManifest::fromDirectoryRefusesAnUnreadableFile() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    writeSampleTree(dir.path());
    const QString unreadable = dir.filePath(QStringLiteral("a/secret"));
    if (::geteuid() == 0) {
        // Root reads a file whatever its mode; a write-only sysfs attribute is refused to it too.
        const QString writeOnly = QStringLiteral("/sys/bus/pci/rescan");
        if (!QFileInfo::exists(writeOnly) || QFile(writeOnly).open(QIODevice::ReadOnly))
            QSKIP("no file here that root cannot read");
        QVERIFY(QFile::link(writeOnly, unreadable));
    } else {
        writeFile(dir.path(), QStringLiteral("a/secret"), "x");
        QVERIFY(QFile::setPermissions(unreadable, QFileDevice::Permissions()));
    }
    QString error;
    QVERIFY(!DeployManifest::fromDirectory(dir.path(), &error));
    QCOMPARE(error, QStringLiteral("cannot read ") + unreadable);
}

// A file name the manifest's lines cannot carry (a newline, a control character, a backslash) stops it, naming
// the file, rather than deploying it under another name.
void tst_DeployManifest::fromDirectoryRefusesAnUnsafeName_data() {
    QTest::addColumn<QString>("name");
    QTest::newRow("newline") << QStringLiteral("a/bad\nname.py");
    QTest::newRow("escape") << QStringLiteral("a/\x1b[31mred");
    QTest::newRow("backslash") << QStringLiteral("win\\path.py");
}

void tst_DeployManifest::fromDirectoryRefusesAnUnsafeName() {
    QFETCH(QString, name);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    writeSampleTree(dir.path());
    writeFile(dir.path(), name, "x");
    QString error;
    QVERIFY(!DeployManifest::fromDirectory(dir.path(), &error));
    QCOMPARE(error, name + QStringLiteral(": unsafe path in the deploy tree"));
}

void tst_DeployManifest::serializeFormat() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    writeSampleTree(dir.path());
    const QByteArray expected = QByteArray(kSha256HelloBang) + " 7 .hidden\n" + kSha256Hello + " 6 a/hello.txt\n" +
                                kSha256Empty + " 0 a/z/empty\n" + kSha256Abc + " 3 b.txt\n";
    QCOMPARE(manifestOf(dir.path()).serialize(), expected);
}

void tst_DeployManifest::parseSerializeRoundTrip() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    writeSampleTree(dir.path());
    writeFile(dir.path(), QString::fromUtf8("ünïcode dir/file with spaces.txt"), "x");
    const DeployManifest original = manifestOf(dir.path());
    QCOMPARE(original.entries().size(), 5);

    QString error;
    const std::optional<DeployManifest> parsed = DeployManifest::parse(original.serialize(), &error);
    QVERIFY2(parsed, qPrintable(error));
    QCOMPARE(parsed->entries().size(), original.entries().size());
    for (qsizetype i = 0; i < original.entries().size(); ++i) {
        QCOMPARE(parsed->entries()[i].path, original.entries()[i].path);
        QCOMPARE(parsed->entries()[i].sha256, original.entries()[i].sha256);
        QCOMPARE(parsed->entries()[i].size, original.entries()[i].size);
    }
    QCOMPARE(parsed->serialize(), original.serialize());
    QCOMPARE(parsed->hash(), original.hash());
    QVERIFY(parsed->changedFrom(original).isEmpty());
}

void tst_DeployManifest::hashFollowsContent() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    writeSampleTree(dir.path());
    const QByteArray before = manifestOf(dir.path()).hash();
    QCOMPARE(before.size(), 64);
    QCOMPARE(before, QCryptographicHash::hash(manifestOf(dir.path()).serialize(), QCryptographicHash::Sha256).toHex());

    // Nothing changed, even after rewriting a file with the same bytes: the same build.
    QCOMPARE(manifestOf(dir.path()).hash(), before);
    writeFile(dir.path(), QStringLiteral("a/hello.txt"), "hello\n");
    QCOMPARE(manifestOf(dir.path()).hash(), before);

    // One byte of one file, same size.
    writeFile(dir.path(), QStringLiteral("a/hello.txt"), "hellO\n");
    const QByteArray edited = manifestOf(dir.path()).hash();
    QVERIFY(edited != before);

    // A new empty file is a change too.
    writeFile(dir.path(), QStringLiteral("a/new"), "");
    QVERIFY(manifestOf(dir.path()).hash() != edited);
}

void tst_DeployManifest::changedFrom() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    writeSampleTree(dir.path());
    const DeployManifest deployed = manifestOf(dir.path());
    QVERIFY(manifestOf(dir.path()).changedFrom(deployed).isEmpty());

    writeFile(dir.path(), QStringLiteral("b.txt"), "abd");           // one byte changed
    writeFile(dir.path(), QStringLiteral("a/z/new.txt"), "hello\n"); // new, content equal to another file
    QVERIFY(QFile::remove(dir.filePath(QStringLiteral(".hidden")))); // removed files are not "changed"
    const DeployManifest local = manifestOf(dir.path());

    const QVector<ManifestEntry> changed = local.changedFrom(deployed);
    QCOMPARE(pathsOf(changed), (QStringList{"a/z/new.txt", "b.txt"}));
    QCOMPARE(changed[0].sha256, QByteArray(kSha256Hello));
    QCOMPARE(changed[1].size, 3);

    // Against a node with nothing deployed yet, everything is new.
    const std::optional<DeployManifest> nothing = DeployManifest::parse("", nullptr);
    QVERIFY(nothing);
    QCOMPARE(pathsOf(local.changedFrom(*nothing)), pathsOf(local.entries()));
}

void tst_DeployManifest::parse_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<int>("entries");
    QTest::addColumn<int>("badLine"); // 0: the manifest is valid

    QTest::newRow("empty text") << QByteArray() << 0 << 0;
    QTest::newRow("one line") << line("a/b.txt") << 1 << 0;
    QTest::newRow("no final newline") << line("a").chopped(1) << 1 << 0;
    QTest::newRow("empty lines are fine") << QByteArray("\n") + line("a") + "\n\n" + line("b") + "\n" << 2 << 0;
    QTest::newRow("space in path") << line("dir/a file") << 1 << 0;
    QTest::newRow("dots inside a name") << line("...") + line("a..b/.c") << 2 << 0;
    QTest::newRow("large size") << line("big", "123456789012") << 1 << 0;

    QTest::newRow("parent") << line("../x") << 0 << 1;
    QTest::newRow("absolute") << line("/etc/passwd") << 0 << 1;
    QTest::newRow("parent in the middle") << line("a/../../b") << 0 << 1;
    QTest::newRow("trailing parent") << line("a/..") << 0 << 1;
    QTest::newRow("empty segment") << line("a//b") << 0 << 1;
    QTest::newRow("trailing slash") << line("a/") << 0 << 1;
    QTest::newRow("current dir") << line("./a") << 0 << 1;
    QTest::newRow("backslash") << line("a\\b") << 0 << 1;
    QTest::newRow("backslash parent") << line("..\\x") << 0 << 1;
    QTest::newRow("newline in path") << line("a\nb") << 0 << 2;
    QTest::newRow("carriage return") << line("a\r") << 0 << 1;
    QTest::newRow("tab") << line("a\tb") << 0 << 1;
    QTest::newRow("escape") << line("a\x1b[2Jb") << 0 << 1;
    QTest::newRow("delete") << line("a\x7f") << 0 << 1;
    QTest::newRow("nul") << line(QByteArray("a\0b", 3)) << 0 << 1;
    QTest::newRow("empty path") << line("") << 0 << 1;
    QTest::newRow("no path") << QByteArray(kSha256Abc) + " 3\n" << 0 << 1;
    QTest::newRow("hash only") << QByteArray(kSha256Abc) + "\n" << 0 << 1;
    QTest::newRow("short hash") << line("a", "3", QByteArray(kSha256Abc).chopped(1)) << 0 << 1;
    QTest::newRow("long hash") << line("a", "3", QByteArray(kSha256Abc) + "0") << 0 << 1;
    QTest::newRow("empty hash") << line("a", "3", "") << 0 << 1;
    QTest::newRow("non-numeric size") << line("a", "three") << 0 << 1;
    QTest::newRow("size with a suffix") << line("a", "3k") << 0 << 1;
    QTest::newRow("empty size") << line("a", "") << 0 << 1;
    QTest::newRow("negative size") << line("a", "-1") << 0 << 1;
    QTest::newRow("hash not hex") << line("a", "3", QByteArray(64, 'g')) << 0 << 1;
    QTest::newRow("hash upper case") << line("a", "3", QByteArray(kSha256Abc).toUpper()) << 0 << 1;
    QTest::newRow("path listed twice") << line("a") + line("b") + line("a") << 0 << 3;
    QTest::newRow("one bad line spoils all") << line("a") + line("b") + line("../c") + line("d") << 0 << 3;
}

void tst_DeployManifest::parse() {
    QFETCH(QByteArray, text);
    QFETCH(int, entries);
    QFETCH(int, badLine);

    QString error;
    const std::optional<DeployManifest> manifest = DeployManifest::parse(text, &error);
    if (badLine == 0) {
        QVERIFY2(manifest, qPrintable(error));
        QCOMPARE(manifest->entries().size(), entries);
        for (const ManifestEntry& entry : manifest->entries())
            QVERIFY(DeployManifest::isSafeRelativePath(entry.path));
    } else {
        QVERIFY(!manifest);
        QCOMPARE(error, QStringLiteral("manifest line %1: not 'SHA256 SIZE SAFE-PATH'").arg(badLine));
    }
}

void tst_DeployManifest::isSafeRelativePath_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<bool>("safe");

    QTest::newRow("file") << "a" << true;
    QTest::newRow("nested") << "a/b/c.txt" << true;
    QTest::newRow("hidden file") << ".hidden" << true;
    QTest::newRow("three dots") << "..." << true;
    QTest::newRow("dots inside") << "a..b/c." << true;
    QTest::newRow("space") << "my dir/my file" << true;
    QTest::newRow("unicode") << QString::fromUtf8("ünï/cödé") << true;

    QTest::newRow("empty") << "" << false;
    QTest::newRow("absolute") << "/etc/passwd" << false;
    QTest::newRow("root") << "/" << false;
    QTest::newRow("parent") << ".." << false;
    QTest::newRow("parent first") << "../x" << false;
    QTest::newRow("parent middle") << "a/../../b" << false;
    QTest::newRow("parent last") << "a/.." << false;
    QTest::newRow("current") << "." << false;
    QTest::newRow("current first") << "./a" << false;
    QTest::newRow("current middle") << "a/./b" << false;
    QTest::newRow("empty segment") << "a//b" << false;
    QTest::newRow("trailing slash") << "a/" << false;
    QTest::newRow("backslash") << "a\\b" << false;
    QTest::newRow("backslash parent") << "..\\..\\x" << false;
    QTest::newRow("newline") << "a\nb" << false;
    QTest::newRow("carriage return") << "a\r" << false;
    QTest::newRow("tab") << "a\tb" << false;
    QTest::newRow("escape") << "a\x1b" << false;
    QTest::newRow("delete") << "a\x7f" << false;
    QTest::newRow("nul") << QString(QChar(0)) + "a" << false;
}

void tst_DeployManifest::isSafeRelativePath() {
    QFETCH(QString, path);
    QFETCH(bool, safe);
    QCOMPARE(DeployManifest::isSafeRelativePath(path), safe);
}

QTEST_GUILESS_MAIN(tst_DeployManifest)
#include "tst_deploymanifest.moc"
