// SPDX-License-Identifier: MIT
// Runs the built `rankscope-cli inspect` on the recorded public logs and checks its exit codes and output.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

namespace {

const QString kLogsDir = QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/logs/");

struct CliRun {
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

CliRun runCli(const QStringList& arguments) {
    QProcess process;
    process.start(QStringLiteral(RANKSCOPE_CLI_PATH), arguments);
    if (!process.waitForFinished(30000) || process.exitStatus() != QProcess::NormalExit)
        return {};
    return {process.exitCode(), process.readAllStandardOutput(), process.readAllStandardError()};
}

// `inspect` (text report) of a recorded file, named from the test data folder.
CliRun inspectRecorded(const QString& file) {
    return runCli({"inspect", QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/") + file});
}

QByteArray readAll(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

// `bytes` written to `name` in `dir`; its path, empty when it could not be written.
QString writeLog(const QTemporaryDir& dir, const QString& name, const QByteArray& bytes) {
    const QString path = dir.filePath(name);
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(bytes) == bytes.size() ? path : QString();
}

} // namespace

class tst_CliInspect final : public QObject {
    Q_OBJECT

private slots:
    void exitCodes_data();
    void exitCodes();
    void jsonOnSeveralFiles();
    void textReportHasItsSections();
    void textReportShowsARepeatedErrorOnce();
    void textReportSaysOnlyWhatAnEntryHas_data();
    void textReportSaysOnlyWhatAnEntryHas();
    void networkFindingsNameTheHostThatChoseBadly();
    void textReportShowsTheNcclSectionAsTheLogSaysIt_data();
    void textReportShowsTheNcclSectionAsTheLogSaysIt();
    void textReportOfWrittenLogs_data();
    void textReportOfWrittenLogs();
    void textReportOfAFailureAloneIsWhole();
    void textReportPlacesARepeatedError();
    void unreadableFileLosesNothingOfTheOthers();
    void standardInputIsAFile();
    void aFolderIsEveryFileUnderIt();
    void tangledTracebacksSayWhyTheyHaveNoRank();
    void torchrunsLocalRanksAreSaidAsSuch();
    void compressedLogsAreReadThroughTheirTool_data();
    void compressedLogsAreReadThroughTheirTool();
    void aCompressedLogCutShortIsReadAsFarAsItGoes();
    void aMissingDecompressorIsNamedAndTheOthersRead();
    void compressedStandardInputIsRefusedByName();
};

void tst_CliInspect::exitCodes_data() {
    QTest::addColumn<QStringList>("arguments");
    QTest::addColumn<int>("exitCode");
    const QString sample = kLogsDir + QStringLiteral("nccl-public-samples.log");
    QTest::newRow("one file") << QStringList{"inspect", sample} << 0;
    QTest::newRow("json") << QStringList{"inspect", sample, "--json"} << 0;
    QTest::newRow("no file") << QStringList{"inspect"} << 2;
    QTest::newRow("missing file") << QStringList{"inspect", sample, kLogsDir + "no-such.log"} << 2;
    QTest::newRow("unknown option") << QStringList{"inspect", sample, "--bogus"} << 2;
}

void tst_CliInspect::exitCodes() {
    QFETCH(QStringList, arguments);
    QFETCH(int, exitCode);
    QCOMPARE(runCli(arguments).exitCode, exitCode);
}

void tst_CliInspect::jsonOnSeveralFiles() {
    const QStringList files = {kLogsDir + "nccl-public-samples.log", kLogsDir + "public/nccl-1189-init-complete.log",
                               kLogsDir + "public/minigpt4-237-failure-table.log",
                               kLogsDir + "public/pytorch-4921-runtimeerror-traceback.log"};
    const CliRun run = runCli(QStringList{"inspect", "--json"} + files);
    QCOMPARE(run.exitCode, 0);
    QJsonParseError error;
    const QJsonObject root = QJsonDocument::fromJson(run.out, &error).object();
    QCOMPARE(error.error, QJsonParseError::NoError);
    QCOMPARE(root.value("files").toArray().size(), 4);
    const QJsonObject nccl = root.value("nccl").toObject();
    QCOMPARE(nccl.value("versions").toArray(), QJsonArray{"2.10.3"});
    QCOMPARE(nccl.value("nranks").toInt(), 4);
    QCOMPARE(nccl.value("network").toString(), QStringLiteral("Socket"));
    QCOMPARE(nccl.value("communicators").toArray().at(0).toObject().value("comm_id").toString(),
             QStringLiteral("0xf021d9037f9243d8"));
    QCOMPARE(nccl.value("warnings").toArray().at(0).toObject().value("source").toString(),
             QStringLiteral("misc/ibvwrap.cc:63"));
    const QJsonObject timeout = root.value("timeouts").toArray().at(0).toObject();
    QCOMPARE(timeout.value("seq").toInteger(), 808);
    QCOMPARE(timeout.value("op").toString(), QStringLiteral("ALLREDUCE"));
    QCOMPARE(timeout.value("last_completed").toInteger(), 807);
    const QJsonArray failures = root.value("failures").toArray();
    QCOMPARE(failures.size(), 2);
    QCOMPARE(failures.at(1).toObject().value("root_cause").toBool(), true);
    QCOMPARE(failures.at(1).toObject().value("pid").toInteger(), 78970);
    QVERIFY(!failures.at(1).toObject().contains("signal")); // absent facts are left out
    const QJsonObject lastError = root.value("errors").toArray().last().toObject();
    QCOMPARE(lastError.value("file").toString(), files.last());
    QCOMPARE(lastError.value("line").toInt(), 13);
    QVERIFY(lastError.value("text").toString().startsWith("RuntimeError: NCCL error in:"));
    QVERIFY(!root.contains("gpus"));
}

void tst_CliInspect::textReportHasItsSections() {
    const CliRun run = runCli({"inspect", kLogsDir + "nccl-public-samples.log"});
    QCOMPARE(run.exitCode, 0);
    const QString out = QString::fromUtf8(run.out);
    for (const char* section : {"NCCL\n", "\nTimeouts\n", "\nFailures\n", "\nErrors\n"})
        QVERIFY2(out.contains(QLatin1String(section)), section);
    QVERIFY(out.contains(QLatin1String("rank 1: ALLREDUCE #808 ran 600020 ms")));
}

// Each entry of the text report shows what the log said of it and nothing in place of the rest (no "-"), as the
// JSON omits absent facts: a failure table's entry has a rank, host and time, the agent's one-line report (a log cut
// before the table) only a local rank; a timeout cut before "ran for" has no run time; a CSV reading without a name
// or power cap has neither.
void tst_CliInspect::textReportSaysOnlyWhatAnEntryHas_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("line");
    QTest::newRow("failure table") << "logs/public/minigpt4-237-failure-table.log"
                                   << "  ROOT CAUSE rank 0 (local 0) on n136-117-136.byted.org at "
                                      "2023-05-19_16:39:58: exit 1, pid 78970";
    QTest::newRow("agent's one-line report") << "logs/public/pytorch-135486-fatal-python-segfault.log"
                                             << "  local rank 0: exit -11 (SIGSEGV), pid 2128869";
    QTest::newRow("timeout, every fact") << "logs/public/sglang-1693-allgather-base.log"
                                         << "  rank 5: _ALLGATHER_BASE #9141 ran 600020 ms (timeout 600000 ms), "
                                            "numel 19008 -> 152064";
    QTest::newRow("timeout cut before its run time")
        << "logs/public/megatron-935-terminate-distbackenderror.log"
        << "  rank 1: _REDUCE_SCATTER_BASE #199 (timeout 600000 ms), numel 7098994688 -> 443687168";
    QTest::newRow("timeout in another process group than the default one")
        << "logs/public/diffsynth-458-coalesced-group-timeout.log"
        << "  rank 4 (rank 4 of process group 2): COALESCED #610 ran 600086 ms (timeout 600000 ms), numel 56320 -> "
           "450560, last enqueued 616, last completed 609";
    QTest::newRow("timeout without numel") << "logs/nccl-public-samples.log"
                                           << "  rank 0: ALLREDUCE #96120 ran 25624887 ms (timeout 1800000 ms)";
    QTest::newRow("warning without rank")
        << "logs/public/longrange-13-no-ib-duplicate-gpu.log"
        << "  WARN ubun:2375341 init.cc:573: Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000";
    QTest::newRow("warning repeated once") << "logs/nccl-public-samples.log"
                                           << "       and once more: on gcn6";
    QTest::newRow("GPU reading without name or cap") << "nvidia-smi/csv-forum-timestamp-busid-na.csv"
                                                     << "  0 00000000:01:00.0: 5% util, 39 C, 3.29 W drawn";
    QTest::newRow("GPU reading without index, bus id or cap")
        << "nvidia-smi/csv-bpytop-gtx1080ti-gtx1060.csv"
        << "  GeForce GTX 1060 6GB: 0% util, 4/6078 MiB, 49 C, 5.68 W drawn";
    QTest::newRow("GPU table, every reading") << "nvidia-smi/table-535-a10g.txt"
                                              << "  0 NVIDIA A10G 00000000:00:1E.0: 0% util, 8722/23028 MiB, 26 C, "
                                                 "60/300 W";
}

void tst_CliInspect::textReportSaysOnlyWhatAnEntryHas() {
    QFETCH(QString, file);
    QFETCH(QString, line);
    const CliRun run = inspectRecorded(file);
    QCOMPARE(run.exitCode, 0);
    const QStringList lines = QString::fromUtf8(run.out).split(QLatin1Char('\n'));
    QVERIFY2(lines.contains(line), qPrintable(QString::fromUtf8(run.out)));
}

// Eight ranks fail alike and one otherwise, and all eight print the same NCCL warning: the text report shows each
// text once, with the ranks and lines that repeat it; the JSON keeps every one.
void tst_CliInspect::textReportShowsARepeatedErrorOnce() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QByteArray log;
    for (int r = 0; r < 8; ++r)
        log += QStringLiteral("[rank%1]: gpu-%2:%3:%4 [%5] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
                              "10.0.0.1<43111> failed : Connection refused\n")
                   .arg(r)
                   .arg(r / 4)
                   .arg(1000 + r)
                   .arg(2000 + r)
                   .arg(r % 4)
                   .toUtf8();
    for (int r = 0; r < 8; ++r)
        log += QStringLiteral("[rank%1]: Traceback (most recent call last):\n"
                              "[rank%1]:   File \"/w/train.py\", line 42, in <module>\n"
                              "[rank%1]: %2\n")
                   .arg(r)
                   .arg(r == 3 ? QStringLiteral("ValueError: bad batch")
                               : QStringLiteral("torch.OutOfMemoryError: CUDA out of memory."))
                   .toUtf8();
    const QString path = writeLog(dir, QStringLiteral("job.log"), log);
    QVERIFY(!path.isEmpty());

    const CliRun run = runCli({"inspect", path});
    QCOMPARE(run.exitCode, 0);
    const QString out = QString::fromUtf8(run.out);
    QCOMPARE(out.count(QLatin1String("CUDA out of memory")), 1);
    QCOMPARE(out.count(QLatin1String("NCCL WARN")) + out.count(QLatin1String("Connection refused")), 1);
    QVERIFY2(out.contains(QLatin1String("\nErrors (8, 2 different)\n")), qPrintable(out));
    QVERIFY2(
        out.contains(path + QLatin1String(":11 rank 0: torch.OutOfMemoryError: CUDA out of memory.\n"
                                          "    and 6 more times on rank(s) 1-2,4-7: lines 14, 17, 23, 26, 29, 32\n")),
        qPrintable(out));
    QVERIFY2(out.contains(path + QLatin1String(":20 rank 3: ValueError: bad batch\n")), qPrintable(out));
    QVERIFY2(out.contains(QLatin1String("       and 7 more times: rank(s) 1-7 on gpu-0, gpu-1\n")), qPrintable(out));

    const CliRun json = runCli({"inspect", "--json", path});
    const QJsonObject root = QJsonDocument::fromJson(json.out).object();
    QCOMPARE(root.value("errors").toArray().size(), 8);
    QCOMPARE(root.value("nccl").toObject().value("warnings").toArray().size(), 8);
}

// The NCCL section whole, on recorded logs: each line only when the log said it, a communicator's ranks seen and
// those whose init completed, a warning's error chain under it, a chain no warning explains on its own.
void tst_CliInspect::textReportShowsTheNcclSectionAsTheLogSaysIt_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("section");
    QTest::newRow("NVLS, one communicator") << "logs/public/nccl-1814-nvls.log"
                                            << "NCCL\n"
                                               "  hosts:      hostname-test\n"
                                               "  ranks:      3 seen of 64\n"
                                               "  transports: NVLS 2\n"
                                               "  channels:   16\n"
                                               "  communicator 0x5ae77eb5ea4ec1ee: 64 ranks, 3 seen, 3 init complete\n";
    QTest::newRow("warnings with their chains")
        << "logs/public/longrange-13-no-ib-duplicate-gpu.log"
        << "NCCL\n"
           "  versions:   2.7.8\n"
           "  hosts:      ubun\n"
           "  network:    Socket (NET/IB: no device found)\n"
           "  interfaces: enp4s0\n"
           "  WARN ubun:2375341 init.cc:573: Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000\n"
           "       then init.cc:840 -> 5, group.cc:73 -> 5 [Async thread]\n"
           "  WARN ubun:2375340 init.cc:573: Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 1000\n"
           "       then init.cc:840 -> 5, group.cc:73 -> 5 [Async thread]\n";
    QTest::newRow("an init that did not complete")
        << "logs/public/vlmevalkit-975-ibext-no-device.log"
        << "NCCL\n"
           "  hosts:      12f0e56ac84d\n"
           "  ranks:      1 seen of 4\n"
           "  network:    Socket (NET/IB: no device found)\n"
           "  interfaces: eth0\n"
           "  communicator 0xfc552889eb5339ed: 4 ranks, 1 seen, 0 init complete\n";
    QTest::newRow("a chain of its own") << "logs/public/nccl-1053-lo-socket-error-chain.log"
                                        << "NCCL\n"
                                           "  hosts:      axa\n"
                                           "  network:    Socket\n"
                                           "  interfaces: lo\n"
                                           "  error chain axa:3048391: net.cc:79 -> 3\n";
    QTest::newRow("no NCCL at all") << "nvidia-smi/table-535-a10g.txt"
                                    << "NCCL\n"
                                       "  nothing found\n";
}

void tst_CliInspect::textReportShowsTheNcclSectionAsTheLogSaysIt() {
    QFETCH(QString, file);
    QFETCH(QString, section);
    const CliRun run = inspectRecorded(file);
    QCOMPARE(run.exitCode, 0);
    const QString out = QString::fromUtf8(run.out);
    QCOMPARE(out.left(out.indexOf(QLatin1String("\n\n")) + 1), section);
}

// Entries the recorded logs do not hold, written here: each line of `lines` must be a line of the report.
void tst_CliInspect::textReportOfWrittenLogs_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QByteArray>("log");
    QTest::addColumn<QStringList>("lines");
    QTest::newRow("no InfiniBand, no network chosen yet; one text from two places")
        << "nccl.log"
        << QByteArray("node-a:100:200 [0] NCCL INFO NET/IB : No device found.\n"
                      "node-a:100:200 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect failed\n"
                      "node-a:100:200 [0] misc/other.cc:10 NCCL WARN socketStartConnect: Connect failed\n")
        << QStringList{"  network:    NET/IB: no device found",
                       "  WARN node-a:100 misc/socket.cc:484: socketStartConnect: Connect failed",
                       "  WARN node-a:100 misc/other.cc:10: socketStartConnect: Connect failed"};
    QTest::newRow("a timeout in process group 1, one with NumelIn alone")
        << "watchdog.log"
        << QByteArray("[rank1]:[E318 07:39:53.792772442 ProcessGroupNCCL.cpp:1785] [PG ID 1 PG GUID 1 Rank 1] Watchdog "
                      "caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=10, "
                      "NumelOut=20, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n"
                      "[rank2]:[E318 07:39:53.792772442 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0 Rank 2] Watchdog "
                      "caught collective operation timeout: WorkNCCL(SeqNum=6, OpType=ALLREDUCE, NumelIn=10, "
                      "Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n")
        << QStringList{"  rank 1 (rank 1 of process group 1): ALLREDUCE #5 ran 600001 ms (timeout 600000 ms), numel "
                       "10 -> 20",
                       "  rank 2: ALLREDUCE #6 ran 600001 ms (timeout 600000 ms), numel in 10"};
    QTest::newRow("memory and power: the totals alone")
        << "gpus.csv"
        << QByteArray("index, utilization.gpu [%], memory.total [MiB], power.limit [W]\n0, 5 %, 16384 MiB, 300.00 W\n")
        << QStringList{"  0: 5% util, 16384 MiB total, 300 W cap"};
    QTest::newRow("a GPU known by its reading only")
        << "util.csv" << QByteArray("utilization.gpu [%]\n5 %\n") << QStringList{"  GPU: 5% util"};
}

void tst_CliInspect::textReportOfWrittenLogs() {
    QFETCH(QString, name);
    QFETCH(QByteArray, log);
    QFETCH(QStringList, lines);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = writeLog(dir, name, log);
    QVERIFY(!path.isEmpty());
    const CliRun run = runCli({"inspect", path});
    QCOMPARE(run.exitCode, 0);
    const QStringList out = QString::fromUtf8(run.out).split(QLatin1Char('\n'));
    for (const QString& line : lines)
        QVERIFY2(out.contains(line), qPrintable(line + QLatin1String("\nnot in:\n") + QString::fromUtf8(run.out)));
}

// A root cause whose table gave neither rank nor exit: "a rank", "failed". The whole report, so that every empty
// section says so and the GPU section, with nothing to show, is left out; and of a log that says nothing.
void tst_CliInspect::textReportOfAFailureAloneIsWhole() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString quiet = writeLog(dir, QStringLiteral("quiet.log"), "epoch 0 step 1 loss 0.5\n");
    QVERIFY(!quiet.isEmpty());
    const CliRun nothing = runCli({"inspect", quiet});
    QCOMPARE(nothing.exitCode, 0);
    QCOMPARE(QString::fromUtf8(nothing.out), QStringLiteral("NCCL\n  nothing found\n\nTimeouts\n  none found\n\n"
                                                            "Failures\n  none found\n\nErrors\n  none found\n"));

    const QString path = writeLog(dir, QStringLiteral("agent.log"),
                                  "============================================================\n"
                                  "train.py FAILED\n"
                                  "------------------------------------------------------------\n"
                                  "Failures:\n"
                                  "  <NO_OTHER_FAILURES>\n"
                                  "------------------------------------------------------------\n"
                                  "Root Cause (first observed failure):\n"
                                  "[0]:\n"
                                  "  time      : 2023-05-19_16:39:58\n"
                                  "  host      : gpu-1\n"
                                  "  error_file: <N/A>\n"
                                  "============================================================\n");
    QVERIFY(!path.isEmpty());
    const CliRun run = runCli({"inspect", path});
    QCOMPARE(run.exitCode, 0);
    QCOMPARE(QString::fromUtf8(run.out), QStringLiteral("NCCL\n"
                                                        "  nothing found\n"
                                                        "\n"
                                                        "Timeouts\n"
                                                        "  none found\n"
                                                        "\n"
                                                        "Failures\n"
                                                        "  ROOT CAUSE a rank on gpu-1 at 2023-05-19_16:39:58: failed\n"
                                                        "\n"
                                                        "Errors\n"
                                                        "  none found\n"));
}

// Where an error's repeats are: "line N" for one, at most six places then "…", and FILE:LINE as soon as one of
// them is in another file.
void tst_CliInspect::textReportPlacesARepeatedError() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const auto traceback = [](int rank, const char* exception) {
        return QStringLiteral("[rank%1]: Traceback (most recent call last):\n"
                              "[rank%1]:   File \"/w/train.py\", line 42, in <module>\n"
                              "[rank%1]: %2\n")
            .arg(rank)
            .arg(QLatin1String(exception))
            .toUtf8();
    };
    QByteArray many;
    for (int r = 0; r < 9; ++r)
        many += traceback(r, "RuntimeError: boom");
    many += traceback(0, "ValueError: once") + traceback(1, "ValueError: once");
    const QString path = writeLog(dir, QStringLiteral("many.log"), many);
    QVERIFY(!path.isEmpty());
    CliRun run = runCli({"inspect", path});
    QCOMPARE(run.exitCode, 0);
    QString out = QString::fromUtf8(run.out);
    QVERIFY2(
        out.contains(path + QStringLiteral(":3 rank 0: RuntimeError: boom\n"
                                           "    and 8 more times on rank(s) 1-8: lines 6, 9, 12, 15, 18, 21, …\n")),
        qPrintable(out));
    QVERIFY2(out.contains(path + QLatin1String(":30 rank 0: ValueError: once\n"
                                               "    and once more on rank(s) 1: line 33\n")),
             qPrintable(out));

    const QString other = writeLog(dir, QStringLiteral("other.log"), traceback(5, "RuntimeError: boom"));
    QVERIFY(!other.isEmpty());
    run = runCli({"inspect", path, other});
    QCOMPARE(run.exitCode, 0);
    out = QString::fromUtf8(run.out);
    QVERIFY2(out.contains(QStringLiteral("    and 9 more times on rank(s) 1-8: %1:6, %1:9, %1:12, %1:15, %1:18, %1:21, "
                                         "…\n")
                              .arg(path)),
             qPrintable(out));
}

// Each node's log given as its own file: the node whose NCCL chose the loopback is named, with its rank, in the
// text and in the JSON's nccl.findings; its interfaces alone ("eth0, lo" summed over the files) would not say.
void tst_CliInspect::networkFindingsNameTheHostThatChoseBadly() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const auto write = [&dir](const QString& name, const QByteArray& host, const QByteArray& device, int rank) {
        QFile file(dir.filePath(name));
        const QByteArray header = host + ":4242:4250 [0] NCCL INFO ";
        return file.open(QIODevice::WriteOnly) &&
               file.write(header + "NCCL version 2.18.1+cuda12.1\n" + header + "NET/Socket : Using [0]" + device +
                          "<0>\n" + header + "Using network Socket\n" + header + "comm 0x5 rank " +
                          QByteArray::number(rank) + " nranks 2 cudaDev 0 busId 1000 commId 0x77 - Init COMPLETE\n" +
                          "step 10 loss 0.42\n") > 0;
    };
    QVERIFY(write(QStringLiteral("node-a.log"), "node-a", "eth0:10.0.0.1", 0));
    QVERIFY(write(QStringLiteral("node-b.log"), "node-b", "lo:127.0.0.1", 1));
    const QStringList files{dir.filePath(QStringLiteral("node-a.log")), dir.filePath(QStringLiteral("node-b.log"))};

    const CliRun run = runCli(QStringList{"inspect"} + files);
    QCOMPARE(run.exitCode, 0);
    const QString out = QString::fromUtf8(run.out);
    QVERIFY2(out.contains(QLatin1String("\n  finding: NCCL on node-b (rank(s) 1) uses the loopback interface for "
                                        "its sockets in a run across 2 nodes")),
             qPrintable(out));
    QCOMPARE(out.count(QLatin1String("finding: ")), 1);

    const CliRun json = runCli(QStringList{"inspect", "--json"} + files);
    const QJsonArray findings =
        QJsonDocument::fromJson(json.out).object().value("nccl").toObject().value("findings").toArray();
    QCOMPARE(findings.size(), 1);
    QCOMPARE(findings.at(0).toObject().value("key").toString(), QStringLiteral("nccl:loopback"));
    QVERIFY(findings.at(0).toObject().value("message").toString().startsWith(QLatin1String("NCCL on node-b")));
    QCOMPARE(findings.at(0).toObject().value("ranks").toArray(), QJsonArray{1});

    // Node b's log alone: one host, its loopback is no finding.
    const CliRun alone = runCli({"inspect", "--json", files[1]});
    QVERIFY(!QJsonDocument::fromJson(alone.out).object().value("nccl").toObject().contains(QLatin1String("findings")));
}

// One missing file among several: it is named and the exit status says so, and the readable files are reported.
void tst_CliInspect::unreadableFileLosesNothingOfTheOthers() {
    const QString sample = kLogsDir + QStringLiteral("nccl-public-samples.log");
    const QString missing = kLogsDir + QStringLiteral("no-such.log");
    const CliRun run = runCli({"inspect", "--json", missing, sample});
    QCOMPARE(run.exitCode, 2);
    QVERIFY2(run.err.contains(missing.toUtf8()), run.err.constData());
    const QJsonObject root = QJsonDocument::fromJson(run.out).object();
    QCOMPARE(root.value("files").toArray(), QJsonArray{sample});
    QCOMPARE(root.value("timeouts").toArray().at(0).toObject().value("seq").toInteger(), 808);

    // Nothing could be read: no report (an empty one would say "nothing found" of a file never seen), text or JSON.
    for (const QStringList& arguments : {QStringList{"inspect", missing}, QStringList{"inspect", "--json", missing}}) {
        const CliRun alone = runCli(arguments);
        QCOMPARE(alone.exitCode, 2);
        QVERIFY2(alone.err.contains(missing.toUtf8() + ": "), alone.err.constData());
        QVERIFY2(alone.out.isEmpty(), alone.out.constData());
    }
}

// "-" reads standard input, with the same result as the file.
void tst_CliInspect::standardInputIsAFile() {
    const QString sample = kLogsDir + QStringLiteral("public/pytorch-4921-runtimeerror-traceback.log");
    QProcess process;
    process.setStandardInputFile(sample);
    process.start(QStringLiteral(RANKSCOPE_CLI_PATH), {"inspect", "--json", "-"});
    QVERIFY(process.waitForFinished(30000));
    QCOMPARE(process.exitCode(), 0);
    QJsonObject fromStdin = QJsonDocument::fromJson(process.readAllStandardOutput()).object();
    const CliRun file = runCli({"inspect", "--json", sample});
    QJsonObject fromFile = QJsonDocument::fromJson(file.out).object();
    QCOMPARE(fromStdin.value("files").toArray(), QJsonArray{"-"});
    QVERIFY(!fromStdin.value("errors").toArray().isEmpty());
    QCOMPARE(fromStdin.value("errors").toArray().at(0).toObject().value("file").toString(), QStringLiteral("-"));
    // Apart from the file's name, the same facts.
    for (QJsonObject* root : {&fromStdin, &fromFile}) {
        root->remove("files");
        QJsonArray errors = root->value("errors").toArray();
        for (qsizetype i = 0; i < errors.size(); ++i) {
            QJsonObject error = errors.at(i).toObject();
            error.remove("file");
            errors.replace(i, error);
        }
        root->insert("errors", errors);
    }
    QCOMPARE(fromStdin, fromFile);
}

// Two nodes' `torchrun --tee 3` output one after the other: "[default1]:" is local rank 1 on each node, two ranks of
// the run. The report says "local rank", never "rank", for what only that prefix names; PyTorch's own "[rank5]:"
// is the run's rank.
void tst_CliInspect::torchrunsLocalRanksAreSaidAsSuch() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QByteArray log;
    const auto traceback = [](const QByteArray& prefix, const QByteArray& exception) {
        return prefix + "Traceback (most recent call last):\n" + prefix +
               "  File \"/w/train.py\", line 42, in <module>\n" + prefix + exception + "\n";
    };
    for (int node = 0; node < 2; ++node)
        for (int local = 0; local < 2; ++local)
            log += traceback(QStringLiteral("[default%1]:").arg(local).toUtf8(),
                             "torch.OutOfMemoryError: CUDA out of memory.");
    log += traceback("[rank5]: ", "torch.OutOfMemoryError: CUDA out of memory.");
    const QString path = writeLog(dir, QStringLiteral("two-nodes.log"), log);
    QVERIFY(!path.isEmpty());

    const CliRun run = runCli({"inspect", path});
    QCOMPARE(run.exitCode, 0);
    const QString out = QString::fromUtf8(run.out);
    QVERIFY2(out.contains(path + QLatin1String(":3 local rank 0: torch.OutOfMemoryError: CUDA out of memory.\n"
                                               "    and 4 more times on rank(s) 5 and local rank(s) 0-1: lines 6, 9, "
                                               "12, 15\n")),
             qPrintable(out));
    const CliRun json = runCli({"inspect", "--json", path});
    const QJsonArray errors = QJsonDocument::fromJson(json.out).object().value("errors").toArray();
    QCOMPARE(errors.size(), 5);
    for (qsizetype i = 0; i < 4; ++i) {
        QVERIFY(!errors.at(i).toObject().contains("rank"));
        QCOMPARE(errors.at(i).toObject().value("local_rank").toInt(), int(i % 2));
    }
    QCOMPARE(errors.at(4).toObject().value("rank").toInt(), 5);
    QVERIFY(!errors.at(4).toObject().contains("local_rank"));
}

namespace {

// `tool -c` of `source`, written to `target`; false when the tool could not make it.
bool compress(const QString& tool, const QString& source, const QString& target) {
    QProcess process;
    process.setStandardInputFile(source);
    process.setStandardOutputFile(target);
    process.start(tool, {QStringLiteral("-c")});
    return process.waitForFinished(30000) && process.exitStatus() == QProcess::NormalExit && process.exitCode() == 0;
}

// The inspection's JSON with every file's name left out: what was found.
QJsonObject foundIn(const QByteArray& json) {
    QJsonObject root = QJsonDocument::fromJson(json).object();
    root.remove("files");
    QJsonArray errors = root.value("errors").toArray();
    for (qsizetype i = 0; i < errors.size(); ++i) {
        QJsonObject error = errors.at(i).toObject();
        error.remove("file");
        errors.replace(i, error);
    }
    root.insert("errors", errors);
    return root;
}

const QString kCompressedSample = kLogsDir + QStringLiteral("public/minigpt4-237-failure-table.log");

} // namespace

// An archived job log (`rank0.log.gz`, Slurm's `slurm-123.out.zst`) is read through the program that writes it out,
// told by its first bytes, not its name: the same facts as the plain file.
void tst_CliInspect::compressedLogsAreReadThroughTheirTool_data() {
    QTest::addColumn<QString>("tool");
    for (const char* tool : {"gzip", "xz", "zstd", "bzip2", "lz4"})
        QTest::newRow(tool) << QString::fromLatin1(tool);
}

void tst_CliInspect::compressedLogsAreReadThroughTheirTool() {
    QFETCH(QString, tool);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString packed = dir.filePath(QStringLiteral("job.log.packed")); // a name that says nothing
    QVERIFY2(compress(tool, kCompressedSample, packed), qPrintable(tool + QLatin1String(" (scripts/packages.txt)")));
    const CliRun plain = runCli({"inspect", "--json", kCompressedSample});
    const CliRun fromArchive = runCli({"inspect", "--json", packed});
    QCOMPARE(fromArchive.exitCode, 0);
    QVERIFY2(fromArchive.err.isEmpty(), fromArchive.err.constData());
    QVERIFY(!foundIn(plain.out).value("failures").toArray().isEmpty());
    QCOMPARE(foundIn(fromArchive.out), foundIn(plain.out));
    QCOMPARE(QJsonDocument::fromJson(fromArchive.out).object().value("files").toArray(), QJsonArray{packed});
}

// A compressed log cut short (a copy that stopped): what the tool wrote out before its error is read, and the file
// and the tool's complaint are named.
void tst_CliInspect::aCompressedLogCutShortIsReadAsFarAsItGoes() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString sample = kLogsDir + QStringLiteral("nccl-public-samples.log");
    const QString packed = dir.filePath(QStringLiteral("nccl.log.gz"));
    QVERIFY(compress(QStringLiteral("gzip"), sample, packed));
    QFile file(packed);
    QVERIFY(file.open(QIODevice::ReadWrite));
    QVERIFY(file.resize(file.size() * 3 / 4));
    file.close();
    const CliRun run = runCli({"inspect", "--json", packed});
    QCOMPARE(run.exitCode, 2);
    QVERIFY2(run.err.contains(packed.toUtf8() + ": gzip -dc failed, what it wrote out before is read: gzip:"),
             run.err.constData());
    const QJsonObject root = QJsonDocument::fromJson(run.out).object();
    QCOMPARE(root.value("files").toArray(), QJsonArray{packed});
    QVERIFY(!root.value("nccl").toObject().value("versions").toArray().isEmpty());
}

// Without the tool (here: a PATH that has none), the file is named with the tool it needs, the status says so, and
// the other files are read.
void tst_CliInspect::aMissingDecompressorIsNamedAndTheOthersRead() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString packed = dir.filePath(QStringLiteral("job.log.gz"));
    QVERIFY(compress(QStringLiteral("gzip"), kCompressedSample, packed));
    const QString sample = kLogsDir + QStringLiteral("nccl-public-samples.log");
    QProcess process;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("PATH"), dir.path());
    process.setProcessEnvironment(env);
    process.start(QStringLiteral(RANKSCOPE_CLI_PATH), {"inspect", "--json", packed, sample});
    QVERIFY(process.waitForFinished(30000));
    QCOMPARE(process.exitCode(), 2);
    const QByteArray err = process.readAllStandardError();
    QVERIFY2(err.contains(packed.toUtf8() + ": compressed with gzip, which is not installed here to read it"),
             err.constData());
    const QJsonObject root = QJsonDocument::fromJson(process.readAllStandardOutput()).object();
    QCOMPARE(root.value("files").toArray(), QJsonArray{sample});
    QCOMPARE(root.value("timeouts").toArray().at(0).toObject().value("seq").toInteger(), 808);
}

// `cat job.log.gz | rankscope-cli inspect -`: bytes that are no text are not read as a log that holds nothing.
void tst_CliInspect::compressedStandardInputIsRefusedByName() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString packed = dir.filePath(QStringLiteral("job.log.zst"));
    QVERIFY(compress(QStringLiteral("zstd"), kCompressedSample, packed));
    QProcess process;
    process.setStandardInputFile(packed);
    process.start(QStringLiteral(RANKSCOPE_CLI_PATH), {"inspect", "-"});
    QVERIFY(process.waitForFinished(30000));
    QCOMPARE(process.exitCode(), 2);
    const QByteArray err = process.readAllStandardError();
    QVERIFY2(err.contains("-: compressed with zstd: name the file instead, or pipe `zstd -dc` into inspect"),
             err.constData());
}

QTEST_GUILESS_MAIN(tst_CliInspect)
// A folder is read as the files under it at any depth, as torchrun's --log-dir lays them out, in the order of their
// paths with numbers compared as numbers; a folder with no files is named on stderr and the status says so.
void tst_CliInspect::aFolderIsEveryFileUnderIt() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QByteArray failing = readAll(kLogsDir + QStringLiteral("public/pytorch-4921-runtimeerror-traceback.log"));
    QVERIFY(!failing.isEmpty());
    const auto write = [&dir](const QString& path, const QByteArray& bytes) {
        QVERIFY(QDir().mkpath(QFileInfo(dir.filePath(path)).absolutePath()));
        QFile file(dir.filePath(path));
        QVERIFY(file.open(QIODevice::WriteOnly));
        QCOMPARE(file.write(bytes), bytes.size());
    };
    write(QStringLiteral("run/attempt_0/10/stderr.log"), failing);
    write(QStringLiteral("run/attempt_0/2/stderr.log"), failing);
    write(QStringLiteral("run/attempt_0/2/stdout.log"), "epoch 0 step 1 loss 0.5\n");
    QVERIFY(QDir().mkpath(dir.filePath(QStringLiteral("empty"))));

    const CliRun run = runCli({"inspect", "--json", dir.filePath(QStringLiteral("run"))});
    QCOMPARE(run.exitCode, 0);
    const QJsonObject json = QJsonDocument::fromJson(run.out).object();
    QStringList files;
    for (const QJsonValue file : json.value("files").toArray())
        files.append(QDir(dir.path()).relativeFilePath(file.toString()));
    QCOMPARE(files,
             QStringList({"run/attempt_0/2/stderr.log", "run/attempt_0/2/stdout.log", "run/attempt_0/10/stderr.log"}));
    QCOMPARE(json.value("errors").toArray().size(), 2);

    // Numbers compared as numbers, leading zeros and all: 9, 010, 11.
    for (const char* name : {"ranks/rank11.log", "ranks/rank010.log", "ranks/rank9.log"})
        write(QString::fromLatin1(name), "epoch 0 step 1 loss 0.5\n");
    const CliRun ranks = runCli({"inspect", "--json", dir.filePath(QStringLiteral("ranks"))});
    QCOMPARE(ranks.exitCode, 0);
    files.clear();
    for (const QJsonValue file : QJsonDocument::fromJson(ranks.out).object().value("files").toArray())
        files.append(QFileInfo(file.toString()).fileName());
    QCOMPARE(files, QStringList({"rank9.log", "rank010.log", "rank11.log"}));

    const CliRun empty = runCli({"inspect", dir.filePath(QStringLiteral("empty"))});
    QCOMPARE(empty.exitCode, 2);
    QVERIFY2(empty.err.contains("empty: a folder with no files in it"), empty.err.constData());
    QVERIFY2(empty.out.isEmpty(), empty.out.constData()); // nothing was read: no report
    // Beside a folder that has files, the empty one is named and the others' report is shown.
    const CliRun beside =
        runCli({"inspect", dir.filePath(QStringLiteral("empty")), dir.filePath(QStringLiteral("ranks"))});
    QCOMPARE(beside.exitCode, 2);
    QVERIFY2(beside.out.contains("Errors"), beside.out.constData());
}

// Errors of tracebacks that nothing tells apart have no rank: the text report says why and how to get it, and says
// nothing of the kind for a traceback of its own.
void tst_CliInspect::tangledTracebacksSayWhyTheyHaveNoRank() {
    const CliRun tangled = runCli({"inspect", kLogsDir + QStringLiteral("python-processes-interleaved.err")});
    QCOMPARE(tangled.exitCode, 0);
    QVERIFY2(tangled.out.contains("(8 of these from tracebacks that several processes printed at once"),
             tangled.out.constData());
    QVERIFY(tangled.out.contains("torchrun --tee 3"));
    const CliRun plain =
        runCli({"inspect", kLogsDir + QStringLiteral("public/pytorch-4921-runtimeerror-traceback.log")});
    QCOMPARE(plain.exitCode, 0);
    QVERIFY(plain.out.contains("RuntimeError: NCCL error in:"));
    QVERIFY(!plain.out.contains("printed at once"));
}

#include "tst_cli_inspect.moc"
