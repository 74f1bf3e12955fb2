// SPDX-License-Identifier: MIT
// The aliases of an OpenSSH client config, as the desktop app offers them for new nodes.
#include "core/sshconfig.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

using rankscope::sshConfigHosts;

class tst_SshConfig final : public QObject {
    Q_OBJECT

private:
    QString write(const QString& name, const QByteArray& text) {
        const QString path = m_dir.filePath(name);
        QDir().mkpath(QFileInfo(path).absolutePath());
        QFile file(path);
        if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate))
            return {};
        file.write(text);
        return path;
    }

    QTemporaryDir m_dir;

private slots:
    void hostLines_data() {
        QTest::addColumn<QByteArray>("config");
        QTest::addColumn<QStringList>("hosts");
        QTest::newRow("one") << QByteArray("Host gpu-a\n  HostName 10.0.0.1\n") << QStringList{"gpu-a"};
        QTest::newRow("several names") << QByteArray("Host a b\tc\n") << QStringList{"a", "b", "c"};
        QTest::newRow("equals") << QByteArray("Host=a\nHost = b c\n") << QStringList{"a", "b", "c"};
        QTest::newRow("keyword case") << QByteArray("host a\nHOST b\nhOsT c\n") << QStringList{"a", "b", "c"};
        QTest::newRow("comments and blanks")
            << QByteArray("# Host commented\n\n   # Host indented\nHost real # trailing comment\n")
            << QStringList{"real"};
        QTest::newRow("wildcards skipped") << QByteArray("Host *\nHost gpu-* node?\nHost !bad ok\n")
                                           << QStringList{"ok"};
        QTest::newRow("duplicates once") << QByteArray("Host a\nHost b a\n") << QStringList{"a", "b"};
        QTest::newRow("other keywords") << QByteArray("HostName x\nHostKeyAlias y\nUser z\nMatch host w\n")
                                        << QStringList{};
        QTest::newRow("quoted") << QByteArray("Host \"my node\" other\n") << QStringList{"my node", "other"};
        QTest::newRow("crlf") << QByteArray("Host a\r\nHost b\r\n") << QStringList{"a", "b"};
        QTest::newRow("runs of blanks") << QByteArray("Host  a \t  b   \n") << QStringList{"a", "b"};
    }

    void hostLines() {
        QFETCH(QByteArray, config);
        QFETCH(QStringList, hosts);
        QCOMPARE(sshConfigHosts(write(QStringLiteral("config"), config)), hosts);
    }

    void includeFollowsFilesAndGlobs() {
        write(QStringLiteral("inc/conf.d/10-a.conf"), "Host from-a\n");
        write(QStringLiteral("inc/conf.d/20-b.conf"), "HOST from-b *\n");
        write(QStringLiteral("inc/extra"), "Host from-extra\n");
        const QString absolute = write(QStringLiteral("elsewhere/abs"), "Host from-absolute\n");
        const QString main = write(QStringLiteral("inc/config"), "Host first\nInclude conf.d/*.conf extra\n"
                                                                 "include=" +
                                                                     absolute.toUtf8() + "\nHost last\n");
        QCOMPARE(sshConfigHosts(main),
                 (QStringList{"first", "from-a", "from-b", "from-extra", "from-absolute", "last"}));
    }

    // OpenSSH resolves a relative Include in the user's config against ~/.ssh, also inside an included file: the
    // top config's folder, never the including file's own.
    void relativeIncludeInsideAnIncludeIsTheTopConfigsFolder() {
        write(QStringLiteral("nest/sub/first.conf"), "Host from-first\nInclude second.conf\n");
        write(QStringLiteral("nest/second.conf"), "Host from-top-folder\n");
        write(QStringLiteral("nest/sub/second.conf"), "Host from-including-folder\n");
        const QString main = write(QStringLiteral("nest/config"), "Include sub/first.conf\n");
        QCOMPARE(sshConfigHosts(main), (QStringList{"from-first", "from-top-folder"}));
    }

    // A config split into files that include each other a few levels deep (a team's shared config, a cluster's
    // generated one) is followed all the way down.
    void nestedIncludesAreFollowed() {
        QByteArray text;
        for (int level = 5; level >= 1; --level) {
            text = "Host level" + QByteArray::number(level) + "\n";
            if (level < 5)
                text += "Include deep" + QByteArray::number(level + 1) + "\n";
            write(QStringLiteral("deep/deep%1").arg(level), text);
        }
        const QString main = write(QStringLiteral("deep/config"), "Include deep1\n");
        QCOMPARE(sshConfigHosts(main), (QStringList{"level1", "level2", "level3", "level4", "level5"}));
    }

    // "~/" is the home folder, in a glob too; a character class is a glob.
    void includeExpandsHomeAndClasses() {
        const QByteArray home = qgetenv("HOME");
        qputenv("HOME", m_dir.filePath(QStringLiteral("home")).toUtf8());
        write(QStringLiteral("home/.ssh/cluster-1"), "Host from-home-1\n");
        write(QStringLiteral("home/.ssh/cluster-2"), "Host from-home-2\n");
        write(QStringLiteral("home/.ssh/cluster-3"), "Host never\n");
        write(QStringLiteral("home/single"), "Host from-home-file\n");
        const QString main = write(QStringLiteral("tilde/config"), "Include ~/.ssh/cluster-[12]\nInclude ~/single\n");
        const QStringList hosts = sshConfigHosts(main);
        qputenv("HOME", home);
        QCOMPARE(hosts, (QStringList{"from-home-1", "from-home-2", "from-home-file"}));
    }

    void includeLoopEnds() {
        const QString path = write(QStringLiteral("loop/config"), "Host looped\nInclude config\n");
        QCOMPARE(sshConfigHosts(path), QStringList{"looped"});
    }

    void missingFileIsEmpty() { QVERIFY(sshConfigHosts(m_dir.filePath(QStringLiteral("absent"))).isEmpty()); }
};

QTEST_GUILESS_MAIN(tst_SshConfig)
#include "tst_sshconfig.moc"
