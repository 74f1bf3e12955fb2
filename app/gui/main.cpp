// SPDX-License-Identifier: MIT
#include "logview/loginspector.h"
#include "mainwindow.h"
#include "runsession.h"
#include "runview/runview.h"
#include "runviewerwindow.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QTimer>

#include <cstdio>

using rankscope::gui::MainWindow;

namespace {

int fail(const QString& message) {
    std::fprintf(stderr, "rankscope: %s\n", qPrintable(message));
    return 2;
}

// Saves the run view and the log inspector as PNGs in `dir`, then quits.
void saveScreenshots(MainWindow* window, const QString& dir) {
    QDir().mkpath(dir);
    window->runView()->flush();
    window->showTab(MainWindow::RunTab);
    QApplication::processEvents();
    bool ok = window->grab().save(dir + QStringLiteral("/run-view.png"));
    window->showTab(MainWindow::LogsTab);
    QApplication::processEvents();
    ok = window->grab().save(dir + QStringLiteral("/log-inspector.png")) && ok;
    window->showTab(MainWindow::JobTab);
    QApplication::processEvents();
    ok = window->grab().save(dir + QStringLiteral("/job-and-cluster.png")) && ok;
    std::fprintf(stderr, "rankscope: screenshots in %s\n", qPrintable(dir));
    QApplication::exit(ok ? 0 : 1);
}

// The app's command line, described apart from the application object: `--help` needs no display.
struct CommandLine {
    QCommandLineParser parser;
    const QCommandLineOption debug{QStringLiteral("debug"), QStringLiteral("Start a debug run of the job at once.")};
    const QCommandLineOption submit{QStringLiteral("submit"), QStringLiteral("Submit the job at once.")};
    const QCommandLineOption attach{QStringLiteral("attach"), QStringLiteral("Follow a stored run."),
                                    QStringLiteral("run")};
    const QCommandLineOption open{QStringLiteral("open"), QStringLiteral("Show a stored run offline."),
                                  QStringLiteral("run")};
    const QCommandLineOption fresh{QStringLiteral("no-restore"),
                                   QStringLiteral("Do not restore the last layout and job, nor reattach.")};
    const QCommandLineOption screenshots{
        QStringLiteral("screenshots"),
        QStringLiteral("When the run ends, save the run view and log inspector as PNGs in this folder and quit."),
        QStringLiteral("dir")};
    const QCommandLineOption viewEvents{
        QStringLiteral("view-events"),
        QStringLiteral("Show event files of one run (one per rank) in the simple viewer.")};
    const QCommandLineOption bridge{QStringLiteral("bridge"),
                                    QStringLiteral("Host the IDE bridge for VS Code and Jupyter (docs/bridge.md).")};

    CommandLine() {
        parser.setApplicationDescription(
            QStringLiteral("RankScope: a debugger for distributed data-parallel training"));
        parser.addHelpOption();
        parser.addOptions({debug, submit, attach, open, fresh, screenshots, viewEvents, bridge});
        parser.addPositionalArgument(QStringLiteral("job"), QStringLiteral("A job file (JSON)."),
                                     QStringLiteral("[job]"));
    }
};

bool asksForHelp(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const QByteArrayView arg(argv[i]);
        if (arg == "-h" || arg == "-?" || arg == "--help" || arg == "--help-all")
            return true;
    }
    return false;
}

} // namespace

int main(int argc, char** argv) {
    if (asksForHelp(argc, argv)) {
        // Answered before the GUI starts, so that it works in a terminal without a display (over SSH).
        QCoreApplication core(argc, argv);
        QCoreApplication::setApplicationName(QStringLiteral("RankScope"));
        CommandLine commandLine;
        commandLine.parser.process(core); // prints the help and exits
        return 0;
    }
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("RankScope"));
    QApplication::setOrganizationName(QStringLiteral("RankScope"));
    CommandLine cl;
    QCommandLineParser& parser = cl.parser;
    parser.process(app);

    if (parser.isSet(cl.viewEvents)) {
        auto* viewer = new rankscope::gui::RunViewerWindow;
        viewer->setAttribute(Qt::WA_DeleteOnClose);
        if (const QString error = viewer->openEventFiles(parser.positionalArguments()); !error.isEmpty())
            return fail(error);
        viewer->show();
        return QApplication::exec();
    }

    MainWindow::Options options;
    options.restoreState = !parser.isSet(cl.fresh) && !parser.isSet(cl.screenshots);
    MainWindow window(options);
    window.resize(1440, 900);
    QString error;
    if (!parser.positionalArguments().isEmpty() && !window.openJob(parser.positionalArguments().front(), &error))
        return fail(error);
    window.show();
    if (parser.isSet(cl.bridge) && !window.setBridgeHosted(true, &error))
        return fail(error);

    bool started = true;
    if (parser.isSet(cl.debug))
        started = window.debugRun(&error);
    else if (parser.isSet(cl.submit))
        started = window.submitRun(&error);
    else if (parser.isSet(cl.attach))
        started = window.attachRun(parser.value(cl.attach), &error);
    else if (parser.isSet(cl.open))
        started = window.openStoredRun(parser.value(cl.open), &error);
    if (!started)
        return fail(error);

    if (parser.isSet(cl.screenshots)) {
        const QString dir = parser.value(cl.screenshots);
        if (window.session()->isActive())
            QObject::connect(window.session(), &rankscope::gui::RunSession::finished, &window,
                             [&window, dir] { QTimer::singleShot(500, &window, [&window, dir] { saveScreenshots(&window, dir); }); });
        else
            QTimer::singleShot(500, &window, [&window, dir] { saveScreenshots(&window, dir); });
    }
    return QApplication::exec();
}
