// SPDX-License-Identifier: MIT
#include "remote/debugserver.h"

#include "remote/shellcommand.h"

#include <QRegularExpression>

namespace rankscope::remote {

namespace {

// A word as a person would type it: bare when it is plain, single-quoted otherwise.
QString quoteForDisplay(const QString& word) {
    static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9_@%+=:,./-]+$"));
    return plain.match(word).hasMatch() ? word : shellQuote(word);
}

} // namespace

QJsonObject DebugServer::toJson() const {
    QJsonObject object{{"rank", rank},
                       {"host", host},
                       {"address", address},
                       {"program", program},
                       {"source_dir", sourceDir},
                       {"gdb_command", gdbCommand}};
    if (!buildSourceDir.isEmpty())
        object.insert("build_source_dir", buildSourceDir);
    if (!sysroot.isEmpty())
        object.insert("sysroot", sysroot);
    return object;
}

QString gdbCommandLine(const DebugServer& server) {
    QStringList words{QStringLiteral("gdb"), QStringLiteral("-q")};
    const auto command = [&words](const QString& text) { words << QStringLiteral("-ex") << quoteForDisplay(text); };
    // Before `target remote`: that is when gdb loads the shared libraries, from the sysroot.
    if (!server.sysroot.isEmpty())
        command(QStringLiteral("set sysroot %1").arg(server.sysroot));
    if (!server.buildSourceDir.isEmpty() && server.buildSourceDir != server.sourceDir)
        command(QStringLiteral("set substitute-path %1 %2").arg(server.buildSourceDir, server.sourceDir));
    command(QStringLiteral("target remote %1").arg(server.address));
    words << quoteForDisplay(server.program);
    return words.join(QLatin1Char(' '));
}

std::optional<int> gdbserverPort(QByteArrayView line) {
    static const QRegularExpression pattern(QStringLiteral("^Listening on port (\\d+)\\s*$"));
    const QRegularExpressionMatch match = pattern.match(QString::fromUtf8(line));
    if (!match.hasMatch())
        return std::nullopt;
    bool ok = false;
    const int port = match.captured(1).toInt(&ok);
    return ok && port > 0 && port < 65536 ? std::optional<int>(port) : std::nullopt;
}

QString debugRankScript(const QString& runDir, int rank, const QString& trainer, const QStringList& arguments,
                        const QList<QPair<QString, QString>>& environment) {
    ShellCommand command(QStringLiteral("gdbserver"),
                         QStringList{QStringLiteral("--once"), QStringLiteral("--no-startup-with-shell"),
                                     QStringLiteral("127.0.0.1:0"), trainer} +
                             arguments);
    for (const auto& [name, value] : environment)
        command.setEnvironment(name, value);
    const QString err = QStringLiteral("rank%1.err").arg(rank);
    return QStringLiteral(
               "cd %1 || exit 3\n"
               "command -v gdbserver >/dev/null 2>&1 || { echo \"rankscope: gdbserver is not installed on this "
               "node (Debian: apt install gdbserver): rank %2 cannot be debugged\" >&2; exit 127; }\n"
               "%3\n"
               "s=$?\n"
               "e=$(sed -n 's/^Child exited with status \\([0-9][0-9]*\\)$/\\1/p' %4 | tail -n 1)\n"
               "k=$(sed -n 's/^Child terminated with signal = 0x\\([0-9a-fA-F][0-9a-fA-F]*\\).*/\\1/p' %4 | "
               "tail -n 1)\n"
               "[ -n \"$k\" ] && s=$((0x$k + 128))\n"
               "[ -n \"$e\" ] && s=$e\n"
               "exit \"$s\"\n")
        .arg(shellQuote(runDir), QString::number(rank), command.toString(), err); // at once: paths may hold '%'
}

} // namespace rankscope::remote
