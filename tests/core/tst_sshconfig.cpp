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

    void includeLoopEnds() {
        const QString path = write(QStringLiteral("loop/config"), "Host looped\nInclude config\n");
        QCOMPARE(sshConfigHosts(path), QStringList{"looped"});
    }

    void missingFileIsEmpty() { QVERIFY(sshConfigHosts(m_dir.filePath(QStringLiteral("absent"))).isEmpty()); }
};

QTEST_GUILESS_MAIN(tst_SshConfig)
#include "tst_sshconfig.moc"
