// SPDX-License-Identifier: MIT
// Password authentication through the callback, against a private sshd that accepts passwords, with an
// account made for the test (root only; skipped otherwise) and removed afterwards.
#include "fixtures/sshdfixture.h"
#include "remote/sshtransport.h"

#include <QCoreApplication>
#include <QRandomGenerator>
#include <QTest>

#include <unistd.h>

using namespace rankscope::remote;
using rankscope::test::runCommand;
using rankscope::test::SshdFixture;

class tst_SshPassword final : public QObject {
    Q_OBJECT

private:
    SshOptions options() const {
        SshOptions o;
        o.host = m_sshd.host();
        o.port = m_sshd.port();
        o.user = m_user;
        o.knownHostsPath = m_sshd.knownHostsPath();
        o.sshConfigPath = QStringLiteral("none");
        o.connectTimeout = std::chrono::seconds(5);
        return o;
    }

    SshdFixture m_sshd;
    QString m_user;
    QString m_password;

private slots:
    void initTestCase() {
        if (geteuid() != 0)
            QSKIP("needs root: the test creates an account with a password");
        m_user = QStringLiteral("rspw%1").arg(QCoreApplication::applicationPid());
        m_password = QStringLiteral("pw '%1' $x;`y`").arg(QRandomGenerator::system()->generate(), 0, 16);
        runCommand(QStringLiteral("userdel"), {m_user}); // a leftover of a crashed run
        const auto added = runCommand(QStringLiteral("useradd"),
                                      {QStringLiteral("-M"), QStringLiteral("-d"), QStringLiteral("/nonexistent"),
                                       QStringLiteral("-s"), QStringLiteral("/bin/sh"), m_user});
        if (!added.succeeded())
            QSKIP(qPrintable(QStringLiteral("cannot create an account: %1").arg(added.describe())));
        const auto set = runCommand(QStringLiteral("chpasswd"), {}, 10000, (m_user + ':' + m_password + '\n').toUtf8());
        QVERIFY2(set.succeeded(), qPrintable(set.describe()));
        m_sshd.setPasswordAuthentication(true);
        QString error;
        QVERIFY2(m_sshd.start(&error), qPrintable(error));
        qunsetenv("SSH_AUTH_SOCK"); // the password must be what logs in
    }

    void cleanupTestCase() {
        m_sshd.stop();
        if (!m_user.isEmpty())
            runCommand(QStringLiteral("userdel"), {m_user});
    }

    void passwordFromTheCallbackLogsIn() {
        SshOptions o = options();
        int asked = 0;
        QString prompt;
        o.password = [&](const QString& text) -> std::optional<QString> {
            ++asked;
            prompt = text;
            return m_password;
        };
        SshTransport transport(o);
        transport.connect();
        QCOMPARE(asked, 1);
        QVERIFY2(prompt.contains(m_user + QLatin1Char('@') + m_sshd.host()), qPrintable(prompt)); // who is asked for
        QCOMPARE(transport.exec(QStringLiteral("id -un")).out, (m_user + '\n').toUtf8());
    }

    void wrongPasswordIsRefusedAndNeverShown() {
        SshOptions o = options();
        o.password = [](const QString&) -> std::optional<QString> { return QStringLiteral("not-the-password-123"); };
        SshTransport transport(o);
        try {
            transport.connect();
            QFAIL("a wrong password logged in");
        } catch (const TransportError& error) {
            QCOMPARE(error.kind(), TransportErrorKind::Auth);
            QVERIFY(error.message().contains(QLatin1String("password")));
            QVERIFY(!error.message().contains(QLatin1String("not-the-password-123")));
            QVERIFY(!QString::fromUtf8(error.what()).contains(QLatin1String("not-the-password-123")));
        }
    }

    void noCallbackMeansNoPasswordAttempt() {
        SshTransport transport(options()); // no key, no agent, no callback
        try {
            transport.connect();
            QFAIL("logged in without any credential");
        } catch (const TransportError& error) {
            QCOMPARE(error.kind(), TransportErrorKind::Auth);
        }
    }
};

QTEST_GUILESS_MAIN(tst_SshPassword)
#include "tst_sshpassword.moc"
