// SPDX-License-Identifier: MIT
#include "cli.h"

#include "bridgecommand.h"
#include "checkcommand.h"
#include "eventscommand.h"
#include "inspectcommand.h"
#include "runcommands.h"

#include <QCommandLineParser>
#include <QTextStream>

#include <cstdio>

namespace rankscope::cli {

namespace {

struct Command {
    QString name;
    QString synopsis;
    QString description;
};

const QList<Command>& commands() {
    static const QList<Command> list = {
        {"check", "check JOB [--mode debug|submit] [--json]",
         "Pre-flight every node of a job: reachability, OS, disk, GPUs, LibTorch, master port, network interfaces."},
        {"run", "run JOB [--mode debug|submit] [--detach | --debug-rank R]",
         "Deploy and launch a job, show per-rank progress, summarise at the end. --debug-rank R starts rank R "
         "under gdbserver and prints the address and a gdb command line to attach with."},
        {"attach", "attach RUN", "Reattach to a run (after a dropped link or from another terminal)."},
        {"stacks", "stacks RUN [--json]",
         "Native stacks of every rank of a running run (gdb), merged into one tree, saved with the run."},
        {"stop", "stop RUN", "Stop a run on every node (SIGTERM, then SIGKILL) and verify nothing is left."},
        {"runs", "runs [--json]", "List stored runs."},
        {"logs", "logs RUN [--rank R] [--stream out|err|events|all] [--follow]", "Print a run's logs."},
        {"events", "events FILE... [--json]", "Summarise trainer event files (or a rank's stdout) per rank."},
        {"diagnose", "diagnose RUN [--json]",
         "What went wrong in a stored run: root cause, hangs, stragglers, diverged replicas."},
        {"bridge", "bridge [--port P]",
         "Serve the engine to editors and notebooks: JSON-RPC over WebSocket on 127.0.0.1, behind a token in a "
         "connection file only you can read (docs/bridge.md)."},
        {"inspect", "inspect FILE... [--json]",
         "Parse any log files (- reads standard input, a folder every file under it): NCCL setup and warnings, "
         "watchdog timeouts, torchrun failures, errors."},
    };
    return list;
}

int usageError(const QString& message) {
    QTextStream err(stderr);
    err << "rankscope-cli: " << message << "\nTry 'rankscope-cli --help'.\n";
    return kExitUsage;
}

QString topLevelDescription() {
    QString text = QStringLiteral("Launch, follow and inspect distributed PyTorch training runs.\n\nCommands:\n");
    for (const Command& command : commands())
        text += QStringLiteral("  %1\n      %2\n").arg(command.synopsis, command.description);
    text += QStringLiteral("\nRUN is a run id, a unique prefix of one, or 'latest'. Runs are stored in "
                           "$RANKSCOPE_HOME (default ~/.local/share/rankscope).\n"
                           "Exit status: 0 success, 1 a rank failed or the run was stopped (or event lines "
                           "could not be decoded, or a node failed its check), 2 usage error, 3 invalid job "
                           "file, 4 a node could not be reached or prepared.");
    return text;
}

} // namespace

int run(const QStringList& arguments) {
    QCommandLineParser parser;
    parser.setApplicationDescription(topLevelDescription());
    const QCommandLineOption helpOption = parser.addHelpOption();
    const QCommandLineOption versionOption = parser.addVersionOption();
    const QCommandLineOption json(QStringLiteral("json"), QStringLiteral("Print JSON."));
    const QCommandLineOption mode(QStringLiteral("mode"), QStringLiteral("debug or submit (default: the job's)."),
                                  QStringLiteral("MODE"));
    const QCommandLineOption detach(QStringLiteral("detach"), QStringLiteral("Return once every rank started."));
    const QCommandLineOption debugRank(QStringLiteral("debug-rank"),
                                       QStringLiteral("Start rank R under gdbserver; print how to attach gdb."),
                                       QStringLiteral("R"));
    const QCommandLineOption rank(QStringLiteral("rank"), QStringLiteral("Only this rank."), QStringLiteral("R"));
    const QCommandLineOption stream(
        QStringLiteral("stream"),
        QStringLiteral("out, err, events, all, or a list such as out,events (default out,err)."),
        QStringLiteral("STREAM"), QStringLiteral("out,err"));
    const QCommandLineOption followOption(QStringLiteral("follow"), QStringLiteral("Keep printing new lines."));
    const QCommandLineOption knownHosts(QStringLiteral("known-hosts"),
                                        QStringLiteral("known_hosts file (default ~/.ssh/known_hosts)."),
                                        QStringLiteral("FILE"));
    const QCommandLineOption sshConfig(QStringLiteral("ssh-config"),
                                       QStringLiteral("ssh config file (default ~/.ssh/config; 'none')."),
                                       QStringLiteral("FILE"));
    const QCommandLineOption acceptNew(QStringLiteral("accept-new-host-keys"),
                                       QStringLiteral("Trust hosts not yet in known_hosts and add them (a changed "
                                                      "key is still refused)."));
    parser.addPositionalArgument(QStringLiteral("command"), QStringLiteral("The command to run."));

    parser.parse(arguments);
    const QString command = parser.positionalArguments().value(0);
    const QCommandLineOption portOption(QStringLiteral("port"), QStringLiteral("Port on 127.0.0.1 (default: any)."),
                                        QStringLiteral("P"), QStringLiteral("0"));
    const QStringList connectionCommands = {"check", "run", "attach", "stop", "logs", "stacks", "bridge"};
    if (connectionCommands.contains(command))
        parser.addOptions({knownHosts, sshConfig, acceptNew});
    if (command == QLatin1String("check") || command == QLatin1String("runs") || command == QLatin1String("events") ||
        command == QLatin1String("inspect") || command == QLatin1String("diagnose") || command == QLatin1String("stacks"))
        parser.addOption(json);
    if (command == QLatin1String("run"))
        parser.addOptions({mode, detach, debugRank});
    if (command == QLatin1String("check"))
        parser.addOption(mode);
    if (command == QLatin1String("bridge"))
        parser.addOption(portOption);
    if (command == QLatin1String("logs"))
        parser.addOptions({rank, stream, followOption});
    if (!parser.parse(arguments))
        return usageError(parser.errorText());
    if (parser.isSet(helpOption))
        parser.showHelp(kExitOk);
    if (parser.isSet(versionOption))
        parser.showVersion();
    if (command.isEmpty())
        return usageError(QStringLiteral("missing command"));

    const QStringList rest = parser.positionalArguments().mid(1);
    ConnectionFlags flags;
    if (connectionCommands.contains(command)) {
        flags.knownHosts = parser.value(knownHosts);
        flags.sshConfig = parser.value(sshConfig);
        flags.acceptNewHostKeys = parser.isSet(acceptNew);
    }
    const auto needOne = [&](const QString& what) -> std::optional<int> {
        if (rest.size() != 1)
            return usageError(QStringLiteral("%1: expected one %2").arg(command, what));
        return std::nullopt;
    };
    if (command == QLatin1String("events")) {
        if (rest.isEmpty())
            return usageError(QStringLiteral("events: missing FILE"));
        return runEventsCommand(rest, parser.isSet(json) ? OutputFormat::Json : OutputFormat::Text);
    }
    if (command == QLatin1String("inspect")) {
        if (rest.isEmpty())
            return usageError(QStringLiteral("inspect: missing FILE"));
        return runInspectCommand(rest, parser.isSet(json));
    }
    if (command == QLatin1String("diagnose")) {
        if (auto error = needOne(QStringLiteral("RUN")))
            return *error;
        return runDiagnoseCommand(rest.front(), parser.isSet(json));
    }
    if (command == QLatin1String("stacks")) {
        if (auto error = needOne(QStringLiteral("RUN")))
            return *error;
        return runStacksCommand(rest.front(), parser.isSet(json), flags);
    }
    if (command == QLatin1String("check")) {
        if (auto error = needOne(QStringLiteral("JOB")))
            return *error;
        return runCheckCommand(rest.front(), parser.value(mode), parser.isSet(json), flags);
    }
    if (command == QLatin1String("run")) {
        if (auto error = needOne(QStringLiteral("JOB")))
            return *error;
        std::optional<int> rankToDebug;
        if (parser.isSet(debugRank)) {
            bool ok = false;
            rankToDebug = parser.value(debugRank).toInt(&ok);
            if (!ok || *rankToDebug < 0)
                return usageError(
                    QStringLiteral("run: --debug-rank must be a rank number, not '%1'").arg(parser.value(debugRank)));
            if (parser.isSet(detach))
                return usageError(QStringLiteral("run: --debug-rank needs the run followed (its SSH forward ends "
                                                 "with the command): leave out --detach"));
        }
        return runRunCommand(rest.front(), parser.value(mode), parser.isSet(detach), flags, rankToDebug);
    }
    if (command == QLatin1String("attach") || command == QLatin1String("stop")) {
        if (auto error = needOne(QStringLiteral("RUN")))
            return *error;
        return command == QLatin1String("attach") ? runAttachCommand(rest.front(), flags)
                                                  : runStopCommand(rest.front(), flags);
    }
    if (command == QLatin1String("runs"))
        return runRunsCommand(parser.isSet(json));
    if (command == QLatin1String("bridge")) {
        if (!rest.isEmpty())
            return usageError(QStringLiteral("bridge: unexpected argument '%1'").arg(rest.front()));
        bool ok = false;
        const uint port = parser.value(portOption).toUInt(&ok);
        if (!ok || port > 65535)
            return usageError(QStringLiteral("bridge: --port must be 0-65535"));
        return runBridgeCommand(static_cast<quint16>(port), flags);
    }
    if (command == QLatin1String("logs")) {
        if (auto error = needOne(QStringLiteral("RUN")))
            return *error;
        std::optional<int> rankNumber;
        if (parser.isSet(rank)) {
            bool ok = false;
            rankNumber = parser.value(rank).toInt(&ok);
            if (!ok)
                return usageError(QStringLiteral("logs: --rank must be a number"));
        }
        return runLogsCommand(rest.front(), rankNumber, parser.value(stream), parser.isSet(followOption), flags);
    }
    return usageError(QStringLiteral("unknown command '%1'").arg(command));
}

} // namespace rankscope::cli
