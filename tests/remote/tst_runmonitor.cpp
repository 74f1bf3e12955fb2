// SPDX-License-Identifier: MIT
// What `rankscope-cli run` and `attach` print (the CLI's RunMonitor), fed through a real RunEngine's signals as the
// engine emits them while it follows a run: every rank's line and the state word after it (the app's grid's verdict),
// the news lines, the end's table, findings and exit code. The engine holds a stored run (open()), so that ranks have
// their nodes' hosts; nothing is launched. It takes about 30 s, all but milliseconds of it one function's waits for
// the 10 s reports into a file. The real runs that print all this are tst_cli_remote's and tst_diagnostics_e2e's.
#include "runmonitor.h"

#include "cli.h"
#include "core/runstore.h"
#include "core/stacks.h"
#include "remote/runengine.h"

#include <QElapsedTimer>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <cstdio>
#include <cstdlib>

using namespace rankscope;
using rankscope::cli::RunMonitor;

namespace {

const QString kRunId = QStringLiteral("20261207-120000-abcd");
const QString kLaunchingId = QStringLiteral("20261207-120500-ef01"); // the same run, still launching

TrainerEvent decoded(const QString& json) {
    const TrainerEventResult result = decodeTrainerEvent(QByteArrayView(json.toUtf8()));
    if (!result.ok())
        qFatal("bad test event: %s", qPrintable(result.error));
    return *result.event;
}

// Two epochs of 10 steps; `totalSteps` below 20 is a max_steps cap.
TrainerEvent start(int rank, int totalSteps = 20) {
    return decoded(QStringLiteral(R"({"v":"1.0","type":"start","rank":%1,"time":100,"world_size":3,"local_rank":0,)"
                                  R"("local_world_size":1,"host":"vm","pid":7,"backend":"gloo","device":"cpu",)"
                                  R"("torch_version":"1.13","steps_per_epoch":10,"total_steps":%2,)"
                                  R"("config":{"epochs":2}})")
                       .arg(rank)
                       .arg(totalSteps));
}

TrainerEvent step(int rank, int epoch, int step, double loss = 0.25, double imagesPerSec = 812.4) {
    return decoded(QStringLiteral(R"({"v":"1.0","type":"step","rank":%1,"time":%2,"epoch":%3,"step":%4,)"
                                  R"("loss":%5,"lr":0.1,"images_per_sec":%6,"step_ms":10,"data_ms":1,)"
                                  R"("forward_ms":2,"backward_ms":3,"comm_wait_ms":3,"optimizer_ms":1})")
                       .arg(rank)
                       .arg(100 + step)
                       .arg(epoch)
                       .arg(step)
                       .arg(loss)
                       .arg(imagesPerSec));
}

TrainerEvent error(int rank, const char* kind, const char* message, bool fatal = true) {
    return decoded(
        QStringLiteral(R"({"v":"1.0","type":"error","rank":%1,"time":130,"kind":"%2","message":"%3",)"
                       R"("fatal":%4})")
            .arg(rank)
            .arg(QLatin1String(kind), QLatin1String(message), fatal ? QLatin1String("true") : QLatin1String("false")));
}

TrainerEvent end(int rank, const char* status) {
    return decoded(QStringLiteral(R"({"v":"1.0","type":"end","rank":%1,"time":140,"status":"%2","steps":20,)"
                                  R"("images_per_sec":790.4,"wall_s":41.5,"param_checksum":12.5})")
                       .arg(rank)
                       .arg(QLatin1String(status)));
}

Diagnosis finding(DiagnosisKind kind, const QString& key, QVector<int> ranks, const QString& message) {
    Diagnosis diagnosis;
    diagnosis.kind = kind;
    diagnosis.key = key;
    diagnosis.ranks = std::move(ranks);
    diagnosis.host = QStringLiteral("node-a");
    diagnosis.time = 120.0;
    diagnosis.message = message;
    return diagnosis;
}

// The bar of `filled` of 20 cells.
QString bar(int filled) {
    return QString(filled, QChar(0x2588)) + QString(20 - filled, QChar(0x2591));
}

// Everything the monitor wrote, in memory.
class Captured {
public:
    Captured() : m_file(open_memstream(&m_buffer, &m_size)) {}
    ~Captured() {
        std::fclose(m_file);
        std::free(m_buffer);
    }
    Captured(const Captured&) = delete;
    Captured& operator=(const Captured&) = delete;

    [[nodiscard]] FILE* file() const { return m_file; }
    // What was written since the last call.
    QString take() {
        std::fflush(m_file);
        const QString text = QString::fromUtf8(m_buffer + m_taken, qsizetype(m_size - m_taken));
        m_taken = m_size;
        return text;
    }

private:
    char* m_buffer = nullptr;
    size_t m_size = 0;
    size_t m_taken = 0;
    FILE* m_file;
};

// Lines without the time the monitor puts before each piece of news ("12:34:56 ").
QStringList untimed(const QString& text) {
    static const QRegularExpression time(QStringLiteral("^\\d\\d:\\d\\d:\\d\\d "));
    QStringList lines = text.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    for (QString& line : lines) {
        if (!time.match(line).hasMatch())
            qFatal("no time before: %s", qPrintable(line));
        line.remove(0, 9);
    }
    return lines;
}

} // namespace

class TestRunMonitor final : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<RunStore> m_store;

    // A stored run of three ranks: 0 and 1 on node-a, 2 on a node whose name is longer than the host column.
    RunRecord record() const {
        RunRecord record;
        record.id = kRunId;
        record.name = QStringLiteral("monitor");
        record.mode = QStringLiteral("submit");
        record.state = QStringLiteral("running");
        record.created = QDateTime::currentDateTimeUtc();
        record.worldSize = 3;
        record.nodes = {
            {QStringLiteral("a"), QStringLiteral("node-a"), false, QStringLiteral("/tmp/run"), {0, 1}},
            {QStringLiteral("b"), QStringLiteral("gpu-node-seventeen"), false, QStringLiteral("/tmp/run"), {2}}};
        return record;
    }

    // An engine that holds the stored run, as a live one holds the run it launched.
    std::unique_ptr<remote::RunEngine> engine() {
        auto engine = std::make_unique<remote::RunEngine>(m_store.get(), remote::EngineOptions{});
        QString error;
        if (!engine->open(kRunId, &error))
            qFatal("open: %s", qPrintable(error));
        return engine;
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_store = std::make_unique<RunStore>(m_dir.path());
        QVERIFY(m_store->save(record()));
        RunRecord launching = record();
        launching.id = kLaunchingId;
        launching.state = QStringLiteral("launching");
        QVERIFY(m_store->save(launching));
    }

    // A rank's line: its place in the run as a bar and a percentage of its steps, the epoch and step, its loss and
    // speed, hosts padded to the widest; "starting" until its start event.
    void aRanksLineSaysWhereItIs() {
        const auto engine = this->engine();
        Captured out;
        RunMonitor monitor(engine.get(), false, out.file());
        QCOMPARE(monitor.rankLine(0, 6), QStringLiteral("rank   0 node-a  starting"));
        QCOMPARE(monitor.rankLine(2, 20), QStringLiteral("rank   2 gpu-node-seventeen    starting"));
        emit engine->events({start(0), start(1), step(0, 1, 5), step(0, 2, 15, 0.123456, 812.6)});
        QCOMPARE(monitor.rankLine(0, 6),
                 QStringLiteral("rank   0 node-a %1  75%  epoch 2/2 step 5/10  loss 0.1235  813 img/s").arg(bar(15)));
        // Started, no step yet: no place in its epochs to show (it read "epoch 0/2 step 10/10").
        QCOMPARE(monitor.rankLine(1, 8), QStringLiteral("rank   1 node-a    starting"));
        // max_steps ends the run before its epochs: progress against the cap, the step counted across epochs (11 of 15
        // is 14.7 cells of 20: 15).
        emit engine->events({start(2, 15), step(2, 2, 11)});
        QCOMPARE(monitor.rankLine(2, 18),
                 QStringLiteral(
                     "rank   2 gpu-node-seventeen %1  73%  step 11/15 (max_steps)  epoch 2/2  loss 0.2500  812 img/s")
                     .arg(bar(15)));
        QCOMPARE(out.take(), QString()); // nothing said yet: no news, and the bars are drawn on a terminal only
    }

    // After the progress comes the rank's state as the app's grid shows it: the findings' hung, slow and diverged,
    // failed, lost, done; a rank the user's stop ended says "stopped", not FAILED, though it said it was terminated.
    void aRanksLineEndsWithItsState() {
        const auto engine = this->engine();
        Captured out;
        RunMonitor monitor(engine.get(), false, out.file());
        emit engine->events({start(0), start(1), start(2), step(0, 1, 2), step(1, 1, 2), step(2, 1, 2)});
        for (int rank = 0; rank < 3; ++rank)
            QVERIFY2(monitor.rankLine(rank, 18).endsWith(QLatin1String("812 img/s")),
                     qPrintable(monitor.rankLine(rank, 18)));

        emit engine->diagnoses({finding(DiagnosisKind::Straggler, QStringLiteral("straggler:2"), {2},
                                        QStringLiteral("rank 2 on gpu-node-seventeen is a straggler"))});
        QVERIFY2(monitor.rankLine(2, 18).endsWith(QLatin1String("812 img/s  slow")),
                 qPrintable(monitor.rankLine(2, 18)));
        Diagnosis hang = finding(DiagnosisKind::Hang, QStringLiteral("hang:9"), {1, 0, 2},
                                 QStringLiteral("rank 1 on node-a stuck at step 3"));
        emit engine->diagnoses({hang});
        QVERIFY2(monitor.rankLine(1, 6).endsWith(QLatin1String("img/s  HUNG")), qPrintable(monitor.rankLine(1, 6)));
        QVERIFY2(monitor.rankLine(0, 6).endsWith(QLatin1String("img/s")), qPrintable(monitor.rankLine(0, 6)));
        hang.resolved = true; // it moved on
        emit engine->diagnoses({hang});
        QVERIFY2(monitor.rankLine(1, 6).endsWith(QLatin1String("img/s")), qPrintable(monitor.rankLine(1, 6)));
        emit engine->diagnoses({finding(DiagnosisKind::Divergence, QStringLiteral("divergence"), {0},
                                        QStringLiteral("rank 0's replica differs"))});
        QVERIFY2(monitor.rankLine(0, 6).endsWith(QLatin1String("img/s  DIVERGED")), qPrintable(monitor.rankLine(0, 6)));

        // The user's stop: each rank says it was told to stop, which waits for its exit to be judged.
        emit engine->events({error(1, "terminated", "SIGTERM received at step 3 in phase forward")});
        QVERIFY2(monitor.rankLine(1, 6).endsWith(QLatin1String("img/s")), qPrintable(monitor.rankLine(1, 6)));
        emit engine->rankExited(1, QStringLiteral("node-a"), 143, true);
        QVERIFY2(monitor.rankLine(1, 6).endsWith(QLatin1String("img/s  stopped")), qPrintable(monitor.rankLine(1, 6)));
        // Ended by someone else's SIGTERM, it failed; the engine may judge that end its teardown's afterwards.
        emit engine->events({error(2, "terminated", "SIGTERM received at step 3 in phase forward")});
        emit engine->rankExited(2, QStringLiteral("gpu-node-seventeen"), 143, false);
        QVERIFY2(monitor.rankLine(2, 18).endsWith(QLatin1String("img/s  FAILED")), qPrintable(monitor.rankLine(2, 18)));
        emit engine->rankExitJudged(2, QStringLiteral("gpu-node-seventeen"), 143, true);
        QVERIFY2(monitor.rankLine(2, 18).endsWith(QLatin1String("img/s  stopped")),
                 qPrintable(monitor.rankLine(2, 18)));
    }

    void aRanksEndIsItsLastWord() {
        const auto engine = this->engine();
        Captured out;
        RunMonitor monitor(engine.get(), false, out.file());
        emit engine->events({start(0), start(1), step(0, 2, 20), step(1, 1, 4), end(0, "ok")});
        QVERIFY2(monitor.rankLine(0, 6).endsWith(QLatin1String("img/s  done")), qPrintable(monitor.rankLine(0, 6)));
        emit engine->events({error(1, "collective", "Connection closed by peer")});
        QVERIFY2(monitor.rankLine(1, 6).endsWith(QLatin1String("img/s  FAILED")), qPrintable(monitor.rankLine(1, 6)));
        // A rank that never started: failed, or lost with its node, before its first step.
        emit engine->rankExited(2, QStringLiteral("gpu-node-seventeen"), kLostExitStatus, false);
        QCOMPARE(monitor.rankLine(2, 18), QStringLiteral("rank   2 gpu-node-seventeen  LOST"));
    }

    // What happens is said as it happens, each line with the time: node messages, a rank's error in its words, a
    // rank that ended otherwise than well, findings (a root cause with what its rank said last), the teardown.
    void newsIsSaidAsItHappens() {
        const auto engine = this->engine();
        Captured out;
        RunMonitor monitor(engine.get(), false, out.file());
        emit engine->nodeProgress(0, QStringLiteral("node-a"), QStringLiteral("deploying to /tmp/run"));
        emit engine->launched(kRunId);
        emit engine->events({start(0), step(0, 1, 1), error(0, "collective", "Connection closed by peer")});
        emit engine->rankExited(0, QStringLiteral("node-a"), 1, false);
        emit engine->rankExited(1, QStringLiteral("node-a"), 0, false); // a clean end is no news
        // A rank sent SIGTERM says where it was, which is no error of its own; its exit says who ended it.
        emit engine->events({error(2, "terminated", "SIGTERM received at step 1 in phase forward")});
        emit engine->rankExited(2, QStringLiteral("gpu-node-seventeen"), 143, true);
        // A finding without last lines has no block under it (untimed() would stop at one).
        emit engine->diagnoses({finding(DiagnosisKind::Straggler, QStringLiteral("straggler:2"), {2},
                                        QStringLiteral("rank 2 on gpu-node-seventeen is a straggler"))});
        // Rank 1 failed alike after rank 0: the block is the first culprit's.
        Diagnosis cause = finding(DiagnosisKind::RootCause, QStringLiteral("root-cause"), {0, 1},
                                  QStringLiteral("rank 0 on node-a failed first: exit status 1"));
        cause.lastLines = {{RankStream::Out, QStringLiteral("epoch 1/2 step 1/10 loss 2.3"), 0.0},
                           {RankStream::Err, QStringLiteral("Traceback (most recent call last):"), 0.0},
                           {RankStream::Err, QStringLiteral("RuntimeError: Connection closed by peer"), 0.0}};
        emit engine->diagnoses({cause});
        emit engine->linkLost(1, QStringLiteral("gpu-node-seventeen"), QStringLiteral("timed out"));
        emit engine->linkRestored(1, QStringLiteral("gpu-node-seventeen"));
        emit engine->gpuTelemetryError(0, QStringLiteral("node-a"), QStringLiteral("nvidia-smi: not found"));
        emit engine->stacksError(QStringLiteral("no stacks from any rank"));
        emit engine->stopped(0);
        emit engine->stopped(2);
        emit engine->stopped(-1);
        const QString text = out.take();
        QCOMPARE(untimed(text.section(QLatin1String("  rank 0 said last"), 0, 0)),
                 QStringList({
                     QStringLiteral("[node-a] deploying to /tmp/run"),
                     QStringLiteral("run %1 started on every node").arg(kRunId),
                     QStringLiteral("rank 0 error (collective): Connection closed by peer"),
                     QStringLiteral("rank 0 on node-a ended: exit 1"),
                     QStringLiteral("rank 2 told to stop: SIGTERM received at step 1 in phase forward"),
                     QStringLiteral("rank 2 on gpu-node-seventeen stopped: SIGTERM"),
                     QStringLiteral("diagnosis: straggler: rank 2 on gpu-node-seventeen is a straggler"),
                     QStringLiteral("diagnosis: root-cause: rank 0 on node-a failed first: exit status 1"),
                 }));
        QVERIFY2(text.contains(QStringLiteral("exit status 1\n"
                                              "  rank 0 said last (rankscope-cli logs %1 --rank 0):\n"
                                              "    [out] epoch 1/2 step 1/10 loss 2.3\n"
                                              "    [err] Traceback (most recent call last):\n"
                                              "    [err] RuntimeError: Connection closed by peer\n")
                                   .arg(kRunId)),
                 qPrintable(text));
        QCOMPARE(untimed(text.section(QLatin1String("RuntimeError: Connection closed by peer\n"), 1)),
                 QStringList({
                     QStringLiteral("[gpu-node-seventeen] link lost (timed out); the run goes on, reconnecting"),
                     QStringLiteral("[gpu-node-seventeen] reconnected, catching up"),
                     QStringLiteral("[node-a] gpu: nvidia-smi: not found"),
                     QStringLiteral("stacks: no stacks from any rank"),
                     QStringLiteral("teardown verified: no process of the run is left on any node"),
                     QStringLiteral("teardown: 2 process group(s) still alive"),
                     QStringLiteral("teardown could not be verified on every node"),
                 }));
    }

    // A capture's merged stacks of the main threads, with where the whole capture was saved and how many helper
    // threads it holds besides; the address and gdb command line of a rank under gdbserver, bare, to paste.
    void stacksAndTheDebuggerAreSaid() {
        const auto engine = this->engine();
        Captured out;
        RunMonitor monitor(engine.get(), false, out.file());
        const ProcessStacks stacks =
            parseGdbStacks("Thread 2 (Thread 0x7f02 (LWP 12) \"gloo\"):\n"
                           "#0  0x00007f in gloo::transport::tcp::Loop::run () from /lib/libgloo.so\n"
                           "\n"
                           "Thread 1 (Thread 0x7f01 (LWP 11) \"rankscope-train\"):\n"
                           "#0  0x00007f in c10d::Work::wait () from /lib/libtorch.so\n"
                           "#1  0x000055 in main () at main.cpp:49\n");
        StackTree tree;
        tree.addRank(0, stacks);
        tree.addRank(1, stacks);
        QVERIFY(!tree.isEmpty());
        QCOMPARE(tree.helperThreads(), 2);
        emit engine->stacksCaptured(tree, QStringLiteral("/runs/x/stacks.json"));
        const QString text = out.take();
        QVERIFY2(text.mid(9).startsWith(
                     QStringLiteral("stacks of every rank's main thread, merged (saved to /runs/x/stacks.json):\n") +
                     tree.render(true)),
                 qPrintable(text));
        QVERIFY2(!text.contains(QLatin1String("Loop::run")), qPrintable(text)); // a helper thread's frame
        QCOMPARE(
            untimed(text.section(QLatin1Char('\n'), -2)),
            QStringList({QStringLiteral("the ranks' 2 other threads as well: rankscope-cli stacks %1").arg(kRunId)}));
        ProcessStacks mainOnly;
        mainOnly.threads = {stacks.threads.constLast()};
        StackTree one;
        one.addRank(0, mainOnly);
        emit engine->stacksCaptured(one, QString());
        QCOMPARE(out.take().mid(9), QStringLiteral("stacks of every rank's main thread, merged:\n") + one.render(true));
        emit engine->stacksCaptured(StackTree{}, QString()); // said by stacksError
        QCOMPARE(out.take(), QString());

        remote::DebugServer server;
        server.rank = 1;
        server.host = QStringLiteral("node-a");
        server.address = QStringLiteral("127.0.0.1:40123");
        server.gdbCommand = QStringLiteral("gdb -q -ex 'target remote 127.0.0.1:40123' /opt/rankscope-trainer");
        emit engine->debugServerReady(server);
        emit engine->debugServerError(QStringLiteral("gdbserver is not installed on node-a"));
        const QString debug = out.take();
        QCOMPARE(debug.section(QLatin1Char('\n'), 0, 0).mid(9),
                 QStringLiteral("rank 1 on node-a waits for a debugger at 127.0.0.1:40123; attach with:"));
        QCOMPARE(debug.section(QLatin1Char('\n'), 1, 1), QStringLiteral("  ") + server.gdbCommand);
        QCOMPARE(debug.section(QLatin1Char('\n'), 2, 2).mid(9),
                 QStringLiteral("debugger: gdbserver is not installed on node-a"));
    }

    // Into a file, the ranks' lines come every 10 s (not with every piece of news), and not again while nothing in
    // them moved: a rank stuck for an hour is one report, not 360.
    void inAFileTheLinesComeEveryTenSecondsWhenTheyMoved() {
        const auto engine = this->engine();
        Captured out;
        RunMonitor monitor(engine.get(), false, out.file());
        emit engine->events({start(0), start(1), start(2), step(0, 1, 2), step(1, 1, 2), step(2, 1, 2)});
        emit engine->nodeProgress(0, QStringLiteral("node-a"), QStringLiteral("news"));
        QCOMPARE(untimed(out.take()), QStringList({QStringLiteral("[node-a] news")}));
        QElapsedTimer waited;
        waited.start();
        QString report;
        QTRY_VERIFY_WITH_TIMEOUT(!(report += out.take()).isEmpty(), 13000); // += : QTRY evaluates it once more
        QVERIFY2(waited.elapsed() >= 9500, qPrintable(QString::number(waited.elapsed())));
        QString lines;
        for (int rank = 0; rank < 3; ++rank)
            lines += monitor.rankLine(rank, 18) + QLatin1Char('\n');
        QCOMPARE(report, lines);
        QTest::qWait(12000); // another report's time (10 s, on a timer of 1 s): nothing moved
        QCOMPARE(out.take(), QString());
        emit engine->events({step(0, 1, 3)});
        report.clear();
        QTRY_VERIFY_WITH_TIMEOUT(!(report += out.take()).isEmpty(), 13000); // 10 s on a timer of 1 s
        QVERIFY2(report.startsWith(monitor.rankLine(0, 18) + QLatin1Char('\n')), qPrintable(report));
        QVERIFY2(report.contains(QLatin1String("step 3/10")), qPrintable(report));
    }

    // A finding the trainer reports as an error event at every check (a divergence) is said once, as the finding.
    void aDivergenceIsSaidAsItsFindingOnly() {
        const auto engine = this->engine();
        Captured out;
        RunMonitor monitor(engine.get(), false, out.file());
        emit engine->events({decoded(QStringLiteral(
            R"({"v":"1.1","type":"error","rank":1,"time":130,"kind":"replica_divergence","message":"params differ",)"
            R"("fatal":false,"step":10,"checksum":1.5})"))});
        QCOMPARE(out.take(), QString());
        emit engine->events({error(1, "dataloader", "worker died", false)});
        QCOMPARE(untimed(out.take()), QStringList({QStringLiteral("rank 1 error (dataloader): worker died")}));
    }

    // attach first replays what the store holds: it fills the lines (and the states), but errors and exits that
    // happened before are not news.
    void aReplayFillsTheLinesWithoutNews() {
        const auto engine = this->engine();
        Captured out;
        RunMonitor monitor(engine.get(), false, out.file());
        monitor.setReplaying(true);
        emit engine->events({start(0), step(0, 1, 3), error(0, "collective", "Connection closed by peer")});
        emit engine->rankExited(0, QStringLiteral("node-a"), 1, false);
        QCOMPARE(out.take(), QString());
        QVERIFY2(monitor.rankLine(0, 6).endsWith(QLatin1String("img/s  FAILED")), qPrintable(monitor.rankLine(0, 6)));
        monitor.setReplaying(false);
        emit engine->rankExited(1, QStringLiteral("node-a"), 137, false);
        QCOMPARE(untimed(out.take()), QStringList({QStringLiteral("rank 1 on node-a ended: SIGKILL")}));
    }

    // On a terminal the lines are drawn under the news and redrawn in place: each piece of news first takes the
    // bars away (cursor up over them, erase), then draws them again below it.
    void onATerminalTheBarsStayUnderTheNews() {
        const auto engine = this->engine();
        Captured out;
        RunMonitor monitor(engine.get(), true, out.file());
        emit engine->events({start(0), start(1), start(2), step(0, 1, 2), step(1, 1, 2), step(2, 1, 2)});
        emit engine->nodeProgress(0, QStringLiteral("node-a"), QStringLiteral("first"));
        const QString lines = monitor.rankLine(0, 18) + QStringLiteral("\x1b[K\n") + monitor.rankLine(1, 18) +
                              QStringLiteral("\x1b[K\n") + monitor.rankLine(2, 18) + QStringLiteral("\x1b[K\n");
        QString text = out.take();
        QVERIFY2(text.endsWith(QStringLiteral(" [node-a] first\n") + lines), qPrintable(text));
        emit engine->nodeProgress(0, QStringLiteral("node-a"), QStringLiteral("second"));
        text = out.take();
        QVERIFY2(text.startsWith(QStringLiteral("\x1b[3A\x1b[J")), qPrintable(text));
        QVERIFY2(text.endsWith(QStringLiteral(" [node-a] second\n") + lines), qPrintable(text));

        // While the run is launched (deploying) the node messages say what happens: no bars yet.
        const auto launching = std::make_unique<remote::RunEngine>(m_store.get(), remote::EngineOptions{});
        QString error;
        QVERIFY2(launching->open(kLaunchingId, &error), qPrintable(error));
        RunMonitor early(launching.get(), true, out.file());
        emit launching->events({start(0), step(0, 1, 2)});
        emit launching->nodeProgress(0, QStringLiteral("node-a"), QStringLiteral("deploying to /tmp/run"));
        QCOMPARE(untimed(out.take()), QStringList({QStringLiteral("[node-a] deploying to /tmp/run")}));
    }

    // At the end: a table of every rank (its final loss, accuracy, speed, time and how it ended), the run's summary
    // line unless a finding says it and more, the findings that still stand, where the logs are; the exit code.
    void theEndSumsUpTheRun() {
        const auto engine = this->engine();
        Captured out;
        RunMonitor monitor(engine.get(), false, out.file());
        QSignalSpy done(&monitor, &RunMonitor::done);
        emit engine->events({start(0), start(1), start(2), step(0, 1, 4, 0.5), step(1, 1, 4, 0.75), end(0, "ok")});
        const Diagnosis straggler = finding(DiagnosisKind::Straggler, QStringLiteral("straggler:2"), {2},
                                            QStringLiteral("rank 2 on gpu-node-seventeen is a straggler"));
        Diagnosis resolved = finding(DiagnosisKind::Straggler, QStringLiteral("straggler:0"), {0},
                                     QStringLiteral("rank 0 on node-a is a straggler"));
        resolved.resolved = true;
        const Diagnosis cause = finding(DiagnosisKind::RootCause, QStringLiteral("root-cause"), {1},
                                        QStringLiteral("rank 1 on node-a failed first: exit status 1; it said: boom"));
        emit engine->diagnoses({straggler, resolved, cause});
        out.take();
        RunRecord ended = record();
        ended.state = QStringLiteral("failed");
        ended.exits.insert(0, RankExit{0, {}});
        ended.exits.insert(1, RankExit{1, {}});
        ended.exits.insert(2, RankExit{143, {}, true});
        ended.worldSize = 4; // rank 3: no node, no event, no exit recorded
        ended.summary = QStringLiteral("rank 1 on node-a failed first: exit status 1");
        emit engine->finished(ended);
        QCOMPARE(done.size(), 1);
        QCOMPARE(done.front().front().toInt(), int(cli::kExitRunFailed));
        QCOMPARE(monitor.exitCode(), int(cli::kExitRunFailed));
        QCOMPARE(out.take(),
                 QStringLiteral("\nrun %1: failed\n"
                                "  rank  host                final loss  val acc  img/s  wall s  exit\n"
                                "     0  node-a                  0.5000        -  790.4    41.5  exit 0\n"
                                "     1  node-a                  0.7500        -      -       -  exit 1\n"
                                "     2  gpu-node-seventeen           -        -      -       -  SIGTERM, stopped\n"
                                "     3                               -        -      -       -  ?\n"
                                "findings:\n"
                                "  straggler: rank 2 on gpu-node-seventeen is a straggler\n"
                                "  root-cause: rank 1 on node-a failed first: exit status 1; it said: boom\n"
                                "logs: rankscope-cli logs %1 [--rank R]\n")
                     .arg(kRunId));
    }

    // The summary line where no finding says it; a finding it already says is not repeated; a finished run is 0.
    void theSummaryLineStandsWhereNoFindingSaysMore() {
        const auto engine = this->engine();
        Captured out;
        RunMonitor monitor(engine.get(), false, out.file());
        emit engine->diagnoses({finding(DiagnosisKind::Hang, QStringLiteral("hang:4"), {1},
                                        QStringLiteral("rank 1 on node-a stuck at step 4"))});
        out.take();
        RunRecord ended = record();
        ended.state = QStringLiteral("stopped");
        ended.summary = QStringLiteral("stopped by the user");
        emit engine->finished(ended);
        QCOMPARE(monitor.exitCode(), int(cli::kExitRunFailed));
        const QString text = out.take();
        QVERIFY2(text.contains(
                     QLatin1String("\nstopped by the user\nfindings:\n  hang: rank 1 on node-a stuck at step 4\n")),
                 qPrintable(text));

        const auto again = this->engine();
        RunMonitor second(again.get(), false, out.file());
        emit again->diagnoses(
            {finding(DiagnosisKind::Network, QStringLiteral("network"), {0}, QStringLiteral("NCCL chose lo"))});
        out.take();
        ended.state = QStringLiteral("finished");
        ended.summary = QStringLiteral("finished; NCCL chose lo");
        emit again->finished(ended);
        QCOMPARE(second.exitCode(), int(cli::kExitOk));
        const QString finished = out.take();
        QVERIFY2(finished.contains(QLatin1String("\nfinished; NCCL chose lo\nlogs: ")), qPrintable(finished));
        QVERIFY2(!finished.contains(QLatin1String("findings:")), qPrintable(finished));

        // A resolved finding that would say the summary and more does not stand in for it: it is not listed.
        const auto third = this->engine();
        RunMonitor monitor3(third.get(), false, out.file());
        Diagnosis moved = finding(DiagnosisKind::Hang, QStringLiteral("hang:7"), {1},
                                  QStringLiteral("stopped by the user; then it moved on"));
        moved.resolved = true;
        emit third->diagnoses({moved});
        out.take();
        ended.state = QStringLiteral("stopped");
        ended.summary = QStringLiteral("stopped by the user");
        emit third->finished(ended);
        const QString stopped = out.take();
        QVERIFY2(stopped.contains(QLatin1String("\nstopped by the user\nlogs: ")), qPrintable(stopped));
    }
};

QTEST_GUILESS_MAIN(TestRunMonitor)
#include "tst_runmonitor.moc"
