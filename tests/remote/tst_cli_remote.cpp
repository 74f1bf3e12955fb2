// SPDX-License-Identifier: MIT
// rankscope-cli's remote commands as a user types them, against a private sshd on loopback: run, attach, runs,
// logs, stop, Ctrl-C in each, a failing rank, a bad job file, a ~/.ssh/config alias; and runs, logs, diagnose and
// stacks over stored runs alone.
#include "enginetestutil.h"
#include "fixtures/sshdfixture.h"

#include <QProcess>
#include <QRegularExpression>
#include <QScopeGuard>
#include <QTemporaryDir>

#include <algorithm>
#include <csignal>

using namespace rankscope;
using namespace rankscope::test;

namespace {

struct CliResult {
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

} // namespace

class tst_CliRemote final : public QObject {
    Q_OBJECT

private:
    // This machine's environment, with the test's own run store (`home`, by default the one its runs share).
    QProcessEnvironment cliEnvironment(const QString& home = {}) const {
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("RANKSCOPE_HOME"),
                           home.isEmpty() ? m_dir.filePath(QStringLiteral("home")) : home);
        return environment;
    }
    CliResult cli(const QStringList& arguments, int timeoutMs = 120000, const QString& home = {}) const {
        QProcess process;
        process.setProcessEnvironment(cliEnvironment(home));
        process.start(QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-cli"), arguments);
        if (!process.waitForFinished(timeoutMs)) {
            process.kill();
            process.waitForFinished();
        }
        return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1, process.readAllStandardOutput(),
                process.readAllStandardError()};
    }
    QStringList connection() const {
        return {QStringLiteral("--known-hosts"), m_sshd.knownHostsPath(), QStringLiteral("--ssh-config"), m_sshConfig};
    }
    // `moreNodes` follow the loopback node.
    QString writeJob(const QString& name, const QJsonObject& trainer, const QString& host = {},
                     const QJsonArray& moreNodes = {}) const {
        const QString workDir = m_dir.filePath(QStringLiteral("work"));
        const QJsonObject node =
            host.isEmpty() ? m_sshd.nodeJson(QStringLiteral("loop"), workDir, 2)
                           : QJsonObject{{"name", "loop"}, {"host", host}, {"work_dir", workDir}, {"procs", 2}};
        QJsonArray nodes{node};
        for (const QJsonValue& more : moreNodes)
            nodes.append(more);
        const QJsonObject job{{"version", 1},
                              {"name", name},
                              {"mode", "submit"},
                              {"deploy", "binary"},
                              {"master_port", freePort()},
                              {"nodes", nodes},
                              {"trainer", trainer}};
        const QString path = m_dir.filePath(name + QStringLiteral(".json"));
        QFile file(path);
        file.open(QIODevice::WriteOnly);
        file.write(QJsonDocument(job).toJson());
        return path;
    }
    // `rankscope-cli logs ID --rank 0 --stream err,events --follow`, started in `follow`.
    void followRank0(QProcess& follow, const QString& id) const {
        follow.setProcessEnvironment(cliEnvironment());
        follow.start(QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-cli"),
                     QStringList{QStringLiteral("logs"), id, QStringLiteral("--rank"), QStringLiteral("0"),
                                 QStringLiteral("--stream"), QStringLiteral("err,events"), QStringLiteral("--follow")} +
                         connection());
    }
    // The final loss in rank 0's row of a run's final table; empty when there is no such row.
    QByteArray rank0Loss(const QByteArray& table) const {
        for (const QByteArray& line : table.split('\n')) {
            const QByteArrayList cells = line.simplified().split(' ');
            if (cells.size() >= 4 && cells[0] == "0" && cells[1] == m_sshd.host().toUtf8())
                return cells[2];
        }
        return {};
    }
    // `rankscope-cli run` of a long job (1000 epochs, rank 0 slowed by `slowMs` a step) in `run`, given a Ctrl-C 2 s
    // after its ranks started: its pid in `pid` (a run that already ended has none, and kill(0, …) would interrupt
    // this test's whole process group, ctest's), what it printed in `output`.
    void interruptLongRun(QProcess& run, const QString& name, int slowMs, QByteArray& output, qint64& pid) const {
        run.setProcessEnvironment(cliEnvironment());
        run.setProcessChannelMode(QProcess::MergedChannels);
        run.start(
            QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-cli"),
            QStringList{QStringLiteral("run"),
                        writeJob(name, trainer(0, QJsonArray{"--slow-ms", QString::number(slowMs), "--slow-rank", "0"},
                                               1000))} +
                connection());
        QTRY_VERIFY_WITH_TIMEOUT((output += run.readAll()).contains("started on every node"), 60000);
        QTest::qWait(2000);
        pid = run.processId();
        QVERIFY2(pid > 0 && run.state() == QProcess::Running, (output + run.readAll()).constData());
        ::kill(static_cast<pid_t>(pid), SIGINT);
    }
    // `rankscope-cli run JOB --detach` of a job named `name` that hangs rank 0 at step 3: its run's id, or empty
    // (with what the CLI said in `said`) when it did not start.
    QString startDetachedHang(const QString& name, QByteArray* said) const {
        const CliResult started =
            cli(QStringList{QStringLiteral("run"),
                            writeJob(name, trainer(0, QJsonArray{"--hang-at-step", "3", "--hang-rank", "0"}, 1000)),
                            QStringLiteral("--detach")} +
                connection());
        *said = started.out + started.err;
        if (started.exitCode != 0)
            return {};
        for (const RunRecord& record : RunStore(m_dir.filePath(QStringLiteral("home"))).list())
            if (record.name == name)
                return record.id;
        return {};
    }
    static QJsonObject trainer(int steps, const QJsonArray& extra = {}, int epochs = 1) {
        return QJsonObject{{"dataset", "synthetic"}, {"model", "mlp"},    {"epochs", epochs},   {"max_steps", steps},
                           {"batch_size", 16},       {"backend", "gloo"}, {"extra_args", extra}};
    }

    SshdFixture m_sshd;
    QTemporaryDir m_dir;
    QString m_sshConfig;

private slots:
    // A failed check must not leave its run behind: end every process started from this test's directory.
    void cleanupTestCase() { QProcess::execute(QStringLiteral("pkill"), {QStringLiteral("-f"), m_dir.path()}); }

    void initTestCase() {
        QString error;
        QVERIFY2(m_sshd.start(&error), qPrintable(error));
        m_sshConfig = m_dir.filePath(QStringLiteral("ssh_config"));
        QFile config(m_sshConfig);
        QVERIFY(config.open(QIODevice::WriteOnly));
        config.write(
            QStringLiteral(
                "Host rs-alias-of-a-node-with-a-long-name\n  HostName %1\n  Port %2\n  User %3\n  IdentityFile %4\n")
                .arg(m_sshd.host())
                .arg(m_sshd.port())
                .arg(m_sshd.userName(), m_sshd.userKeyPath())
                .toUtf8());
    }

    void badJobIsRejectedWithItsPaths() {
        const QString path = m_dir.filePath(QStringLiteral("bad.json"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(R"({"version": 1, "nodes": [{"host": "a", "port": 70000}, {"port": "x"}],
                       "trainer": {"model": "gpt"}})");
        file.close();
        const CliResult result = cli({QStringLiteral("run"), path});
        QCOMPARE(result.exitCode, 3);
        QVERIFY2(result.err.contains("nodes[0].port: must be 1-65535"), result.err.constData());
        QVERIFY2(result.err.contains("nodes[1].host"), result.err.constData());
        QVERIFY2(result.err.contains("nodes[1].port"), result.err.constData());
        QVERIFY2(result.err.contains("trainer.model"), result.err.constData());
        // Each problem under the file's name, as a compiler says it.
        for (const QByteArray& line : result.err.trimmed().split('\n'))
            QVERIFY2(line.startsWith(path.toUtf8() + ": "), result.err.constData());
        const CliResult sideways =
            cli({QStringLiteral("run"), path, QStringLiteral("--mode"), QStringLiteral("sideways")});
        QCOMPARE(sideways.exitCode, 2);
        QVERIFY2(sideways.err.contains("--mode must be debug or submit, not 'sideways'"), sideways.err.constData());
        // The job is checked for the mode asked for: a local debug job, whole as such, has no node to submit to.
        const QString local = m_dir.filePath(QStringLiteral("local-debug.json"));
        QFile localFile(local);
        QVERIFY(localFile.open(QIODevice::WriteOnly));
        localFile.write(QJsonDocument(QJsonObject{{"version", 1},
                                                  {"name", "local-debug"},
                                                  {"mode", "debug"},
                                                  {"trainer", trainer(2)},
                                                  {"debug", QJsonObject{{"node", "local"}, {"procs", 1}}}})
                            .toJson());
        localFile.close();
        const CliResult submitted =
            cli({QStringLiteral("run"), local, QStringLiteral("--mode"), QStringLiteral("submit")});
        QCOMPARE(submitted.exitCode, 3);
        QVERIFY2(submitted.err.contains(local.toUtf8() + ": nodes: at least one node is required"),
                 submitted.err.constData());
    }

    // A launch the engine refuses before it reaches any node is a launch failure (exit status 4), said as such.
    void aLaunchRefusedBeforeAnyNodeIsExitStatus4() {
        const CliResult result =
            cli(QStringList{QStringLiteral("run"),
                            writeJob(QStringLiteral("blank"), trainer(4, QJsonArray{"--data-dir", "/tmp/a b"})),
                            QStringLiteral("--debug-rank"), QStringLiteral("0")} +
                connection());
        QCOMPARE(result.exitCode, 4);
        QVERIFY2(result.err.startsWith("rankscope-cli run: debug rank 0: gdbserver cannot hand the trainer an "
                                       "argument with a blank in it: '/tmp/a b'"),
                 result.err.constData());
    }

    // A launch that fails on several nodes names each of them, not only the first to fail: that one's failure in
    // full, the others by host and kind. The node that could be reached is left with nothing running.
    void launchFailureNamesEveryNodeThatFailed() {
        const QString workDir = m_dir.filePath(QStringLiteral("work"));
        QJsonArray typos;
        for (const char* host : {"no-such-node-a.invalid", "no-such-node-b.invalid"})
            typos.append(QJsonObject{{"host", host}, {"work_dir", workDir}, {"procs", 1}});
        const CliResult result =
            cli(QStringList{QStringLiteral("run"), writeJob(QStringLiteral("typos"), trainer(4), {}, typos)} +
                connection());
        QVERIFY2(result.exitCode == 4, (result.out + result.err).constData());
        const QByteArray last = result.err.trimmed().split('\n').last();
        QVERIFY2(last.startsWith("rankscope-cli run: no-such-node-"), result.err.constData());
        QVERIFY2(last.contains("(dns); also failed: no-such-node-"), result.err.constData());
        QVERIFY2(last.contains("no-such-node-a.invalid") && last.contains("no-such-node-b.invalid"),
                 result.err.constData());
        QVERIFY2(result.out.contains("teardown verified: no process of the run is left on any node"),
                 result.out.constData());
    }

    void runThroughAnSshConfigAliasShowsProgressAndSummary() {
        const CliResult result =
            cli(QStringList{QStringLiteral("run"),
                            writeJob(QStringLiteral("alias"), trainer(8, {"--slow-ms", "100", "--slow-rank", "1"}),
                                     QStringLiteral("rs-alias-of-a-node-with-a-long-name"))} +
                connection());
        QVERIFY2(result.exitCode == 0, (result.out + result.err).constData());
        QVERIFY2(result.out.contains("finished"), result.out.constData());
        // The summary's columns are as wide as their cells: the long host name does not push a rank's final loss
        // out from under its heading (both end in the same column).
        const QByteArrayList lines = result.out.split('\n');
        const auto header = std::find_if(lines.cbegin(), lines.cend(),
                                         [](const QByteArray& line) { return line.contains("final loss"); });
        QVERIFY2(header != lines.cend(), result.out.constData());
        const qsizetype lossEnd = header->indexOf("final loss") + qsizetype(sizeof("final loss") - 1);
        int rows = 0;
        for (auto line = header + 1; line != lines.cend() && line->contains("rs-alias-of-a-node-with-a-long-name");
             ++line, ++rows) {
            const QByteArrayList cells = line->simplified().split(' ');
            QVERIFY2(cells.size() >= 3, line->constData());
            const qsizetype at = line->indexOf(" " + cells[2] + " ", line->indexOf(cells[1]) + cells[1].size() - 1);
            QVERIFY2(at > 0 && at + 1 + cells[2].size() == lossEnd, result.out.constData());
        }
        QCOMPARE(rows, 2);
        const CliResult runs = cli({QStringLiteral("runs")});
        QVERIFY(runs.out.contains("alias"));
        QVERIFY(runs.out.contains("finished"));
        // Stopping it now stops nothing and leaves its record as it ended.
        const CliResult late = cli(QStringList{QStringLiteral("stop"), QStringLiteral("latest")} + connection());
        QVERIFY2(late.exitCode == 0, (late.out + late.err).constData());
        QVERIFY2(late.out.contains("has already ended (finished): nothing to stop"), late.out.constData());
        QCOMPARE(cli({QStringLiteral("runs")}).out, runs.out);
        // Its logs: stdout and stderr unless told otherwise (a Gloo rank writes its progress on stderr).
        const CliResult logs =
            cli({QStringLiteral("logs"), QStringLiteral("latest"), QStringLiteral("--rank"), QStringLiteral("1")});
        QCOMPARE(logs.exitCode, 0);
        QVERIFY2(logs.out.contains("[rank 1 err] [rank 1] epoch 1/1 step"), logs.out.constData());
        QVERIFY2(logs.err.isEmpty(), logs.err.constData());
        // Every rank's: interleaved as the lines arrived, each rank's whole and in its own order.
        const CliResult merged = cli({QStringLiteral("logs"), QStringLiteral("latest")});
        QCOMPARE(merged.exitCode, 0);
        RunStore store(m_dir.filePath(QStringLiteral("home")));
        const QString id = store.resolveId(QStringLiteral("latest"));
        QHash<int, QByteArray> shownErr;
        qsizetype firstOf1 = -1;
        qsizetype lastOf0 = -1;
        const QByteArrayList mergedLines = merged.out.split('\n');
        for (qsizetype i = 0; i < mergedLines.size(); ++i)
            for (int r = 0; r < 2; ++r)
                if (mergedLines[i].startsWith(QStringLiteral("[rank %1 err] ").arg(r).toUtf8())) {
                    shownErr[r] += mergedLines[i].mid(13) + '\n';
                    if (r == 1 && firstOf1 < 0)
                        firstOf1 = i;
                    if (r == 0)
                        lastOf0 = i;
                }
        for (int r = 0; r < 2; ++r)
            QCOMPARE(shownErr[r], readAll(store.streamPath(id, r, RankStream::Err)));
        QVERIFY2(firstOf1 >= 0 && firstOf1 < lastOf0, merged.out.constData());
        const CliResult events = cli({QStringLiteral("logs"), QStringLiteral("latest"), QStringLiteral("--rank"),
                                      QStringLiteral("1"), QStringLiteral("--stream"), QStringLiteral("events,err")});
        QVERIFY2(events.out.contains("[rank 1 events] @rankscope {") && events.out.contains("[rank 1 err] "),
                 events.out.constData());
        const CliResult bad = cli({QStringLiteral("logs"), QStringLiteral("latest"), QStringLiteral("--stream"),
                                   QStringLiteral("out,stdout")});
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains("--stream stdout: each must be out, err, events or all"), bad.err.constData());
        // --follow of a run that has ended catches up from the node, then returns by itself.
        const CliResult followed = cli(
            QStringList{QStringLiteral("logs"), QStringLiteral("latest"), QStringLiteral("--rank"), QStringLiteral("1"),
                        QStringLiteral("--stream"), QStringLiteral("err"), QStringLiteral("--follow")} +
                connection(),
            60000);
        QVERIFY2(followed.exitCode == 0, (followed.out + followed.err).constData());
        QVERIFY2(followed.out.startsWith(readAll(store.streamPath(id, 1, RankStream::Err))),
                 followed.out.constData()); // one rank and one stream: its lines as they are, none left out
    }

    // `logs` and `runs` over stored runs alone (no node to reach), in a store of this test's own: each line whole
    // and under its own rank and stream, a last line with no newline, and a word for each answer with nothing in it.
    void logsAndRunsOfStoredRunsSayWhatTheyHold() {
        const QString home = m_dir.filePath(QStringLiteral("stored"));
        const auto inStore = [&](const QStringList& arguments) { return cli(arguments, 60000, home); };
        const CliResult empty = inStore({QStringLiteral("runs")});
        QCOMPARE(empty.exitCode, 0);
        QVERIFY2(empty.out.endsWith("(no runs in " + home.toUtf8() + ")\n"), empty.out.constData());

        RunStore store(home);
        RunRecord record;
        record.id = store.newRunId();
        record.name = QStringLiteral("a-run-whose-name-is-long");
        record.mode = QStringLiteral("debug");
        record.state = QStringLiteral("finished");
        record.created = QDateTime::currentDateTimeUtc().addSecs(-60);
        record.ended = QDateTime::currentDateTimeUtc();
        record.worldSize = 3;
        record.summary = QStringLiteral("the stored summary");
        QVERIFY(store.save(record));
        double arrived = 1.0e9;
        const auto append = [&](int rank, RankStream stream, QByteArrayView bytes) {
            QVERIFY(store.appendStream(record.id, rank, stream, store.streamSize(record.id, rank, stream), bytes,
                                       nullptr, nullptr, arrived += 1.0));
        };
        // Rank 0: a line on stdout cut in two by one on stderr, and a last line with no newline; rank 1: a line on
        // stdout and one in its events file; rank 2: nothing.
        append(0, RankStream::Out, "first hal");
        append(0, RankStream::Err, "an error line\n");
        append(0, RankStream::Out, "f\nlast words");
        append(1, RankStream::Out, "rank one\n");
        append(1, RankStream::Events, "@rankscope {\"v\":1}\n");

        const CliResult rank0 =
            inStore({QStringLiteral("logs"), record.id, QStringLiteral("--rank"), QStringLiteral("0")});
        QCOMPARE(rank0.exitCode, 0);
        QCOMPARE(rank0.out,
                 QByteArray("[rank 0 err] an error line\n[rank 0 out] first half\n[rank 0 out] last words\n"));
        QVERIFY2(rank0.err.isEmpty(), rank0.err.constData());
        // One stream of one rank, however it is named: the bytes as stored, once, with nothing added.
        const CliResult out0 = inStore({QStringLiteral("logs"), record.id, QStringLiteral("--rank"),
                                        QStringLiteral("0"), QStringLiteral("--stream"), QStringLiteral("out,out")});
        QCOMPARE(out0.out, QByteArray("first half\nlast words"));
        const CliResult all1 = inStore({QStringLiteral("logs"), record.id, QStringLiteral("--rank"),
                                        QStringLiteral("1"), QStringLiteral("--stream"), QStringLiteral("all")});
        QCOMPARE(all1.exitCode, 0);
        QCOMPARE(all1.out, QByteArray("[rank 1 out] rank one\n[rank 1 events] @rankscope {\"v\":1}\n"));
        const CliResult silent =
            inStore({QStringLiteral("logs"), record.id, QStringLiteral("--rank"), QStringLiteral("2")});
        QCOMPARE(silent.exitCode, 0);
        QVERIFY2(silent.out.isEmpty(), silent.out.constData());
        QVERIFY2(silent.err.contains(QStringLiteral("run %1: nothing in out,err of rank 2").arg(record.id).toUtf8()),
                 silent.err.constData());
        const CliResult beyond =
            inStore({QStringLiteral("logs"), record.id, QStringLiteral("--rank"), QStringLiteral("3")});
        QCOMPARE(beyond.exitCode, 2);
        QVERIFY2(beyond.err.contains(QStringLiteral("--rank 3: run %1 has ranks 0-2").arg(record.id).toUtf8()),
                 beyond.err.constData());

        // The listing: a long name cut to its column, the rest in theirs; in JSON, the record as stored.
        const QByteArrayList listed = inStore({QStringLiteral("runs")}).out.split('\n');
        QCOMPARE(listed.value(1), (record.id.leftJustified(21) + QStringLiteral(" a-run-whose-name-is- debug   "
                                                                                "finished      3 the stored summary"))
                                      .toUtf8());
        const CliResult json = inStore({QStringLiteral("runs"), QStringLiteral("--json")});
        QCOMPARE(json.exitCode, 0);
        const QJsonArray runs = QJsonDocument::fromJson(json.out).array();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(runs[0].toObject().value(QStringLiteral("id")).toString(), record.id);
        QCOMPARE(runs[0].toObject().value(QStringLiteral("name")).toString(), record.name);

        // Nothing to diagnose in it, and no stacks to show: each said so.
        const CliResult diagnosed = inStore({QStringLiteral("diagnose"), record.id});
        QCOMPARE(diagnosed.exitCode, 0);
        QCOMPARE(diagnosed.out,
                 QStringLiteral("run %1: nothing to report (no failure, hang, straggler or divergence)\n")
                     .arg(record.id)
                     .toUtf8());
        const CliResult stacks = inStore({QStringLiteral("stacks"), record.id});
        QCOMPARE(stacks.exitCode, 1);
        QVERIFY2(stacks.err.contains(QStringLiteral("run %1 has ended (finished): no process to take stacks of, and "
                                                    "none were saved")
                                         .arg(record.id)
                                         .toUtf8()),
                 stacks.err.constData());
    }

    // Into a file, the progress block every 10 s and the final table line up across host names of different
    // lengths: the loopback node by its address (2 ranks) and a second node through the long alias (1 rank).
    void progressAndSummaryLineUpAcrossHosts() {
        const QString alias = QStringLiteral("rs-alias-of-a-node-with-a-long-name");
        const QJsonArray second{QJsonObject{
            {"name", "far"}, {"host", alias}, {"work_dir", m_dir.filePath(QStringLiteral("work2"))}, {"procs", 1}}};
        // Long enough for at least one progress block (10 s after the launch).
        const CliResult result =
            cli(QStringList{QStringLiteral("run"),
                            writeJob(QStringLiteral("two-hosts"), trainer(40, {"--slow-ms", "400", "--slow-rank", "2"}),
                                     {}, second)} +
                connection());
        QVERIFY2(result.exitCode == 0, (result.out + result.err).constData());
        const QByteArrayList lines = result.out.split('\n');
        // Where each progress line's bar (or "starting") begins: after "rank   N HOST ".
        int blocks = 0;
        for (qsizetype i = 0; i + 2 < lines.size(); ++i) {
            if (!lines[i].startsWith("rank   0 "))
                continue;
            ++blocks;
            QList<qsizetype> columns;
            for (int rank = 0; rank < 3; ++rank) {
                const QByteArray& line = lines[i + rank];
                QVERIFY2(line.startsWith(QStringLiteral("rank   %1 ").arg(rank).toUtf8()), result.out.constData());
                const QByteArray host = rank < 2 ? m_sshd.host().toUtf8() : alias.toUtf8();
                QVERIFY2(line.mid(9).startsWith(host + ' '), result.out.constData());
                qsizetype at = 9 + host.size();
                while (at < line.size() && line[at] == ' ')
                    ++at;
                columns.append(at);
            }
            QVERIFY2(columns[0] == columns[1] && columns[1] == columns[2], result.out.constData());
            QCOMPARE(columns[0], qsizetype(9 + alias.size() + 1));
        }
        QVERIFY2(blocks >= 1, result.out.constData());
        // The final table: each rank's final loss ends under its heading, whatever its host's length.
        const auto header = std::find_if(lines.cbegin(), lines.cend(),
                                         [](const QByteArray& line) { return line.contains("final loss"); });
        QVERIFY2(header != lines.cend(), result.out.constData());
        const qsizetype lossEnd = header->indexOf("final loss") + qsizetype(sizeof("final loss") - 1);
        for (int rank = 0; rank < 3; ++rank) {
            const QByteArray& line = *(header + 1 + rank);
            const QByteArrayList cells = line.simplified().split(' ');
            QVERIFY2(cells.size() >= 3 && cells[0] == QByteArray::number(rank), result.out.constData());
            const qsizetype at = line.indexOf(" " + cells[2] + " ", line.indexOf(cells[1]) + cells[1].size() - 1);
            QVERIFY2(at > 0 && at + 1 + cells[2].size() == lossEnd, result.out.constData());
        }
    }

    // A node that cannot be reached is exit status 4, not a rank's failure (1), with the host and the cause.
    void unreachableNodeIsExitStatus4() {
        const QString path = writeJob(QStringLiteral("unreachable"), trainer(4), QStringLiteral("127.0.0.1"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadWrite));
        QJsonObject job = QJsonDocument::fromJson(file.readAll()).object();
        QJsonArray nodes = job.value("nodes").toArray();
        QJsonObject node = nodes.first().toObject();
        node.insert("port", 1); // nothing listens there
        nodes[0] = node;
        job.insert("nodes", nodes);
        file.resize(0);
        file.write(QJsonDocument(job).toJson());
        file.close();
        const CliResult result = cli(QStringList{QStringLiteral("run"), path} + connection());
        QCOMPARE(result.exitCode, 4);
        QVERIFY2(result.err.contains("127.0.0.1") && result.err.contains("refused"), result.err.constData());
    }

    void failingRankIsNamedWithHostAndStatus() {
        const CliResult result =
            cli(QStringList{QStringLiteral("run"),
                            writeJob(QStringLiteral("failing"),
                                     trainer(50, QJsonArray{"--fail-at-step", "3", "--fail-rank", "1"}))} +
                connection());
        QCOMPARE(result.exitCode, 1);
        QVERIFY2(result.err.contains("rank 1 on " + m_sshd.host().toUtf8() + " failed first: exit status"),
                 result.err.constData());
        // Under the root cause as it is found: what rank 1 said last, over SSH into the store, its error last.
        const QByteArray said = "rank 1 said last (rankscope-cli logs ";
        const qsizetype block = result.out.indexOf(said);
        QVERIFY2(block > result.out.indexOf("diagnosis: root-cause: rank 1 on ") &&
                     result.out.indexOf("    [err] [rank 1] error: injected failure at step 3 (--fail-at-step)\n",
                                        block) > block,
                 result.out.constData());
        // The summary's exit column: rank 1 failed; rank 0, ended by its node's supervisor or in its collective with
        // rank 1, was stopped by that failure.
        const QString out = QString::fromUtf8(result.out);
        QVERIFY2(QRegularExpression(QStringLiteral("\\n +1  \\S+ .* exit 1\\n")).match(out).hasMatch(),
                 qPrintable(out));
        QVERIFY2(
            QRegularExpression(QStringLiteral("\\n +0  \\S+ .* (exit 1|SIGTERM), stopped\\n")).match(out).hasMatch(),
            qPrintable(out));
    }

    void ctrlCStopsTheRunOnTheNodes() {
        QProcess run;
        QByteArray output;
        qint64 pid = 0;
        interruptLongRun(run, QStringLiteral("interrupted"), 50, output, pid);
        if (QTest::currentTestFailed())
            return;
        QVERIFY(run.waitForFinished(60000));
        output += run.readAll();
        QVERIFY2(run.exitCode() == 1, output.constData());
        QVERIFY2(output.contains("no process of the run is left"), output.constData());
        RunStore store(m_dir.filePath(QStringLiteral("home")));
        const RunRecord record = store.list().value(0);
        QCOMPARE(record.name, QStringLiteral("interrupted"));
        QCOMPARE(record.state, QStringLiteral("stopped"));
        QProcess pgrep;
        pgrep.start(QStringLiteral("pgrep"), {QStringLiteral("-af"), record.id});
        pgrep.waitForFinished();
        QCOMPARE(pgrep.readAllStandardOutput(), QByteArray());
        // Attached to afterwards, the run is shown as it ended: what its ranks said then was said, and is not
        // said again as if it happened now.
        QVERIFY2(output.contains("rank 0 told to stop: "), output.constData());
        const CliResult attached = cli(QStringList{QStringLiteral("attach"), record.id} + connection(), 60000);
        QVERIFY2(attached.out.contains(QStringLiteral("run %1: stopped").arg(record.id).toUtf8()),
                 (attached.out + attached.err).constData());
        QVERIFY2(!attached.out.contains("told to stop"), attached.out.constData());
    }

    // A second Ctrl-C while the first one's stop runs leaves the run as it is then: its ranks were told to end, so
    // it is not said to be left running, and `stop` finishes it as the user's stop, not as ranks that failed.
    void secondCtrlCLeavesTheStopToStop() {
        QProcess run;
        QByteArray output;
        qint64 pid = 0;
        // Steps of 3 s on rank 0: SIGTERM ends a rank at its step's end, so the stop takes seconds.
        interruptLongRun(run, QStringLiteral("left-stopping"), 3000, output, pid);
        if (QTest::currentTestFailed())
            return;
        QTRY_VERIFY_WITH_TIMEOUT((output += run.readAll()).contains("stopping the run on every node: SIGTERM"), 10000);
        ::kill(static_cast<pid_t>(pid), SIGINT);
        QVERIFY(run.waitForFinished(30000));
        output += run.readAll();
        QVERIFY2(run.exitCode() == 1, output.constData());
        RunStore store(m_dir.filePath(QStringLiteral("home")));
        const QString id = store.resolveId(QStringLiteral("latest"));
        QCOMPARE(store.load(id)->name, QStringLiteral("left-stopping"));
        QVERIFY2(output.contains(QStringLiteral("left run %1 while it stops: rankscope-cli stop %1").arg(id).toUtf8()),
                 output.constData());
        QVERIFY2(!output.contains("running: rankscope-cli attach"), output.constData());
        QVERIFY(store.stopRequestedAt(id).isValid());

        const CliResult stopped = cli(QStringList{QStringLiteral("stop"), id} + connection());
        QVERIFY2(stopped.exitCode == 0, (stopped.out + stopped.err).constData());
        QVERIFY2(stopped.out.contains("no process of the run is left"), stopped.out.constData());
        const RunRecord record = *store.load(id);
        QCOMPARE(record.state, QStringLiteral("stopped"));
        QCOMPARE(record.summary, QStringLiteral("stopped by the user"));
        QCOMPARE(record.firstFailedRank, -1);
    }

    // Ctrl-C while `stop` waits for the ranks to end leaves them ending (they were told to already): no second stop,
    // and a word on how to finish it.
    void ctrlCDuringStopLeavesTheRunStopping() {
        QByteArray said;
        const QString id = startDetachedHang(QStringLiteral("stop-interrupted"), &said);
        QVERIFY2(!id.isEmpty(), said.constData());
        RunStore store(m_dir.filePath(QStringLiteral("home")));
        // Rank 0 hung, then held stopped (as a debugger holds it): the stop's SIGTERM waits for it, and the stop
        // waits its grace (10 s) before SIGKILL, time enough for the Ctrl-C to come while it waits.
        const QString runDir = store.load(id)->nodes.value(0).runDir;
        QTRY_VERIFY_WITH_TIMEOUT(readAll(runDir + QStringLiteral("/rank0.err")).contains("injected hang at step 3"),
                                 30000);
        const auto rank0 = static_cast<pid_t>(readAll(runDir + QStringLiteral("/rank0.pid")).trimmed().toInt());
        QVERIFY(rank0 > 0);
        QCOMPARE(::kill(rank0, SIGSTOP), 0);
        auto resume = qScopeGuard([rank0] { ::kill(rank0, SIGCONT); });
        QProcess stop;
        stop.setProcessEnvironment(cliEnvironment());
        stop.setProcessChannelMode(QProcess::MergedChannels);
        stop.start(QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-cli"),
                   QStringList{QStringLiteral("stop"), id} + connection());
        QTRY_VERIFY_WITH_TIMEOUT(store.stopRequestedAt(id).isValid(), 30000);
        const qint64 pid = stop.processId(); // 0 once it has ended: kill(0, …) would interrupt ctest's whole group
        QVERIFY2(pid > 0 && stop.state() == QProcess::Running, stop.readAll().constData());
        ::kill(static_cast<pid_t>(pid), SIGINT);
        QVERIFY(stop.waitForFinished(30000));
        const QByteArray stopSaid = stop.readAll();
        QVERIFY2(stop.exitCode() == 1, stopSaid.constData());
        QVERIFY2(
            stopSaid.contains(QStringLiteral("left run %1 while it stops: rankscope-cli stop %1").arg(id).toUtf8()),
            stopSaid.constData());
        QVERIFY2(!stopSaid.contains("stopping the run on every node"), stopSaid.constData());
        resume.dismiss();
        ::kill(rank0, SIGCONT); // its SIGTERM ends it now
        const CliResult stopped = cli(QStringList{QStringLiteral("stop"), id} + connection());
        QVERIFY2(stopped.exitCode == 0, (stopped.out + stopped.err).constData());
        QVERIFY2(stopped.out.contains("no process of the run is left"), stopped.out.constData());
        QCOMPARE(store.load(id)->state, QStringLiteral("stopped"));
    }

    // A detached run that trained to its end with nobody attached is finished, also when the first to look at it
    // again is `stop`: every rank exited 0, so there was nothing to stop and nothing the user ended.
    void stopOfARunThatFinishedUnseenKeepsItFinished() {
        const CliResult started =
            cli(QStringList{QStringLiteral("run"), writeJob(QStringLiteral("done-unseen"), trainer(4)),
                            QStringLiteral("--detach")} +
                connection());
        QVERIFY2(started.exitCode == 0, (started.out + started.err).constData());
        RunStore store(m_dir.filePath(QStringLiteral("home")));
        const QString id = store.resolveId(QStringLiteral("latest"));
        QCOMPARE(store.load(id)->name, QStringLiteral("done-unseen"));
        // Its processes (the supervisor's and the ranks') are gone once it has ended on the node.
        const auto running = [&id] {
            QProcess pgrep;
            pgrep.start(QStringLiteral("pgrep"), {QStringLiteral("-f"), id});
            pgrep.waitForFinished();
            return !pgrep.readAllStandardOutput().isEmpty();
        };
        QTRY_VERIFY_WITH_TIMEOUT(!running(), 60000);
        QCOMPARE(store.load(id)->state, QStringLiteral("running")); // as far as this machine has seen

        const CliResult stopped = cli(QStringList{QStringLiteral("stop"), id} + connection());
        QVERIFY2(stopped.exitCode == 0, (stopped.out + stopped.err).constData());
        QVERIFY2(stopped.out.contains(QStringLiteral("run %1: finished").arg(id).toUtf8()), stopped.out.constData());
        const RunRecord record = *store.load(id);
        QCOMPARE(record.state, QStringLiteral("finished"));
        QVERIFY2(record.summary.isEmpty(), qPrintable(record.summary));
        QCOMPARE(record.exits.value(0).status, 0);
        QCOMPARE(record.exits.value(1).status, 0);
    }

    void detachedRunIsFollowedAndStoppedWithNothingLeft() {
        const CliResult started =
            cli(QStringList{QStringLiteral("run"),
                            writeJob(QStringLiteral("detached"),
                                     trainer(0, QJsonArray{"--slow-ms", "50", "--slow-rank", "0"}, 1000)),
                            QStringLiteral("--detach")} +
                connection());
        QVERIFY2(started.exitCode == 0, (started.out + started.err).constData());
        QVERIFY(started.out.contains("running detached"));
        RunStore store(m_dir.filePath(QStringLiteral("home")));
        const QString id = store.list().value(0).id;
        QCOMPARE(store.list().value(0).state, QStringLiteral("running"));
        QTest::qWait(3000); // nobody is attached: the run goes on by itself
        // Without --follow: this machine's copy, and a word that it may be behind the run.
        const CliResult copy = cli({QStringLiteral("logs"), id});
        QCOMPARE(copy.exitCode, 0);
        QVERIFY2(copy.err.contains("is running: this is this machine's copy"), copy.err.constData());

        // logs --follow catches up from the node and keeps printing; stop it after a while.
        QProcess follow;
        followRank0(follow, id);
        QByteArray followed;
        QTRY_VERIFY2_WITH_TIMEOUT((followed += follow.readAllStandardOutput()).contains("[rank 0] epoch 1/1000 step"),
                                  (followed + follow.readAllStandardError()).constData(), 30000);
        // Then the lines that come after the catch-up, as they come.
        const qsizetype caughtUp = followed.count("[rank 0 events] ");
        QTRY_VERIFY2_WITH_TIMEOUT((followed += follow.readAllStandardOutput()).count("[rank 0 events] ") > caughtUp + 3,
                                  followed.constData(), 30000);
        follow.terminate();
        QVERIFY(follow.waitForFinished(10000));
        followed += follow.readAllStandardOutput();
        // The events file's lines as the rank wrote them, in its order, none left out.
        QByteArrayList events;
        for (const QByteArray& line : followed.split('\n'))
            if (line.startsWith("[rank 0 events] "))
                events << line.mid(16);
        QVERIFY(events.size() > 5);
        QVERIFY2(!followed.contains("[rank 1 "), followed.constData()); // --rank 0: no line of another rank
        const QByteArrayList stored = readAll(store.streamPath(id, 0, RankStream::Events)).split('\n');
        QVERIFY(stored.size() > events.size());
        QCOMPARE(events, stored.mid(0, events.size()));

        // attach only watches: SIGTERM (`timeout 60 rankscope-cli attach …`) leaves the run going.
        QProcess attach;
        attach.setProcessEnvironment(cliEnvironment());
        attach.start(QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-cli"),
                     QStringList{QStringLiteral("attach"), id} + connection());
        QByteArray attached;
        QTRY_VERIFY2_WITH_TIMEOUT((attached += attach.readAllStandardOutput()).contains("step"),
                                  (attached + attach.readAllStandardError()).constData(), 30000);
        attach.terminate();
        QVERIFY(attach.waitForFinished(20000));
        const QByteArray said = attach.readAllStandardError();
        QVERIFY2(said.contains("left run " + id.toUtf8() + " running"), said.constData());
        QCOMPARE(store.load(id)->state, QStringLiteral("running"));
        QVERIFY(!store.stopRequestedAt(id).isValid());

        const CliResult stopped = cli(QStringList{QStringLiteral("stop"), id} + connection());
        QVERIFY2(stopped.exitCode == 0, (stopped.out + stopped.err).constData());
        // Its table starts from what the store held when it attached: rank 0 has a loss and a throughput.
        QVERIFY2(rank0Loss(stopped.out).toDouble() > 0.0, stopped.out.constData()); // not "-", nor no row
        QVERIFY2(stopped.out.contains("no process of the run is left"), stopped.out.constData());
        QCOMPARE(store.load(id)->state, QStringLiteral("stopped"));
        QCOMPARE(store.load(id)->exits.value(0).status, 128 + 15); // it was still training: SIGTERM ended it
        QProcess pgrep;
        pgrep.start(QStringLiteral("pgrep"), {QStringLiteral("-af"), id});
        pgrep.waitForFinished();
        QCOMPARE(pgrep.readAllStandardOutput(), QByteArray());
        // Everything the ranks wrote until they ended is in the store.
        QString mismatch;
        QVERIFY2(storeMatchesNodes(store, *store.load(id), &mismatch), qPrintable(mismatch));
    }

    // A hung rank sends no step after stop attaches: its row in stop's table can only come from the store's copy,
    // which stop replays before it listens to the node.
    void stopOfAHungRunShowsTheStoredLoss() {
        QByteArray said;
        const QString id = startDetachedHang(QStringLiteral("hung"), &said);
        QVERIFY2(!id.isEmpty(), said.constData());
        RunStore store(m_dir.filePath(QStringLiteral("home")));

        // Fill this machine's copy up to the hang.
        QProcess follow;
        followRank0(follow, id);
        QByteArray followed;
        QTRY_VERIFY2_WITH_TIMEOUT((followed += follow.readAllStandardOutput()).contains("injected hang at step 3"),
                                  (followed + follow.readAllStandardError()).constData(), 30000);
        QTest::qWait(2000);
        follow.terminate();
        QVERIFY(follow.waitForFinished(10000));
        QVERIFY(readAll(store.streamPath(id, 0, RankStream::Events)).contains(R"("type":"step")"));
        // Offline, this machine's copy is diagnosed as of where it ends, and `diagnose` says so: in its text, and
        // in JSON as the same moment.
        const CliResult asOf = cli({QStringLiteral("diagnose"), id});
        QCOMPARE(asOf.exitCode, 0);
        QVERIFY2(asOf.out.startsWith(QStringLiteral("run %1: running, as of ").arg(id).toUtf8()) &&
                     asOf.out.contains(QStringLiteral(" in this machine's copy (rankscope-cli attach %1 brings it up "
                                                      "to date)\n")
                                           .arg(id)
                                           .toUtf8()),
                 asOf.out.constData());
        const CliResult asOfJson = cli({QStringLiteral("diagnose"), id, QStringLiteral("--json")});
        const QDateTime knownUntil = QDateTime::fromString(
            QJsonDocument::fromJson(asOfJson.out).object().value("known_until").toString(), Qt::ISODateWithMs);
        QVERIFY2(knownUntil.isValid() && knownUntil <= QDateTime::currentDateTimeUtc() &&
                     knownUntil > QDateTime::currentDateTimeUtc().addSecs(-120),
                 asOfJson.out.constData());
        QVERIFY2(asOf.out.contains(", as of " + knownUntil.toLocalTime().toString(QStringLiteral("HH:mm:ss")).toUtf8() +
                                   " in this"),
                 asOf.out.constData());

        const CliResult stopped = cli(QStringList{QStringLiteral("stop"), id} + connection());
        QVERIFY2(stopped.exitCode == 0, (stopped.out + stopped.err).constData());
        QVERIFY2(rank0Loss(stopped.out).toDouble() > 0.0, stopped.out.constData()); // not "-", nor no row
        QCOMPARE(store.load(id)->state, QStringLiteral("stopped"));
    }
};

QTEST_GUILESS_MAIN(tst_CliRemote)
#include "tst_cli_remote.moc"
