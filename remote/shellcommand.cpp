// SPDX-License-Identifier: MIT
#include "remote/shellcommand.h"

#include <QRegularExpression>
#include <stdexcept>

namespace rankscope::remote {

QString shellQuote(const QString& word) {
    // Single quotes keep everything literal except a single quote itself, which is closed,
    // escaped and reopened: it's -> 'it'\''s'.
    QString quoted = word;
    quoted.replace(QLatin1Char('\''), QLatin1String("'\\''"));
    return QLatin1Char('\'') + quoted + QLatin1Char('\'');
}

ShellCommand::ShellCommand(QString program, QStringList arguments)
    : m_program(std::move(program)), m_arguments(std::move(arguments)) {}

bool ShellCommand::isValidVariableName(const QString& name) {
    static const QRegularExpression pattern(QStringLiteral("^[A-Za-z_][A-Za-z0-9_]*$"));
    return pattern.match(name).hasMatch();
}

ShellCommand& ShellCommand::setEnvironment(const QString& name, const QString& value) {
    if (!isValidVariableName(name))
        throw std::invalid_argument("environment variable name '" + name.toStdString() + "' is not a valid name");
    m_environment.append({name, value});
    return *this;
}

ShellCommand& ShellCommand::setWorkingDirectory(const QString& directory) {
    m_workingDirectory = directory;
    return *this;
}

QString ShellCommand::toString() const {
    QStringList words;
    if (!m_workingDirectory.isEmpty())
        words << QStringLiteral("cd") << shellQuote(m_workingDirectory) << QStringLiteral("&&");
    if (!m_environment.isEmpty()) {
        words << QStringLiteral("env");
        for (const auto& [name, value] : m_environment)
            words << shellQuote(name + QLatin1Char('=') + value);
    }
    words << shellQuote(m_program);
    for (const QString& argument : m_arguments)
        words << shellQuote(argument);
    return words.join(QLatin1Char(' '));
}

} // namespace rankscope::remote
