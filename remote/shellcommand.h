// SPDX-License-Identifier: MIT
#pragma once

#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>

namespace rankscope::remote {

// Quotes one word for a POSIX shell so that it reaches the program literally: spaces, quotes, '$',
// ';', backticks, globs and newlines included. Remote commands always go through the login shell
// of the node (sshd runs `$SHELL -c`), so every argument, environment value and path is quoted.
QString shellQuote(const QString& word);

// A command line for a POSIX shell: environment assignments, a program and its arguments, each quoted.
class ShellCommand final {
public:
    explicit ShellCommand(QString program, QStringList arguments = {});

    ShellCommand& setEnvironment(const QString& name, const QString& value);
    ShellCommand& setWorkingDirectory(const QString& directory);

    // `cd 'dir' && env 'A=1' 'B=x y' 'program' 'arg'...`; `env` keeps a noisy login shell from
    // interpreting assignments, and fails loudly on a bad variable name instead of running something else.
    QString toString() const;

    // Names must be portable shell variable names; anything else is refused before a command is built.
    static bool isValidVariableName(const QString& name);

private:
    QString m_program;
    QStringList m_arguments;
    QList<QPair<QString, QString>> m_environment;
    QString m_workingDirectory;
};

} // namespace rankscope::remote
