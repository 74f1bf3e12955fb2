// SPDX-License-Identifier: MIT
// The fixtures must behave like real nodes for the real OpenSSH client: key login, host key checks, sftp,
// and, for namespace nodes, a network that can be cut. Root's ~/.bashrc may print noise on every ssh
// command, so outputs are searched for a token rather than compared.
#include "fixtures/netnsfixture.h"
#include "fixtures/sshdfixture.h"

#include <QFile>
#include <QProcess>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <cerrno>
#include <csignal>
#include <memory>
#include <unistd.h>

using rankscope::test::CommandResult;
using rankscope::test::NetnsFixture;
using rankscope::test::runCommand;
using rankscope::test::SshdFixture;

class TestFixtures final : public QObject {
    Q_OBJECT

private:
    // Options that make ssh and sftp depend on nothing but the fixture: no user config, no agent, no prompts.
    static QStringList clientOptions(const QString& key, const QString& knownHosts, int port) {
        QStringList options{QStringLiteral("-F"), QStringLiteral("/dev/null"), QStringLiteral("-i"), key};
        const QStringList settings{QStringLiteral("IdentitiesOnly=yes"),
                                   QStringLiteral("IdentityAgent=none"),
                                   QStringLiteral("UserKnownHostsFile=") + knownHosts,
                                   QStringLiteral("GlobalKnownHostsFile=/dev/null"),
                                   QStringLiteral("StrictHostKeyChecking=yes"),
                                   QStringLiteral("BatchMode=yes"),
                                   QStringLiteral("ConnectTimeout=5"),
                                   QStringLiteral("Port=%1").arg(port)};
        for (const QString& setting : settings)
            options << QStringLiteral("-o") << setting;
        return options;
    }

    static CommandResult ssh(const SshdFixture& server, const QString& knownHosts, const QString& command) {
        return runCommand(QStringLiteral("ssh"),
                          clientOptions(server.userKeyPath(), knownHosts, server.port())
                              << server.userName() + QLatin1Char('@') + server.host() << command,
                          20000);
    }

    // A sleep whose command line no other process has, to find it (or prove it gone) with pgrep -f.
    static QString sleepMarker(int seconds) { return QStringLiteral("sleep %1.%2").arg(seconds).arg(::getpid()); }

    // pgrep -f with a pattern; anchor it with '^' to skip the ssh client whose command line quotes it.
    static bool processRunning(const QString& pattern) {
        return runCommand(QStringLiteral("pgrep"), {QStringLiteral("-f"), pattern}).succeeded();
    }

    std::unique_ptr<SshdFixture> m_sshd;
    QTemporaryDir m_work;

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_work.isValid());
        m_sshd = std::make_unique<SshdFixture>();
        QString error;
        QVERIFY2(m_sshd->start(&error), qPrintable(error));
        QVERIFY(m_sshd->isRunning());
    }

    void cleanupTestCase() { m_sshd.reset(); }

    void loopbackFilesHaveTheExpectedForm() {
        QVERIFY2(m_sshd->hostPublicKeyLine().startsWith(QStringLiteral("ssh-ed25519 AAAA")),
                 qPrintable(m_sshd->hostPublicKeyLine()));
        QFile knownHosts(m_sshd->knownHostsPath());
        QVERIFY(knownHosts.open(QIODevice::ReadOnly));
        const QString entry = QString::fromUtf8(knownHosts.readAll()).trimmed();
        const QRegularExpression form(
            QStringLiteral("^\\[127\\.0\\.0\\.1\\]:%1 ssh-ed25519 AAAA\\S+$").arg(m_sshd->port()));
        QVERIFY2(form.match(entry).hasMatch(), qPrintable(entry));
        QVERIFY(m_sshd->hostPublicKeyLine().contains(entry.section(QLatin1Char(' '), 2, 2)));
        QVERIFY(!m_sshd->userName().isEmpty());
    }

    void passphraseKeyIsEncrypted() {
        const auto publicKeyWith = [this](const QString& passphrase) {
            return runCommand(QStringLiteral("ssh-keygen"), {QStringLiteral("-y"), QStringLiteral("-P"), passphrase,
                                                             QStringLiteral("-f"), m_sshd->passphraseKeyPath()});
        };
        QVERIFY(!publicKeyWith(QString()).succeeded());
        const CommandResult unlocked = publicKeyWith(SshdFixture::passphrase());
        QVERIFY2(unlocked.succeeded(), qPrintable(unlocked.describe()));
        QVERIFY(unlocked.output.startsWith("ssh-ed25519 "));
    }

    void sshChecksTheHostKey_data() {
        QTest::addColumn<bool>("correctKey");
        QTest::newRow("known host key") << true;
        QTest::newRow("changed host key") << false;
    }
    void sshChecksTheHostKey() {
        QFETCH(bool, correctKey);
        const QString knownHosts = m_work.filePath(QStringLiteral("known_hosts_%1").arg(correctKey));
        QString error;
        QVERIFY2(m_sshd->writeKnownHosts(knownHosts, correctKey, &error), qPrintable(error));
        const CommandResult result = ssh(*m_sshd, knownHosts, QStringLiteral("echo hello"));
        if (correctKey) {
            QVERIFY2(result.succeeded(), qPrintable(result.describe() + QStringLiteral("; sshd: ") + m_sshd->log()));
            QVERIFY(result.output.contains("hello"));
        } else {
            QVERIFY2(result.finished && result.exitCode != 0, qPrintable(result.describe()));
            QVERIFY2(result.errorOutput.contains("REMOTE HOST IDENTIFICATION HAS CHANGED"),
                     qPrintable(result.describe()));
            QVERIFY(!result.output.contains("hello"));
        }
    }

    // The passphrase key is authorized too; ssh unlocks it through SSH_ASKPASS as libssh does through its callback.
    void passphraseKeyLogsIn() {
        const QString askpass = m_work.filePath(QStringLiteral("askpass"));
        QFile script(askpass);
        QVERIFY(script.open(QIODevice::WriteOnly));
        script.write("#!/bin/sh\necho '" + SshdFixture::passphrase().toUtf8() + "'\n");
        script.close();
        QVERIFY(script.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));

        QStringList arguments = clientOptions(m_sshd->passphraseKeyPath(), m_sshd->knownHostsPath(), m_sshd->port());
        arguments.replaceInStrings(QStringLiteral("BatchMode=yes"), QStringLiteral("BatchMode=no"));
        arguments << QStringLiteral("-o") << QStringLiteral("PasswordAuthentication=no")
                  << m_sshd->userName() + QStringLiteral("@127.0.0.1") << QStringLiteral("echo unlocked");
        QProcess client;
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("SSH_ASKPASS"), askpass);
        environment.insert(QStringLiteral("SSH_ASKPASS_REQUIRE"), QStringLiteral("force"));
        client.setProcessEnvironment(environment);
        client.setStandardInputFile(QProcess::nullDevice());
        client.start(QStringLiteral("ssh"), arguments);
        QVERIFY(client.waitForFinished(20000));
        QVERIFY2(client.exitCode() == 0, client.readAllStandardError().constData());
        QVERIFY(client.readAllStandardOutput().contains("unlocked"));
    }

    void sftpPutsAndGets() {
        QByteArray payload(256 * 1024, Qt::Uninitialized);
        QRandomGenerator generator(7);
        for (char& byte : payload)
            byte = static_cast<char>(generator.bounded(256));
        const QString local = m_work.filePath(QStringLiteral("payload.bin"));
        const QString remote = m_work.filePath(QStringLiteral("uploaded.bin"));
        const QString back = m_work.filePath(QStringLiteral("downloaded.bin"));
        QFile file(local);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(payload);
        file.close();

        const QByteArray batch =
            "put " + local.toUtf8() + ' ' + remote.toUtf8() + "\nget " + remote.toUtf8() + ' ' + back.toUtf8() + '\n';
        const CommandResult result = runCommand(
            QStringLiteral("sftp"),
            clientOptions(m_sshd->userKeyPath(), m_sshd->knownHostsPath(), m_sshd->port())
                << QStringLiteral("-b") << QStringLiteral("-") << m_sshd->userName() + QStringLiteral("@127.0.0.1"),
            20000, batch);
        QVERIFY2(result.succeeded(), qPrintable(result.describe() + QStringLiteral("; sshd: ") + m_sshd->log()));
        QFile downloaded(back);
        QVERIFY(downloaded.open(QIODevice::ReadOnly));
        QVERIFY(downloaded.readAll() == payload);
    }

    // stop() is how a test makes a node's server vanish: sshd and every session it started must go.
    void stopEndsServerAndSessions() {
        auto server = std::make_unique<SshdFixture>();
        QString error;
        QVERIFY2(server->start(&error), qPrintable(error));
        const qint64 pid = server->processId();
        const QString directory = server->directory();
        const QString marker = sleepMarker(40);

        QProcess session;
        session.start(QStringLiteral("ssh"),
                      clientOptions(server->userKeyPath(), server->knownHostsPath(), server->port())
                          << server->userName() + QStringLiteral("@127.0.0.1") << QStringLiteral("exec ") + marker);
        QTRY_VERIFY_WITH_TIMEOUT(processRunning(QLatin1Char('^') + marker), 10000);

        server->stop();
        QVERIFY(!server->isRunning());
        QVERIFY(session.waitForFinished(10000));
        QVERIFY(!processRunning(QLatin1Char('^') + marker));
        QVERIFY(::kill(static_cast<pid_t>(pid), 0) != 0);
        QVERIFY(!ssh(*server, server->knownHostsPath(), QStringLiteral("echo hello")).succeeded());

        server.reset();
        QVERIFY(!QFile::exists(directory));
    }

    void netnsNodesReachEachOtherUntilTheLinkIsCut() {
        if (const QString reason = NetnsFixture::skipReason(); !reason.isEmpty())
            QSKIP(qPrintable(reason));
        QString prefix;
        QStringList sshdConfigs;
        const QString marker = sleepMarker(41);
        // A bridge left by a test program that is gone, its namespaces removed by hand: removed at the next start.
        pid_t gone = 4000000;
        while (gone > 1 && !(::kill(gone, 0) != 0 && errno == ESRCH))
            --gone;
        const QString staleBridge = QStringLiteral("rs%1br").arg(gone);
        QVERIFY(runCommand(QStringLiteral("ip"), {QStringLiteral("link"), QStringLiteral("add"), QStringLiteral("name"),
                                                  staleBridge, QStringLiteral("type"), QStringLiteral("bridge")})
                    .succeeded());
        {
            NetnsFixture nodes;
            QString error;
            QVERIFY2(nodes.start(2, &error), qPrintable(error));
            prefix = nodes.namePrefix();
            QVERIFY(!runCommand(QStringLiteral("ip"), {QStringLiteral("link"), QStringLiteral("show"), staleBridge})
                         .succeeded());
            QCOMPARE(nodes.nodeCount(), 2);
            for (int i = 0; i < nodes.nodeCount(); ++i)
                sshdConfigs << nodes.sshd(i).configPath();

            const auto ssh = [&nodes](int node, const QString& command) {
                return runCommand(QStringLiteral("ssh"),
                                  clientOptions(nodes.userKeyPath(), nodes.knownHostsPath(), 22)
                                      << nodes.userName() + QLatin1Char('@') + nodes.nodeAddress(node) << command,
                                  20000);
            };
            const QString probe =
                QStringLiteral("timeout 3 bash -c '</dev/tcp/%1/22' && echo reach-ok").arg(nodes.nodeAddress(1));
            const auto node0ReachesNode1 = [&] { return ssh(0, probe).output.contains("reach-ok"); };

            const CommandResult hello = ssh(1, QStringLiteral("echo hello-node1"));
            QVERIFY2(hello.output.contains("hello-node1"), qPrintable(hello.describe()));
            // Tried again while it fails: one try's 3 s can go by on a loaded machine (see probe.sh's 6 s).
            QTRY_VERIFY_WITH_TIMEOUT(node0ReachesNode1(), 15000);

            QVERIFY2(nodes.setLinkUp(1, false, &error), qPrintable(error));
            QVERIFY(!node0ReachesNode1());
            QVERIFY2(nodes.setLinkUp(1, true, &error), qPrintable(error));
            QTRY_VERIFY_WITH_TIMEOUT(node0ReachesNode1(), 15000);

            // Something that escapes its session, as a daemonizing trainer would; teardown must still kill it.
            QVERIFY(ssh(1, QStringLiteral("setsid -f %1 </dev/null >/dev/null 2>&1").arg(marker)).succeeded());
            QTRY_VERIFY_WITH_TIMEOUT(
                nodes.exec(1, {QStringLiteral("pgrep"), QStringLiteral("-f"), QLatin1Char('^') + marker}).succeeded(),
                5000);
        }
        QVERIFY(!prefix.isEmpty());
        const CommandResult namespaces =
            runCommand(QStringLiteral("ip"), {QStringLiteral("netns"), QStringLiteral("list")});
        QVERIFY2(!namespaces.output.contains(prefix.toUtf8()), namespaces.output.constData());
        const CommandResult links = runCommand(QStringLiteral("ip"), {QStringLiteral("-o"), QStringLiteral("link")});
        QVERIFY2(!links.output.contains(prefix.toUtf8()), links.output.constData());
        QVERIFY(!processRunning(QLatin1Char('^') + marker));
        for (const QString& config : sshdConfigs)
            QVERIFY2(!processRunning(config), qPrintable(config));
    }
};

QTEST_GUILESS_MAIN(TestFixtures)
#include "tst_fixtures.moc"
