// SPDX-License-Identifier: MIT
// SshTransport against a real, private sshd on loopback: host keys, authentication, commands through root's
// noisy login shell, SFTP in chunks, and reading a growing file by offset. Also the local transport's side of the
// contract that leaving a run gives up a command that only reads.
#include "fixtures/sshdfixture.h"
#include "remote/localtransport.h"
#include "remote/shellcommand.h"
#include "remote/sshtransport.h"

#include <QElapsedTimer>
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

using namespace rankscope::remote;
using rankscope::test::SshdFixture;

namespace {

struct Interrupted {
    std::optional<TransportErrorKind> error;
    ExecResult result;
    qint64 elapsedMs = 0;
};

// Runs `command` on a thread of its own, as a node worker does, and asks that thread to stop half a second in, as
// leaving a run does.
Interrupted execAskedToStop(Transport& transport, const QString& command, CommandEffect effect) {
    Interrupted outcome;
    std::unique_ptr<QThread> thread(QThread::create([&] {
        try {
            outcome.result = transport.exec(command, {}, std::chrono::seconds(60), effect);
        } catch (const TransportError& error) {
            outcome.error = error.kind();
        }
    }));
    QElapsedTimer timer;
    timer.start();
    thread->start();
    QThread::msleep(500);
    thread->requestInterruption();
    thread->wait();
    outcome.elapsedMs = timer.elapsed();
    return outcome;
}

// A command that only reads is given up; one that changes the node runs to its end; the transport still works.
void checkLeavingGivesUpOnlyReads(Transport& transport) {
    const Interrupted reads =
        execAskedToStop(transport, QStringLiteral("sleep 30; echo read"), CommandEffect::ReadsOnly);
    QVERIFY2(reads.error == TransportErrorKind::Abandoned, qPrintable(QString::fromUtf8(reads.result.out)));
    QVERIFY2(reads.elapsedMs < 15000, qPrintable(QString::number(reads.elapsedMs))); // not the command's 30 s

    const Interrupted changes =
        execAskedToStop(transport, QStringLiteral("sleep 2; echo changed"), CommandEffect::Changes);
    QVERIFY(!changes.error);
    QCOMPARE(changes.result.out, QByteArray("changed\n"));
    QVERIFY2(changes.elapsedMs >= 2000, qPrintable(QString::number(changes.elapsedMs)));

    QCOMPARE(transport.exec(QStringLiteral("echo after")).out, QByteArray("after\n"));
}

} // namespace

class tst_SshTransport final : public QObject {
    Q_OBJECT

private:
    SshOptions options(const QString& knownHosts) const {
        SshOptions o;
        o.host = m_sshd.host();
        o.port = m_sshd.port();
        o.user = m_sshd.userName();
        o.identityFile = m_sshd.userKeyPath();
        o.knownHostsPath = knownHosts;
        o.sshConfigPath = QStringLiteral("none");
        o.connectTimeout = std::chrono::seconds(5);
        return o;
    }
    static TransportErrorKind connectError(SshTransport& transport, QString* message = nullptr) {
        try {
            transport.connect();
        } catch (const TransportError& error) {
            if (message)
                *message = error.message();
            return error.kind();
        }
        return static_cast<TransportErrorKind>(-1); // connected: matches no kind, so every QCOMPARE fails
    }

    SshdFixture m_sshd;
    QTemporaryDir m_dir;

private slots:
    void initTestCase() {
        QString error;
        QVERIFY2(m_sshd.start(&error), qPrintable(error));
    }

    void commandOutputIsFreeOfLoginShellNoise() {
        SshTransport transport(options(m_sshd.knownHostsPath()));
        transport.connect();
        // Whatever .bashrc prints (root's runs pyenv init for every command), the output is the command's.
        const ExecResult result = transport.exec(QStringLiteral("echo hello; echo oops >&2; exit 3"));
        QCOMPARE(result.out, QByteArray("hello\n"));
        QCOMPARE(result.err, QByteArray("oops\n"));
        QCOMPARE(result.exitStatus, 3);
        QVERIFY(!transport.serverFingerprint().isEmpty());
    }

    void inputReachesTheCommand() {
        SshTransport transport(options(m_sshd.knownHostsPath()));
        transport.connect();
        QByteArray input;
        for (int i = 0; i < 20000; ++i)
            input += "line " + QByteArray::number(i) + '\n';
        const ExecResult result = transport.exec(QStringLiteral("wc -l"), input);
        QCOMPARE(result.out.trimmed(), QByteArray("20000"));
    }

    void metacharactersArriveLiterally() {
        SshTransport transport(options(m_sshd.knownHostsPath()));
        transport.connect();
        const QStringList words = {QStringLiteral("a b"),   QStringLiteral("it's"),
                                   QStringLiteral("$HOME"), QStringLiteral("x;rm -rf /tmp/nothing"),
                                   QStringLiteral("`id`"),  QStringLiteral("line1\nline2"),
                                   QStringLiteral("*"),     QStringLiteral("\"q\"")};
        ShellCommand command(QStringLiteral("printf"), QStringList{QStringLiteral("%s\\0")} + words);
        command.setEnvironment(QStringLiteral("RS_VALUE"), QStringLiteral("$(echo pwned) 'x' \"y\" `z`"));
        const ExecResult args = transport.exec(command.toString());
        QCOMPARE(args.out, (words.join(QChar(0)) + QChar(0)).toUtf8());
        ShellCommand env(QStringLiteral("printenv"), {QStringLiteral("RS_VALUE")});
        env.setEnvironment(QStringLiteral("RS_VALUE"), QStringLiteral("$(echo pwned) 'x' \"y\" `z`"));
        QCOMPARE(transport.exec(env.toString()).out, QByteArray("$(echo pwned) 'x' \"y\" `z`\n"));
    }

    void unknownHostIsRefusedUnlessAccepted() {
        const QString knownHosts = m_dir.filePath(QStringLiteral("empty_known_hosts"));
        QFile::remove(knownHosts);
        SshTransport refused(options(knownHosts));
        QString message;
        QCOMPARE(connectError(refused, &message), TransportErrorKind::HostKeyUnknown);
        QVERIFY2(message.contains(QLatin1String("SHA256:")), qPrintable(message));

        SshOptions accepting = options(knownHosts);
        QString askedFor;
        accepting.confirmUnknownHost = [&](const QString&, const QString& fingerprint) {
            askedFor = fingerprint;
            return true;
        };
        SshTransport trusting(accepting);
        trusting.connect();
        QCOMPARE(askedFor, trusting.serverFingerprint());
        // The key is now known: the next connection needs no confirmation.
        SshTransport again(options(knownHosts));
        again.connect();
        QVERIFY(again.isConnected());
    }

    void changedHostKeyIsRefusedWithBothFingerprints() {
        const QString knownHosts = m_dir.filePath(QStringLiteral("wrong_known_hosts"));
        QString error;
        QVERIFY2(m_sshd.writeKnownHosts(knownHosts, false, &error), qPrintable(error));
        SshOptions o = options(knownHosts);
        o.acceptUnknownHost = true; // must not help: a changed key is never accepted
        SshTransport transport(o);
        QString message;
        QCOMPARE(connectError(transport, &message), TransportErrorKind::HostKeyChanged);
        QVERIFY2(message.count(QLatin1String("SHA256:")) == 2, qPrintable(message));
        QVERIFY(message.contains(transport.serverFingerprint()));
    }

    void passphraseComesFromTheCallbackAndIsNeverShown() {
        SshOptions o = options(m_sshd.knownHostsPath());
        o.identityFile = m_sshd.passphraseKeyPath();
        int asked = 0;
        o.passphrase = [&](const QString&) -> std::optional<QString> {
            ++asked;
            return SshdFixture::passphrase();
        };
        SshTransport transport(o);
        transport.connect();
        QCOMPARE(asked, 1);

        o.passphrase = [](const QString&) -> std::optional<QString> { return QStringLiteral("wrong horse"); };
        SshTransport wrong(o);
        QString message;
        QCOMPARE(connectError(wrong, &message), TransportErrorKind::Auth);
        QVERIFY(!message.contains(QLatin1String("wrong horse")));
        QVERIFY(message.contains(m_sshd.passphraseKeyPath()));
    }

    void sshAgentAuthenticates() {
        // A real ssh-agent holding the user key; no identity file in the options.
        const QString socket = m_dir.filePath(QStringLiteral("agent.sock"));
        QProcess agent;
        agent.start(QStringLiteral("ssh-agent"), {QStringLiteral("-D"), QStringLiteral("-a"), socket});
        QVERIFY(agent.waitForStarted());
        const auto stopAgent = qScopeGuard([&] {
            agent.kill();
            agent.waitForFinished();
        });
        QTRY_VERIFY(QFile::exists(socket));
        QProcess add;
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("SSH_AUTH_SOCK"), socket);
        add.setProcessEnvironment(environment);
        add.start(QStringLiteral("ssh-add"), {m_sshd.userKeyPath()});
        QVERIFY(add.waitForFinished() && add.exitCode() == 0);

        const QByteArray previous = qgetenv("SSH_AUTH_SOCK");
        qputenv("SSH_AUTH_SOCK", socket.toUtf8());
        const auto restore = qScopeGuard([&] { qputenv("SSH_AUTH_SOCK", previous); });
        SshOptions o = options(m_sshd.knownHostsPath());
        o.identityFile.clear();
        SshTransport transport(o);
        transport.connect();
        QCOMPARE(transport.exec(QStringLiteral("echo via-agent")).out, QByteArray("via-agent\n"));
    }

    void connectionFailuresNameTheirCause() {
        SshOptions o = options(m_sshd.knownHostsPath());
        o.host = QStringLiteral("no-such-node.invalid");
        SshTransport dns(o);
        QCOMPARE(connectError(dns), TransportErrorKind::Dns);

        o = options(m_sshd.knownHostsPath());
        o.port = 1; // nothing listens on port 1 of loopback
        SshTransport refused(o);
        QString message;
        QCOMPARE(connectError(refused, &message), TransportErrorKind::Refused);
        QVERIFY2(message.contains(QLatin1String("cannot connect to port 1: ")), qPrintable(message));

        o = options(m_sshd.knownHostsPath());
        o.identityFile = m_dir.filePath(QStringLiteral("missing_key"));
        SshTransport auth(o);
        QCOMPARE(connectError(auth), TransportErrorKind::Auth);

        // A refusal names the account it tried: a wrong user is told apart from a wrong key.
        o = options(m_sshd.knownHostsPath());
        o.user = QStringLiteral("nosuchuser");
        SshTransport user(o);
        QCOMPARE(connectError(user, &message), TransportErrorKind::Auth);
        QVERIFY2(message.contains(QLatin1String("authentication refused for user nosuchuser ")), qPrintable(message));
    }

    void sftpMovesFilesInChunks() {
        SshTransport transport(options(m_sshd.knownHostsPath()));
        transport.connect();
        const QString base = m_dir.filePath(QStringLiteral("sftp"));
        transport.makeDirectories(base + QStringLiteral("/a/b"));
        QByteArray data(3 * SshTransport::kSftpChunkBytes + 12345, Qt::Uninitialized);
        for (char& c : data)
            c = static_cast<char>(QRandomGenerator::global()->generate());
        transport.writeFile(base + QStringLiteral("/a/b/blob"), data, 0600);
        QCOMPARE(transport.readWhole(base + QStringLiteral("/a/b/blob")).value(), data);
        QCOMPARE(transport.fileSize(base + QStringLiteral("/a/b/blob")).value(), data.size());
        QVERIFY(!transport.fileSize(base + QStringLiteral("/nothing")).has_value());
        QVERIFY(!transport.readWhole(base + QStringLiteral("/nothing")).has_value());
        // Replacing an existing file works (OpenSSH's plain rename would refuse).
        transport.writeFile(base + QStringLiteral("/a/b/blob"), "small");
        QCOMPARE(transport.readWhole(base + QStringLiteral("/a/b/blob")).value(), QByteArray("small"));

        const QString local = m_dir.filePath(QStringLiteral("upload.bin"));
        QFile file(local);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(data);
        file.close();
        transport.uploadFile(local, base + QStringLiteral("/uploaded"), 0755);
        QCOMPARE(transport.readWhole(base + QStringLiteral("/uploaded")).value(), data);
        QVERIFY(QFileInfo(base + QStringLiteral("/uploaded")).isExecutable());
    }

    void growingFileIsReadByOffset() {
        SshTransport transport(options(m_sshd.knownHostsPath()));
        transport.connect();
        const QString path = m_dir.filePath(QStringLiteral("growing.log"));
        QCOMPARE(transport.readFrom(path, 0, 1024), QByteArray()); // not there yet: nothing, no error
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Unbuffered));
        file.write("first\n");
        QCOMPARE(transport.readFrom(path, 0, 1024), QByteArray("first\n"));
        QCOMPARE(transport.readFrom(path, 6, 1024), QByteArray()); // at the end
        file.write("second\nthird");
        // After reaching the end once, new bytes are still seen.
        QCOMPARE(transport.readFrom(path, 6, 1024), QByteArray("second\nthird"));
        QCOMPARE(transport.readFrom(path, 13, 3), QByteArray("thi"));
    }

    void leavingGivesUpACommandThatOnlyReads() {
        SshTransport ssh(options(m_sshd.knownHostsPath()));
        ssh.connect();
        checkLeavingGivesUpOnlyReads(ssh);
        if (QTest::currentTestFailed())
            return;
        LocalTransport local;
        local.connect();
        checkLeavingGivesUpOnlyReads(local);
    }

    void homeDirectoryIsAbsolute() {
        SshTransport transport(options(m_sshd.knownHostsPath()));
        transport.connect();
        QCOMPARE(transport.homeDirectory(), QDir::homePath());
    }
};

QTEST_GUILESS_MAIN(tst_SshTransport)
#include "tst_sshtransport.moc"
