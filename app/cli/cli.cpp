// SPDX-License-Identifier: MIT
#include "cli.h"

#include "eventscommand.h"

#include <QCommandLineParser>
#include <QTextStream>

#include <cstdio>

namespace rankscope::cli {

namespace {

const QString kEventsCommand = QStringLiteral("events");

int usageError(const QString& message) {
    QTextStream err(stderr);
    err << "rankscope-cli: " << message << "\nTry 'rankscope-cli --help'.\n";
    return kExitUsage;
}

void describeTopLevel(QCommandLineParser& parser) {
    parser.setApplicationDescription(
        QStringLiteral("Inspect distributed PyTorch training runs.\n\n"
                       "Commands:\n"
                       "  events FILE... [--json]   Summarise trainer event files (or a rank's stdout) per rank.\n\n"
                       "Exit status: 0 success, 1 some event lines could not be decoded, 2 usage error."));
    parser.addPositionalArgument(QStringLiteral("command"), QStringLiteral("The command to run: events."));
}

void describeEvents(QCommandLineParser& parser, const QCommandLineOption& jsonOption) {
    parser.clearPositionalArguments();
    parser.addPositionalArgument(kEventsCommand, QStringLiteral("Summarise trainer event files."), kEventsCommand);
    parser.addPositionalArgument(QStringLiteral("files"), QStringLiteral("Event files or rank logs to read."),
                                 QStringLiteral("FILE..."));
    parser.addOption(jsonOption);
}

} // namespace

int run(const QStringList& arguments) {
    QCommandLineParser parser;
    describeTopLevel(parser);
    const QCommandLineOption helpOption = parser.addHelpOption();
    const QCommandLineOption versionOption = parser.addVersionOption();
    const QCommandLineOption jsonOption(QStringLiteral("json"), QStringLiteral("Print one JSON object."));

    // First pass only finds the command, so that its own options can be added before the real parse.
    parser.parse(arguments);
    const QString command = parser.positionalArguments().value(0);
    if (command == kEventsCommand)
        describeEvents(parser, jsonOption);
    if (!parser.parse(arguments))
        return usageError(parser.errorText());
    if (parser.isSet(helpOption))
        parser.showHelp(kExitOk);
    if (parser.isSet(versionOption))
        parser.showVersion();

    if (command.isEmpty())
        return usageError(QStringLiteral("missing command"));
    if (command != kEventsCommand)
        return usageError(QStringLiteral("unknown command '%1'").arg(command));
    const QStringList files = parser.positionalArguments().mid(1);
    if (files.isEmpty())
        return usageError(QStringLiteral("events: missing FILE"));
    return runEventsCommand(files, parser.isSet(jsonOption) ? OutputFormat::Json : OutputFormat::Text);
}

} // namespace rankscope::cli
