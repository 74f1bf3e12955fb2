// SPDX-License-Identifier: MIT
// A stored run opened (RunEngine::open(), what `rankscope-cli diagnose`, the app's history and an attach's replay do):
// its streams read back in the order their bytes arrived, its events diagnosed in the order they happened, up to
// where the copy of a run not seen to end stops, its exits, watchdog lines, NCCL lines, GPU samples and kernel
// logs, all through the signals a live run emits. The run is written into a run store here from the recorded
// output of real 2-rank trainer runs (tests/data/events/recorded-*: `--hang-at-step 3 --hang-rank 1`, rank 0 timing
// out in Gloo) and real logs (tests/data/logs); nothing is launched, so each function takes milliseconds. The
// same replay after real runs is tst_runengine's and tst_diagnostics_e2e's.
#include "core/runstore.h"
#include "remote/runengine.h"

#include <QFile>
#include <QJsonArray>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cmath>

using namespace rankscope;

namespace {

QByteArray readData(const QString& relative) {
    QFile file(QStringLiteral(RANKSCOPE_SOURCE_DIR "/tests/data/") + relative);
    if (!file.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(file.fileName()));
    return file.readAll();
}

// One append to a rank's stored stream, as a node worker makes it: the bytes, and when they reached this machine.
struct Piece {
    int rank = 0;
    RankStream stream = RankStream::Events;
    QByteArray bytes;
    double arrivedAt = 0.0;
};

// A recorded rank's output (stdout and stderr together) as the engine stores it: its event lines in the events
// stream, the rest (the trainer's progress and errors) in stderr, each line arriving `lag` seconds after the time of
// the event before it.
QVector<Piece> recordedRank(const QString& name, int rank, double lag = 0.05) {
    QVector<Piece> pieces;
    double last = 0.0;
    const QByteArray all = readData(QStringLiteral("events/recorded-%1-rank%2.out").arg(name).arg(rank));
    for (QByteArray line : all.split('\n')) {
        if (line.isEmpty())
            continue;
        line += '\n';
        const bool event = line.startsWith("@rankscope ");
        if (event) {
            const qsizetype at = line.indexOf("\"time\":") + 7;
            last = line.mid(at, line.indexOf(',', at) - at).toDouble();
        }
        pieces.append({rank, event ? RankStream::Events : RankStream::Err, line, last + lag});
    }
    return pieces;
}

// The pieces of every rank in the order they arrived.
QVector<Piece> byArrival(QVector<Piece> pieces) {
    std::stable_sort(pieces.begin(), pieces.end(),
                     [](const Piece& a, const Piece& b) { return a.arrivedAt < b.arrivedAt; });
    return pieces;
}

QDateTime at(double unixSeconds) {
    return QDateTime::fromMSecsSinceEpoch(qint64(std::llround(unixSeconds * 1000.0)), Qt::UTC);
}

// The recorded hang's times: rank 1 stops before step 3 (its last collective #5 finished); rank 0 starts collective
// #6 at 907.831, fails in it at 910.787 (Gloo's 3 s timeout, exit status 1); rank 1 beats on until 920.692, when
// `timeout` ends it (SIGTERM).
constexpr double kRank0Waits = 1795315907.831;
constexpr double kRank0Fails = 1795315910.787;
constexpr double kRank1Ends = 1795315920.8;

// A run of two ranks on one node, node-a, ended as the recorded hang ended unless `ended` is false.
RunRecord hangRecord(const QString& id, bool ended = true) {
    RunRecord record;
    record.id = id;
    record.name = QStringLiteral("replay");
    record.mode = QStringLiteral("submit");
    record.created = at(1795315906.0);
    record.worldSize = 2;
    record.job =
        QJsonObject{{QStringLiteral("trainer"), QJsonObject{{QStringLiteral("backend"), QStringLiteral("gloo")}}}};
    record.nodes = {{QStringLiteral("a"), QStringLiteral("node-a"), false, QStringLiteral("/tmp/run"), {0, 1}}};
    record.state = QStringLiteral("running");
    if (ended) {
        record.state = QStringLiteral("failed");
        record.ended = at(kRank1Ends);
        record.exits.insert(0, RankExit{1, at(kRank0Fails + 0.05), false});
        record.exits.insert(1, RankExit{143, at(kRank1Ends), true});
        record.firstFailedRank = 0;
        record.summary = QStringLiteral("rank 0 on node-a failed first: exit status 1");
    }
    return record;
}

// What a replay said, through the engine's signals.
struct Heard {
    QVector<Diagnosis> findings; // folded: the newest of each key
    QVector<Diagnosis> said;     // every one, in order
    QVector<TrainerEvent> events;
    QVector<RankLogLine> lines;
    QVector<std::tuple<int, QString, int, bool>> exits;
    QVector<RankNcclFacts> nccl;
    int ncclSignals = 0;
    QVector<GpuSample> gpu;
    QStringList gpuHosts;
    QStringList gpuErrors;
    QVector<QPair<int, DecodeError>> decodeErrors;

    explicit Heard(remote::RunEngine& engine) {
        QObject::connect(&engine, &remote::RunEngine::diagnoses, [this](const QVector<Diagnosis>& changed) {
            said += changed;
            foldFindings(findings, changed);
        });
        QObject::connect(&engine, &remote::RunEngine::events,
                         [this](const QVector<TrainerEvent>& batch) { events += batch; });
        QObject::connect(&engine, &remote::RunEngine::logLines,
                         [this](const QVector<RankLogLine>& batch) { lines += batch; });
        QObject::connect(&engine, &remote::RunEngine::rankExited,
                         [this](int rank, const QString& host, int status, bool stopped) {
                             exits.append({rank, host, status, stopped});
                         });
        QObject::connect(&engine, &remote::RunEngine::ncclFacts, [this](const QVector<RankNcclFacts>& perRank) {
            nccl = perRank;
            ++ncclSignals;
        });
        QObject::connect(&engine, &remote::RunEngine::gpuSamples,
                         [this](int /*node*/, const QString& host, const QVector<GpuSample>& samples) {
                             gpu += samples;
                             gpuHosts.append(host);
                         });
        QObject::connect(&engine, &remote::RunEngine::gpuTelemetryError,
                         [this](int node, const QString& host, const QString& message) {
                             gpuErrors.append(QStringLiteral("%1 %2: %3").arg(node).arg(host, message));
                         });
        QObject::connect(&engine, &remote::RunEngine::decodeErrors,
                         [this](int rank, const QVector<DecodeError>& errors) {
                             for (const DecodeError& error : errors)
                                 decodeErrors.append({rank, error});
                         });
    }

    [[nodiscard]] QVector<Diagnosis> of(DiagnosisKind kind) const {
        QVector<Diagnosis> found;
        std::copy_if(findings.cbegin(), findings.cend(), std::back_inserter(found),
                     [kind](const Diagnosis& d) { return d.kind == kind; });
        return found;
    }
    [[nodiscard]] QStringList messages() const {
        QStringList all;
        for (const Diagnosis& d : findings)
            all << d.toString();
        return all;
    }
};

} // namespace

class TestRunReplay final : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<RunStore> m_store;
    int m_runs = 0;

    // A new run in the store: the record, then the pieces appended in the order given.
    QString store(RunRecord record, const QVector<Piece>& pieces) {
        record.id = QStringLiteral("20261207-0900%1-a%2")
                        .arg(m_runs, 2, 10, QLatin1Char('0'))
                        .arg(m_runs, 3, 10, QLatin1Char('0'));
        ++m_runs;
        QString error;
        if (!m_store->save(record, &error))
            qFatal("save: %s", qPrintable(error));
        for (const Piece& piece : pieces)
            if (!m_store->appendStream(record.id, piece.rank, piece.stream,
                                       m_store->streamSize(record.id, piece.rank, piece.stream), piece.bytes, &error,
                                       nullptr, piece.arrivedAt))
                qFatal("append: %s", qPrintable(error));
        return record.id;
    }

    std::unique_ptr<remote::RunEngine> engine() {
        remote::EngineOptions options;
        options.captureStacksOnHang = false;
        return std::make_unique<remote::RunEngine>(m_store.get(), options);
    }

    // Rank 0 of an NCCL job aborted by PyTorch's NCCL watchdog (a real line, its rank changed), rank 1 ended by the
    // teardown; their progress lines before.
    QString watchdogRun(int debugRank = -1) {
        const QByteArray watchdog =
            "[rank0]:[E318 07:39:53.792630246 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=56320, NumelOut=56320, Timeout(ms)=600000) ran "
            "for 600086 milliseconds before timing out.\n";
        RunRecord record = hangRecord({});
        record.job =
            QJsonObject{{QStringLiteral("trainer"), QJsonObject{{QStringLiteral("backend"), QStringLiteral("nccl")}}}};
        record.exits[0] = RankExit{134, at(1795315930.5), false};
        record.exits[1] = RankExit{143, at(1795315931.0), true};
        record.ended = at(1795315931.0);
        record.summary = QStringLiteral("rank 0 on node-a failed first: killed by SIGABRT");
        record.debugRank = debugRank;
        QVector<Piece> pieces{
            {0, RankStream::Err, "[rank 0] epoch 1/1 step 1/8 loss 2.2317 763 img/s\n", 1795315907.8},
            {1, RankStream::Err, "[rank 1] epoch 1/1 step 1/8 loss 2.4222 868 img/s\n", 1795315907.8}};
        // Both ranks beating on, a step and a collective further each time, until shortly before the watchdog's line.
        for (int i = 0; i < 44; ++i)
            for (const int rank : {0, 1}) {
                const double time = 1795315908.0 + 0.5 * i;
                pieces.append(
                    {rank, RankStream::Events,
                     QStringLiteral("@rankscope {\"v\":\"1.0\",\"type\":\"heartbeat\",\"rank\":%1,\"time\":%2,"
                                    "\"phase\":\"forward\",\"step\":%3,\"collective_started\":%3,"
                                    "\"collective_finished\":%3}\n")
                         .arg(rank)
                         .arg(time, 0, 'f', 3)
                         .arg(i + 1)
                         .toUtf8(),
                     time + 0.05});
            }
        pieces.append({0, RankStream::Err, watchdog, 1795315930.4});
        return store(record, pieces);
    }

    static QVector<Piece> recordedHang() {
        return byArrival(recordedRank(QStringLiteral("hang"), 0) + recordedRank(QStringLiteral("hang"), 1));
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_store = std::make_unique<RunStore>(m_dir.path());
    }

    // The recorded hang, opened: rank 1 named stuck where it stopped, rank 0 waiting in the next collective, and the
    // root cause (rank 0's timeout) said as a consequence of it, with rank 0's last lines; each rank's exit replayed
    // with its judgement.
    void aStoredHangIsDiagnosedAsItHappened() {
        const QString id = store(hangRecord({}), recordedHang());
        const auto engine = this->engine();
        Heard heard(*engine);
        QString error;
        QVERIFY2(engine->open(id, &error), qPrintable(error));

        const QVector<Diagnosis> hangs = heard.of(DiagnosisKind::Hang);
        QCOMPARE(hangs.size(), 1);
        QCOMPARE(hangs[0].ranks, (QVector<int>{1, 0}));
        QCOMPARE(hangs[0].culprits, 1);
        QCOMPARE(hangs[0].host, QStringLiteral("node-a"));
        QVERIFY2(hangs[0].message.startsWith(QStringLiteral("rank 1 on node-a stuck at step 3 in phase forward "
                                                            "(collective #5); rank 0 waiting in collective #6")),
                 qPrintable(hangs[0].message));
        QVERIFY(!hangs[0].resolved);
        // Found as it was live: within two heartbeat intervals (0.5 s) of rank 0's wait becoming a stillness, long
        // before the run ended.
        QVERIFY2(hangs[0].time > kRank0Waits && hangs[0].time < kRank0Fails,
                 qPrintable(QString::number(hangs[0].time, 'f', 3)));

        const QVector<Diagnosis> causes = heard.of(DiagnosisKind::RootCause);
        QCOMPARE(causes.size(), 1);
        QCOMPARE(causes[0].ranks, QVector<int>{0});
        QVERIFY2(causes[0].message.contains(QStringLiteral("it was waiting on a hung rank: rank 1 on node-a stuck at "
                                                           "step 3")),
                 qPrintable(causes[0].message));
        QVERIFY(!causes[0].lastLines.isEmpty());
        QVERIFY2(causes[0].lastLines.back().text.startsWith(
                     QStringLiteral("[rank 0] error: gradient all-reduce in backward (collective #6) failed")),
                 qPrintable(causes[0].lastLines.back().text));
        QCOMPARE(heard.of(DiagnosisKind::Straggler).size(), 0);

        QCOMPARE(heard.exits, (QVector<std::tuple<int, QString, int, bool>>{{0, QStringLiteral("node-a"), 1, false},
                                                                            {1, QStringLiteral("node-a"), 143, true}}));
    }

    // Every event and log line comes out once, each rank's in its own order, the lines in the order they arrived with
    // the time they arrived, each on the stream it was stored on.
    void streamsAreReadBackAsTheyArrived() {
        const QVector<Piece> pieces = recordedHang();
        const QString id = store(hangRecord({}), pieces);
        const auto engine = this->engine();
        Heard heard(*engine);
        QVERIFY(engine->open(id, nullptr));

        QVector<Piece> lines;
        std::copy_if(pieces.cbegin(), pieces.cend(), std::back_inserter(lines),
                     [](const Piece& p) { return p.stream == RankStream::Err; });
        QCOMPARE(heard.lines.size(), lines.size());
        for (qsizetype i = 0; i < lines.size(); ++i) {
            QCOMPARE(heard.lines[i].rank, lines[i].rank);
            QCOMPARE(heard.lines[i].stream, RankStream::Err);
            QCOMPARE(heard.lines[i].text, QString::fromUtf8(lines[i].bytes.chopped(1)));
            QCOMPARE(heard.lines[i].receivedAt, lines[i].arrivedAt);
        }
        const qsizetype eventCount = std::count_if(pieces.cbegin(), pieces.cend(),
                                                   [](const Piece& p) { return p.stream == RankStream::Events; });
        QCOMPARE(heard.events.size(), eventCount);
        for (const int rank : {0, 1}) {
            double last = 0.0;
            qsizetype seen = 0;
            for (const TrainerEvent& event : std::as_const(heard.events)) {
                if (event.rank != rank)
                    continue;
                QVERIFY(event.time >= last);
                last = event.time;
                ++seen;
            }
            QVERIFY(seen > 10);
        }
    }

    // A run whose bytes came late from one rank (its node caught up after a dropped link: all of rank 1's at the end)
    // is diagnosed in the order things happened on the nodes, not in the order they reached this machine: the same
    // hang, found at the same time.
    void aRanksLateCopyIsDiagnosedInTheOrderItHappened() {
        QVector<Piece> pieces = recordedRank(QStringLiteral("hang"), 0);
        for (Piece piece : recordedRank(QStringLiteral("hang"), 1)) {
            piece.arrivedAt = kRank1Ends + 1.0;
            pieces.append(piece);
        }
        const auto opened = [this](const QVector<Piece>& stored) {
            const auto engine = this->engine();
            Heard heard(*engine);
            if (!engine->open(store(hangRecord({}), stored), nullptr))
                qFatal("open");
            return heard.of(DiagnosisKind::Hang);
        };
        const QVector<Diagnosis> late = opened(pieces);
        const QVector<Diagnosis> inTime = opened(recordedHang());
        QCOMPARE(late.size(), 1);
        QCOMPARE(inTime.size(), 1);
        QCOMPARE(late[0].message, inTime[0].message);
        QCOMPARE(late[0].time, inTime[0].time);
    }

    // A run not seen to end (detached, or its node lost) is known up to where the earliest of its ranks' copies stops:
    // a copy that stops before the hang shows none (the other rank's stillness past it is unknown, not stuck), one that
    // goes past it shows the hang as an ended run does.
    void aRunNotSeenToEndIsDiagnosedUpToItsCopy_data() {
        QTest::addColumn<int>("cutRank");
        QTest::addColumn<double>("copyEnds");
        QTest::addColumn<bool>("hang");
        QTest::newRow("rank 0's copy stops as it starts waiting") << 0 << kRank0Waits << false;
        QTest::newRow("rank 0's copy goes up to its failure") << 0 << kRank0Fails << true;
        QTest::newRow("rank 1's copy stops at its last step") << 1 << 1795315907.773 << false;
        QTest::newRow("rank 1's copy goes on after the hang") << 1 << 1795315909.683 << true;
    }
    void aRunNotSeenToEndIsDiagnosedUpToItsCopy() {
        QFETCH(int, cutRank);
        QFETCH(double, copyEnds);
        QFETCH(bool, hang);
        QVector<Piece> pieces = recordedHang();
        pieces.erase(std::remove_if(pieces.begin(), pieces.end(),
                                    [cutRank, copyEnds](const Piece& p) {
                                        return p.rank == cutRank && p.arrivedAt > copyEnds + 0.05 + 1e-6;
                                    }),
                     pieces.end());
        const QString id = store(hangRecord({}, false), pieces);
        const auto engine = this->engine();
        Heard heard(*engine);
        QVERIFY(engine->open(id, nullptr));
        QCOMPARE(engine->openedKnownUntil(), std::min(copyEnds, kRank0Fails)); // the earliest copy's end
        QCOMPARE(heard.of(DiagnosisKind::Hang).size(), hang ? 1 : 0);
        QCOMPARE(heard.of(DiagnosisKind::RootCause).size(), 0); // no exit seen
        QVERIFY(heard.exits.isEmpty());
    }

    // An ended run is known to its end: infinity.
    void anEndedRunIsKnownToItsEnd() {
        const auto engine = this->engine();
        QVERIFY(engine->open(store(hangRecord({}), recordedHang()), nullptr));
        QVERIFY(std::isinf(engine->openedKnownUntil()));
    }

    // The user's stop, stored before the ranks went still, makes their stillness the stop's: no hang. So does the
    // first failure, from the time its exit was seen: a hang found before it stays.
    void stillnessAfterTheStopIsNoHang() {
        const QString id = store(hangRecord({}), recordedHang());
        QVERIFY(m_store->markStopRequested(id, at(kRank0Waits - 0.2)));
        const auto engine = this->engine();
        Heard heard(*engine);
        QVERIFY(engine->open(id, nullptr));
        QVERIFY2(heard.of(DiagnosisKind::Hang).isEmpty(), qPrintable(heard.messages().join('\n')));

        // The failure's exit seen early (a stored exit of rank 0 before it began waiting): the run was ending then.
        RunRecord early = hangRecord({});
        early.exits[0].seenAt = at(kRank0Waits - 0.2);
        const auto second = this->engine();
        Heard heardSecond(*second);
        QVERIFY(second->open(store(early, recordedHang()), nullptr));
        QVERIFY2(heardSecond.of(DiagnosisKind::Hang).isEmpty(), qPrintable(heardSecond.messages().join('\n')));
    }

    // The ranks' stillness is the teardown's from the earliest exit of a rank that failed (a third rank here, killed
    // before rank 1 stopped, with no stream stored), as it was live: no hang of it.
    void theEarliestFailureBeginsTheEnd() {
        RunRecord record = hangRecord({});
        record.worldSize = 3;
        record.nodes[0].ranks = {0, 1, 2};
        record.exits.insert(2, RankExit{137, at(kRank0Waits - 0.2), false});
        record.firstFailedRank = 2;
        record.summary = QStringLiteral("rank 2 on node-a killed by SIGKILL");
        const auto engine = this->engine();
        Heard heard(*engine);
        QVERIFY(engine->open(store(record, recordedHang()), nullptr));
        QVERIFY2(heard.of(DiagnosisKind::Hang).isEmpty(), qPrintable(heard.messages().join('\n')));
        QCOMPARE(heard.of(DiagnosisKind::RootCause).size(), 1);
    }

    // A rank that ended, as the replay reaches its exit, is not stuck but missing: rank 1 left after its second step
    // (exit status 0, as a rank whose inputs run out first does), and rank 0 waited for it in collective #6 until it
    // failed. The hang says so, not that no rank is missing.
    void aRankThatEndedIsNotStuck() {
        QVector<Piece> pieces = recordedHang();
        pieces.erase(std::remove_if(pieces.begin(), pieces.end(),
                                    [](const Piece& p) { return p.rank == 1 && p.arrivedAt > 1795315907.773 + 0.06; }),
                     pieces.end());
        RunRecord record = hangRecord({});
        record.exits[1] = RankExit{0, at(1795315907.9), false};
        record.ended = at(kRank0Fails + 0.1);
        const auto engine = this->engine();
        Heard heard(*engine);
        QVERIFY(engine->open(store(record, pieces), nullptr));
        const QVector<Diagnosis> hangs = heard.of(DiagnosisKind::Hang);
        QCOMPARE(hangs.size(), 1);
        QCOMPARE(hangs[0].message,
                 QStringLiteral("every running rank (0) is stuck inside collective #6; rank 1 ended without entering "
                                "it (after step 2, exit status 0): a rank that leaves the training loop early (inputs "
                                "uneven across ranks, an early return or exit) leaves the others waiting in their next "
                                "collective"));
        QCOMPARE(hangs[0].ranks, QVector<int>{0});
        QVERIFY(hangs[0].time < kRank0Fails);
    }

    // The hang of the rank under the debugger is its debugger's: said so.
    void aHangOfTheDebuggedRankSaysSo() {
        RunRecord record = hangRecord({});
        record.debugRank = 1;
        const auto engine = this->engine();
        Heard heard(*engine);
        QVERIFY(engine->open(store(record, recordedHang()), nullptr));
        const QVector<Diagnosis> hangs = heard.of(DiagnosisKind::Hang);
        QCOMPARE(hangs.size(), 1);
        QVERIFY2(hangs[0].message.endsWith(QStringLiteral(" (rank 1 is under the debugger: the others wait for it "
                                                          "while it is stopped)")),
                 qPrintable(hangs[0].message));
        // Another rank under the debugger: the hang is rank 1's own.
        record.debugRank = 0;
        const auto other = this->engine();
        Heard heardOther(*other);
        QVERIFY(other->open(store(record, recordedHang()), nullptr));
        QCOMPARE(heardOther.of(DiagnosisKind::Hang).size(), 1);
        QVERIFY(!heardOther.of(DiagnosisKind::Hang)[0].message.contains(QStringLiteral("debugger")));
        // Nor is the debugged rank's own failure (the root cause) said to be its debugger's.
        QCOMPARE(heardOther.of(DiagnosisKind::RootCause).size(), 1);
        QVERIFY(!heardOther.of(DiagnosisKind::RootCause)[0].message.contains(QStringLiteral("debugger")));

        // A hang known from the watchdog alone (who waited, not for whom): the debugged rank is the one waited for,
        // unless it is one of those that timed out waiting.
        for (const int debugRank : {1, 0}) {
            const auto watched = this->engine();
            Heard heardWatched(*watched);
            QVERIFY(watched->open(watchdogRun(debugRank), nullptr));
            QCOMPARE(heardWatched.of(DiagnosisKind::Hang).size(), 1);
            QCOMPARE(heardWatched.of(DiagnosisKind::Hang)[0].message.contains(
                         QStringLiteral("(rank 1 is under the debugger")),
                     debugRank == 1);
            QVERIFY(!heardWatched.of(DiagnosisKind::Hang)[0].message.contains(QStringLiteral("rank 0 is under")));
        }
    }

    // PyTorch's NCCL watchdog on a rank's stderr is a hang known from the watchdog: which collective timed out on
    // which rank, after how long.
    void aWatchdogTimeoutOnStderrIsAHang() {
        const auto engine = this->engine();
        Heard heard(*engine);
        QVERIFY(engine->open(watchdogRun(), nullptr));
        const QVector<Diagnosis> hangs = heard.of(DiagnosisKind::Hang);
        QCOMPARE(hangs.size(), 1);
        QVERIFY2(
            hangs[0].message.startsWith(QStringLiteral("NCCL's watchdog timed out on rank 0 on node-a in ALLREDUCE "
                                                       "(SeqNum 808) after 600086 ms (timeout 600000 ms)")),
            qPrintable(hangs[0].message));
        QCOMPARE(hangs[0].ranks, QVector<int>{0});
        QCOMPARE(hangs[0].culprits, 0);
        QVERIFY2(hangs[0].time >= 1795315930.4,
                 qPrintable(QString::number(hangs[0].time, 'f', 3))); // the line's arrival
    }

    // NCCL's lines on a rank's stdout (a real log) are read where NCCL can speak: a job on NCCL, one whose env sets
    // NCCL_DEBUG, a verbose debug run; a Gloo job's stdout is not parsed for them.
    void ncclLinesAreReadWhereNcclSpeaks_data() {
        QTest::addColumn<QString>("backend");
        QTest::addColumn<QString>("mode");
        QTest::addColumn<QJsonObject>("extra");
        QTest::addColumn<bool>("read");
        const QJsonObject none;
        QTest::newRow("nccl") << "nccl"
                              << "submit" << none << true;
        QTest::newRow("gloo") << "gloo"
                              << "submit" << none << false;
        QTest::newRow("gloo, NCCL_DEBUG in env")
            << "gloo"
            << "submit" << QJsonObject{{"env", QJsonObject{{"NCCL_DEBUG", "INFO"}}}} << true;
        QTest::newRow("gloo, debug run (verbose by default)") << "gloo"
                                                              << "debug" << none << true;
        QTest::newRow("gloo, debug run, not verbose")
            << "gloo"
            << "debug" << QJsonObject{{"debug", QJsonObject{{"verbose", false}}}} << false;
        QTest::newRow("gloo, submitted, verbose debug settings")
            << "gloo"
            << "submit" << QJsonObject{{"debug", QJsonObject{{"verbose", true}}}} << false;
    }
    void ncclLinesAreReadWhereNcclSpeaks() {
        QFETCH(QString, backend);
        QFETCH(QString, mode);
        QFETCH(QJsonObject, extra);
        QFETCH(bool, read);
        RunRecord record = hangRecord({});
        record.mode = mode;
        QJsonObject job = extra;
        job.insert(QStringLiteral("trainer"), QJsonObject{{QStringLiteral("backend"), backend}});
        record.job = job;
        const QVector<Piece> pieces{
            {0, RankStream::Out, readData(QStringLiteral("logs/public/nccl-952-p2p-ipc-socket.log")), 1795315908.0}};
        const auto engine = this->engine();
        Heard heard(*engine);
        QVERIFY(engine->open(store(record, pieces), nullptr));
        QCOMPARE(heard.ncclSignals, read ? 1 : 0);
        if (!read)
            return;
        const auto facts =
            std::find_if(heard.nccl.cbegin(), heard.nccl.cend(), [](const RankNcclFacts& f) { return f.rank == 0; });
        QVERIFY(facts != heard.nccl.cend());
        QCOMPARE(facts->host, QStringLiteral("<cluster_name>")); // as NCCL's lines name it
        QVERIFY2(facts->transports.value(QStringLiteral("P2P")) > 0 &&
                     facts->transports.value(QStringLiteral("NET/Socket")) > 0,
                 qPrintable(QStringList(facts->transports.keys()).join(',')));
    }

    // A node's stored GPU samples and the sampler's complaints come back with the node's name and host; blank
    // complaint lines are not complaints.
    void gpuSamplesAndTheirErrorsAreReplayed() {
        RunRecord record = hangRecord({});
        record.nodes.append({QStringLiteral("b"), QStringLiteral("node-b"), false, QStringLiteral("/tmp/run"), {}});
        const QString id = store(record, {});
        QVERIFY(m_store->appendNodeStream(
            id, 1, QStringLiteral("gpu.csv"), 0,
            "timestamp, index, name, pci.bus_id, utilization.gpu [%], memory.used [MiB], memory.total [MiB], "
            "temperature.gpu, power.draw [W], power.limit [W]\n"
            "2026/12/07 09:00:01.000, 0, NVIDIA H100 80GB HBM3, 00000000:19:00.0, 87 %, 40000 MiB, 81559 MiB, 61, "
            "512.30 W, 700.00 W\n"
            "2026/12/07 09:00:01.000, 1, NVIDIA H100 80GB HBM3, 00000000:3B:00.0, 85 %, 39000 MiB, 81559 MiB, 60, "
            "505.10 W, 700.00 W\n"));
        // Node a's sampler wrote its header and no sample yet: nothing to show of it.
        QVERIFY(m_store->appendNodeStream(
            id, 0, QStringLiteral("gpu.csv"), 0,
            "timestamp, index, name, pci.bus_id, utilization.gpu [%], memory.used [MiB], memory.total [MiB], "
            "temperature.gpu, power.draw [W], power.limit [W]\n"));
        QVERIFY(m_store->appendNodeStream(id, 1, QStringLiteral("gpu.err"), 0,
                                          "  /bin/sh: 1: nvidia-smi: not found  \n\n"));
        const auto engine = this->engine();
        Heard heard(*engine);
        QVERIFY(engine->open(id, nullptr));
        QCOMPARE(heard.gpu.size(), 2);
        QCOMPARE(heard.gpuHosts, QStringList{QStringLiteral("node-b")});
        for (const GpuSample& sample : std::as_const(heard.gpu)) {
            QCOMPARE(sample.node, QStringLiteral("b"));
            QCOMPARE(sample.memoryTotalMiB, 81559.0);
        }
        QCOMPARE(heard.gpu[0].utilizationPercent, 87.0);
        QCOMPARE(heard.gpu[1].index, 1);
        QCOMPARE(heard.gpuErrors, QStringList{QStringLiteral("1 node-b: /bin/sh: 1: nvidia-smi: not found")});
    }

    // A line of the events stream that is not a valid event is reported with its rank and line, and the events
    // around it still count.
    void badEventLinesAreReportedWithTheirRank() {
        const QVector<Piece> pieces{
            {1, RankStream::Events,
             "@rankscope {\"v\":\"1.0\",\"type\":\"heartbeat\",\"rank\":1,\"time\":1795315906.5,\"phase\":\"init\","
             "\"step\":0,\"collective_started\":0,\"collective_finished\":0}\n",
             1795315906.6},
            {1, RankStream::Events, "@rankscope {\"v\":\"1.0\",\"type\":\"step\",\"rank\":1,\"time\":17953159\n",
             1795315906.7},
            {1, RankStream::Events,
             "@rankscope {\"v\":\"1.0\",\"type\":\"heartbeat\",\"rank\":1,\"time\":1795315907.0,\"phase\":\"init\","
             "\"step\":0,\"collective_started\":0,\"collective_finished\":0}\n",
             1795315907.1}};
        const auto engine = this->engine();
        Heard heard(*engine);
        QVERIFY(engine->open(store(hangRecord({}), pieces), nullptr));
        QCOMPARE(heard.decodeErrors.size(), 1);
        QCOMPARE(heard.decodeErrors[0].first, 1);
        QCOMPARE(heard.decodeErrors[0].second.lineNumber, 2);
        QCOMPARE(heard.events.size(), 2);
    }

    // A rank killed by SIGKILL without an error of its own: its node's stored kernel log is read into the root cause,
    // here the reason it could not be read; without one, the hint to look for the OOM killer.
    void aKilledRanksKernelLogIsInTheRootCause() {
        RunRecord record = hangRecord({});
        record.exits[0] = RankExit{137, at(kRank0Fails), false};
        record.summary = QStringLiteral("rank 0 on node-a killed by SIGKILL");
        const QVector<Piece> pieces{
            {0, RankStream::Err, "[rank 0] epoch 1/1 step 1/8 loss 2.2317 763 img/s\n", 1795315907.8}};
        {
            const auto engine = this->engine();
            Heard heard(*engine);
            QVERIFY(engine->open(store(record, pieces), nullptr));
            QCOMPARE(heard.of(DiagnosisKind::RootCause).size(), 1);
            QVERIFY2(heard.of(DiagnosisKind::RootCause)[0].message.contains(
                         QStringLiteral("look for \"Out of memory\" or GPU Xid lines in dmesg on node-a")),
                     qPrintable(heard.of(DiagnosisKind::RootCause)[0].message));
        }
        const QString id = store(record, pieces);
        KernelLogCapture capture;
        capture.node = 0;
        capture.host = QStringLiteral("node-a");
        capture.source = QStringLiteral("dmesg");
        capture.problem = QStringLiteral("dmesg: read kernel buffer failed: Operation not permitted");
        QVERIFY(!m_store->saveKernelLog(id, capture).isEmpty());
        const auto engine = this->engine();
        Heard heard(*engine);
        QVERIFY(engine->open(id, nullptr));
        QCOMPARE(heard.of(DiagnosisKind::RootCause).size(), 1);
        QVERIFY2(heard.of(DiagnosisKind::RootCause)[0].message.contains(
                     QStringLiteral("the kernel log of node-a could not be read: dmesg: read kernel buffer failed")),
                 qPrintable(heard.of(DiagnosisKind::RootCause)[0].message));
    }
};

QTEST_GUILESS_MAIN(TestRunReplay)
#include "tst_runreplay.moc"
