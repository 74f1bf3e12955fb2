// SPDX-License-Identifier: MIT
// Every quoted word must reach the program literally through a real POSIX shell.
#include "remote/shellcommand.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using rankscope::remote::ShellCommand;

class TestShellCommand final : public QObject {
    Q_OBJECT

private:
    // Runs the command line with /bin/sh -c, as sshd does, and returns what the program printed.
    static QByteArray runInShell(const QString& commandLine) {
        QProcess shell;
        shell.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), commandLine});
        if (!shell.waitForFinished(10000))
            return "<timeout>";
        return shell.readAllStandardOutput();
    }

private Q_SLOTS:
    void argumentsReachProgramLiterally_data() {
        QTest::addColumn<QString>("argument");
        QTest::newRow("plain") << QStringLiteral("hello");
        QTest::newRow("spaces") << QStringLiteral("a b  c");
        QTest::newRow("single quote") << QStringLiteral("it's");
        QTest::newRow("double quote") << QStringLiteral("say \"hi\"");
        QTest::newRow("dollar") << QStringLiteral("$HOME ${PATH}");
        QTest::newRow("semicolon") << QStringLiteral("a; rm -rf /tmp/never");
        QTest::newRow("backticks") << QStringLiteral("`id` $(id)");
        QTest::newRow("newline") << QStringLiteral("line1\nline2");
        QTest::newRow("glob") << QStringLiteral("*.cpp ?");
        QTest::newRow("backslash") << QStringLiteral("a\\b\\'");
        QTest::newRow("empty") << QString();
        QTest::newRow("utf8") << QStringLiteral("données ранг");
    }
    void argumentsReachProgramLiterally() {
        QFETCH(QString, argument);
        const ShellCommand command(QStringLiteral("printf"), {QStringLiteral("[%s]"), argument});
        QCOMPARE(QString::fromUtf8(runInShell(command.toString())), QLatin1Char('[') + argument + QLatin1Char(']'));
    }

    void environmentValuesReachProgramLiterally() {
        const QString value = QStringLiteral("x y'z\"$HOME;`id`\nend");
        ShellCommand command(QStringLiteral("printenv"), {QStringLiteral("RS_VALUE")});
        command.setEnvironment(QStringLiteral("RS_VALUE"), value);
        QCOMPARE(QString::fromUtf8(runInShell(command.toString())), value + QLatin1Char('\n'));
    }

    void workingDirectoryWithSpecialCharacters() {
        QTemporaryDir base;
        QVERIFY(base.isValid());
        const QString dir = base.path() + QStringLiteral("/run dir 'a' $b");
        QVERIFY(QDir().mkpath(dir));
        ShellCommand command(QStringLiteral("pwd"));
        command.setWorkingDirectory(dir);
        QCOMPARE(QString::fromUtf8(runInShell(command.toString())).trimmed(), dir);
    }

    // The trainer deployed under a directory with spaces, quotes and '$' in its name still runs.
    void programPathWithSpecialCharacters() {
        QTemporaryDir base;
        QVERIFY(base.isValid());
        const QString dir = base.path() + QStringLiteral("/my runs 'a' $b");
        QVERIFY(QDir().mkpath(dir));
        const QString program = dir + QStringLiteral("/show args");
        QFile script(program);
        QVERIFY(script.open(QIODevice::WriteOnly));
        script.write("#!/bin/sh\nprintf '[%s]' \"$@\"\n");
        script.close();
        QVERIFY(script.setPermissions(script.permissions() | QFileDevice::ExeOwner));
        const ShellCommand command(program, {QStringLiteral("a b"), QStringLiteral("c")});
        QCOMPARE(runInShell(command.toString()), QByteArray("[a b][c]"));
    }

    // A working directory that cannot be entered (gone, or a typo in the job file) runs nothing: the program must
    // not start somewhere else, where it would read and write the wrong files.
    void aDirectoryThatCannotBeEnteredRunsNothing() {
        QTemporaryDir base;
        QVERIFY(base.isValid());
        const QString marker = base.path() + QStringLiteral("/ran");
        ShellCommand command(QStringLiteral("touch"), {marker});
        command.setWorkingDirectory(base.path() + QStringLiteral("/missing"));
        QProcess shell;
        shell.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), command.toString()});
        QVERIFY(shell.waitForFinished(10000));
        QVERIFY(shell.exitCode() != 0);
        QVERIFY(!QFile::exists(marker));
    }

    // Without a working directory or environment a command is its quoted words alone: no `cd ''`, whose meaning
    // POSIX leaves to each shell (dash and bash stay where they are; a login shell need not).
    void noWorkingDirectoryNoCd() {
        const ShellCommand command(QStringLiteral("printf"), {QStringLiteral("%s"), QStringLiteral("x")});
        QCOMPARE(command.toString(), QStringLiteral("'printf' '%s' 'x'"));
        QCOMPARE(runInShell(command.toString()), QByteArray("x"));
    }

    void invalidVariableNameIsRefused() {
        ShellCommand command(QStringLiteral("true"));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, command.setEnvironment(QStringLiteral("A=B; id"), {}));
        QVERIFY(!ShellCommand::isValidVariableName(QStringLiteral("1ABC")));
        QVERIFY(ShellCommand::isValidVariableName(QStringLiteral("NCCL_DEBUG")));
    }
};

QTEST_GUILESS_MAIN(TestShellCommand)
#include "tst_shellcommand.moc"
