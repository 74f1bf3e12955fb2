// SPDX-License-Identifier: MIT
// The log parsers (NCCL, ProcessGroupNCCL watchdog, torchrun failures, tracebacks) on public logs recorded in
// tests/data/logs/public/ (sources in tests/data/README.md), and on the messy forms real logs take.
#include "core/elasticparser.h"
#include "core/loginspect.h"
#include "core/logprefix.h"
#include "core/ncclparser.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

using namespace rankscope;

namespace {

const QString kPublicDir = QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/logs/public/");

QByteArray readData(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

// Inspects `bytes` as one file fed in chunks of at most `chunkSize` bytes, or split once at `splitAt`.
QByteArray inspectJson(const QByteArray& bytes, qsizetype chunkSize = 0, qsizetype splitAt = -1) {
    LogInspector inspector;
    inspector.beginFile(QStringLiteral("log"));
    if (splitAt >= 0) {
        inspector.feed(QByteArrayView(bytes).first(splitAt));
        inspector.feed(QByteArrayView(bytes).sliced(splitAt));
    } else if (chunkSize > 0) {
        for (qsizetype at = 0; at < bytes.size(); at += chunkSize)
            inspector.feed(QByteArrayView(bytes).sliced(at, std::min(chunkSize, bytes.size() - at)));
    } else {
        inspector.feed(bytes);
    }
    inspector.endFile();
    return inspectionToJson(inspector.result());
}

// The errors found in `log`, inspected as one file named "log", each as `describe` writes it.
template <typename Describe> QStringList errorsOf(const QByteArray& log, Describe describe) {
    LogInspector inspector;
    inspector.beginFile(QStringLiteral("log"));
    inspector.feed(log);
    inspector.endFile();
    QStringList found;
    for (const LogError& error : inspector.result().errors)
        found.append(describe(error));
    return found;
}

// An error as "line rank: text".
QString lineRankText(const LogError& e) {
    return QStringLiteral("%1 %2: %3").arg(e.line).arg(e.rank).arg(QString::fromUtf8(e.text));
}

// The value at a path such as "nccl.communicators.0.ranks.1.host", written as compact JSON. A last part "@field"
// lists that field of each element of an array, joined by commas ("errors.@line": "3,9").
QString valueAt(const QByteArray& json, const QString& path) {
    QJsonValue value = QJsonDocument::fromJson(json).object();
    for (const QString& part : path.split(QLatin1Char('.'))) {
        if (part.startsWith(QLatin1Char('@')) && value.isArray()) {
            QStringList fields;
            for (const QJsonValue element : value.toArray())
                fields.append(element.toObject().value(part.mid(1)).toVariant().toString());
            return fields.join(QLatin1Char(','));
        }
        bool isIndex = false;
        const int index = part.toInt(&isIndex);
        value = isIndex && value.isArray() ? value.toArray().at(index) : value.toObject().value(part);
    }
    if (value.isUndefined())
        return QStringLiteral("<absent>");
    if (value.isObject())
        return QString::fromUtf8(QJsonDocument(value.toObject()).toJson(QJsonDocument::Compact));
    if (value.isArray())
        return QString::fromUtf8(QJsonDocument(value.toArray()).toJson(QJsonDocument::Compact));
    if (value.isString())
        return value.toString();
    if (value.isBool())
        return value.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    return QString::number(value.toDouble(), 'g', 17);
}

} // namespace

class tst_LogParsers final : public QObject {
    Q_OBJECT

private slots:
    void prefixes_data();
    void prefixes();
    void runRankIsPyTorchsPrefix();
    void watchdogParserForgetsErrorsNotTimeouts();
    void desyncReportBlamesItsRanks();
    void aTimeoutCutByATerminalKeepsItsRank_data();
    void aTimeoutCutByATerminalKeepsItsRank();
    void aCutHeaderTakesNoOtherRanksLine();
    void terminalArtifacts();
    void publicLogs_data();
    void publicLogs();
    void messyLines_data();
    void messyLines();
    void everySplitPointGivesTheSameResult_data();
    void everySplitPointGivesTheSameResult();
    void singleByteChunks();
    void severalFilesKeepTheirLineNumbers();
    void aFileReadTwiceListsItsErrorsOnce();
    void anotherFilesErrorAtTheSameLineIsKept();
    void aWrappedWatchdogEndIsOneError_data();
    void aWrappedWatchdogEndIsOneError();
    void aWrappedWhatIsOneError_data();
    void aWrappedWhatIsOneError();
    void aThrownTypeIsReadFromInterleavedLines_data();
    void aThrownTypeIsReadFromInterleavedLines();
    void anErrorListKeepsOneALineOnlyWhereAsked();
    void aBoxedTracebacksNcclErrorIsTheWatchdogs();
    void anErrorLineOfTwoParsersIsTheWatchdogs_data();
    void anErrorLineOfTwoParsersIsTheWatchdogs();
    void aResultSharesItsErrorsAndKeepsThem();
    void interleavedErrorsAreMarked();
    void ncclErrorChainsFollowTheirThread();
    void ncclInfinibandMissingIsAFactOfTheStream();
    void ncclHostsInterleaved();
    void aRetryLoopsChainIsCountedAndCut();
    void ncclChainsOfManyThreadsAndHosts();
};

void tst_LogParsers::prefixes_data() {
    QTest::addColumn<QByteArray>("line");
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<int>("rank");
    // Launcher prefixes as the launchers print them (Open MPI --tag-output, torchrun --tee, PyTorch 2.x, Ray).
    QTest::newRow("none") << QByteArray("host:1:2 [0] NCCL INFO x") << QByteArray("host:1:2 [0] NCCL INFO x") << -1;
    QTest::newRow("open mpi") << QByteArray("[1,3]<stdout>:host:1:2 [0] NCCL INFO x")
                              << QByteArray("host:1:2 [0] NCCL INFO x") << 3;
    QTest::newRow("open mpi stderr") << QByteArray("[1,12]<stderr>:Traceback (most recent call last):")
                                     << QByteArray("Traceback (most recent call last):") << 12;
    QTest::newRow("torchrun tee") << QByteArray("[default3]:NCCL version 2.18.1+cuda12.1")
                                  << QByteArray("NCCL version 2.18.1+cuda12.1") << 3;
    QTest::newRow("pytorch rank") << QByteArray("[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] x")
                                  << QByteArray("[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] x") << 1;
    QTest::newRow("pytorch rank, traceback") << QByteArray("[rank2]: Traceback (most recent call last):")
                                             << QByteArray("Traceback (most recent call last):") << 2;
    QTest::newRow("pytorch rank, traceback frame") << QByteArray("[rank2]:   File \"a.py\", line 1, in <module>")
                                                   << QByteArray("  File \"a.py\", line 1, in <module>") << 2;
    QTest::newRow("pytorch rank, empty line") << QByteArray("[rank2]: ") << QByteArray("") << 2;
    QTest::newRow("torchrun tee keeps a space") << QByteArray("[default2]: x") << QByteArray(" x") << 2;
    QTest::newRow("ray") << QByteArray("(RayWorkerWrapper pid=1019) INFO 01-29 selector.py:120] y")
                         << QByteArray("INFO 01-29 selector.py:120] y") << -1;
    QTest::newRow("ray pid only") << QByteArray("(pid=77) NCCL INFO z") << QByteArray("NCCL INFO z") << -1;
    QTest::newRow("ray keeps the line's indentation")
        << QByteArray("(RayTrainWorker pid=1234, ip=10.0.0.1)   File \"a.py\", line 1")
        << QByteArray("  File \"a.py\", line 1") << -1;
    QTest::newRow("bracket timestamp") << QByteArray("[2024-05-08 08:47:31,261] torch.distributed: x")
                                       << QByteArray("torch.distributed: x") << -1;
    QTest::newRow("iso stamp with a zone")
        << QByteArray("2026-09-02T09:08:50.880492+00:00 Server1 kernel: x") << QByteArray("Server1 kernel: x") << -1;
    QTest::newRow("iso stamp with a compact zone")
        << QByteArray("2024-01-01T10:00:00-0500 [rank2]:y") << QByteArray("y") << 2;
    QTest::newRow("python logging") << QByteArray("2025-11-12 20:42:20,261 - INFO - g:1:2 [5] NCCL INFO a")
                                    << QByteArray("g:1:2 [5] NCCL INFO a") << -1;
    QTest::newRow("timestamp then rank") << QByteArray("[2024-01-01 10:00:00] [rank7]:hello") << QByteArray("hello")
                                         << 7;
    // Slurm's `srun --label`, as src/common/write_labelled_message.c writes it: "%*d: " right-aligned to the width
    // of the largest task id (zero-padded, "%0*d: ", in older releases).
    QTest::newRow("srun label") << QByteArray("1: Traceback (most recent call last):")
                                << QByteArray("Traceback (most recent call last):") << 1;
    QTest::newRow("srun label aligned") << QByteArray(" 3:   File \"train.py\", line 9, in <module>")
                                        << QByteArray("  File \"train.py\", line 9, in <module>") << 3;
    QTest::newRow("srun label zero-padded")
        << QByteArray("03: g:1:2 [3] NCCL INFO a") << QByteArray("g:1:2 [3] NCCL INFO a") << 3;
    QTest::newRow("srun label of an empty line") << QByteArray("12: ") << QByteArray("") << 12;
    QTest::newRow("srun label then torchrun's") << QByteArray("1: [default3]:x") << QByteArray("x") << 3;
    QTest::newRow("indented text is kept")
        << QByteArray("  File \"a.py\", line 1") << QByteArray("  File \"a.py\", line 1") << -1;
    QTest::newRow("a time is no label, but a timestamp") << QByteArray("12:34:56 x") << QByteArray("x") << -1;
    QTest::newRow("time of day, then PyTorch's rank")
        << QByteArray("18:11:06.680 [rank4]:[E205 18:11:06.375750231 ProcessGroupNCCL.cpp:1870] y")
        << QByteArray("[E205 18:11:06.375750231 ProcessGroupNCCL.cpp:1870] y") << 4;
    QTest::newRow("time of day with a comma") << QByteArray("08:00:01,5 x") << QByteArray("x") << -1;
    QTest::newRow("no time of day: minutes past 59") << QByteArray("12:60:00 x") << QByteArray("12:60:00 x") << -1;
    QTest::newRow("no time of day: no space after") << QByteArray("12:34:56x") << QByteArray("12:34:56x") << -1;
    QTest::newRow("an address is no label") << QByteArray("10.0.0.1: x") << QByteArray("10.0.0.1: x") << -1;
    QTest::newRow("a wider number is no label") << QByteArray("12345678: x") << QByteArray("12345678: x") << -1;
    QTest::newRow("open mpi's job is a number") << QByteArray("[x,3]<stdout>:y") << QByteArray("[x,3]<stdout>:y") << -1;
    QTest::newRow("a colon without a number is no label") << QByteArray(": x") << QByteArray(": x") << -1;
    QTest::newRow("a colon without a number after a timestamp is no label")
        << QByteArray("[2024-05-08 08:47:31,261] : x") << QByteArray(": x") << -1;
    QTest::newRow("four prefixes: label, time, tee, rank")
        << QByteArray("1: [2024-01-01 10:00:00] [default3]:[rank7]:hello") << QByteArray("hello") << 7;
    QTest::newRow("failure table entry is kept") << QByteArray("[0]:") << QByteArray("[0]:") << -1;
    QTest::newRow("glog prefix is kept") << QByteArray("[E ProcessGroupNCCL.cpp:458] [Rank 0] x")
                                         << QByteArray("[E ProcessGroupNCCL.cpp:458] [Rank 0] x") << -1;
}

void tst_LogParsers::prefixes() {
    QFETCH(QByteArray, line);
    QFETCH(QByteArray, text);
    QFETCH(int, rank);
    const StrippedLine stripped = stripLogPrefix(line);
    QCOMPARE(stripped.text.toByteArray(), text);
    QCOMPARE(stripped.rank, rank);
}

// PyTorch's own "[rank3]:" names the rank in the default process group, the run's; torchrun's "[default3]:" the
// local rank, and Open MPI's and Slurm's prefixes the rank their launcher gave, which a watchdog line's text may
// contradict.
void tst_LogParsers::runRankIsPyTorchsPrefix() {
    const auto kind = [](const char* line) { return stripLogPrefix(line).rankKind; };
    QCOMPARE(kind("[rank3]:x"), PrefixRank::Run);
    QCOMPARE(kind("1: [rank3]:x"), PrefixRank::Run);
    QCOMPARE(kind("[default0]:[rank8]:x"), PrefixRank::Run);
    QCOMPARE(stripLogPrefix("[default0]:[rank8]:x").rank, 8);
    QCOMPARE(kind("[default3]:x"), PrefixRank::Local);
    QCOMPARE(kind("[trainer3]:x"), PrefixRank::Local); // torchrun's prefix holds the role's name
    QCOMPARE(kind("[work3]:x"), PrefixRank::Local);    // four letters, but not "rank"
    QCOMPARE(kind("[1,3]<stdout>:x"), PrefixRank::Launcher);
    QCOMPARE(kind("3: x"), PrefixRank::Launcher);
    QCOMPARE(kind("[rank3]:[default2]:x"), PrefixRank::Local);
    QCOMPARE(kind("x"), PrefixRank::Launcher);
}

// A run's live reader keeps the timeouts only: forgetting the errors read keeps every timeout, and errors read
// later are kept again.
void tst_LogParsers::watchdogParserForgetsErrorsNotTimeouts() {
    WatchdogLogParser parser;
    parser.feed("[rank1]:RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled system error\n");
    parser.feed("[rank1]:[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=5) ran for 6 milliseconds before timing out.\n");
    QCOMPARE(parser.errors().size(), 1);
    parser.forgetErrors();
    QVERIFY(parser.errors().isEmpty());
    parser.feed("[rank1]:RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled system error\n");
    parser.finish();
    QCOMPARE(parser.errors().size(), 1);
    QCOMPARE(parser.timeoutsRead().size(), 1);
    QCOMPARE(parser.timeoutsRead().front().seq, 9);
}

// PyTorch's desync report (a real one): the rank it blames, for the hang diagnosis; a list of several, and items
// that are no list of ranks.
void tst_LogParsers::desyncReportBlamesItsRanks() {
    QFile file(kPublicDir + QStringLiteral("pytorch-152623-desync-report.log"));
    QVERIFY(file.open(QIODevice::ReadOnly));
    WatchdogLogParser parser;
    parser.feed(file.readAll());
    parser.feed("[rank2]:[E515 18:36:47.343377708 ProcessGroupNCCL.cpp:1937] Rank 2\n"
                "         - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
                "             [1, 3] finished collective #5, but didn't join collective #6 (count from 1)\n"
                "             [x] is no rank\n"
                "             [21513419012] is none either\n" // too long for a rank (found by the fuzzer: overflow)
                "         - Snapshot of ranks' latest states:\n");
    parser.finish();
    const QList<DesyncBlame>& blames = parser.desyncBlamesRead();
    QCOMPARE(blames.size(), 2);
    QCOMPARE(blames[0].ranks, QVector<int>{7});
    QCOMPARE(blames[0].text,
             QStringLiteral("[7] finished collective #182, but didn't join collective #183 (count from 1)"));
    QCOMPARE(blames[1].ranks, (QVector<int>{1, 3}));

    // Blamed ranks come in order, however the report lists them.
    WatchdogLogParser unordered;
    unordered.feed("[E515 18:36:47.343377708 ProcessGroupNCCL.cpp:1937] Rank 2\n"
                   "         - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
                   "             [30, 12, 3, 18, 7, 0, 25] finished collective #5, but didn't join collective #6\n"
                   "         - Snapshot of ranks' latest states:\n");
    unordered.finish();
    QCOMPARE(unordered.desyncBlamesRead().size(), 1);
    QCOMPARE(unordered.desyncBlamesRead()[0].ranks, (QVector<int>{0, 3, 7, 12, 18, 25, 30}));
}

// A timeout's line hard-wrapped by a terminal (`fold`, a narrow tmux pane, a copied scrollback) at any width from 45
// columns: the same timeout, rank included, as from the line whole. At 70 and 80 columns PyTorch 2's header ends
// in "… [Rank 4] W" or "… Watchdog ca", which cut the search's "atchdog caught" in two: the timeout was lost, or
// its rank. The lines are the recorded logs' own.
void tst_LogParsers::aTimeoutCutByATerminalKeepsItsRank_data() {
    QTest::addColumn<QByteArray>("line");
    QTest::addColumn<int>("width");
    for (const char* name : {"diffsynth-458-coalesced-group-timeout.log", "pytorch-152623-desync-report.log",
                             "../nccl-public-samples.log", "catalyst-rl-15-nccl-watchdog-terminated.log",
                             "instructlab-520-pg-guid.log", "sglang-1693-allgather-base.log"}) {
        QFile file(kPublicDir + QString::fromLatin1(name));
        QVERIFY(file.open(QIODevice::ReadOnly));
        QByteArray line;
        for (const QByteArray& candidate : file.readAll().split('\n'))
            if (candidate.contains("Watchdog caught") && candidate.contains("timing out") && line.isEmpty())
                line = candidate;
        QVERIFY2(!line.isEmpty(), name);
        for (int width = 45; width <= line.size() + 1; ++width)
            QTest::addRow("%s at %d", name, width) << line << width;
    }
}

void tst_LogParsers::aTimeoutCutByATerminalKeepsItsRank() {
    QFETCH(QByteArray, line);
    QFETCH(int, width);
    const auto timeoutOf = [](const QByteArray& text) {
        WatchdogLogParser parser;
        parser.feed(text);
        parser.finish();
        const QList<CollectiveTimeout> timeouts = parser.timeouts();
        return timeouts.size() == 1 ? std::optional<CollectiveTimeout>(timeouts.front()) : std::nullopt;
    };
    const std::optional<CollectiveTimeout> whole = timeoutOf(line + '\n');
    QVERIFY(whole && whole->rank >= 0 && whole->seq >= 0);
    QByteArray folded;
    for (qsizetype at = 0; at < line.size(); at += width)
        folded += line.mid(at, width) + '\n';
    const std::optional<CollectiveTimeout> cut = timeoutOf(folded);
    QVERIFY2(cut, folded.constData());
    QCOMPARE(cut->rank, whole->rank);
    QCOMPARE(cut->seq, whole->seq);
    QCOMPARE(cut->op, whole->op);
    QCOMPARE(cut->numelIn, whole->numelIn);
    QCOMPARE(cut->timeoutMs, whole->timeoutMs);
    QCOMPARE(cut->ranMs, whole->ranMs);
}

// A line that may end inside a cut "Watchdog caught" is joined only to a line that goes on with it: not to another
// rank's timeout that follows (its own header, or its own launcher prefix), which keeps its rank.
void tst_LogParsers::aCutHeaderTakesNoOtherRanksLine() {
    const QByteArray timeout = "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, "
                               "Timeout(ms)=5) ran for 6 milliseconds before timing out.\n";
    for (const QByteArray& next :
         {QByteArray("[E ProcessGroupNCCL.cpp:458] [Rank 2] "), QByteArray("[rank2]:[Rank 2] ")}) {
        WatchdogLogParser parser;
        parser.feed("[rank3]:[E ProcessGroupNCCL.cpp:458] [Rank 3] W\n" + next + timeout);
        parser.finish();
        const QList<CollectiveTimeout> timeouts = parser.timeouts();
        QCOMPARE(timeouts.size(), 1);
        QCOMPARE(timeouts.front().rank, 2);
    }
}

void tst_LogParsers::terminalArtifacts() {
    QByteArray scratch;
    QCOMPARE(cleanTerminalArtifacts("plain", scratch).toByteArray(), QByteArray("plain"));
    QCOMPARE(cleanTerminalArtifacts("10%\r50%\r100%", scratch).toByteArray(), QByteArray("100%"));
    QCOMPARE(cleanTerminalArtifacts("\x1b[31mNCCL WARN\x1b[0m x", scratch).toByteArray(), QByteArray("NCCL WARN x"));
    QCOMPARE(cleanTerminalArtifacts("a\r\x1b[2Kb", scratch).toByteArray(), QByteArray("b"));
    // A '\r' at the end hides nothing: the text after the one before it is what the terminal showed.
    QCOMPARE(cleanTerminalArtifacts("10%\r100%\r", scratch).toByteArray(), QByteArray("100%\r"));
}

void tst_LogParsers::publicLogs_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("expected");
    const auto row = [](const char* file, const char* path, const char* expected) {
        QTest::addRow("%s %s", file, path) << QString::fromLatin1(file) << QString::fromLatin1(path)
                                           << QString::fromUtf8(expected);
    };
    row("nccl-952-p2p-ipc-socket.log", "nccl.transports", R"({"NET/Socket":2,"P2P":5})");
    row("nccl-952-p2p-ipc-socket.log", "nccl.hosts", R"(["<cluster_name>"])");
    row("nccl-1189-init-complete.log", "nccl.nranks", "4");
    row("nccl-1189-init-complete.log", "nccl.ranks", "[0,1,2,3]");
    row("nccl-1189-init-complete.log", "nccl.channels", "8");
    row("nccl-1189-init-complete.log", "nccl.communicators.0.comm_id", "0xf021d9037f9243d8");
    row("nccl-1189-init-complete.log", "nccl.communicators.0.ranks.2",
        R"({"bus_id":"18000","cuda_dev":0,"host":"H20-GPU-06","init":"COMPLETE","pid":4015539,"rank":2})");
    row("easydistill-4-python-logging-prefix.log", "nccl.transports", R"({"P2P":4})");
    row("easydistill-4-python-logging-prefix.log", "nccl.hosts", R"(["g340-cd51-4900-b72a-d104-a9bf-df48"])");
    row("nccl-tests-213-direct-pointer.log", "nccl.transports", R"({"P2P":4})");
    row("nccl-1537-roce-init-start.log", "nccl.network", "IB");
    row("nccl-1537-roce-init-start.log", "nccl.interfaces", R"(["mlx5_0:1/RoCE","mlx5_1:1/RoCE"])");
    row("nccl-1537-roce-init-start.log", "nccl.communicators.0.ranks.0.init", "START");
    row("nccl-1029-pdsh-prefix-ibext.log", "nccl.network", "IBext");
    row("nccl-1029-pdsh-prefix-ibext.log", "nccl.hosts", R"(["rdma-gpu-train-worker-0"])");
    row("nccl-1029-pdsh-prefix-ibext.log", "nccl.ranks", "[0,1,4]");
    row("nccl-1814-nvls.log", "nccl.transports.NVLS", "2");
    row("nccl-1814-nvls.log", "nccl.channels", "16");
    row("nccl-1814-nvls.log", "nccl.nranks", "64");
    row("nccl-707-old-channel-gdrdma.log", "nccl.transports", R"({"GDRDMA":5,"NET/IB":5})");
    row("nv-peer-memory-56-nccl-2.4.log", "nccl.versions", R"(["2.4.7"])");
    row("nv-peer-memory-56-nccl-2.4.log", "nccl.interfaces", R"(["ib0","mlx5_0:1/IB"])");
    row("deepep-106-joined-lines.log", "nccl.transports", R"({"GDRDMA":3,"NET/IBext":3})");
    row("deepep-106-joined-lines.log", "nccl.ranks", "[1,5]");
    row("deepep-106-joined-lines.log", "nccl.warnings.0.source", "ib_plugin.c:1075");
    row("deepep-106-joined-lines.log", "nccl.warnings.0.pid", "11978");
    row("nccl-983-mpirun-ib.log", "nccl.versions", R"(["2.13.4"])");
    row("nccl-983-mpirun-ib.log", "nccl.network", "IB");
    row("nccl-tests-252-comminitrank.log", "nccl.communicators.0.ranks",
        R"([{"bus_id":"42000","cuda_dev":0,"host":"kolyoz1","init":"START","pid":27255,"rank":0},)"
        R"({"bus_id":"42000","cuda_dev":0,"host":"kolyoz2","init":"START","pid":25146,"rank":4},)"
        R"({"bus_id":"55000","cuda_dev":1,"host":"kolyoz2","init":"START","pid":25172,"rank":5}])");
    row("nccl-1053-lo-socket-error-chain.log", "nccl.interfaces", R"(["lo"])");
    row("nccl-1053-lo-socket-error-chain.log", "nccl.network", "Socket");
    row("nccl-1591-ray-prefix.log", "nccl.versions", R"(["2.21.5"])");
    row("aks-rdma-30-cumem-gdrdma.log", "nccl.transports", R"({"GDRDMA":3,"NET/IB":3,"P2P":2})");
    row("pytorch-105287-rings-trees.log", "nccl.channels", "16");
    row("longrange-13-no-ib-duplicate-gpu.log", "nccl.versions", R"(["2.7.8"])");
    row("longrange-13-no-ib-duplicate-gpu.log", "nccl.warnings.1",
        R"({"host":"ubun","pid":2375340,"source":"init.cc:573","text":"Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 1000"})");
    row("vlmevalkit-975-ibext-no-device.log", "nccl.network", "Socket");
    row("vlmevalkit-975-ibext-no-device.log", "nccl.interfaces", R"(["eth0"])");
    row("nccl-public-samples.log", "nccl.versions", R"(["2.10.3"])");
    row("nccl-public-samples.log", "nccl.network", "Socket");
    row("nccl-public-samples.log", "nccl.channels", "2");
    row("nccl-public-samples.log", "nccl.warnings.0.source", "misc/ibvwrap.cc:63");
    row("nccl-public-samples.log", "timeouts.0",
        R"({"last_completed":807,"last_enqueued":811,"numel_in":9801523,"numel_out":9801523,"op":"ALLREDUCE","ran_ms":600030,"rank":0,"seq":808,"timeout_ms":600000})");
    row("nccl-public-samples.log", "timeouts.1.numel_in", "<absent>");
    row("nccl-public-samples.log", "timeouts.1.ran_ms", "25624887");
    row("megatron-935-terminate-distbackenderror.log", "timeouts.0.op", "_REDUCE_SCATTER_BASE");
    row("megatron-935-terminate-distbackenderror.log", "timeouts.0.numel_in", "7098994688");
    row("megatron-935-terminate-distbackenderror.log", "timeouts.0.ran_ms", "<absent>");
    row("megatron-935-terminate-distbackenderror.log", "errors.0.line", "6");
    row("catalyst-rl-15-nccl-watchdog-terminated.log", "timeouts.0.rank", "6");
    row("instructlab-520-pg-guid.log", "timeouts.0.ran_ms", "90");
    row("open-r1-620-interleaved-wrapped.log", "timeouts.0",
        R"({"numel_in":112,"numel_out":112,"op":"BROADCAST","ran_ms":1800011,"rank":3,"seq":4,"timeout_ms":1800000})");
    // The same: the exception's type as the processes wrote it into each other's lines, and its what() as the
    // terminal cut it, are one error with the type once and the timeout whole.
    row("open-r1-620-interleaved-wrapped.log", "errors",
        R"([{"file":"log","line":8,"text":"c10::DistBackendError: [PG ID 0 PG GUID 0(default_pg) Rank 3] Process )"
        R"(group watchdog thread terminated with exception: [Rank 3] Watchdog caught collective operation timeout: )"
        R"(WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=112, NumelOut=112, Timeout(ms)=1800000) ran for 1800011 )"
        R"(milliseconds before timing out."}])");
    row("sglang-1693-allgather-base.log", "timeouts.0.numel_out", "152064");
    // The end of a process whose watchdog got stuck (PyTorch's heartbeat monitor, 2.2 and later, then SIGABRT): an
    // error of the message's first sentence (the rest is the same advice every time); the fatal line that ends the
    // process is one too.
    row("ms-swift-9191-watchdog-stuck.log", "errors",
        R"([{"file":"log","line":2,"rank":11,"text":"[E423 18:59:02.199810045 ProcessGroupNCCL.cpp:1890] [PG ID 0 PG )"
        R"(GUID 0(default_pg) Rank 11] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress )"
        R"(in monitoring enqueued collectives."}])");
    // Hard-wrapped by a terminal at 116 columns: each message is one error at its first line, of the rank its
    // "[rank6]:" names, its text the pieces joined as the terminal cut them (the first sentence of the first).
    row("vlm-r1-257-wrapped-watchdog-stuck.log", "errors.@line", "1,11");
    row("vlm-r1-257-wrapped-watchdog-stuck.log", "errors.@rank", "6,6");
    row("vlm-r1-257-wrapped-watchdog-stuck.log", "errors.0.text",
        "[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 6] ProcessGroupNCCL's "
        "watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives.");
    row("vlm-r1-257-wrapped-watchdog-stuck.log", "errors.1.text",
        "[F429 14:03:49.385461578 ProcessGroupNCCL.cpp:1554] [PG ID 0 PG GUID 0(default_pg) Rank 6] [PG ID 0 PG GUID "
        "0(default_pg) Rank 6] Terminating the process after attempting to dump debug info, due to ProcessGroupNCCL");
    // Ranks within process groups other than the default one ("[PG ID 4 PG GUID  Rank 2]") are not the run's ranks,
    // and no launcher prefix names those: no rank.
    row("fuser-3055-watchdog-stuck-other-groups.log", "errors.@line", "1,2,3");
    row("fuser-3055-watchdog-stuck-other-groups.log", "errors.@rank", ",,");
    row("fuser-3055-watchdog-stuck-other-groups.log", "errors.2.text",
        "[F930 15:23:07.687389178 ProcessGroupNCCL.cpp:1309] [PG ID 3 PG GUID  Rank 1] [PG ID 3 PG GUID  Rank 1] "
        "Terminating the process after attempting to dump debug info, due to ProcessGroupNCCL watchdog hang.");
    // A timeout's "[Rank 4]" names no group; its progress line names group 2 (the JSON keeps the run's rank).
    row("diffsynth-458-coalesced-group-timeout.log", "timeouts.@rank", "4,6");
    row("diffsynth-458-coalesced-group-timeout.log", "timeouts.0.last_enqueued", "616");
    // A time of day before PyTorch's "[rank4]:", which names the run's rank where the text names group 12's.
    row("ms-swift-7992-timestamped-expert-group.log", "errors.@line", "3");
    row("ms-swift-7992-timestamped-expert-group.log", "errors.0.rank", "4");
    row("pytorch-152623-desync-report.log", "timeouts.0.last_enqueued", "315");
    row("pytorch-152623-desync-report.log", "timeouts.0.last_completed", "183");
    row("pytorch-152623-desync-report.log", "errors.0.text",
        "desync: [7] finished collective #182, but didn't join collective #183 (count from 1)");
    row("minigpt4-237-failure-table.log", "failures",
        R"([{"exit_code":1,"host":"n136-117-136.byted.org","local_rank":1,"pid":78971,"rank":1,"root_cause":false,"time":"2023-05-19_16:39:58"},)"
        R"({"exit_code":1,"host":"n136-117-136.byted.org","local_rank":0,"pid":78970,"rank":0,"root_cause":true,"time":"2023-05-19_16:39:58"}])");
    row("pytorch-121209-several-failures.log", "failures.0.root_cause", "true");
    // Logs cut before torchrun's failure table: the agent's one-line report is the failure (no rank, host or time).
    row("colossalai-3571-torchrun-traceback.log", "failures",
        R"([{"exit_code":1,"local_rank":0,"pid":130182,"root_cause":false}])");
    row("salience-detr-4-timestamped-elastic.log", "failures",
        R"([{"exit_code":1,"local_rank":2,"pid":5939,"root_cause":false}])");
    row("pytorch-135486-fatal-python-segfault.log", "failures",
        R"([{"exit_code":-11,"local_rank":0,"pid":2128869,"root_cause":false,"signal":"SIGSEGV"}])");
    row("colossalai-3571-torchrun-traceback.log", "errors.0.text",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:");
    row("hkproj-1-distbackenderror-socket.log", "errors.0.line", "1");
    // NCCL's "Last error:" detail says what failed; the error code's generic meaning before it is left out.
    row("hkproj-1-distbackenderror-socket.log", "errors.0.text",
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, "
        "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.6; last error: "
        "socketStartConnect: Connect to 192.168.19.14<52822> failed : No route to host");
    row("hkproj-1-distbackenderror-socket.log", "errors.1", "<absent>");
    row("hkproj-1-distbackenderror-socket.log", "nccl.versions", R"(["2.18.6"])");
    row("pytorch-4921-runtimeerror-traceback.log", "errors",
        R"([{"file":"log","line":13,"text":"RuntimeError: NCCL error in: /home/liy/programs/pytorch/torch/lib/THD/base/data_channels/DataChannelNccl.cpp:324, unhandled system error"}])");
    row("pytorch-149984-async-exception.log", "errors.0.line", "1");
    // Here NCCL's "Last error:" is empty: nothing is added.
    row("pytorch-149984-async-exception.log", "errors.0.text",
        "Collective WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1000000) raised the "
        "following async exception: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL "
        "version 2.25.1");
    row("pytorch-121209-interleaved-tracebacks.log", "errors", "<absent>");
    // Python 3.11's exception groups, recorded here: the group's exception and every member's, and the log's next
    // line after a group is not its exception.
    row("python-exception-groups.err", "errors.@line", "5,7,9,28,33");
    row("python-exception-groups.err", "errors.@text",
        "ExceptionGroup: two ranks failed (2 sub-exceptions),ValueError: rank 0: bad batch size,TypeError: rank 1: "
        "expected a tensor,ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception),TimeoutError: rank 0: no "
        "heartbeat for 30 s");
    // Tracebacks the `rich` library draws in a box, recorded here: the exception after each box (not the box's first
    // line), a chained one, and a long message joined from the lines rich wrapped it into.
    row("python-rich-tracebacks.err", "errors.@line", "31,44,67,87");
    row("python-rich-tracebacks.err", "errors.1.text",
        "FileNotFoundError: [Errno 2] No such file or directory: '/ckpt/step-400/rank3.pt'");
    row("python-rich-tracebacks.err", "errors.3.text",
        "MemoryError: CUDA out of memory on rank 5. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.15 "
        "GiB of which 6.75 MiB is free. Of the allocated memory 77.90 GiB is allocated by PyTorch, and 511.21 MiB is "
        "reserved by PyTorch but unallocated.");
    // loguru's tracebacks, recorded here: the frame that caught the exception is marked "> File …" at the margin
    // (and its variables drawn under the frames); it is a frame, not the exception.
    row("python-loguru-tracebacks.err", "errors.@line", "20,26,35");
    row("python-loguru-tracebacks.err", "errors.0.text", "ZeroDivisionError: division by zero");
    // IPython's tracebacks (what a notebook or `ipython` prints), recorded here: their frames are at the margin
    // ("Cell In [1], line 1", "File /tmp/ipy/ddp_step.py:10, in step(rank)"), the exception is the line of its form.
    row("python-ipython-tracebacks.err", "errors.@line", "17,43");
    row("python-ipython-tracebacks.err", "errors.@text",
        "ZeroDivisionError: division by zero,ZeroDivisionError: division by zero");
    // Eight processes' tracebacks at once, recorded here: every process's exception, in the order printed.
    row("python-processes-interleaved.err", "errors.@text",
        "RuntimeError: CUDA error: out of memory on rank 1,RuntimeError: CUDA error: out of memory on rank 3,"
        "RuntimeError: CUDA error: out of memory on rank 7,KeyError: 'missing-2',"
        "RuntimeError: CUDA error: out of memory on rank 5,KeyError: 'missing-4',KeyError: 'missing-0',"
        "KeyError: 'missing-6'");
    // Five threads' tracebacks line by line, each a chained pair: the ten exceptions, and no "During handling of
    // the above exception" or "Exception in thread" line taken for one.
    row("fuzz4py-472-interleaved-thread-tracebacks.log", "errors.@line", "22,33,37,38,51,104,105,109,121,130");
    row("fuzz4py-472-interleaved-thread-tracebacks.log", "errors.9.text",
        "dbm.sqlite3.error: SQLite objects created in a thread can only be used in that same thread. The object was "
        "created in thread id 128379340691264 and this is thread id 128379315553856.");
    row("salience-detr-4-timestamped-elastic.log", "errors", "<absent>");
    row("trixie-87-wrapped-runtimeerror.log", "errors.0.line", "1");
    // PyTorch 2.4's "[rankN]: " before each line of a traceback (a space after the colon): every rank's exception is
    // read, chained ones too, and the C++ warning that follows is no rank's exception.
    row("deepspeed-hello-rank-space-tracebacks.log", "errors",
        R"x([{"file":"log","line":8,"rank":1,"text":"subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1."},)x"
        R"x({"file":"log","line":26,"rank":1,"text":"RuntimeError: Error building extension 'cpu_adam'"},)x"
        R"x({"file":"log","line":37,"rank":0,"text":"ImportError: /users/zhu/.cache/torch_extensions/py312_cu118/cpu_adam/cpu_adam.so: cannot open shared object file: No such file or directory"},)x"
        R"x({"file":"log","line":43,"text":"AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'"}])x");
    // The interpreter's crash report under srun labels: its first line is the error (the traceback that starts
    // the excerpt's last line was cut off).
    row("pytorch-135486-fatal-python-segfault.log", "errors",
        R"([{"file":"log","line":2,"rank":0,"text":"Fatal Python error: Segmentation fault"}])");
    // Kills by the system are errors of their line: the kernel's OOM killer and NVIDIA Xid errors in recorded kernel
    // logs (tests/data/kernel).
    row("../../kernel/dmesg-memcg-kubernetes.log", "errors",
        R"x([{"file":"log","line":13,"text":"[44930.378157] Memory cgroup out of memory: Killed process 59249 (tritonserver) total-vm:38974820kB, anon-rss:98544kB, file-rss:319140kB, shmem-rss:6144kB"}])x");
    row("../../kernel/journal-xid-45-after-nvlink.log", "errors.1.text",
        "kernel: NVRM: Xid (PCI:0000:ed:00): 45, pid=1818992, name=python3, Ch 0000000c caused by previous Xid 145");
    row("../../kernel/rsyslog-iso-memcg-duplicate.log", "errors.0.text",
        "Server1 kernel: Memory cgroup out of memory: Killed process 268654 (MainThread) total-vm:2011236kB, "
        "anon-rss:567484kB, file-rss:20608kB, shmem-rss:0kB, UID:10001 pgtables:16572kB oom_score_adj:934");
    // A job script's shell reports the signal that ended its python (bash pads the pid); Slurm reports a task's OOM.
    row("spatial-transformer-gan-35-bash-killed.log", "errors.0.text",
        "./train.sh: line 1:  7364 Killed                  python3 train_Donly.py --name=D0 --warpN=0 --pertFG=0.2");
    row("fondue-htr-5-srun-out-of-memory.log", "errors.0.text", "srun: error: gpu001: task 0: Out Of Memory");
    // The bundled trainer's own stderr, recorded (tests/data/logs): its error line names the rank.
    row("trainer-fail-rank1.err", "errors",
        R"x([{"file":"log","line":3,"rank":1,"text":"injected failure at step 3 (--fail-at-step)"}])x");
    row("trainer-fail-rank0.err", "errors.0.text",
        "gradient all-reduce in backward (collective #6) failed on rank 0: [./gloo/transport/tcp/pair.cc:589] Read "
        "error [127.0.0.1]:177: Connection reset by peer");
    row("trainer-ok-rank0.err", "errors", "<absent>");
}

void tst_LogParsers::publicLogs() {
    QFETCH(QString, file);
    QFETCH(QString, path);
    QFETCH(QString, expected);
    const bool recordedHere = file.startsWith(QLatin1String("nccl-public")) ||
                              file.startsWith(QLatin1String("trainer-")) || file.startsWith(QLatin1String("python-"));
    const QString dir = recordedHere ? kPublicDir + QStringLiteral("../") : kPublicDir;
    const QByteArray bytes = readData(dir + file);
    QVERIFY2(!bytes.isEmpty(), qPrintable(file));
    QCOMPARE(valueAt(inspectJson(bytes), path), expected);
}

void tst_LogParsers::messyLines_data() {
    QTest::addColumn<QByteArray>("log");
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("expected");
    // Synthetic variations of the public lines above: prefixes, CRLF, ANSI colours, progress bars, bytes that
    // are not UTF-8, ranks interleaved.
    const QByteArray comm = "host-a:11:12 [1] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 1 busId 2000 commId 0xab - "
                            "Init COMPLETE";
    QTest::newRow("torchrun tee prefix") << "[default1]:" + comm + "\n" << "nccl.ranks" << "[1]";
    QTest::newRow("open mpi prefix, crlf") << "[1,1]<stdout>:" + comm + "\r\n" << "nccl.communicators.0.ranks.0.init"
                                           << "COMPLETE";
    QTest::newRow("no final newline") << comm << "nccl.communicators.0.ranks.0.bus_id" << "2000";
    QTest::newRow("ansi colours") << "\x1b[32m" + comm + "\x1b[0m\n" << "nccl.communicators.0.ranks.0.init"
                                  << "COMPLETE";
    QTest::newRow("progress bar before") << "epoch 1: 10%\repoch 1: 90%\r" + comm + "\n" << "nccl.hosts"
                                         << R"(["host-a"])";
    QTest::newRow("not utf-8 around") << QByteArray("\xff\xfe garbage \xc3\x28\n") + comm + "\n\xff\n"
                                      << "nccl.nranks" << "2";
    QTest::newRow("not utf-8 in warning")
        << QByteArray("h:1:2 [0] misc/x.cc:5 NCCL WARN bad \xff byte\n") << "nccl.warnings.0.source" << "misc/x.cc:5";
    // Names are kept as strings: bytes that are not UTF-8 become U+FFFD, so two such ids are one communicator.
    QTest::newRow("not utf-8 in comm ids")
        << QByteArray("h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0x\xff - Init START\n"
                      "h:1:3 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 busId 2000 commId 0x\xfe - Init START\n")
        << "nccl.communicators"
        << QStringLiteral(R"([{"comm_id":"0x%1","nranks":2,"ranks":[)"
                          R"({"bus_id":"1000","cuda_dev":0,"host":"h","init":"START","pid":1,"rank":0},)"
                          R"({"bus_id":"2000","cuda_dev":1,"host":"h","init":"START","pid":1,"rank":1}]}])")
               .arg(QChar(0xFFFD));
    QTest::newRow("not utf-8 in networks")
        << QByteArray("h:1:2 [0] NCCL INFO Using network \xff\nh:1:2 [0] NCCL INFO Using network IB\n"
                      "h:1:2 [0] NCCL INFO Using network \xfe\n")
        << "nccl.network" << QString(QChar(0xFFFD));
    QTest::newRow("not utf-8 in interfaces")
        << QByteArray("h:1:2 [0] NCCL INFO NET/Socket : Using [0]e\xff:10.0.0.1<0> [1]e\xfe:10.0.0.2<0>\n")
        << "nccl.interfaces" << QStringLiteral(R"(["e%1"])").arg(QChar(0xFFFD));
    QTest::newRow("warn with prefix rank") << QByteArray("[rank4]:h:1:2 [0] net.cc:9 NCCL WARN oops\n")
                                           << "nccl.warnings.0.rank" << "4";
    QTest::newRow("warn rank from communicator")
        << QByteArray("h:7:8 [0] NCCL INFO comm 0x1 rank 5 nranks 8 cudaDev 0 busId 1000 commId 0x9 - Init START\n"
                      "h:7:9 [0] transport.cc:1 NCCL WARN lost peer\n")
        << "nccl.warnings.0.rank" << "5";
    // A header's host read backwards 16 bytes a step: a long one after a tab, and one that starts the line.
    QTest::newRow("long host after a tab")
        << QByteArray("step 7\tgpu-node-0123.cluster.example.org:4242:4343 [3] NCCL INFO comm 0x1 rank 3 nranks 4 "
                      "cudaDev 3 busId 3000 commId 0xcd - Init START\n")
        << "nccl.communicators.0.ranks.0.host" << "gpu-node-0123.cluster.example.org";
    QTest::newRow("long host at the line's start")
        << QByteArray("gpu-node-0123.cluster.example.org:4242:4343 [3] NCCL INFO Using network IB\n"
                      "x gpu-node-0124.cluster.example.org:4242:4343 [3] NCCL INFO Using network IB\n")
        << "nccl.hosts" << R"(["gpu-node-0123.cluster.example.org","gpu-node-0124.cluster.example.org"])";
    // A communicator's init line is read in one pass over its words: any order, tabs, the first whole key.
    QTest::newRow("comm init fields in another order")
        << QByteArray("h:1:2 [0] NCCL INFO comm 0x1\tcommId 0xef busId 4000 cudaDev 2 nranks 4 rank 2 - Init COMPLETE\n")
        << "nccl.communicators"
        << R"([{"comm_id":"0xef","nranks":4,"ranks":[)"
           R"({"bus_id":"4000","cuda_dev":2,"host":"h","init":"COMPLETE","pid":1,"rank":2}]}])";
    QTest::newRow("comm init: the first whole key counts")
        << QByteArray("h:1:2 [0] NCCL INFO comm 0x1 xrank 9 rank 1 nranks 2 rank 0 cudaDev 1 busId 2000 commId 0xab - "
                      "Init START\n")
        << "nccl.ranks" << "[1]";
    QTest::newRow("comm init: Init START at the end of a word")
        << QByteArray("h:1:2 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 1 busId 2000 commId 0xab - reInit START\n")
        << "nccl.communicators.0.ranks.0.init" << "START";
    // A line as NCCL prints it is read left to right; any other is read word by word, with the same result.
    QTest::newRow("comm init as printed by ncclCommInitRank")
        << QByteArray("h:1:2 [0] NCCL INFO ncclCommInitRank comm 0x55d5 rank 4 nranks 8 cudaDev 0 nvmlDev 0 "
                      "busId 42000 commId 0x996e - Init START\n")
        << "nccl.communicators"
        << R"([{"comm_id":"0x996e","nranks":8,"ranks":[)"
           R"({"bus_id":"42000","cuda_dev":0,"host":"h","init":"START","pid":1,"rank":4}]}])";
    QTest::newRow("comm init as printed by NCCL 2.4")
        << QByteArray("h:1:2 [0] NCCL INFO comm 0x7f rank 1 nranks 2 cudaDev 1 busId 0000:3b:00.0 - Init COMPLETE\n")
        << "nccl.communicators"
        << R"([{"nranks":2,"ranks":[)"
           R"({"bus_id":"0000:3b:00.0","cuda_dev":1,"host":"h","init":"COMPLETE","pid":1,"rank":1}]}])";
    QTest::newRow("comm init: a value that is a key")
        << QByteArray("h:1:2 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev busId busId 2000 commId 0xab - "
                      "Init START\n")
        << "nccl.communicators.0.ranks.0.bus_id" << "busId";
    QTest::newRow("comm init: words after the state")
        << QByteArray("h:1:2 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 1 busId 2000 commId 0xab - Init START "
                      "Init COMPLETE\n")
        << "nccl.communicators.0.ranks.0.init" << "COMPLETE";
    // A rank's init lines come one after another: its later state is the one it reached.
    QTest::newRow("comm init: a rank's later line")
        << QByteArray("h:1:2 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 1 busId 2000 commId 0xab - Init START\n"
                      "h:1:2 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 1 busId 2000 commId 0xab - Init COMPLETE\n")
        << "nccl.communicators.0.ranks"
        << R"([{"bus_id":"2000","cuda_dev":1,"host":"h","init":"COMPLETE","pid":1,"rank":1}])";
    QTest::newRow("comm init: two spaces between words")
        << QByteArray("h:1:2 [0] NCCL INFO comm 0x1 rank 1  nranks 2 cudaDev 3 busId 2000 commId 0xab - Init START\n")
        << "nccl.communicators.0.ranks.0.cuda_dev" << "3";
    // The last communicator is looked up again only when the next line names another: its ranks go to it, also
    // after other communicators were added in between.
    QTest::newRow("comm init: communicators interleaved")
        << [] {
               QByteArray log;
               for (int comm = 0; comm < 40; ++comm) {
                   for (int rank = 0; rank < 2; ++rank)
                       log += QByteArrayLiteral("h:1:2 [0] NCCL INFO comm 0x1 rank ") + QByteArray::number(rank) +
                              " nranks 2 cudaDev 0 busId 1000 commId 0x" + QByteArray::number(comm % 20) +
                              " - Init COMPLETE\n";
               }
               return log;
           }()
        << "nccl.communicators.19"
        << R"({"comm_id":"0x9","nranks":2,"ranks":[)"
           R"({"bus_id":"1000","cuda_dev":0,"host":"h","init":"COMPLETE","pid":1,"rank":0},)"
           R"({"bus_id":"1000","cuda_dev":0,"host":"h","init":"COMPLETE","pid":1,"rank":1}]})";
    // A header's pid and tid are read backwards up to their colons: 18 digits at most.
    QTest::newRow("pid of 18 digits")
        << QByteArray("h:123456789012345678:2 [0] NCCL INFO Using network IB\n") << "nccl.hosts" << R"(["h"])";
    QTest::newRow("pid of 19 digits: no header")
        << QByteArray("h:1234567890123456789:2 [0] NCCL INFO Using network IB\n") << "nccl.hosts" << "<absent>";
    QTest::newRow("tid without digits: no header")
        << QByteArray("h:12: [0] NCCL INFO Using network IB\n") << "nccl.hosts" << "<absent>";
    // Up to 7 digits are read 8 bytes at a time; more, or a header that starts fewer than 8 bytes into the line, one
    // at a time.
    QTest::newRow("pid and tid of 1 to 9 digits")
        << QByteArray("host-name:1:1234567 [0] NCCL INFO Using network IB\nhost-name:1234567:12345678 [0] NCCL INFO "
                      "comm 0x1 rank 0 nranks 1 cudaDev 0 busId 1 - Init START\nhost-name:123456789:1 [0] NCCL INFO "
                      "comm 0x1 rank 0 nranks 1 cudaDev 0 busId 1 commId 0x2 - Init START\n")
        << "nccl.communicators"
        << R"([{"comm_id":"0x2","nranks":1,"ranks":[)"
           R"({"bus_id":"1","cuda_dev":0,"host":"host-name","init":"START","pid":123456789,"rank":0}]},)"
           R"({"nranks":1,"ranks":[)"
           R"({"bus_id":"1","cuda_dev":0,"host":"host-name","init":"START","pid":1234567,"rank":0}]}])";
    QTest::newRow("header near the line's start")
        << QByteArray("h:1:2 [0] NCCL INFO Using network IB\nh:12:3 [0] NCCL INFO Using network IB\n:1:2 [0] NCCL INFO "
                      "Using network IB\n9:8:7 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 busId 1 - Init START\n")
        << "nccl.communicators.0.ranks.0"
        << R"({"bus_id":"1","cuda_dev":0,"host":"9","init":"START","pid":8,"rank":0})";
    QTest::newRow("digits of the host are not the pid's")
        << QByteArray("step 1 node12345:678 [0] NCCL INFO Using network IB\nx 1234567:1:2 [0] NCCL INFO Using network "
                      "IB\n")
        << "nccl.hosts" << R"(["1234567"])";
    // A header whose bytes repeat the last one read is not read again, unless its token goes on before them.
    QTest::newRow("repeated header bytes inside a longer token")
        << QByteArray("h:1:2 [0] NCCL INFO Using network IB\nxh:1:2 [0] NCCL INFO Using network IB\n"
                      "step 3 h:1:2 [0] NCCL INFO Using network IB\n")
        << "nccl.hosts" << R"(["h","xh"])";
    QTest::newRow("repeated header keeps its source")
        << QByteArray("h:1:2 [0] misc/a.cc:1 NCCL WARN first\nh:1:2 [0] misc/a.cc:1 NCCL WARN second\n")
        << "nccl.warnings.1.source" << "misc/a.cc:1";
    // "N coll channels" gives channels only where the record starts with the count; other records holding the
    // words are read as usual.
    QTest::newRow("coll channels only from a record starting with the count")
        << QByteArray("h:1:2 [0] NCCL INFO Connected NVLS, 16 coll channels\n"
                      "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 coll channels\n"
                      "h:1:2 [0] NCCL INFO 8 coll channels, 8 nvls channels\n"
                      "h:1:2 [0] NCCL INFO x 4 coll channels\n")
        << "nccl"
        << R"({"channels":8,"communicators":[{"nranks":2,"ranks":[)"
           R"({"bus_id":"1000","cuda_dev":0,"host":"h","pid":1,"rank":0}]}],)"
           R"("hosts":["h"],"nranks":2,"ranks":[0],"transports":{"NVLS":1}})";
    QTest::newRow("shm and socket")
        << QByteArray("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n"
                      "h:1:2 [0] NCCL INFO Channel 00/0 : 1[1] -> 2[0] [send] via NET/Socket/0\n")
        << "nccl.transports" << R"({"NET/Socket":1,"SHM":1})";
    // Transports other than the common ones are counted by name: the name up to its first '/' ("NET/" and the
    // plugin's name for a network plugin), and names that read as the same string are one.
    QTest::newRow("plugin transports")
        << QByteArray("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IBext/0/GDRDMA\n"
                      "h:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 8[0] [send] via NET/IBext/1/GDRDMA\n"
                      "h:1:2 [0] NCCL INFO Channel 02/0 : 0[0] -> 8[0] [send] via NET/AWS Libfabric/0\n"
                      "h:1:2 [0] NCCL INFO Channel 03/0 : 0[0] -> 8[0] [send] via COLLNET/x\n"
                      "h:1:2 [0] NCCL INFO Channel 04/0 : 0[0] -> 8[0] [send] via NET/IBext/2/GDRDMA\n"
                      "h:1:2 [0] NCCL INFO Channel 05/0 : 0[0] -> 8[0] [send] via X\xff/1\n"
                      "h:1:2 [0] NCCL INFO Channel 06/0 : 0[0] -> 8[0] [send] via X\xfe/1\n")
        << "nccl.transports" << QStringLiteral(R"({"COLLNET":1,"GDRDMA":3,"NET/AWS":1,"NET/IBext":3,"X%1":2})")
                                    .arg(QChar(0xFFFD));
    QTest::newRow("nccl version in info") << QByteArray("h:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n")
                                          << "nccl.versions" << R"(["2.18.3"])";
    // Versions in the order of their numbers, not of their text ("2.4.7" before "2.13.4", "2.18.1" before
    // "2.18.10").
    QTest::newRow("nccl versions in numeric order") << QByteArray("a:1:1 [0] NCCL INFO NCCL version 2.18.10+cuda12.2\n"
                                                                  "b:1:1 [0] NCCL INFO NCCL version 2.13.4+cuda11.7\n"
                                                                  "c:1:1 [0] NCCL INFO NCCL version 2.4.7+cuda10.1\n"
                                                                  "d:1:1 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n")
                                                    << "nccl.versions"
                                                    << R"(["2.4.7","2.13.4","2.18.1","2.18.10"])";
    QTest::newRow("nccl version printed by every rank")
        << QByteArray("a:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n"
                      "a:2:2 [1] NCCL INFO NCCL version 2.18.3+cuda12.2\n"
                      "b:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n")
        << "nccl.versions"
        << R"(["2.18.3"])";
    // Two nodes' lines in one file: the node whose NCCL chose the loopback is a finding, with its rank.
    QTest::newRow("nccl findings") << QByteArray(
                                          "node-a:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
                                          "node-a:1:2 [0] NCCL INFO Using network Socket\n"
                                          "node-a:1:2 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1000 "
                                          "commId 0x77 - Init COMPLETE\n"
                                          "node-b:3:4 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>\n"
                                          "node-b:3:4 [0] NCCL INFO Using network Socket\n"
                                          "node-b:3:4 [0] NCCL INFO comm 0x6 rank 1 nranks 2 cudaDev 0 busId 1000 "
                                          "commId 0x77 - Init COMPLETE\n")
                                   << "nccl.findings.@key"
                                   << "nccl:loopback";
    QTest::newRow("ib no device is not a network") << QByteArray("h:1:1 [0] NCCL INFO NET/IB : No device found.\n")
                                                   << "nccl.network" << "<absent>";
    QTest::newRow("interleaved tracebacks by rank")
        << QByteArray("[default0]:Traceback (most recent call last):\n"
                      "[default1]:Traceback (most recent call last):\n"
                      "[default0]:  File \"a.py\", line 1, in <module>\n"
                      "[default1]:  File \"b.py\", line 2, in <module>\n"
                      "[default1]:ValueError: one\n"
                      "[default0]:KeyError: 'zero'\n")
        << "errors"
        << R"([{"file":"log","line":5,"local_rank":1,"text":"ValueError: one"},)"
           R"({"file":"log","line":6,"local_rank":0,"text":"KeyError: 'zero'"}])";
    // torchrun's "[default1]:" names the local rank: on the second node, local rank 1 is rank 5 (NCCL's
    // communicator says so), which the warning takes; an error has only the local rank.
    const QByteArray secondNode = "[default1]:node-b:11:12 [1] NCCL INFO comm 0x1 rank 5 nranks 8 cudaDev 1 busId 2000 "
                                  "commId 0xab - Init COMPLETE\n"
                                  "[default1]:node-b:11:12 [1] misc/socket.cc:50 NCCL WARN Net : Connection closed\n"
                                  "[default1]:Traceback (most recent call last):\n"
                                  "[default1]:  File \"train.py\", line 9, in <module>\n"
                                  "[default1]:RuntimeError: NCCL communicator was aborted\n";
    QTest::newRow("torchrun's local rank: a warning's rank is its communicator's")
        << secondNode << "nccl.warnings.0"
        << R"({"host":"node-b","local_rank":1,"pid":11,"rank":5,)"
           R"("source":"misc/socket.cc:50","text":"Net : Connection closed"})";
    QTest::newRow("torchrun's local rank: an error's is local")
        << secondNode << "errors"
        << R"([{"file":"log","line":5,"local_rank":1,)"
           R"("text":"RuntimeError: NCCL communicator was aborted"}])";
    QTest::newRow("pytorch's rank prefix: an error's is the run's")
        << QByteArray("[rank5]: Traceback (most recent call last):\n"
                      "[rank5]:   File \"train.py\", line 9, in <module>\n"
                      "[rank5]: RuntimeError: NCCL communicator was aborted\n")
        << "errors"
        << R"([{"file":"log","line":3,"rank":5,"text":"RuntimeError: NCCL communicator was aborted"}])";
    // pdsh's "host: " before every line (DeepSpeed's launcher across nodes): each host's traceback is followed
    // through the lines with its prefix, and its exception is read without it.
    QTest::newRow("interleaved tracebacks under pdsh host prefixes")
        << QByteArray("worker-0: Traceback (most recent call last):\n"
                      "gpu.b_1: Traceback (most recent call last):\n"
                      "worker-0:   File \"train.py\", line 9, in <module>\n"
                      "gpu.b_1:   File \"train.py\", line 9, in <module>\n"
                      "worker-0: ValueError: bad\n"
                      "gpu.b_1:     main()\n"
                      "gpu.b_1: RuntimeError: CUDA error: out of memory\n")
        << "errors"
        << R"([{"file":"log","line":5,"text":"ValueError: bad"},)"
           R"({"file":"log","line":7,"text":"RuntimeError: CUDA error: out of memory"}])";
    // Slurm's report of an OOM kill in a job step, and a kernel's kill among a program's lines; a program that says
    // "Killed process" or "NVRM: Xid" in words of its own is no kill.
    QTest::newRow("kills by the system")
        << QByteArray("worker: Killed process 12 because it was slow\n"
                      "NVRM: Xid errors are listed below\n"
                      "slurmstepd: error: Detected 1 oom_kill event in StepId=4242.0. Some of your processes may have "
                      "been killed by the cgroup out-of-memory handler.\n"
                      "[rank3]: Out of memory: Killed process 1234 (python) total-vm:123kB, anon-rss:100kB\n")
        << "errors"
        << R"([{"file":"log","line":3,"text":"slurmstepd: error: Detected 1 oom_kill event in StepId=4242.0. Some of your processes may have been killed by the cgroup out-of-memory handler."},)"
           R"({"file":"log","line":4,"rank":3,"text":"Out of memory: Killed process 1234 (python) total-vm:123kB, anon-rss:100kB"}])";
    // Ray's worker prefix names a process, not a rank: each worker's traceback is followed by its pid, and the
    // frames keep their indentation (Ray writes one space after the prefix).
    QTest::newRow("interleaved tracebacks of Ray workers")
        << QByteArray("(RayTrainWorker pid=1234, ip=10.0.0.1) Traceback (most recent call last):\n"
                      "(RayTrainWorker pid=1235, ip=10.0.0.2) Traceback (most recent call last):\n"
                      "(RayTrainWorker pid=1234, ip=10.0.0.1)   File \"train.py\", line 42, in train_func\n"
                      "(RayTrainWorker pid=1235, ip=10.0.0.2)   File \"train.py\", line 42, in train_func\n"
                      "(RayTrainWorker pid=1234, ip=10.0.0.1)     loss.backward()\n"
                      "(RayTrainWorker pid=1235, ip=10.0.0.2) torch.OutOfMemoryError: CUDA out of memory.\n"
                      "(pid=1234) RuntimeError: NCCL communicator was aborted on rank 0.\n")
        << "errors"
        << R"([{"file":"log","line":6,"text":"torch.OutOfMemoryError: CUDA out of memory."},)"
           R"({"file":"log","line":7,"text":"RuntimeError: NCCL communicator was aborted on rank 0."}])";
    // bash's report of a job a signal ended, and lines that only look like one.
    QTest::newRow("a shell's report of a killed job")
        << QByteArray("bash: line 1: 77 Segmentation fault      (core dumped) python x.py\n"
                      "./x.sh: line 5: syntax error near unexpected token\n"
                      "see: line 5: 12 Killedx\n"
                      "INFO: line 3: 4 things\n"
                      "./run.sh: line 9: 4242 Aborted                 (core dumped) torchrun train.py\n")
        << "errors"
        << R"([{"file":"log","line":1,"text":"bash: line 1: 77 Segmentation fault      (core dumped) python x.py"},)"
           R"({"file":"log","line":5,"text":"./run.sh: line 9: 4242 Aborted                 (core dumped) torchrun train.py"}])";
    // Another process's C++ stack among a traceback's frames (processes writing to one stream): its lines at the
    // margin are not the traceback's exception, which still comes.
    QTest::newRow("a c++ stack among a traceback's frames")
        << QByteArray("Traceback (most recent call last):\n"
                      "  File \"train.py\", line 9, in <module>\n"
                      "Exception raised from checkTimeout at ProcessGroupNCCL.cpp:632 (most recent call first):\n"
                      "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f in libc10.so)\n"
                      "frame #12: clone + 0x44 (0x7f in libc.so.6)\n"
                      "#4 c10d::ProcessGroupNCCL::watchdogHandler() from ??:0\n"
                      "    main()\n"
                      "RuntimeError: boom\n")
        << "errors" << R"([{"file":"log","line":8,"text":"RuntimeError: boom"}])";
    // A logger's "ERROR: " before a traceback is no host: the frames that follow do not repeat it.
    QTest::newRow("a logger's level before a traceback") << QByteArray("ERROR: Traceback (most recent call last):\n"
                                                                       "  File \"train.py\", line 9, in <module>\n"
                                                                       "KeyError: 'x'\n")
                                                         << "errors"
                                                         << R"([{"file":"log","line":3,"text":"KeyError: 'x'"}])";
    // `srun --label` output: each task's traceback is its own, and its exception is the line after the frames, not
    // the first frame (which the label used to hide from the parser's frame test).
    QTest::newRow("interleaved tracebacks under srun labels")
        << QByteArray(" 0: Traceback (most recent call last):\n"
                      "11: Traceback (most recent call last):\n"
                      " 0:   File \"train.py\", line 9, in <module>\n"
                      "11:   File \"train.py\", line 9, in <module>\n"
                      " 0:     main()\n"
                      "11: RuntimeError: CUDA error: out of memory\n"
                      " 0: ValueError: bad\n")
        << "errors"
        << R"([{"file":"log","line":6,"rank":11,"text":"RuntimeError: CUDA error: out of memory"},)"
           R"({"file":"log","line":7,"rank":0,"text":"ValueError: bad"}])";
    // Under launcher prefixes, the detail is the line of the error's own rank; other ranks' lines in between are
    // not it, and a detail too far after its error is not taken.
    QTest::newRow("nccl last error of interleaved ranks")
        << QByteArray("[rank1]: torch.distributed.DistBackendError: NCCL error in: a.cpp:1, unhandled system error\n"
                      "[rank0]: torch.distributed.DistBackendError: NCCL error in: a.cpp:1, remote process exited\n"
                      "[rank1]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed.\n"
                      "[rank0]: ncclRemoteError: A call failed possibly due to a network error or a remote process.\n"
                      "[rank1]: Last error:\n"
                      "[rank0]: Last error:\n"
                      "[rank0]: \n"
                      "[rank1]: socketProgress: Connection closed by remote peer n2<38402>\n")
        << "errors"
        << R"([{"file":"log","line":1,"rank":1,"text":"torch.distributed.DistBackendError: NCCL error in: a.cpp:1, )"
           R"(unhandled system error; last error: socketProgress: Connection closed by remote peer n2<38402>"},)"
           R"({"file":"log","line":2,"rank":0,"text":"torch.distributed.DistBackendError: NCCL error in: a.cpp:1, )"
           R"(remote process exited"}])";
    QTest::newRow("nccl last error too far away")
        << QByteArray("torch.distributed.DistBackendError: NCCL error in: a.cpp:1, unhandled system error\n") +
               QByteArray("[rank3]: epoch 0 step 1\n").repeated(8) + "Last error:\nsocket: gone\n"
        << "errors.0.text"
        << "torch.distributed.DistBackendError: NCCL error in: a.cpp:1, unhandled system error";
    // The detail may be the eighth line after the error, not the ninth.
    QTest::newRow("nccl last error at the window's end")
        << QByteArray("torch.distributed.DistBackendError: NCCL error in: a.cpp:1, unhandled system error\n") +
               QByteArray("[rank3]: epoch 0 step 1\n").repeated(6) + "Last error:\nsocket: gone\n"
        << "errors.0.text"
        << "torch.distributed.DistBackendError: NCCL error in: a.cpp:1, unhandled system error; last error: socket: "
           "gone";
    QTest::newRow("nccl last error just past the window")
        << QByteArray("torch.distributed.DistBackendError: NCCL error in: a.cpp:1, unhandled system error\n") +
               QByteArray("[rank3]: epoch 0 step 1\n").repeated(7) + "Last error:\nsocket: gone\n"
        << "errors.0.text"
        << "torch.distributed.DistBackendError: NCCL error in: a.cpp:1, unhandled system error";
    // Ranks below 4095 are looked up by index, the others by hash: both follow their own traceback and exception.
    QTest::newRow("interleaved tracebacks of high ranks")
        << QByteArray("[rank4094]:Traceback (most recent call last):\n"
                      "[rank5000]:Traceback (most recent call last):\n"
                      "[rank4094]:  File \"a.py\", line 1, in <module>\n"
                      "[rank5000]:  File \"b.py\", line 2, in <module>\n"
                      "[rank5000]:ValueError: one\n"
                      "[rank4094]:KeyError: 'zero'\n")
        << "errors" << R"([{"file":"log","line":5,"rank":5000,"text":"ValueError: one"},)"
                       R"({"file":"log","line":6,"rank":4094,"text":"KeyError: 'zero'"}])";
    // The bundled trainer's error line: the rank is the trainer's own, also under a launcher prefix that names a
    // local rank; a line that only looks like it is not an error.
    QTest::newRow("the trainer's error line")
        << QByteArray("[rank 1] epoch 1/1 step 1/8 loss 2.4 1707 img/s\n"
                      "[default0]:[rank 12] error:   injected failure at step 3 (--fail-at-step) \n")
        << "errors"
        << R"x([{"file":"log","line":2,"rank":12,"text":"injected failure at step 3 (--fail-at-step)"}])x";
    QTest::newRow("lines like the trainer's error line")
        << QByteArray("[rank x] error: a\n[rank 1234567890] error: b\nsee [rank 1] error: c\n[rank ] error: d\n"
                      "[rank 1]error: e\n[rank 1] errors: f\n[rank -1] error: g\n")
        << "errors"
        << "<absent>";
    QTest::newRow("c++ exceptions by rank")
        << QByteArray("[rank1]:terminate called after throwing an instance of 'std::runtime_error'\n"
                      "[rank7000]:terminate called after throwing an instance of 'c10::Error'\n"
                      "[rank7000]:  what():  bad\n"
                      "[rank1]:  what():  worse \n"
                      "[rank1]:  what():  again\n"
                      "[rank9000]:  what():  alone\n")
        << "errors"
        << R"([{"file":"log","line":3,"rank":7000,"text":"c10::Error: bad"},)"
           R"({"file":"log","line":4,"rank":1,"text":"std::runtime_error: worse"},)"
           R"({"file":"log","line":5,"rank":1,"text":"again"},{"file":"log","line":6,"rank":9000,"text":"alone"}])";
    // A second thrown type before the "what():" line is the one it is about.
    QTest::newRow("c++ exception: the last thrown type")
        << QByteArray("terminate called after throwing an instance of 'std::bad_alloc'\n"
                      "terminate called after throwing an instance of 'c10::Error'\n"
                      "  what():  bad\n")
        << "errors"
        << R"([{"file":"log","line":3,"text":"c10::Error: bad"}])";
    // Ray's workers each have a traceback of their own: another worker's exception line is not this one's.
    QTest::newRow("ray: another worker's exception") << QByteArray("(pid=1234) Traceback (most recent call last):\n"
                                                                   "(pid=1234)   File \"a.py\", line 1, in f\n"
                                                                   "(pid=1235) KeyError: 'other'\n"
                                                                   "(pid=1234) ValueError: mine\n")
                                                     << "errors"
                                                     << R"([{"file":"log","line":4,"text":"ValueError: mine"}])";
    // A traceback of kMaxTracebackLines frame lines ends with its exception; one line more is a runaway, whose
    // next line is no exception.
    const QByteArray header = "Traceback (most recent call last):\n";
    QTest::newRow("traceback of the most lines")
        << header + QByteArray("  x\n").repeated(TracebackLogParser::kMaxTracebackLines) + "ValueError: in time\n"
        << "errors"
        << QStringLiteral(R"([{"file":"log","line":%1,"text":"ValueError: in time"}])")
               .arg(TracebackLogParser::kMaxTracebackLines + 2);
    QTest::newRow("traceback past the most lines")
        << header + QByteArray("  x\n").repeated(TracebackLogParser::kMaxTracebackLines + 1) + "ValueError: late\n"
        << "errors"
        << "<absent>";
    // A traceback whose rank prints nothing for kMaxTracebackGap lines was cut off: a line of its rank after that
    // is not its exception. Up to the gap, other ranks' lines in between change nothing.
    const QByteArray cutTraceback = "Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n";
    const QByteArray otherRank = "[rank3]: epoch 0 step 1 loss 0.5\n";
    QTest::newRow("traceback cut off")
        << cutTraceback + otherRank.repeated(TracebackLogParser::kMaxTracebackGap) + "RuntimeError: late\n"
        << "errors" << "<absent>";
    QTest::newRow("traceback up to the gap")
        << cutTraceback + otherRank.repeated(TracebackLogParser::kMaxTracebackGap - 1) + "RuntimeError: late\n"
        << "errors.0" << R"({"file":"log","line":2002,"text":"RuntimeError: late"})";
    // The gap counts from the rank's last line of the traceback, not its first.
    QTest::newRow("traceback with a line in the gap")
        << cutTraceback + otherRank.repeated(1500) + "  File \"b.py\", line 2, in f\n" + otherRank.repeated(1500) +
               "RuntimeError: late\n"
        << "errors.0.text" << "RuntimeError: late";
    // An error keeps at most 1,000 characters of its text as shown, whichever parser found it: multi-byte characters
    // count once, and the type and message of a C++ exception are cut together.
    const QString accents = QString(1500, QChar(0xe9));
    QTest::newRow("a long exception is cut at 1,000 characters")
        << "Traceback (most recent call last):\n  File \"a.py\", line 1\nValueError: " + accents.toUtf8() + "\n"
        << "errors.0.text" << QString(QStringLiteral("ValueError: ") + accents).left(1000);
    QTest::newRow("a long what() is cut at 1,000 characters")
        << "terminate called after throwing an instance of 'std::runtime_error'\n  what():  " + accents.toUtf8() +
               "\n"
        << "errors.0.text" << QString(QStringLiteral("std::runtime_error: ") + accents).left(1000);
    QTest::newRow("a long NCCL error is cut at 1,000 characters")
        << "NCCL error in: " + accents.toUtf8() + "\n"
        << "errors.0.text" << QString(QStringLiteral("NCCL error in: ") + accents).left(1000);
    // Among tangled tracebacks only a line of an exception's form is one: a type and then anything but ':' is not.
    QTest::newRow("tangled tracebacks: a type and words is no exception")
        << QByteArray("Traceback (most recent call last):\n"
                      "Traceback (most recent call last):\n"
                      "  File \"train.py\", line 9, in <module>\n"
                      "ValueError raised by the loader, retrying\n"
                      "ValueError: bad batch\n"
                      "KeyError: 'x'\n")
        << "errors.@line"
        << "5,6";
    // torchrun without --tee: every rank's traceback at once and nothing to tell their lines apart. Each rank's
    // exception is found; the agent's line and the second line of a CUDA error's message in between are not.
    QTest::newRow("interleaved tracebacks without prefixes")
        << QByteArray("Traceback (most recent call last):\n"
                      "Traceback (most recent call last):\n"
                      "  File \"train.py\", line 9, in <module>\n"
                      "  File \"train.py\", line 9, in <module>\n"
                      "Traceback (most recent call last):\n"
                      "    main()\n"
                      "RuntimeError: CUDA error: an illegal memory access was encountered\n"
                      "CUDA kernel errors might be asynchronously reported at some other API call.\n"
                      "  File \"train.py\", line 9, in <module>\n"
                      "W0328 18:18:18.154000 140217 torch/distributed/elastic/multiprocessing/api.py:851] Sending "
                      "process 3274844 closing signal SIGTERM\n"
                      "    main()\n"
                      "torch.OutOfMemoryError: CUDA out of memory.\n"
                      "KeyboardInterrupt\n"
                      "ValueError: not a traceback's any more\n")
        << "errors.@text"
        << "RuntimeError: CUDA error: an illegal memory access was encountered,torch.OutOfMemoryError: CUDA out of "
           "memory.,KeyboardInterrupt";
    // Interleaved tracebacks whose exceptions were never printed end after kMaxStrayLines other lines in a row: a
    // later line of an exception's form is not theirs.
    const QByteArray tangled = "Traceback (most recent call last):\nTraceback (most recent call last):\n"
                               "  File \"a.py\", line 1, in <module>\n";
    const QByteArray stray = "epoch 0 step 1 loss 0.5\n";
    QTest::newRow("interleaved tracebacks cut off")
        << tangled + stray.repeated(TracebackLogParser::kMaxStrayLines + 1) + "ValueError: late\n"
        << "errors"
        << "<absent>";
    QTest::newRow("interleaved tracebacks up to the cut")
        << tangled + stray.repeated(TracebackLogParser::kMaxStrayLines) + "ValueError: late\nOSError: later\n"
        << "errors.@line"
        << "24,25";
    QTest::newRow("a frame between stray lines")
        << tangled + stray.repeated(TracebackLogParser::kMaxStrayLines) + "  File \"b.py\", line 2, in f\n" +
               stray.repeated(TracebackLogParser::kMaxStrayLines) + "ValueError: late\n"
        << "errors.@line"
        << "45";
    // Indented lines that are no frames (a failure table's fields, a frame's code) count as stray lines too.
    QTest::newRow("interleaved tracebacks cut off before indented lines")
        << tangled + QByteArray("  rank      : 1 (local_rank: 1)\n").repeated(TracebackLogParser::kMaxStrayLines + 1) +
               "ValueError: late\n"
        << "errors"
        << "<absent>";
    // A traceback at the margin right after an exception group is one of its own.
    QTest::newRow("a traceback after an exception group")
        << QByteArray("  + Exception Group Traceback (most recent call last):\n"
                      "  |   File \"a.py\", line 1, in <module>\n"
                      "  | ExceptionGroup: eg (1 sub-exception)\n"
                      "  +-+---------------- 1 ----------------\n"
                      "    | Traceback (most recent call last):\n"
                      "    |   File \"a.py\", line 3, in f\n"
                      "    | ValueError: a\n"
                      "    +------------------------------------\n"
                      "Traceback (most recent call last):\n"
                      "  File \"b.py\", line 2, in <module>\n"
                      "RuntimeError: after the group\n")
        << "errors.@text"
        << "ExceptionGroup: eg (1 sub-exception),ValueError: a,RuntimeError: after the group";
    // Two ranks' boxed tracebacks under PyTorch's "[rankN]:", line by line: each rank's exception. A line after
    // the box that the last one's first word would have fitted after is the log's own, not the message's.
    const QByteArray top = "\xe2\x95\xad" + QByteArray("\xe2\x94\x80").repeated(10) +
                           " Traceback (most recent call last) " + QByteArray("\xe2\x94\x80").repeated(10) +
                           "\xe2\x95\xae\n"; // 56 characters wide
    const QByteArray side = "\xe2\x94\x82 /w/train.py:8 in step                                   \xe2\x94\x82\n";
    const QByteArray bottom = "\xe2\x95\xb0" + QByteArray("\xe2\x94\x80").repeated(54) + "\xe2\x95\xaf\n";
    QTest::newRow("boxed tracebacks of two ranks")
        << "[rank0]:" + top + "[rank1]:" + top + "[rank1]:" + side + "[rank0]:" + side + "[rank0]:" + bottom +
               "[rank1]:" + bottom + "[rank1]:ValueError: one\n[rank0]:KeyError: 'zero' is not a key of this batch " +
               "dict\n[rank0]:step 42\n[rank1]:a_word_too_long_to_have_fitted_on_the_line_before\n"
        << "errors"
        << R"([{"file":"log","line":7,"rank":1,"text":"ValueError: one a_word_too_long_to_have_fitted_on_the_line_before"},)"
           R"({"file":"log","line":8,"rank":0,"text":"KeyError: 'zero' is not a key of this batch dict"}])";
    // IPython 7's frames, "<ipython-input-…> in <module>" and "/x.py in f()", with more lines in a frame than a
    // tangled traceback's stray lines: each frame's "---->" line keeps it going.
    QTest::newRow("an IPython 7 traceback")
        << QByteArray("---------------------------------------------------------------------------\n"
                      "RuntimeError                              Traceback (most recent call last)\n"
                      "<ipython-input-3-5c7f1e2b9d4a> in <module>\n"
                      "----> 1 train()\n\n"
                      "/w/train.py in train()\n") +
               QByteArray("step = step + 1\n").repeated(TracebackLogParser::kMaxStrayLines) +
               "---> 42     loss.backward()\n" +
               QByteArray("ok = True\n").repeated(TracebackLogParser::kMaxStrayLines) +
               "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        << "errors.@text"
        << "RuntimeError: CUDA error: an illegal memory access was encountered";
    QTest::newRow("chained traceback")
        << QByteArray("Traceback (most recent call last):\n  File \"a.py\", line 1\nOSError: first\n\n"
                      "During handling of the above exception, another exception occurred:\n\n"
                      "Traceback (most recent call last):\n  File \"a.py\", line 3\nRuntimeError: second\n")
        << "errors.1.text" << "RuntimeError: second";
    QTest::newRow("signal by name")
        << QByteArray("Root Cause (first observed failure):\n[0]:\n  time      : 2024-01-01_00:00:00\n"
                      "  host      : node7\n  rank      : 12 (local_rank: 4)\n  exitcode  : -9 (pid: 4242)\n"
                      "  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID 4242\n"
                      "============================================================\n")
        << "failures.0"
        << R"({"exit_code":-9,"host":"node7","local_rank":4,"pid":4242,"rank":12,"root_cause":true,"signal":"SIGKILL","time":"2024-01-01_00:00:00"})";
    QTest::newRow("signal from exit code only")
        << QByteArray("Root Cause (first observed failure):\n[0]:\n  rank      : 0 (local_rank: 0)\n"
                      "  exitcode  : -6 (pid: 1)\n====\n")
        << "failures.0.signal" << "SIGABRT";
    QTest::newRow("error_file lines are the table's")
        << QByteArray("Failures:\n[1]:\n  rank      : 3 (local_rank: 1)\n") +
               QByteArray("  error_file: <N/A>\n").repeated(25) +
               QByteArray("  other: line\n  exitcode  : 2 (pid: 9)\n<NO_OTHER_FAILURES>\n====\n")
        << "failures.0" << R"({"exit_code":2,"local_rank":1,"pid":9,"rank":3,"root_cause":false})";
    QTest::newRow("other lines end the table")
        << QByteArray("Failures:\n[1]:\n  rank      : 3 (local_rank: 1)\n") +
               QByteArray("  timex: 1\n").repeated(21) + QByteArray("  exitcode  : 2 (pid: 9)\n====\n")
        << "failures.0" << R"({"local_rank":1,"rank":3,"root_cause":false})";
    QTest::newRow("twenty other lines are still the table's")
        << QByteArray("Failures:\n[1]:\n  rank      : 3 (local_rank: 1)\n") + QByteArray("  timex: 1\n").repeated(20) +
               QByteArray("  exitcode  : 2 (pid: 9)\n====\n")
        << "failures.0"
        << R"({"exit_code":2,"local_rank":1,"pid":9,"rank":3,"root_cause":false})";
    QTest::newRow("<NO_OTHER_FAILURES> is no other line")
        << QByteArray("Failures:\n[1]:\n  rank      : 3 (local_rank: 1)\n") + QByteArray("  timex: 1\n").repeated(20) +
               QByteArray("<NO_OTHER_FAILURES>\n  exitcode  : 2 (pid: 9)\n====\n")
        << "failures.0"
        << R"({"exit_code":2,"local_rank":1,"pid":9,"rank":3,"root_cause":false})";
    // The agent reports the worker's end, then prints the table: one failure, the table's (it has rank, host, time).
    QTest::newRow("agent report, then the table")
        << QByteArray("[2024-01-01 00:00:00,100] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
                      "(exitcode: -9) local_rank: 4 (pid: 4242) of binary: /usr/bin/python3\n"
                      "Root Cause (first observed failure):\n[0]:\n  time      : 2024-01-01_00:00:00\n"
                      "  host      : node7\n  rank      : 12 (local_rank: 4)\n  exitcode  : -9 (pid: 4242)\n====\n")
        << "failures"
        << R"([{"exit_code":-9,"host":"node7","local_rank":4,"pid":4242,"rank":12,"root_cause":true,"signal":"SIGKILL","time":"2024-01-01_00:00:00"}])";
    // Two agents (two nodes) each report theirs; an srun label names the agent's task, not the worker's rank.
    QTest::newRow("agent reports of two nodes")
        << QByteArray("0: E0909 14:03:50.013000 22579 torch/distributed/elastic/multiprocessing/api.py:833] failed "
                      "(exitcode: 1) local_rank: 0 (pid: 11) of binary: python\n"
                      "1: ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 3 "
                      "(pid: 12) of binary: python\n")
        << "failures"
        << R"([{"exit_code":1,"local_rank":0,"pid":11,"root_cause":false},)"
           R"({"exit_code":-6,"local_rank":3,"pid":12,"root_cause":false,"signal":"SIGABRT"}])";
    QTest::newRow("the same agent report twice is one failure")
        << QByteArray(
               "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 11) "
               "of binary: python\n")
               .repeated(2)
        << "failures"
        << R"([{"exit_code":1,"local_rank":0,"pid":11,"root_cause":false}])";
    QTest::newRow("a program's own 'failed (exitcode' without a pid is no report")
        << QByteArray("job 3 failed (exitcode: 1) see above\n") << "failures"
        << "<absent>";
    QTest::newRow("the same table twice is one failure")
        << QByteArray("Root Cause:\n[0]:\n  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 1)\n====\n"
                      "Root Cause:\n[0]:\n  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 1)\n====\n")
        << "failures.1" << "<absent>";
    QTest::newRow("nvidia-smi csv in a log")
        << QByteArray("step 1\nindex, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n"
                      "0, NVIDIA A100-SXM4-40GB, 98 %, 30000 MiB, 40960 MiB\n")
        << "gpus.0" << R"({"index":0,"mem_total_mib":40960,"mem_used_mib":30000,"name":"NVIDIA A100-SXM4-40GB","util_pct":98})";
    // bpytop's query (tests/data/nvidia-smi/csv-bpytop-gtx1080ti-gtx1060.csv) has neither index nor pci.bus_id:
    // GPUs are told apart by name, and a name read again is that GPU's later reading.
    const QByteArray namesOnly = "name, memory.used [MiB], utilization.gpu [%]\n"
                                 "GeForce GTX 1080 Ti, 2856 MiB, 36 %\n"
                                 "GeForce GTX 1060 6GB, 4 MiB, 0 %\n";
    QTest::newRow("nvidia-smi csv without index: two models are two GPUs")
        << namesOnly << "gpus"
        << R"([{"mem_used_mib":4,"name":"GeForce GTX 1060 6GB","util_pct":0},)"
           R"({"mem_used_mib":2856,"name":"GeForce GTX 1080 Ti","util_pct":36}])";
    QTest::newRow("nvidia-smi csv without index: a name again is a later reading")
        << namesOnly + "GeForce GTX 1080 Ti, 3000 MiB, 40 %\n"
        << "gpus.1"
        << R"({"mem_used_mib":3000,"name":"GeForce GTX 1080 Ti","util_pct":40})";
    // Found by fuzzing (tests/fuzz): a 20-digit number overflowed qint64 in the watchdog parser.
    const QByteArray hugeSeq = "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum="
                               "99999999999999999999, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
                               "ran for 600010 milliseconds before timing out.\n";
    QTest::newRow("watchdog number too long: no sequence number") << hugeSeq << "timeouts.0.seq" << "<absent>";
    QTest::newRow("watchdog number too long: the rest is read") << hugeSeq << "timeouts.0.timeout_ms" << "600000";
    // The fields of a timeout are read in one pass where PyTorch printed them as usual, else searched one by one:
    // both must find the first of each name after "WorkNCCL(".
    const QByteArray caught = "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(";
    QTest::newRow("watchdog fields as printed")
        << caught + "SeqNum=7, OpType=ALLREDUCE, NumelIn=8, NumelOut=9, Timeout(ms)=600000) ran for 600010 "
                    "milliseconds before timing out.\n"
        << "timeouts.0"
        << R"({"numel_in":8,"numel_out":9,"op":"ALLREDUCE","ran_ms":600010,"rank":0,"seq":7,"timeout_ms":600000})";
    QTest::newRow("watchdog fields reordered")
        << caught + "OpType=BROADCAST, SeqNum=7, Timeout(ms)=5, NumelOut=9, NumelIn=8) ran for 6 milliseconds\n"
        << "timeouts.0"
        << R"({"numel_in":8,"numel_out":9,"op":"BROADCAST","ran_ms":6,"rank":0,"seq":7,"timeout_ms":5})";
    QTest::newRow("watchdog field repeated: the first counts")
        << caught + "SeqNum=7, SeqNum=3, OpType=ALLREDUCE, NumelIn=8, NumelOut=9, Timeout(ms)=5) ran for 6 "
                    "milliseconds\n"
        << "timeouts.0.seq" << "7";
    QTest::newRow("watchdog op holding a field")
        << caught + "SeqNum=7, OpType=X=NumelIn=4, NumelIn=8, NumelOut=9, Timeout(ms)=5) ran for 6 milliseconds\n"
        << "timeouts.0.numel_in" << "4";
    QTest::newRow("watchdog without numels: found after the line")
        << caught + "SeqNum=7, OpType=ALLREDUCE, Timeout(ms)=5) ran for 6 milliseconds before timing out. NumelOut=3\n"
        << "timeouts.0" << R"({"numel_out":3,"op":"ALLREDUCE","ran_ms":6,"rank":0,"seq":7,"timeout_ms":5})";
    QTest::newRow("watchdog without numels: both found after the line")
        << caught + "SeqNum=7, OpType=ALLREDUCE, Timeout(ms)=5) ran for 6 milliseconds before timing out. NumelIn=4, "
                    "NumelOut=3\n"
        << "timeouts.0"
        << R"({"numel_in":4,"numel_out":3,"op":"ALLREDUCE","ran_ms":6,"rank":0,"seq":7,"timeout_ms":5})";
    // The same timeout again (the exception's what() that ends the process) fills in what the first lacked and
    // takes nothing away.
    QTest::newRow("watchdog repeated without its numels")
        << caught + "SeqNum=7, OpType=ALLREDUCE, NumelIn=8, NumelOut=9, Timeout(ms)=5) ran for 6 milliseconds\n" +
               caught + "SeqNum=7, OpType=ALLREDUCE, Timeout(ms)=5) ran for 6 milliseconds\n"
        << "timeouts"
        << R"([{"numel_in":8,"numel_out":9,"op":"ALLREDUCE","ran_ms":6,"rank":0,"seq":7,"timeout_ms":5}])";
    QTest::newRow("watchdog rank in a bracket that is no process group")
        << QByteArray("[gpu1 Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, "
                      "OpType=ALLREDUCE, NumelIn=8, NumelOut=9, Timeout(ms)=5) ran for 6 milliseconds\n")
        << "timeouts.0.rank"
        << "3";
    // A timeout a terminal wrapped ends at its "timing out": the next rank's line is a timeout of its own.
    QTest::newRow("watchdog wrapped, then another rank's")
        << caught + "SeqNum=7, OpType=ALLREDUCE, NumelIn=8, NumelOut=9, Timeout(ms)=5) ran for 6 \n"
                    "milliseconds before timing out.\n"
                    "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, "
                    "NumelIn=8, NumelOut=9, Timeout(ms)=5) ran for 6 milliseconds before timing out.\n"
        << "timeouts.1.rank"
        << "1";
    // Of a rank's progress reports, the one about the work that timed out.
    QTest::newRow("watchdog progress of the work that timed out")
        << caught + "SeqNum=7, OpType=ALLREDUCE, NumelIn=8, NumelOut=9, Timeout(ms)=5) ran for 6 milliseconds\n" +
               "[Rank 0] failure detected by watchdog at work sequence id: 5 PG status: last enqueued work: 10, last "
               "completed work: 4\n"
               "[Rank 0] failure detected by watchdog at work sequence id: 7 PG status: last enqueued work: 20, last "
               "completed work: 6\n"
        << "timeouts.0.last_enqueued"
        << "20";
    // A work sequence id after the progress's counters is not the work the progress is about.
    QTest::newRow("watchdog progress: a sequence id after its counters")
        << caught + "SeqNum=7, OpType=ALLREDUCE, NumelIn=8, NumelOut=9, Timeout(ms)=5) ran for 6 milliseconds\n" +
               "[Rank 0] Some state: last enqueued work: 315, last completed work: 183, then at work sequence id: 9\n"
        << "timeouts.0.last_enqueued"
        << "315";
    // torchrun's local-rank prefix before the default group's watchdog end: the text's rank is the run's.
    QTest::newRow("watchdog end of the default group under torchrun's prefix")
        << QByteArray("[default3]:[E1011 12:00:00.000 ProcessGroupNCCL.cpp:1600] [PG ID 0 PG GUID 0(default_pg) "
                      "Rank 5] Terminating the process after attempting to dump debug info, due to collective timeout "
                      "or exception.\n")
        << "errors.0.rank"
        << "5";
    QTest::newRow("watchdog spaced number")
        << caught + "SeqNum= 7, OpType=ALLREDUCE, NumelIn=8, NumelOut=9, Timeout(ms)=5) ran for 6 milliseconds\n"
        << "timeouts.0.seq" << "7";
    QTest::newRow("watchdog empty op")
        << caught + "SeqNum=7, OpType=, NumelIn=8, NumelOut=9, Timeout(ms)=5) ran for 6 milliseconds\n"
        << "timeouts.0.numel_in" << "8";
    QTest::newRow("watchdog rank nearest before")
        << QByteArray("[PG ID 0 PG GUID 0(default_pg) Rank 3] Rank 12 Watchdog caught collective operation timeout: "
                      "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, Timeout(ms)=5) ran for 6 milliseconds\n")
        << "timeouts.0.rank" << "12";
    QTest::newRow("watchdog rank unreadable: the prefix's")
        << QByteArray("[default5]:[Rank 3] Rank x Watchdog caught collective operation timeout: "
                      "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, Timeout(ms)=5) ran for 6 milliseconds\n")
        << "timeouts.0.local_rank"
        << "5";
    QTest::newRow("watchdog rank unreadable: torchrun's local rank is no rank")
        << QByteArray("[default5]:[Rank 3] Rank x Watchdog caught collective operation timeout: "
                      "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, Timeout(ms)=5) ran for 6 milliseconds\n")
        << "timeouts.0.rank"
        << "<absent>";
    QTest::newRow("watchdog rank unreadable: the launcher's")
        << QByteArray("[1,5]<stderr>:[Rank 3] Rank x Watchdog caught collective operation timeout: "
                      "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, Timeout(ms)=5) ran for 6 milliseconds\n")
        << "timeouts.0.rank"
        << "5";
    // A rank in another process group than the default one is not the run's rank: PyTorch's "[rank8]:" is, and
    // without it none is known. A timeout's "[Rank 0]" names no group; the progress line after it does.
    const QByteArray groupTimeout =
        "[E318 07:39:53.792630246 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=610, OpType=COALESCED, NumelIn=56320, NumelOut=450560, Timeout(ms)=600000) ran for 600086 "
        "milliseconds before timing out.\n";
    const QByteArray groupProgress =
        "[E318 07:39:53.792772442 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 9 Rank 0] Exception (either an error "
        "or timeout) detected by watchdog at work: 610, last enqueued NCCL work: 616, last completed NCCL work: 609.\n";
    QTest::newRow("watchdog rank: pytorch's prefix over a group's rank")
        << "[rank8]:" + groupTimeout + "[rank8]:" + groupProgress << "timeouts"
        << R"([{"last_completed":609,"last_enqueued":616,"numel_in":56320,"numel_out":450560,"op":"COALESCED",)"
           R"("ran_ms":600086,"rank":8,"seq":610,"timeout_ms":600000}])";
    QTest::newRow("watchdog rank: pytorch's prefix, the timeout alone")
        << "[rank8]:" + groupTimeout << "timeouts.0.rank"
        << "8";
    QTest::newRow("watchdog rank: another group's, no prefix") << groupTimeout + groupProgress << "timeouts.0.rank"
                                                               << "<absent>";
    QTest::newRow("watchdog rank: another group's, no prefix, progress kept")
        << groupTimeout + groupProgress << "timeouts.0.last_enqueued"
        << "616";
    // The dump a timeout sets off says the rank's progress with a capital L (PyTorch 2.4 and later): a timeout with
    // no progress line of its own takes it.
    const QByteArray dumpProgress =
        "[rank0]:[E1125 02:19:06.000 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 0] Received a "
        "dump signal due to a collective timeout from this local rank and we will try our best to dump the debug "
        "info. Last enqueued NCCL work: 612, last completed NCCL work: 609.This is most likely caused by incorrect "
        "usages of collectives.\n";
    QTest::newRow("watchdog progress from the dump line")
        << "[rank0]:" + QByteArray(groupTimeout).replace("SeqNum=610", "SeqNum=611") + dumpProgress << "timeouts"
        << R"([{"last_completed":609,"last_enqueued":612,"numel_in":56320,"numel_out":450560,"op":"COALESCED",)"
           R"("ran_ms":600086,"rank":0,"seq":611,"timeout_ms":600000}])";
    QTest::newRow("watchdog progress from a global timeout's dump line")
        << "[rank0]:" + groupTimeout +
               QByteArray(dumpProgress)
                   .replace("dump signal due to a collective timeout from this local rank and we will try our best to",
                            "global timeout from another rank and will start to")
        << "timeouts.0.last_completed"
        << "609";
    QTest::newRow("watchdog rank: the default group's")
        << groupTimeout + QByteArray(groupProgress).replace("PG ID 2", "PG ID 0") << "timeouts.0.rank"
        << "0";
    QTest::newRow("watchdog rank: another group's in pytorch 2.3's words")
        << QByteArray("[E ProcessGroupNCCL.cpp:1] [PG 3 Rank 5] Exception (either an error or timeout) detected by "
                      "watchdog at work: 9, last enqueued NCCL work: 9, last completed NCCL work: 8.\n"
                      "[E ProcessGroupNCCL.cpp:2] [PG 3 Rank 5] ProcessGroupNCCL's watchdog got stuck for 60 seconds "
                      "without making progress in monitoring enqueued collectives. This\n")
        << "errors.0.rank"
        << "<absent>";
    QTest::newRow("watchdog stuck: a torchrun prefix where the group is another")
        << QByteArray(
               "[default1]:[E ProcessGroupNCCL.cpp:2] [PG ID 3 PG GUID 7 Rank 5] ProcessGroupNCCL's watchdog got "
               "stuck for 60 seconds without making progress in monitoring enqueued collectives.\n")
        << "errors.0.local_rank"
        << "1";
    QTest::newRow("watchdog stuck: one sentence")
        << QByteArray("[Rank 2] ProcessGroupNCCL's watchdog got stuck for 60 seconds. This typically indicates\n")
        << "errors.0.text"
        << "[Rank 2] ProcessGroupNCCL's watchdog got stuck for 60 seconds.";
    QTest::newRow("watchdog stuck: no sentence's end on the line")
        << QByteArray("[Rank 2] ProcessGroupNCCL's watchdog got stuck for 60 seconds without\n") << "errors.0.text"
        << "[Rank 2] ProcessGroupNCCL's watchdog got stuck for 60 seconds without";
    QTest::newRow("watchdog repeated timeout fills its fields")
        << caught + "SeqNum=7, OpType=ALLREDUCE, Timeout(ms)=5) ran for 6 milliseconds\n" + caught +
               "SeqNum=7, OpType=ALLREDUCE, NumelIn=8, NumelOut=9, Timeout(ms)=5) ran for 6 milliseconds\n"
        << "timeouts"
        << R"([{"numel_in":8,"numel_out":9,"op":"ALLREDUCE","ran_ms":6,"rank":0,"seq":7,"timeout_ms":5}])";
    QTest::newRow("watchdog repeated timeout, op not ascii")
        << caught + "SeqNum=7, OpType=\xc3\x89, Timeout(ms)=5) ran for 6 milliseconds\n" + caught +
               "SeqNum=7, OpType=\xc3\x89, NumelIn=8, Timeout(ms)=5) ran for 6 milliseconds\n" + caught +
               "SeqNum=7, OpType=\xc3\x88, NumelIn=2, Timeout(ms)=5) ran for 6 milliseconds\n"
        << "timeouts"
        << QStringLiteral(R"([{"numel_in":8,"op":"%1","ran_ms":6,"rank":0,"seq":7,"timeout_ms":5},)"
                          R"({"numel_in":2,"op":"%2","ran_ms":6,"rank":0,"seq":7,"timeout_ms":5}])")
               .arg(QChar(0xC9))
               .arg(QChar(0xC8));
    QTest::newRow("nothing found") << QByteArray("hello\nworld\n") << "nccl" << "<absent>";
}

void tst_LogParsers::messyLines() {
    QFETCH(QByteArray, log);
    QFETCH(QString, path);
    QFETCH(QString, expected);
    QCOMPARE(valueAt(inspectJson(log), path), expected);
}

void tst_LogParsers::everySplitPointGivesTheSameResult_data() {
    QTest::addColumn<QString>("file");
    for (const char* file :
         {"deepep-106-joined-lines.log", "open-r1-620-interleaved-wrapped.log", "vlm-r1-257-wrapped-watchdog-stuck.log",
          "ms-swift-7992-timestamped-expert-group.log", "pytorch-152623-desync-report.log",
          "minigpt4-237-failure-table.log", "longrange-13-no-ib-duplicate-gpu.log", "nccl-1189-init-complete.log",
          "pytorch-4921-runtimeerror-traceback.log"})
        QTest::newRow(file) << QString::fromLatin1(file);
}

void tst_LogParsers::everySplitPointGivesTheSameResult() {
    QFETCH(QString, file);
    QByteArray bytes = readData(kPublicDir + file);
    bytes.replace("\n", "\r\n"); // "\r" | "\n" is a split point too
    const QByteArray whole = inspectJson(bytes);
    for (qsizetype at = 0; at <= bytes.size(); ++at) {
        const QByteArray split = inspectJson(bytes, 0, at);
        if (split != whole)
            QFAIL(qPrintable(QStringLiteral("split at %1 differs:\n%2\nvs\n%3")
                                 .arg(at)
                                 .arg(QString::fromUtf8(split), QString::fromUtf8(whole))));
    }
}

void tst_LogParsers::singleByteChunks() {
    const QByteArray bytes = readData(kPublicDir + QStringLiteral("../nccl-public-samples.log")) +
                             readData(kPublicDir + QStringLiteral("minigpt4-237-failure-table.log")) +
                             readData(kPublicDir + QStringLiteral("catalyst-rl-15-nccl-watchdog-terminated.log"));
    const QByteArray whole = inspectJson(bytes);
    QCOMPARE(inspectJson(bytes, 1), whole);
    QCOMPARE(inspectJson(bytes, 7), whole);
    QVERIFY(whole.contains("\"failures\""));
    QVERIFY(whole.contains("\"timeouts\""));
}

// The same name fed twice (`inspect a.log a.log`): one list of errors in line order, each line's error once, as if
// the file had been read once; another name keeps its own.
// Only the errors of tracebacks that nothing tells apart are marked so: not those a launcher prefix gives a rank,
// nor an IPython traceback (its frames are at the margin, but it is one process's).
void tst_LogParsers::interleavedErrorsAreMarked() {
    LogInspector inspector;
    inspector.beginFile(QStringLiteral("log"));
    inspector.feed("Traceback (most recent call last):\nTraceback (most recent call last):\n  File \"a.py\", line 1\n"
                   "ValueError: a\nKeyError: 'b'\n"
                   "[default0]:Traceback (most recent call last):\n[default1]:Traceback (most recent call last):\n"
                   "[default0]:OSError: c\n[default1]:TypeError: d\n"
                   "ZeroDivisionError                         Traceback (most recent call last)\n"
                   "Cell In [1], line 1\n----> 1 f()\n\nZeroDivisionError: division by zero\n"
                   // Two tracebacks of one rank at once (its threads): the prefix says whose they are, so not marked.
                   "[rank2]:Traceback (most recent call last):\n[rank2]:Traceback (most recent call last):\n"
                   "[rank2]:  File \"a.py\", line 1\n[rank2]:NameError: e\n[rank2]:IndexError: f\n");
    inspector.endFile();
    QStringList marked;
    for (const LogError& error : inspector.result().errors)
        marked.append(QStringLiteral("%1:%2")
                          .arg(QString::fromUtf8(error.text.first(error.text.indexOf(':'))))
                          .arg(error.interleaved));
    QCOMPARE(marked, QStringList({"ValueError:1", "KeyError:1", "OSError:0", "TypeError:0", "ZeroDivisionError:0",
                                  "NameError:0", "IndexError:0"}));
}

void tst_LogParsers::aFileReadTwiceListsItsErrorsOnce() {
    const QByteArray log = "Traceback (most recent call last):\n"
                           "  File \"x.py\", line 1, in <module>\n"
                           "RuntimeError: NCCL error in: a.cpp:1, unhandled system error\n"
                           "torch.distributed.DistBackendError: NCCL error in: b.cpp:2, remote process exited\n"
                           "Traceback (most recent call last):\n"
                           "  File \"y.py\", line 2, in f\n"
                           "ValueError: bad\n";
    LogInspector inspector;
    for (const QString& name : {QStringLiteral("a.log"), QStringLiteral("a.log"), QStringLiteral("b.log")}) {
        inspector.beginFile(name);
        inspector.feed(log);
        inspector.endFile();
    }
    const LogInspection result = inspector.result();
    QStringList found;
    for (const LogError& error : result.errors)
        found.append(QStringLiteral("%1:%2").arg(error.file).arg(error.line));
    QCOMPARE(found, QStringList({"a.log:3", "a.log:4", "a.log:7", "b.log:3", "b.log:4", "b.log:7"}));
}

// The end of a watchdog (its heartbeat monitor's "got stuck", the fatal "Terminating the process after attempting to
// dump debug info") that a terminal cut anywhere, the words themselves too, is one error at its first line, of the
// rank that line's prefix names; a next line with a c10 header of its own, or another rank's prefix, is a message of
// its own.
void tst_LogParsers::aWrappedWatchdogEndIsOneError_data() {
    QTest::addColumn<QByteArray>("log");
    QTest::addColumn<QStringList>("errors"); // "line rank: text"
    const QByteArray stuck = "[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank "
                             "3] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in "
                             "monitoring enqueued collectives.";
    const QString error = QStringLiteral("1 3: ") + QString::fromLatin1(stuck);
    const qsizetype words = stuck.indexOf("watchdog got stuck");
    for (const qsizetype cut : {stuck.indexOf("NCCL's") + 4, words + 3, words + 12, words + 16, words + 20}) {
        QTest::addRow("cut at %lld", static_cast<long long>(cut))
            << "[rank3]:" + stuck.first(cut) + "\n" + stuck.sliced(cut) + " This typically indi\ncates a hang\n"
            << QStringList{error};
    }
    const QByteArray fatal = "[F429 14:03:49.385461578 ProcessGroupNCCL.cpp:1554] [PG ID 0 PG GUID 0(default_pg) Rank "
                             "3] [PG ID 0 PG GUID 0(default_pg) Rank 3] Terminating the process after attempting to "
                             "dump debug info, due to ProcessGroupNCCL watchdog hang.";
    for (const qsizetype cut : {fatal.indexOf("GUID 0(default") + 5, fatal.indexOf("after attempting") + 9}) {
        QTest::addRow("fatal cut at %lld", static_cast<long long>(cut))
            << "[rank3]:" + fatal.first(cut) + "\n" + fatal.sliced(cut) + "\n"
            << QStringList{QStringLiteral("1 3: ") + QString::fromLatin1(fatal)};
    }
    QTest::newRow("a header of its own")
        << "[rank3]:[E429 13:55:49.1 ProcessGroupNCCL.cpp:1] [Rank 3] something else\n" + stuck + "\n"
        << QStringList{QStringLiteral("2 3: ") + QString::fromLatin1(stuck)};
    QTest::newRow("another rank's line") << "[rank5]:[E429 13:55:49.1 ProcessGroupNCCL.cpp:1] [Rank 5] x\n[rank3]:" +
                                                stuck + "\n"
                                         << QStringList{QStringLiteral("2") + error.sliced(1)};
}

void tst_LogParsers::aWrappedWatchdogEndIsOneError() {
    QFETCH(QByteArray, log);
    QFETCH(QStringList, errors);
    QCOMPARE(errorsOf(log, lineRankText), errors);
}

// A C++ exception's what() that a terminal hard-wrapped: where the pieces complete a c10d watchdog's timeout, they are
// the error's text; anything else leaves the first line's.
void tst_LogParsers::aWrappedWhatIsOneError_data() {
    QTest::addColumn<QByteArray>("log");
    QTest::addColumn<QStringList>("errors"); // "line rank: text"
    const QByteArray thrown = "[rank3]:terminate called after throwing an instance of 'c10::DistBackendError'\n";
    const QByteArray what = "[PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with "
                            "exception: [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, "
                            "OpType=BROADCAST, NumelIn=112, NumelOut=112, Timeout(ms)=1800000) ran for 1800011 "
                            "milliseconds before timing out.";
    const QByteArray raised =
        "Exception raised from checkTimeout at ProcessGroupNCCL.cpp:632 (most recent call first):\n";
    const QString error = QStringLiteral("2 3: c10::DistBackendError: ") + QString::fromLatin1(what);
    for (const qsizetype cut : {what.indexOf("GUID") + 2, what.indexOf("[Rank 3]"), what.indexOf("Watchdog") + 3,
                                what.indexOf("caught") + 3, what.indexOf("timing out") + 4, what.size() - 1}) {
        QTest::addRow("cut at %lld", static_cast<long long>(cut))
            << thrown + "[rank3]:  what():  " + what.first(cut) + "\n" + what.sliced(cut) + "\n" + raised
            << QStringList{error};
    }
    // Cut at 100 columns: four pieces.
    QByteArray pieces;
    for (qsizetype at = 0; at < what.size(); at += 100)
        pieces += what.mid(at, 100) + "\n";
    QTest::newRow("four pieces") << thrown + "[rank3]:  what():  " + pieces + raised << QStringList{error};
    const qsizetype cut = what.indexOf("caught") + 3;
    const QString first = error.first(error.indexOf("caught") + 3);
    QTest::newRow("the next line is another rank's")
        << thrown + "[rank3]:  what():  " + what.first(cut) + "\n[rank1]:" + what.sliced(cut) + "\n" + raised
        << QStringList{first};
    const qsizetype header = what.indexOf("[Rank 3]");
    const QString beforeHeader = error.first(error.indexOf("[Rank 3]")).trimmed();
    QTest::newRow("the next line is PyTorch's own")
        << thrown + "[rank3]:  what():  " + what.first(header) +
               "\nException raised from c10_cuda_check_implementation at CUDAException.cpp:44\n" + what.sliced(header) +
               "\n"
        << QStringList{beforeHeader};
    QTest::newRow("the next line is another process's what()")
        << thrown + "[rank3]:  what():  " + what.first(cut) + "\n  what():  " + what + "\n"
        << QStringList{first, QStringLiteral("3 -1: ") + QString::fromLatin1(what)};
    QTest::newRow("the next line has a header of its own")
        << thrown + "[rank3]:  what():  " + what.first(cut) + "\n[E ProcessGroupNCCL.cpp:1] " + what + "\n"
        << QStringList{first};
    QTest::newRow("the rest comes too late")
        << thrown + "[rank3]:  what():  " + what.first(header) + "\n" +
               QByteArray("x\n").repeated(kMaxTimeoutWrapLines) + what.sliced(header) + "\n"
        << QStringList{beforeHeader};
    // A message of several lines is not a wrapped one: only its first line is the error.
    QTest::newRow("a message of its own lines")
        << "terminate called after throwing an instance of 'c10::Error'\n  what():  [Rank 0] NCCL watchdog thread "
           "terminated with exception: CUDA error: an illegal memory access was encountered\nCUDA kernel errors "
           "might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
           "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n" +
               raised
        << QStringList{QStringLiteral("2 -1: c10::Error: [Rank 0] NCCL watchdog thread terminated with exception: "
                                      "CUDA error: an illegal memory access was encountered")};
}

void tst_LogParsers::aWrappedWhatIsOneError() {
    QFETCH(QByteArray, log);
    QFETCH(QStringList, errors);
    QCOMPARE(errorsOf(log, lineRankText), errors);
}

// Processes that end at once write "terminate called after throwing an instance of 'T'" into each other's lines.
void tst_LogParsers::aThrownTypeIsReadFromInterleavedLines_data() {
    QTest::addColumn<QByteArray>("log");
    QTest::addColumn<QString>("error");
    const QByteArray terminate = "terminate called after throwing an instance of '";
    const QByteArray what = "  what():  boom\n";
    QTest::newRow("alone") << terminate + "c10::Error'\n" + what << QStringLiteral("c10::Error: boom");
    QTest::newRow("another's line began in its type")
        << terminate + "c10::Error" + terminate + "'\n" + what << QStringLiteral("c10::Error: boom");
    QTest::newRow("each wrote its type") << terminate + "c10::Errorc10::Error'\n" + what
                                         << QStringLiteral("c10::Error: boom");
    QTest::newRow("three wrote it") << terminate + "std::bad_allocstd::bad_allocstd::bad_alloc'\n" + what
                                    << QStringLiteral("std::bad_alloc: boom");
    QTest::newRow("only another's beginning keeps the type before")
        << terminate + "c10::Error'\n" + terminate + terminate + "\n" + what << QStringLiteral("c10::Error: boom");
    QTest::newRow("an unqualified name is kept as it is")
        << terminate + "ErrorError'\n" + what << QStringLiteral("ErrorError: boom");
    QTest::newRow("a name that only starts the same is kept")
        << terminate + "a::Ba::C'\n" + what << QStringLiteral("a::Ba::C: boom");
}

void tst_LogParsers::aThrownTypeIsReadFromInterleavedLines() {
    QFETCH(QByteArray, log);
    QFETCH(QString, error);
    QCOMPARE(errorsOf(log, [](const LogError& e) { return QString::fromUtf8(e.text); }), QStringList{error});
}

// A parser's own list keeps every error it reads; one that several parsers share (LogInspector's) keeps a line's
// first, within the stream being read.
void tst_LogParsers::anErrorListKeepsOneALineOnlyWhereAsked() {
    const auto texts = [](const ErrorList& errors) {
        QStringList found;
        for (const LogError& error : errors.list)
            found.append(QStringLiteral("%1 %2").arg(error.line).arg(QString::fromUtf8(error.text)));
        return found;
    };
    for (const bool oneALine : {false, true}) {
        ErrorList errors;
        errors.oneALine = oneALine;
        QCOMPARE(errors.append({QStringLiteral("a"), 3, -1, "first"}), 0);
        QCOMPARE(errors.append({QStringLiteral("a"), 3, -1, "second"}), oneALine ? -1 : 1);
        QCOMPARE(errors.append({QStringLiteral("a"), 4, -1, "next line"}), oneALine ? 1 : 2);
        errors.streamFrom = errors.list.size(); // another file: its line 4 is another line
        QCOMPARE(errors.append({QStringLiteral("b"), 4, -1, "other file"}), oneALine ? 2 : 3);
        QCOMPARE(texts(errors), oneALine ? QStringList({"3 first", "4 next line", "4 other file"})
                                         : QStringList({"3 first", "3 second", "4 next line", "4 other file"}));
        // In line order within each stream so far (the other file starting again is no disorder); an error of an
        // earlier line than the stream's last is, and stays so; clear() starts a list anew.
        QVERIFY(errors.inOrder);
        QCOMPARE(errors.append({QStringLiteral("b"), 9, -1, "later"}), oneALine ? 3 : 4);
        QVERIFY(errors.inOrder);
        QCOMPARE(errors.append({QStringLiteral("b"), 5, -1, "earlier"}), oneALine ? 4 : 5);
        QVERIFY(!errors.inOrder);
        errors.streamFrom = errors.list.size();
        QCOMPARE(errors.append({QStringLiteral("c"), 1, -1, "third file"}), oneALine ? 5 : 6);
        QVERIFY(!errors.inOrder);
        errors.clear();
        QVERIFY(errors.list.isEmpty() && errors.inOrder && errors.streamFrom == 0);
    }
}

// One error a line is a line of one file: the next file's first error, at the line number of the last one's, is kept.
void tst_LogParsers::anotherFilesErrorAtTheSameLineIsKept() {
    LogInspector inspector;
    for (const QString& name : {QStringLiteral("a.log"), QStringLiteral("b.log")}) {
        inspector.beginFile(name);
        inspector.feed("step 1\nRuntimeError: NCCL error in: a.cpp:1, remote process exited\n");
        inspector.endFile();
    }
    QStringList found;
    for (const LogError& error : inspector.result().errors)
        found.append(QStringLiteral("%1:%2").arg(error.file).arg(error.line));
    QCOMPARE(found, QStringList({"a.log:2", "b.log:2"}));
}

// A traceback that `rich` drew in a box and whose exception is PyTorch's NCCL error, its message wrapped onto the
// next line: the watchdog's error is the one of that line, and the wrapped piece is the exception's still, not an
// error of its own; the next traceback is read as ever.
void tst_LogParsers::aBoxedTracebacksNcclErrorIsTheWatchdogs() {
    const QByteArray box = "\xe2\x95\xad\xe2\x94\x80\xe2\x94\x80 Traceback (most recent call last) "
                           "\xe2\x94\x80\xe2\x94\x80\xe2\x95\xae\n"
                           "\xe2\x94\x82 /tmp/train.py:6 in all_reduce            \xe2\x94\x82\n"
                           "\xe2\x95\xb0\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
                           "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x95\xaf\n";
    const QByteArray log = "step 1\n" + box +
                           "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled\n"
                           "system_error_with_a_long_name (run with NCCL_DEBUG=INFO for details)\n"
                           "step 2\n"
                           "Traceback (most recent call last):\n  File \"b.py\", line 2, in <module>\nKeyError: 'x'\n";
    QCOMPARE(
        errorsOf(log,
                 [](const LogError& e) { return QStringLiteral("%1 %2").arg(e.line).arg(QString::fromUtf8(e.text)); }),
        QStringList({"5 RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled", "10 KeyError: 'x'"}));
}

// A traceback that ends with PyTorch's NCCL error: the watchdog parser and the traceback parser both read its last
// line, and the watchdog's error is the one kept, with what NCCL said after it ("Last error:"), wherever the line
// falls among the other errors.
void tst_LogParsers::anErrorLineOfTwoParsersIsTheWatchdogs_data() {
    QTest::addColumn<QByteArray>("before"); // lines before it, each an error of one parser
    QTest::newRow("alone") << QByteArray();
    QTest::newRow("after tracebacks") << QByteArray("Traceback (most recent call last):\n  File \"a.py\", line 1, in "
                                                    "<module>\nValueError: 1\nTraceback (most recent call last):\n"
                                                    "ValueError: 2\n");
    QTest::newRow("after NCCL errors") << QByteArray("RuntimeError: NCCL error in: a.cpp:1, remote process exited\n"
                                                     "RuntimeError: NCCL error in: a.cpp:2, remote process exited\n");
}

void tst_LogParsers::anErrorLineOfTwoParsersIsTheWatchdogs() {
    QFETCH(QByteArray, before);
    const QByteArray log =
        before +
        "Traceback (most recent call last):\n"
        "  File \"train.py\", line 9, in <module>\n"
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error\n"
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. \n"
        "Last error:\n"
        "socketStartConnect: Connect to 10.0.0.2<52822> failed : No route to host\n"
        "Traceback (most recent call last):\n  File \"b.py\", line 2, in <module>\nKeyError: 'x'\n";
    const int errorsBefore = int(before.count("Error: "));
    LogInspector inspector;
    inspector.beginFile(QStringLiteral("log"));
    inspector.feed(log);
    inspector.endFile();
    const LogInspection result = inspector.result();
    QCOMPARE(result.errors.size(), errorsBefore + 2);
    const LogError& nccl = result.errors[errorsBefore];
    QCOMPARE(nccl.line, before.count('\n') + 3);
    QCOMPARE(QString::fromUtf8(nccl.text),
             QStringLiteral("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
                            "system error; last error: socketStartConnect: Connect to 10.0.0.2<52822> failed : No "
                            "route to host"));
    QCOMPARE(QString::fromUtf8(result.errors.back().text), QStringLiteral("KeyError: 'x'"));
}

// The errors of a result are the inspector's list, shared, not a copy of it; reading on after a result leaves that
// result as it was, and the next one has the errors of both files.
void tst_LogParsers::aResultSharesItsErrorsAndKeepsThem() {
    LogInspector inspector;
    QVERIFY(!inspector.inspectFile(kPublicDir + QStringLiteral("deepspeed-hello-rank-space-tracebacks.log")));
    const LogInspection first = inspector.result();
    QVERIFY(first.errors.size() > 1);
    QCOMPARE(inspector.result().errors.constData(), first.errors.constData());
    const QByteArray firstJson = inspectionToJson(first);
    QVERIFY(!inspector.inspectFile(kPublicDir + QStringLiteral("megatron-935-terminate-distbackenderror.log")));
    const LogInspection both = inspector.result();
    QCOMPARE(inspectionToJson(first), firstJson);
    QVERIFY(both.errors.size() > first.errors.size());
    for (qsizetype i = 0; i < first.errors.size(); ++i) {
        QCOMPARE(both.errors[i].text, first.errors[i].text);
        QCOMPARE(both.errors[i].line, first.errors[i].line);
    }
    QCOMPARE(both.errors.back().file, kPublicDir + QStringLiteral("megatron-935-terminate-distbackenderror.log"));
}

void tst_LogParsers::severalFilesKeepTheirLineNumbers() {
    LogInspector inspector;
    QVERIFY(!inspector.inspectFile(kPublicDir + QStringLiteral("pytorch-4921-runtimeerror-traceback.log")));
    QVERIFY(!inspector.inspectFile(kPublicDir + QStringLiteral("hkproj-1-distbackenderror-socket.log")));
    QVERIFY(inspector.inspectFile(kPublicDir + QStringLiteral("no-such-file.log")).has_value());
    const LogInspection result = inspector.result();
    QCOMPARE(result.files.size(), 2);
    QCOMPARE(result.errors.size(), 2);
    QCOMPARE(result.errors[0].line, 13);
    QVERIFY(result.errors[1].file.endsWith(QLatin1String("hkproj-1-distbackenderror-socket.log")));
    QCOMPARE(result.errors[1].line, 1);
    // Every line of both files is counted, a last line without a newline too.
    qint64 expected = 0;
    for (const char* name : {"pytorch-4921-runtimeerror-traceback.log", "hkproj-1-distbackenderror-socket.log"}) {
        QFile file(kPublicDir + QLatin1String(name));
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray bytes = file.readAll();
        expected += bytes.count('\n') + (bytes.isEmpty() || bytes.endsWith('\n') ? 0 : 1);
    }
    QVERIFY(expected > 2);
    QCOMPARE(result.lines, expected);
}

// "NET/IB : No device found" is a fact of the whole stream (a rank's log, which the live network findings read) as
// well as of the process that printed it, with or without a header before it.
void tst_LogParsers::ncclInfinibandMissingIsAFactOfTheStream() {
    for (const QByteArray& line : {QByteArray("h:1:2 [0] NCCL INFO NET/IB : No device found.\n"),
                                   QByteArray("NCCL INFO NET/IB : No device found.\n")}) {
        NcclLogParser parser;
        parser.feed("h:1:2 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n" + line);
        parser.finish();
        QVERIFY2(parser.facts().ibNoDevice, line.constData());
    }
    NcclLogParser parser;
    parser.feed("h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n");
    parser.finish();
    QVERIFY(!parser.facts().ibNoDevice);
}

void tst_LogParsers::ncclErrorChainsFollowTheirThread() {
    // A chain step belongs to the last warning of its thread (host, pid and tid) until that thread prints
    // another record; without one it is an orphan of its host:pid.
    const QByteArray log = "a:1:2 [0] misc/x.cc:5 NCCL WARN first\n"
                           "b:1:2 [0] misc/y.cc:6 NCCL WARN second\n"
                           "a:1:2 [0] NCCL INFO init.cc:840 -> 5\n"
                           "b:1:2 [0] NCCL INFO init.cc:841 -> 5\n"
                           "a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n"
                           "a:1:2 [0] NCCL INFO group.cc:73 -> 5 [Async thread]\n"
                           "a:1:3 [0] NCCL INFO group.cc:75 -> 5\n"
                           "b:1:2 [0] NCCL INFO group.cc:74 -> 5\n"
                           "c:3:4 [0] NCCL INFO net.cc:79 -> 3\n"
                           "d%2x:9:1 [0] NCCL INFO net.cc:80 -> 3\n";
    for (const qsizetype chunk : {qsizetype(0), qsizetype(1), qsizetype(7)}) {
        NcclLogParser parser;
        for (qsizetype at = 0; at<log.size(); at += chunk> 0 ? chunk : log.size())
            parser.feed(QByteArrayView(log).sliced(at, std::min(chunk > 0 ? chunk : log.size(), log.size() - at)));
        parser.finish();
        const NcclFacts facts = parser.facts();
        QCOMPARE(facts.warnings.size(), 2);
        QCOMPARE(facts.warnings[0].chain, QStringList{"init.cc:840 -> 5"});
        QCOMPARE(facts.warnings[1].chain, (QStringList{"init.cc:841 -> 5", "group.cc:74 -> 5"}));
        QCOMPARE(facts.orphanChains,
                 (QStringList{"a:1: group.cc:73 -> 5 [Async thread], group.cc:75 -> 5", "c:3: net.cc:79 -> 3",
                              "d%2x:9: net.cc:80 -> 3"})); // a '%' in a host is kept as it is
        QCOMPARE(facts.warnings[1].host, QStringLiteral("b"));
        QCOMPARE(facts.warnings[1].source, QStringLiteral("misc/y.cc:6"));
    }
}

// A process that prints the same error-code chain again and again without a warning (a retry loop, for as long as
// the job runs): each step repeated at once is said once with its count, and after 32 steps the rest are counted.
void tst_LogParsers::aRetryLoopsChainIsCountedAndCut() {
    QByteArray log;
    for (int i = 0; i < 1000; ++i)
        log += "axa:3048391:3048566 [0] NCCL INFO net.cc:79 -> 3\n";
    log += "axa:3048391:3048566 [0] NCCL INFO proxy.cc:1 -> 3\n";
    for (int i = 0; i < 40; ++i)
        log += "axa:3048391:3048566 [0] NCCL INFO net.cc:" + QByteArray::number(100 + i % 2) + " -> 3\n";
    NcclLogParser parser;
    parser.feed(log);
    parser.finish();
    QStringList steps{QStringLiteral("net.cc:79 -> 3 (1000 times)"), QStringLiteral("proxy.cc:1 -> 3")};
    for (int i = 0; i < 30; ++i)
        steps.append(QStringLiteral("net.cc:%1 -> 3").arg(100 + i % 2));
    steps.append(QStringLiteral("and 10 more"));
    QCOMPARE(parser.facts().orphanChains, QStringList{"axa:3048391: " + steps.join(QStringLiteral(", "))});
}

void tst_LogParsers::ncclHostsInterleaved() {
    // Records of more hosts than the parser keeps at hand, interleaved and in changing order: each record still
    // gets its own host, whether it was among the last few or had to be looked up.
    constexpr int kHosts = 7;
    QByteArray log;
    QList<int> order;
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < kHosts; ++i) {
            const int host = round == 1 ? kHosts - 1 - i : (i * 3 + round) % kHosts;
            order.append(host);
            const QByteArray name = "host" + QByteArray::number(host);
            log += name + ":1:1 [0] x.cc:1 NCCL WARN w\n" + name + ":1:1 [0] NCCL INFO init.cc:" +
                   QByteArray::number(host) + " -> 5\n";
        }
    }
    NcclLogParser parser;
    parser.feed(log);
    parser.finish();
    const NcclFacts facts = parser.facts();
    QCOMPARE(facts.warnings.size(), order.size());
    for (qsizetype i = 0; i < order.size(); ++i) {
        QCOMPARE(facts.warnings[i].host, QStringLiteral("host%1").arg(order[i]));
        QCOMPARE(facts.warnings[i].chain, QStringList{QStringLiteral("init.cc:%1 -> 5").arg(order[i])});
    }
    QCOMPARE(facts.hosts.size(), kHosts);
    QVERIFY(facts.orphanChains.isEmpty());
}

void tst_LogParsers::ncclChainsOfManyThreadsAndHosts() {
    // More threads than the parser has slots for its open warnings, on two interleaved hosts: every chain step
    // still finds its own thread's warning, and a record of the thread closes only that one.
    constexpr int kThreads = 300;
    const auto host = [](int tid) { return QByteArray(tid % 2 ? "a" : "b"); };
    QByteArray log;
    for (int tid = 0; tid < kThreads; ++tid)
        log += host(tid) + ":7:" + QByteArray::number(tid) + " [0] x.cc:1 NCCL WARN w" + QByteArray::number(tid) + "\n";
    for (int tid = 0; tid < kThreads; ++tid)
        log += host(tid) + ":7:" + QByteArray::number(tid) + " [0] NCCL INFO init.cc:1 -> 5\n";
    for (int tid = 0; tid < kThreads; tid += 3)
        log += host(tid) + ":7:" + QByteArray::number(tid) + " [0] NCCL INFO Using network IB\n";
    for (int tid = 0; tid < kThreads; ++tid)
        log += host(tid) + ":7:" + QByteArray::number(tid) + " [0] NCCL INFO group.cc:2 -> 5\n";
    // Hosts printed with different invalid bytes make the same string, so they are one host, one thread.
    log += "h\xff:1:2 [0] x.cc:1 NCCL WARN bad bytes\nh\xfe:1:2 [0] NCCL INFO init.cc:3 -> 5\n";
    NcclLogParser parser;
    parser.feed(log);
    parser.finish();
    const NcclFacts facts = parser.facts();
    QCOMPARE(facts.warnings.size(), kThreads + 1);
    QStringList orphansA;
    QStringList orphansB;
    for (int tid = 0; tid < kThreads; ++tid) {
        const NcclWarning& warning = facts.warnings[tid];
        QCOMPARE(warning.text, QStringLiteral("w%1").arg(tid));
        QCOMPARE(warning.host, QString::fromLatin1(host(tid)));
        if (tid % 3 == 0) {
            QCOMPARE(warning.chain, QStringList{"init.cc:1 -> 5"});
            (tid % 2 ? orphansA : orphansB).append(QStringLiteral("group.cc:2 -> 5"));
        } else {
            QCOMPARE(warning.chain, (QStringList{"init.cc:1 -> 5", "group.cc:2 -> 5"}));
        }
    }
    // The same step again and again is said once, with its count.
    QCOMPARE(facts.orphanChains, (QStringList{QStringLiteral("a:7: group.cc:2 -> 5 (%1 times)").arg(orphansA.size()),
                                              QStringLiteral("b:7: group.cc:2 -> 5 (%1 times)").arg(orphansB.size())}));
    QCOMPARE(facts.warnings.back().chain, QStringList{"init.cc:3 -> 5"});
    QCOMPARE(facts.hosts, (QStringList{"a", "b", QStringLiteral("h\uFFFD")}));
}

QTEST_GUILESS_MAIN(tst_LogParsers)
#include "tst_logparsers.moc"
