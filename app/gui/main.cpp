// SPDX-License-Identifier: MIT
#include "runviewerwindow.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>

#include <cstdio>

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("RankScope"));
    QApplication::setOrganizationName(QStringLiteral("RankScope"));
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("RankScope: a debugger for distributed data-parallel training"));
    parser.addHelpOption();
    const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                        QStringLiteral("Render the window to a PNG file and exit."),
                                        QStringLiteral("file"));
    parser.addOption(screenshot);
    parser.addPositionalArgument(QStringLiteral("events"), QStringLiteral("Event files of one run (one per rank)."),
                                 QStringLiteral("[events...]"));
    parser.process(app);

    rankscope::gui::RunViewerWindow window;
    if (!parser.positionalArguments().isEmpty()) {
        if (const QString error = window.openEventFiles(parser.positionalArguments()); !error.isEmpty()) {
            std::fprintf(stderr, "rankscope: %s\n", qPrintable(error));
            return 2;
        }
    }
    window.show();
    if (parser.isSet(screenshot)) {
        const QString path = parser.value(screenshot);
        QTimer::singleShot(300, &window, [&window, path] {
            const bool saved = window.grab().save(path);
            QApplication::exit(saved ? 0 : 1);
        });
    }
    return QApplication::exec();
}
