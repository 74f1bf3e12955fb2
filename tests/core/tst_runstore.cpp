// SPDX-License-Identifier: MIT
#include "core/arrivalorder.h"
#include "core/runstore.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

using rankscope::lastStoredLines;
using rankscope::RankExit;
using rankscope::RankStream;
using rankscope::rankStreamSuffix;
using rankscope::RunNodeRecord;
using rankscope::RunRecord;
using rankscope::RunStore;
using rankscope::StoredLine;
using rankscope::StoredPiece;

namespace {

QDateTime utc(const char* iso) {
    return QDateTime::fromString(QString::fromLatin1(iso), Qt::ISODateWithMs);
}

// A record with every field set to something other than its default.
RunRecord fullRecord(const QString& id) {
    RunRecord record;
    record.id = id;
    record.name = QStringLiteral("resnet sweep");
    record.mode = QStringLiteral("submit");
    record.state = QStringLiteral("failed");
    record.created = utc("2024-03-01T12:00:00.123Z");
    record.ended = utc("2024-03-01T12:34:56.789Z");
    record.job = QJsonObject{{"name", "resnet"},
                             {"nprocs_per_node", 2},
                             {"env", QJsonObject{{"NCCL_DEBUG", "INFO"}}},
                             {"args", QJsonArray{"--epochs", 3}},
                             {"hosts", QJsonArray{QJsonObject{{"host", "node-a"}, {"port", 2222}}}}};
    record.worldSize = 4;
    record.nodes = {
        {QStringLiteral("local"), QStringLiteral("127.0.0.1"), true, QStringLiteral("/tmp/rs/run"), {0, 1}},
        {QStringLiteral("node-b"), QStringLiteral("10.0.0.2"), false, QStringLiteral("/scratch/rs/run"), {2, 3}}};
    record.exits.insert(0, RankExit{0, utc("2024-03-01T12:34:50.000Z")});
    record.exits.insert(2, RankExit{137, utc("2024-03-01T12:34:55.500Z")});
    record.exits.insert(3, RankExit{1, utc("2024-03-01T12:34:56.001Z")});
    record.exits.insert(1, RankExit{143, utc("2024-03-01T12:34:57.000Z"), true}); // ended by the teardown
    record.firstFailedRank = 2;
    record.failedAlike = {3};
    record.debugRank = 0; // rank 0 under the debugger: a rank, not "none"
    record.summary = QStringLiteral("rank 2 on node-b killed by SIGKILL");
    record.verdict =
        record.summary + QStringLiteral("; it was waiting on a hung rank: rank 1 on 127.0.0.1 stuck at step 5");
    return record;
}

RunRecord minimalRecord(const QString& id) {
    RunRecord record;
    record.id = id;
    record.name = QStringLiteral("run ") + id;
    record.mode = QStringLiteral("debug");
    record.state = QStringLiteral("running");
    record.created = QDateTime::currentDateTimeUtc();
    return record;
}

void compareRecords(const RunRecord& actual, const RunRecord& expected) {
    QCOMPARE(actual.id, expected.id);
    QCOMPARE(actual.name, expected.name);
    QCOMPARE(actual.mode, expected.mode);
    QCOMPARE(actual.state, expected.state);
    QCOMPARE(actual.created, expected.created);
    QCOMPARE(actual.ended.isValid(), expected.ended.isValid());
    if (expected.ended.isValid())
        QCOMPARE(actual.ended, expected.ended);
    QCOMPARE(actual.job, expected.job);
    QCOMPARE(actual.worldSize, expected.worldSize);
    QCOMPARE(actual.nodes.size(), expected.nodes.size());
    for (qsizetype i = 0; i < expected.nodes.size(); ++i) {
        QCOMPARE(actual.nodes[i].name, expected.nodes[i].name);
        QCOMPARE(actual.nodes[i].host, expected.nodes[i].host);
        QCOMPARE(actual.nodes[i].local, expected.nodes[i].local);
        QCOMPARE(actual.nodes[i].runDir, expected.nodes[i].runDir);
        QCOMPARE(actual.nodes[i].ranks, expected.nodes[i].ranks);
    }
    QCOMPARE(actual.exits.keys(), expected.exits.keys());
    for (auto it = expected.exits.begin(); it != expected.exits.end(); ++it) {
        QCOMPARE(actual.exits.value(it.key()).status, it->status);
        QCOMPARE(actual.exits.value(it.key()).seenAt, it->seenAt);
        QCOMPARE(actual.exits.value(it.key()).signal(), it->signal());
        QCOMPARE(actual.exits.value(it.key()).stopped, it->stopped);
    }
    QCOMPARE(actual.firstFailedRank, expected.firstFailedRank);
    QCOMPARE(actual.failedAlike, expected.failedAlike);
    QCOMPARE(actual.debugRank, expected.debugRank);
    QCOMPARE(actual.summary, expected.summary);
    QCOMPARE(actual.verdict, expected.verdict);
}

QByteArray readAll(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

QStringList idsOf(const QVector<RunRecord>& runs) {
    QStringList ids;
    for (const RunRecord& run : runs)
        ids.append(run.id);
    return ids;
}

// Restores an environment variable when the test leaves, however it leaves.
class EnvironmentGuard final {
public:
    explicit EnvironmentGuard(const char* name)
        : m_name(name), m_wasSet(qEnvironmentVariableIsSet(name)), m_value(qgetenv(name)) {}
    ~EnvironmentGuard() {
        if (m_wasSet)
            qputenv(m_name, m_value);
        else
            qunsetenv(m_name);
    }
    EnvironmentGuard(const EnvironmentGuard&) = delete;
    EnvironmentGuard& operator=(const EnvironmentGuard&) = delete;

private:
    const char* m_name;
    bool m_wasSet;
    QByteArray m_value;
};

constexpr char kRunId[] = "20240301-120000-abcd";

// A store in a fresh directory holding one minimal run, kRunId; `saved` says whether that worked.
struct SavedRun {
    QTemporaryDir dir;
    RunStore store{dir.path()};
    const QString id = QString::fromLatin1(kRunId);
    const bool saved = dir.isValid() && store.save(minimalRecord(id));
};

} // namespace

class tst_RunStore final : public QObject {
    Q_OBJECT

private slots:
    void signalOfExitStatus_data();
    void signalOfExitStatus();
    void whatEachStateMeans_data();
    void whatEachStateMeans();
    void recordJsonRoundTrip();
    void recordWithoutIdIsRejected();
    void saveLoadRoundTrip();
    void anEndSeenIsNotUndone();
    void loadReportsMissingAndDamagedRuns();
    void newRunId();
    void listIsNewestFirst();
    void listIncludesRunMissingFromIndex();
    void indexContent();
    void resolveId_data();
    void resolveId();
    void resolveLatestInEmptyStore();
    void latestOfRunsStartedInOneSecondIsTheLastStarted();
    void streamPathAndSize();
    void appendStream_data();
    void appendStream();
    void appendStreamGapIsRefused();
    void storedPiecesComeInTheOrderTheyArrived();
    void anOverlappingChunksArrivalEndsWhereTheStreamDoes();
    void reattachNeverDuplicatesOrLosesBytes();
    void kernelLogsAreKeptPerNode();
    void latestStacksIsTheNewestThatReadsBack();
    void anArrivalIndexAheadOfItsStreamIsIgnored();
    void lastStoredLinesAreWhatTheRankSaidLast();
    void stopRequestIsSeenByEveryFollower();
    void defaultRootHonoursRankscopeHome();
};

void tst_RunStore::signalOfExitStatus_data() {
    QTest::addColumn<int>("status");
    QTest::addColumn<int>("signal");

    QTest::newRow("success") << 0 << 0;
    QTest::newRow("exit 1") << 1 << 0;
    QTest::newRow("exit 127") << 127 << 0;
    QTest::newRow("exit 128") << 128 << 0;
    QTest::newRow("SIGHUP") << 129 << 1;
    QTest::newRow("SIGABRT") << 134 << 6;
    QTest::newRow("SIGKILL") << 137 << 9;
    QTest::newRow("SIGSEGV") << 139 << 11;
    QTest::newRow("SIGTERM") << 143 << 15;
    QTest::newRow("signal 31") << 159 << 31;
    QTest::newRow("exit 160") << 160 << 0;
    QTest::newRow("exit 255") << 255 << 0;
}

void tst_RunStore::signalOfExitStatus() {
    QFETCH(int, status);
    QFETCH(int, signal);
    const RankExit rankExit{status, {}};
    QCOMPARE(rankExit.signal(), signal);
}

void tst_RunStore::whatEachStateMeans_data() {
    QTest::addColumn<QString>("state");
    QTest::addColumn<bool>("inProgress");
    QTest::addColumn<bool>("failedOrLost");
    QTest::newRow("launching") << "launching" << true << false;
    QTest::newRow("running") << "running" << true << false;
    QTest::newRow("finished") << "finished" << false << false;
    QTest::newRow("failed") << "failed" << false << true;
    QTest::newRow("stopped") << "stopped" << false << false;
    QTest::newRow("lost") << "lost" << false << true;
    QTest::newRow("none") << "" << false << false;
}

// What the history's colour, the run view's outcome, the app's reattach and message level, the bridge's follow and
// the root cause go by.
void tst_RunStore::whatEachStateMeans() {
    QFETCH(QString, state);
    RunRecord run;
    run.state = state;
    QTEST(run.inProgress(), "inProgress");
    QTEST(run.failedOrLost(), "failedOrLost");
}

void tst_RunStore::recordJsonRoundTrip() {
    const RunRecord record = fullRecord(QString::fromLatin1(kRunId));
    const std::optional<RunRecord> back = RunRecord::fromJson(record.toJson());
    QVERIFY(back);
    compareRecords(*back, record);
    QCOMPARE(back->exits.value(2).signal(), 9);
    QCOMPARE(back->nodeOfRank(0), 0);
    QCOMPARE(back->nodeOfRank(3), 1);
    QCOMPARE(back->nodeOfRank(4), -1);

    // A run still going has no end time and no failed rank; both must survive as "unset".
    RunRecord running = minimalRecord(QString::fromLatin1(kRunId));
    const std::optional<RunRecord> runningBack = RunRecord::fromJson(running.toJson());
    QVERIFY(runningBack);
    QVERIFY(!runningBack->ended.isValid());
    QCOMPARE(runningBack->firstFailedRank, -1);
    compareRecords(*runningBack, running);
}

void tst_RunStore::recordWithoutIdIsRejected() {
    QJsonObject object = fullRecord(QString::fromLatin1(kRunId)).toJson();
    object.remove(QStringLiteral("id"));
    QVERIFY(!RunRecord::fromJson(object));
    QVERIFY(!RunRecord::fromJson(QJsonObject()));

    // A record written by an older version, with only an id: every other field takes its "unset" value.
    const std::optional<RunRecord> bare = RunRecord::fromJson(QJsonObject{{"id", kRunId}});
    QVERIFY(bare);
    QCOMPARE(bare->firstFailedRank, -1);
    QCOMPARE(bare->worldSize, 0);
    QVERIFY(!bare->ended.isValid());
    QVERIFY(bare->nodes.isEmpty());
    QVERIFY(bare->exits.isEmpty());
}

// What a stale follower saves last (running, one exit) does not replace the end another front end saw.
void tst_RunStore::anEndSeenIsNotUndone() {
    QTemporaryDir dir;
    RunStore store(dir.path());
    RunRecord ended = fullRecord(store.newRunId());
    ended.state = QStringLiteral("stopped");
    QVERIFY(store.save(ended));
    RunRecord stale = ended;
    stale.state = QStringLiteral("running");
    stale.ended = QDateTime();
    stale.exits.remove(3);
    QVERIFY(store.save(stale));
    compareRecords(*store.load(ended.id), ended);

    // A seen end replaces another.
    RunRecord finished = ended;
    finished.state = QStringLiteral("finished");
    QVERIFY(store.save(finished));
    compareRecords(*store.load(ended.id), finished);

    // A lost run (a node never seen to end) was not seen to end: a later picture replaces it.
    RunRecord lost = fullRecord(QStringLiteral("20240301-120000-0a0b"));
    lost.state = QStringLiteral("lost");
    QVERIFY(store.save(lost));
    RunRecord following = lost;
    following.state = QStringLiteral("running");
    following.ended = QDateTime();
    QVERIFY(store.save(following));
    compareRecords(*store.load(lost.id), following);
}

void tst_RunStore::saveLoadRoundTrip() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    RunStore store(dir.path());
    QCOMPARE(store.root(), dir.path());
    const RunRecord record = fullRecord(QString::fromLatin1(kRunId));
    QString error;
    QVERIFY2(store.save(record, &error), qPrintable(error));
    QCOMPARE(store.runDir(record.id), dir.path() + QStringLiteral("/runs/") + record.id);
    QVERIFY(QFile::exists(store.runDir(record.id) + QStringLiteral("/run.json")));

    // A fresh store on the same root reads only what is on disk.
    const std::optional<RunRecord> loaded = RunStore(dir.path()).load(record.id, &error);
    QVERIFY2(loaded, qPrintable(error));
    compareRecords(*loaded, record);

    // Saving again replaces the record rather than adding a second one.
    RunRecord finished = record;
    finished.state = QStringLiteral("finished");
    QVERIFY(store.save(finished));
    QCOMPARE(store.load(record.id)->state, QStringLiteral("finished"));
    QCOMPARE(store.list().size(), 1);
}

void tst_RunStore::loadReportsMissingAndDamagedRuns() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    RunStore store(dir.path());

    QString error;
    QVERIFY(!store.load(QStringLiteral("20990101-000000-ffff"), &error));
    QVERIFY2(error.contains(QStringLiteral("20990101-000000-ffff")), qPrintable(error));

    const QString damaged = QStringLiteral("20240101-000000-dead");
    QVERIFY(QDir().mkpath(store.runDir(damaged)));
    QFile file(store.runDir(damaged) + QStringLiteral("/run.json"));
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("{\"id\": \"2024");
    file.close();
    error.clear();
    QVERIFY(!store.load(damaged, &error));
    QVERIFY2(error.contains(damaged) && error.contains(QStringLiteral("damaged")), qPrintable(error));
    QVERIFY(store.list().isEmpty());
}

void tst_RunStore::newRunId() {
    const RunStore store(QStringLiteral("/nonexistent"));
    const QDateTime when = utc("2024-03-01T09:05:07.000Z");
    const QString id = store.newRunId(when);
    QVERIFY2(QRegularExpression(QStringLiteral("^20240301-090507-[0-9a-f]{4}$")).match(id).hasMatch(), qPrintable(id));
    // Ids sort by time as strings, which is what list() relies on.
    QVERIFY(store.newRunId(when.addSecs(1)) > id);
    QVERIFY(store.newRunId(when.addDays(-1)) < id);
}

void tst_RunStore::listIsNewestFirst() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    RunStore store(dir.path());
    QVERIFY(store.list().isEmpty());

    const QDateTime start = utc("2024-03-01T23:59:58.000Z");
    const QString oldest = store.newRunId(start);
    const QString middle = store.newRunId(start.addSecs(3)); // the next day
    const QString newest = store.newRunId(start.addDays(30));
    for (const QString& id : {middle, newest, oldest}) // saved out of order
        QVERIFY(store.save(minimalRecord(id)));
    QCOMPARE(idsOf(store.list()), (QStringList{newest, middle, oldest}));
}

void tst_RunStore::listIncludesRunMissingFromIndex() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    RunStore store(dir.path());
    QVERIFY(store.save(minimalRecord(QStringLiteral("20240101-000000-1111"))));

    // A crash after run.json was written but before the index was: only the run directory exists.
    const QString orphan = QStringLiteral("20240202-000000-2222");
    QVERIFY(QDir().mkpath(store.runDir(orphan)));
    QFile file(store.runDir(orphan) + QStringLiteral("/run.json"));
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(QJsonDocument(minimalRecord(orphan).toJson()).toJson());
    file.close();
    QVERIFY(!readAll(dir.path() + QStringLiteral("/runs/index.json")).contains(orphan.toUtf8()));
    // A directory without run.json is not a run.
    QVERIFY(QDir().mkpath(store.runDir(QStringLiteral("20240303-000000-3333"))));

    QCOMPARE(idsOf(store.list()), (QStringList{orphan, QStringLiteral("20240101-000000-1111")}));
    QCOMPARE(store.resolveId(QStringLiteral("latest")), orphan);
}

void tst_RunStore::indexContent() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    RunStore store(dir.path());
    const RunRecord older = fullRecord(QStringLiteral("20240301-120000-abcd"));
    RunRecord newer = minimalRecord(QStringLiteral("20240302-080000-0123"));
    newer.created = utc("2024-03-02T08:00:00.500Z");
    newer.worldSize = 8;
    newer.summary = QStringLiteral("running on 2 nodes");
    QVERIFY(store.save(older));
    QVERIFY(store.save(newer));

    QJsonParseError parseError;
    const QJsonDocument index =
        QJsonDocument::fromJson(readAll(dir.path() + QStringLiteral("/runs/index.json")), &parseError);
    QCOMPARE(parseError.error, QJsonParseError::NoError);
    const QJsonArray runs = index.object().value(QStringLiteral("runs")).toArray();
    QCOMPARE(runs.size(), 2);
    const QJsonObject first = runs.at(0).toObject();
    QCOMPARE(first, (QJsonObject{{"id", newer.id},
                                 {"name", newer.name},
                                 {"mode", "debug"},
                                 {"state", "running"},
                                 {"created", "2024-03-02T08:00:00.500Z"},
                                 {"world_size", 8},
                                 {"summary", "running on 2 nodes"}}));
    const QJsonObject second = runs.at(1).toObject();
    QCOMPARE(second.value(QStringLiteral("id")).toString(), older.id);
    QCOMPARE(second.value(QStringLiteral("state")).toString(), QStringLiteral("failed"));
    QCOMPARE(second.value(QStringLiteral("summary")).toString(), older.summary);
    // A listing reads the verdict from the index too; a run without one (the newer) has no key for it (above).
    QCOMPARE(second.value(QStringLiteral("verdict")).toString(), older.verdict);
    // The index is for listings: the job and the nodes stay in run.json only.
    QVERIFY(!second.contains(QStringLiteral("job")));
    QVERIFY(!second.contains(QStringLiteral("nodes")));

    // Saving a run again updates its entry in place.
    newer.state = QStringLiteral("finished");
    QVERIFY(store.save(newer));
    const QJsonArray updated = QJsonDocument::fromJson(readAll(dir.path() + QStringLiteral("/runs/index.json")))
                                   .object()
                                   .value(QStringLiteral("runs"))
                                   .toArray();
    QCOMPARE(updated.size(), 2);
    QCOMPARE(updated.at(0).toObject().value(QStringLiteral("state")).toString(), QStringLiteral("finished"));
}

void tst_RunStore::resolveId_data() {
    QTest::addColumn<QString>("query");
    QTest::addColumn<QString>("id");            // empty: refused
    QTest::addColumn<QStringList>("inMessage"); // what the error names when refused

    QTest::newRow("latest") << "latest"
                            << "20240302-090000-1234" << QStringList();
    QTest::newRow("full id") << "20240101-120000-aaab"
                             << "20240101-120000-aaab" << QStringList();
    QTest::newRow("unique prefix") << "20240302"
                                   << "20240302-090000-1234" << QStringList();
    QTest::newRow("prefix of a run in the middle") << "20240201"
                                                   << "20240201-000000-5678" << QStringList();
    QTest::newRow("full id that prefixes another") << "20240101-120000-aaaa"
                                                   << "20240101-120000-aaaa" << QStringList();
    QTest::newRow("ambiguous") << "20240101-120000-aa" << QString()
                               << QStringList{"matches several runs", "20240101-120000-aaaa", "20240101-120000-aaab",
                                              "20240101-120000-aaaa9"};
    QTest::newRow("unknown") << "2023" << QString() << QStringList{"no run '2023'"};
    QTest::newRow("longer than any id") << "20240302-090000-12345" << QString()
                                        << QStringList{"no run '20240302-090000-12345'"};
}

void tst_RunStore::resolveId() {
    QFETCH(QString, query);
    QFETCH(QString, id);
    QFETCH(QStringList, inMessage);

    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    RunStore store(dir.path());
    for (const char* runId : {"20240101-120000-aaaa", "20240101-120000-aaab", "20240101-120000-aaaa9",
                              "20240302-090000-1234", "20240201-000000-5678"})
        QVERIFY(store.save(minimalRecord(QString::fromLatin1(runId))));

    QString error;
    QCOMPARE(store.resolveId(query, &error), id);
    if (id.isEmpty()) {
        for (const QString& part : inMessage)
            QVERIFY2(error.contains(part), qPrintable(error));
    }
}

// Two runs started in the same second (a launch that failed at once, then the next): their ids differ only in a
// random tail, which says nothing of their order, so `latest` and the list go by the creation time.
void tst_RunStore::latestOfRunsStartedInOneSecondIsTheLastStarted() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    RunStore store(dir.path());
    const QDateTime second = QDateTime(QDate(2026, 11, 24), QTime(5, 16, 22), Qt::UTC);
    RunRecord first = minimalRecord(QStringLiteral("20261124-051622-f00d"));
    first.created = second.addMSecs(120);
    RunRecord then = minimalRecord(QStringLiteral("20261124-051622-1abc"));
    then.created = second.addMSecs(870);
    RunRecord before = minimalRecord(QStringLiteral("20261124-051621-ffff"));
    before.created = second.addMSecs(-500);
    for (const RunRecord& record : {then, before, first})
        QVERIFY(store.save(record));
    QCOMPARE(idsOf(store.list()), (QStringList{then.id, first.id, before.id}));
    QCOMPARE(store.resolveId(QStringLiteral("latest")), then.id);
    QCOMPARE(store.newRunId(second).left(16), QStringLiteral("20261124-051622-"));
}

void tst_RunStore::resolveLatestInEmptyStore() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    RunStore store(dir.path());
    QString error;
    QCOMPARE(store.resolveId(QStringLiteral("latest"), &error), QString());
    QVERIFY2(error.contains(dir.path()), qPrintable(error));
}

void tst_RunStore::streamPathAndSize() {
    SavedRun run;
    QVERIFY(run.saved);
    RunStore& store = run.store;
    const QString& id = run.id;

    QCOMPARE(rankscope::rankStreamSuffix(RankStream::Out), QStringLiteral("out"));
    QCOMPARE(rankscope::rankStreamSuffix(RankStream::Err), QStringLiteral("err"));
    QCOMPARE(rankscope::rankStreamSuffix(RankStream::Events), QStringLiteral("events"));
    QCOMPARE(store.streamPath(id, 3, RankStream::Err), store.runDir(id) + QStringLiteral("/rank3.err"));
    QCOMPARE(store.streamPath(id, 12, RankStream::Events), store.runDir(id) + QStringLiteral("/rank12.events"));
    QCOMPARE(store.streamPath(id, 0, RankStream::Out), store.runDir(id) + QStringLiteral("/rank0.out"));

    for (const RankStream stream : rankscope::kRankStreams)
        QCOMPARE(store.streamSize(id, 1, stream), 0);
    QVERIFY(store.appendStream(id, 1, RankStream::Out, 0, "hello\n"));
    QCOMPARE(store.streamSize(id, 1, RankStream::Out), 6);
    // Each rank and stream is its own file.
    QCOMPARE(store.streamSize(id, 1, RankStream::Err), 0);
    QCOMPARE(store.streamSize(id, 0, RankStream::Out), 0);
    QCOMPARE(readAll(store.streamPath(id, 1, RankStream::Out)), QByteArray("hello\n"));
}

void tst_RunStore::appendStream_data() {
    QTest::addColumn<QList<qint64>>("offsets");
    QTest::addColumn<QList<QByteArray>>("chunks");
    QTest::addColumn<QList<bool>>("accepted");
    QTest::addColumn<QByteArray>("content");

    QTest::newRow("one chunk") << QList<qint64>{0} << QList<QByteArray>{"abc"} << QList<bool>{true}
                               << QByteArray("abc");
    QTest::newRow("sequential") << QList<qint64>{0, 3, 6} << QList<QByteArray>{"abc", "def", "g\n"}
                                << QList<bool>{true, true, true} << QByteArray("abcdefg\n");
    QTest::newRow("overlap appends only the new tail")
        << QList<qint64>{0, 1} << QList<QByteArray>{"abc", "bcdef"} << QList<bool>{true, true} << QByteArray("abcdef");
    QTest::newRow("overlap from the start")
        << QList<qint64>{0, 0} << QList<QByteArray>{"abc", "abcdef"} << QList<bool>{true, true} << QByteArray("abcdef");
    QTest::newRow("exact duplicate ignored")
        << QList<qint64>{0, 0} << QList<QByteArray>{"abc", "abc"} << QList<bool>{true, true} << QByteArray("abc");
    QTest::newRow("earlier chunk redelivered")
        << QList<qint64>{0, 3, 3, 0} << QList<QByteArray>{"abc", "def", "def", "abc"}
        << QList<bool>{true, true, true, true} << QByteArray("abcdef");
    QTest::newRow("stale chunk inside what we have")
        << QList<qint64>{0, 2} << QList<QByteArray>{"abcdef", "cd"} << QList<bool>{true, true} << QByteArray("abcdef");
    QTest::newRow("empty chunk") << QList<qint64>{0, 3} << QList<QByteArray>{"abc", ""} << QList<bool>{true, true}
                                 << QByteArray("abc");
    QTest::newRow("binary bytes") << QList<qint64>{0, 2} << QList<QByteArray>{QByteArray("\0\n", 2), "\xff\r"}
                                  << QList<bool>{true, true} << QByteArray("\0\n\xff\r", 4);
    QTest::newRow("gap at the start") << QList<qint64>{2} << QList<QByteArray>{"cd"} << QList<bool>{false}
                                      << QByteArray();
    QTest::newRow("gap refused, file unchanged")
        << QList<qint64>{0, 4} << QList<QByteArray>{"abc", "efg"} << QList<bool>{true, false} << QByteArray("abc");
    QTest::newRow("gap then the missing bytes")
        << QList<qint64>{0, 5, 3, 5} << QList<QByteArray>{"abc", "fg", "de", "fg"}
        << QList<bool>{true, false, true, true} << QByteArray("abcdefg");
}

void tst_RunStore::appendStream() {
    QFETCH(QList<qint64>, offsets);
    QFETCH(QList<QByteArray>, chunks);
    QFETCH(QList<bool>, accepted);
    QFETCH(QByteArray, content);

    SavedRun run;
    QVERIFY(run.saved);
    RunStore& store = run.store;
    const QString& id = run.id;
    for (qsizetype i = 0; i < chunks.size(); ++i) {
        const QByteArray before = readAll(store.streamPath(id, 0, RankStream::Events));
        QString error;
        qint64 appended = -1;
        QCOMPARE(store.appendStream(id, 0, RankStream::Events, offsets[i], chunks[i], &error, &appended), accepted[i]);
        const QByteArray after = readAll(store.streamPath(id, 0, RankStream::Events));
        // `appended` is exactly the tail of the chunk that was new: what the engine parses.
        QCOMPARE(appended, after.size() - before.size());
        QCOMPARE(after.right(appended), chunks[i].right(appended));
        if (!accepted[i]) {
            QVERIFY(!error.isEmpty());
            QCOMPARE(after, before);
        }
    }
    QCOMPARE(readAll(store.streamPath(id, 0, RankStream::Events)), content);
    QCOMPARE(store.streamSize(id, 0, RankStream::Events), content.size());
}

void tst_RunStore::appendStreamGapIsRefused() {
    SavedRun run;
    QVERIFY(run.saved);
    RunStore& store = run.store;
    const QString& id = run.id;
    QVERIFY(store.appendStream(id, 3, RankStream::Err, 0, "12345"));

    QString error;
    QVERIFY(!store.appendStream(id, 3, RankStream::Err, 9, "xyz", &error));
    QVERIFY2(error.contains(QStringLiteral("rank 3")), qPrintable(error));
    QVERIFY2(error.contains(QStringLiteral("err")), qPrintable(error));
    QVERIFY2(error.contains(QStringLiteral("5")) && error.contains(QStringLiteral("9")), qPrintable(error));
    QCOMPARE(readAll(store.streamPath(id, 3, RankStream::Err)), QByteArray("12345"));
    QCOMPARE(store.streamSize(id, 3, RankStream::Err), 5);

    // A negative offset is nonsense, not an overlap: refused too.
    QVERIFY(!store.appendStream(id, 3, RankStream::Err, -2, "xx12345678", &error));
    QCOMPARE(readAll(store.streamPath(id, 3, RankStream::Err)), QByteArray("12345"));
}

// Two ranks' stderr and rank 0's events, appended as they arrived: read back cut at those arrivals and merged by
// time, not rank 0's whole file before rank 1's. A resent overlap adds no arrival; bytes past the last recorded
// arrival join it; a clock set back does not reorder a stream's own bytes; a run stored without arrivals reads
// stream by stream, untimed.
// A chunk that overlaps what is stored (resent after a reconnect, with bytes past it) adds its new tail: its arrival
// ends where the stream now ends, not where the chunk's new bytes would end had they started at its offset.
void tst_RunStore::anOverlappingChunksArrivalEndsWhereTheStreamDoes() {
    SavedRun run;
    QVERIFY(run.saved);
    QVERIFY(run.store.appendStream(run.id, 0, RankStream::Err, 0, "r0 a\n", nullptr, nullptr, 1000.0));
    qint64 appended = 0;
    QVERIFY(run.store.appendStream(run.id, 0, RankStream::Err, 3, "a\nr0 b\n", nullptr, &appended, 1001.0));
    QCOMPARE(appended, 5);
    QCOMPARE(readAll(run.store.streamPath(run.id, 0, RankStream::Err)), QByteArray("r0 a\nr0 b\n"));
    const QVector<QPair<qint64, double>> arrivals = run.store.arrivals(run.id, 0, RankStream::Err);
    QCOMPARE(arrivals.size(), 2);
    QCOMPARE(arrivals[1].first, run.store.streamSize(run.id, 0, RankStream::Err));
    QCOMPARE(arrivals[1].second, 1001.0);
}

void tst_RunStore::storedPiecesComeInTheOrderTheyArrived() {
    SavedRun run;
    QVERIFY(run.saved);
    RunStore& store = run.store;
    const QString& id = run.id;
    QVERIFY(store.appendStream(id, 0, RankStream::Err, 0, "r0 a\n", nullptr, nullptr, 1000.0));
    QVERIFY(store.appendStream(id, 1, RankStream::Err, 0, "r1 a\nr1 b", nullptr, nullptr, 1000.5));
    QVERIFY(store.appendStream(id, 0, RankStream::Events, 0, "{}\n", nullptr, nullptr, 1000.7));
    QVERIFY(store.appendStream(id, 0, RankStream::Err, 0, "r0 a\n", nullptr, nullptr, 1001.0)); // resent: nothing new
    QVERIFY(store.appendStream(id, 0, RankStream::Err, 5, "r0 b\n", nullptr, nullptr, 1001.2));
    QVERIFY(store.appendStream(id, 1, RankStream::Err, 9, "\n", nullptr, nullptr, 1001.1));
    QVERIFY(store.appendStream(id, 1, RankStream::Err, 10, "r1 c\n", nullptr, nullptr, 999.0)); // clock set back
    QVERIFY(store.appendStream(id, 0, RankStream::Err, 10, "r0 c\n")); // no time: a stop between the writes

    const QVector<QPair<qint64, double>> arrivals = store.arrivals(id, 0, RankStream::Err);
    QCOMPARE(arrivals.size(), 2);
    QCOMPARE(arrivals[1].first, 10);
    QCOMPARE(arrivals[1].second, 1001.2);

    const auto describe = [](const QVector<StoredPiece>& pieces) {
        QStringList text;
        for (const StoredPiece& p : pieces)
            text << QStringLiteral("%1 %2 %3-%4 @%5")
                        .arg(p.rank)
                        .arg(rankscope::rankStreamSuffix(p.stream))
                        .arg(p.from)
                        .arg(p.to)
                        .arg(p.arrivedAt, 0, 'f', 1);
        return text;
    };
    const QVector<StoredPiece> merged =
        rankscope::piecesInArrivalOrder(store, id, {0, 1}, {RankStream::Out, RankStream::Err, RankStream::Events});
    QCOMPARE(describe(merged),
             (QStringList{"0 err 0-5 @1000.0", "1 err 0-9 @1000.5", "0 events 0-3 @1000.7", "1 err 9-10 @1001.1",
                          "1 err 10-15 @1001.1", "0 err 5-10 @1001.2", "0 err 10-15 @1001.2"}));

    // Stored before arrivals were kept: each stream whole, in the order asked, untimed.
    QVERIFY(QFile::remove(store.streamPath(id, 0, RankStream::Err) + QStringLiteral(".arrivals")));
    QVERIFY(QFile::remove(store.streamPath(id, 1, RankStream::Err) + QStringLiteral(".arrivals")));
    QCOMPARE(describe(rankscope::piecesInArrivalOrder(store, id, {1, 0}, {RankStream::Err})),
             (QStringList{"1 err 0-15 @0.0", "0 err 0-15 @0.0"}));
}

// A crash between writing the arrivals index and the stream (or an index copied without its stream) leaves entries
// that end before the last one, or past the stream's end: they are ignored, and the stream's pieces still cover
// it once, each byte in one piece. A line ending past the last piece arrived with it; the last piece is the one at
// the stream's end.
void tst_RunStore::anArrivalIndexAheadOfItsStreamIsIgnored() {
    SavedRun run;
    QVERIFY(run.saved);
    RunStore& store = run.store;
    const QString& id = run.id;
    QVERIFY(store.appendStream(id, 0, RankStream::Err, 0, "r0 a\n", nullptr, nullptr, 1000.0));
    QVERIFY(store.appendStream(id, 0, RankStream::Err, 5, "r0 b\n", nullptr, nullptr, 1001.0));
    QVERIFY(store.appendStream(id, 0, RankStream::Err, 10, "r0 c", nullptr, nullptr, 1002.0));
    QFile index(store.streamPath(id, 0, RankStream::Err) + QStringLiteral(".arrivals"));
    QVERIFY(index.open(QIODevice::Append));
    index.write("7 1003000\n99 1004000\n");
    index.close();
    const QVector<StoredPiece> pieces = rankscope::storedPieces(store, id, 0, RankStream::Err);
    QCOMPARE(pieces.size(), 3);
    QCOMPARE(pieces[2].from, 10);
    QCOMPARE(pieces[2].to, 14);
    QCOMPARE(pieces[2].arrivedAt, 1002.0);
    QCOMPARE(rankscope::arrivalOfLineEnding(pieces, 20), 1002.0);
    QCOMPARE(rankscope::arrivalOfLineEnding(pieces, 5), 1000.0);
    QStringList visited;
    rankscope::visitStoredPieces(store, id, {0}, {RankStream::Err},
                                 [&](const StoredPiece& piece, QByteArrayView bytes, bool last) {
                                     visited << QStringLiteral("%1-%2 %3%4")
                                                    .arg(piece.from)
                                                    .arg(piece.to)
                                                    .arg(QString::fromUtf8(bytes).trimmed(), last ? " last" : "");
                                 });
    QCOMPARE(visited, (QStringList{"0-5 r0 a", "5-10 r0 b", "10-14 r0 c last"}));
}

// What a root cause shows of its rank: the last lines of stdout and stderr merged by arrival, blank ones left out,
// indentation kept, each cut; of a log longer than the 64 KiB read, only whole lines.
void tst_RunStore::lastStoredLinesAreWhatTheRankSaidLast() {
    SavedRun run;
    QVERIFY(run.saved);
    RunStore& store = run.store;
    const QString& id = run.id;
    QVERIFY(store.appendStream(id, 1, RankStream::Out, 0, "step 1\nstep 2\n", nullptr, nullptr, 1000.0));
    QVERIFY(store.appendStream(id, 1, RankStream::Err, 0, "Traceback (most recent call last):\r\n", nullptr, nullptr,
                               1001.0));
    QVERIFY(store.appendStream(id, 1, RankStream::Out, 14, "step 3\n\n   \n", nullptr, nullptr, 1002.0));
    QVERIFY(store.appendStream(id, 1, RankStream::Err, 36, "  File \"train.py\", line 3\nRuntimeError: boom", nullptr,
                               nullptr, 1003.0));
    QVERIFY(store.appendStream(id, 0, RankStream::Err, 0, "rank 0's own\n", nullptr, nullptr, 1004.0));

    const auto texts = [](const QVector<StoredLine>& lines) {
        QStringList all;
        for (const StoredLine& line : lines)
            all << rankStreamSuffix(line.stream) + QLatin1Char(' ') + line.text;
        return all;
    };
    QCOMPARE(texts(lastStoredLines(store, id, 1, 10)),
             (QStringList{"out step 1", "out step 2", "err Traceback (most recent call last):", "out step 3",
                          "err   File \"train.py\", line 3", "err RuntimeError: boom"}));
    QCOMPARE(texts(lastStoredLines(store, id, 1, 2)),
             (QStringList{"err   File \"train.py\", line 3", "err RuntimeError: boom"}));
    const QVector<StoredLine> cut = lastStoredLines(store, id, 1, 1, 5);
    QCOMPARE(cut.size(), 1);
    QCOMPARE(cut.front().text, QStringLiteral("Runti"));
    QCOMPARE(cut.front().arrivedAt, 1003.0);
    QVERIFY(lastStoredLines(store, id, 2, 10).isEmpty()); // no such rank
    QVERIFY(lastStoredLines(store, id, 1, 0).isEmpty());

    // A line longer than the part read is not shown cut at its front; the lines after it are.
    const QByteArray longLine = QByteArray(70 * 1024, 'x') + '\n';
    QVERIFY(store.appendStream(id, 2, RankStream::Out, 0, longLine + "after\n", nullptr, nullptr, 1005.0));
    QCOMPARE(texts(lastStoredLines(store, id, 2, 10)), QStringList{"out after"});
    // Many lines: the first shown is a whole one.
    QByteArray many;
    for (int i = 0; i < 10000; ++i)
        many += "line " + QByteArray::number(i) + '\n';
    QVERIFY(store.appendStream(id, 3, RankStream::Err, 0, many, nullptr, nullptr, 1006.0));
    const QStringList tail = texts(lastStoredLines(store, id, 3, 100000));
    QVERIFY(tail.size() > 1000 && tail.size() < 10000);
    QCOMPARE(tail.back(), QStringLiteral("err line 9999"));
    QCOMPARE(tail.front(), QStringLiteral("err line %1").arg(10000 - tail.size()));
}

// `rankscope-cli stop` marks the run, and another front end following it reads the mark: the first request's
// time is kept; a run never stopped has none.
void tst_RunStore::stopRequestIsSeenByEveryFollower() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString id = QStringLiteral("20240301-120000-abcd");
    RunStore stopper(dir.path());
    QVERIFY(stopper.save(minimalRecord(id)));
    RunStore follower(dir.path());
    QVERIFY(!follower.stopRequestedAt(id).isValid());
    QString error;
    QVERIFY2(stopper.markStopRequested(id, utc("2024-03-01T12:40:00.250Z"), &error), qPrintable(error));
    QCOMPARE(follower.stopRequestedAt(id), utc("2024-03-01T12:40:00.250Z"));
    QVERIFY(stopper.markStopRequested(id, utc("2024-03-01T12:41:00.000Z")));
    QCOMPARE(follower.stopRequestedAt(id), utc("2024-03-01T12:40:00.250Z"));
    QVERIFY(!follower.stopRequestedAt(QStringLiteral("20240301-120000-ffff")).isValid());
    // A run directory that cannot be written to: the error names the file.
    QVERIFY(!stopper.markStopRequested(QStringLiteral("no-such-run/x"), utc("2024-03-01T12:40:00.250Z"), &error));
    QVERIFY2(error.contains(QLatin1String("stop-requested")), qPrintable(error));
}

// `stacks RUN` on an ended run and the app show the newest capture saved with the run; a damaged file (a disk
// that filled up) is passed over for the one before it.
void tst_RunStore::latestStacksIsTheNewestThatReadsBack() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    RunStore store(dir.path());
    const QString id = QString::fromLatin1(kRunId);
    QString path = QStringLiteral("untouched");
    QVERIFY(!store.latestStacks(id, &path));
    QCOMPARE(path, QStringLiteral("untouched"));
    const QDateTime first = QDateTime::fromString(QStringLiteral("2026-11-24T01:44:27.698Z"), Qt::ISODateWithMs);
    for (const int minutes : {0, 5, 2}) { // saved out of order: the capture time decides, not the saving
        rankscope::StackTree tree;
        tree.capturedAt = static_cast<double>(first.addSecs(60 * minutes).toMSecsSinceEpoch()) / 1000.0;
        tree.addError(1, QStringLiteral("capture at +%1 min").arg(minutes));
        QVERIFY(!store.saveStacks(id, tree.toJson(), first.addSecs(60 * minutes)).isEmpty());
    }
    QFile damaged(store.runDir(id) + QStringLiteral("/stacks-20261124T020000000Z.json"));
    QVERIFY(damaged.open(QIODevice::WriteOnly));
    damaged.write("{\"root\":");
    damaged.close();
    const auto latest = store.latestStacks(id, &path);
    QVERIFY(latest);
    QCOMPARE(latest->errors().value(1), QStringLiteral("capture at +5 min"));
    QCOMPARE(path, store.runDir(id) + QStringLiteral("/stacks-20261124T014927698Z.json"));
}

void tst_RunStore::kernelLogsAreKeptPerNode() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    RunStore store(dir.path());
    const QString id = QString::fromLatin1(kRunId);
    QVERIFY(store.kernelLogs(id).isEmpty());
    rankscope::KernelLogCapture read;
    read.node = 2;
    read.host = QStringLiteral("gpu-c");
    read.source = QStringLiteral("dmesg");
    read.text = "[ 1.0] a\n[ 2.0] Out of memory: Killed process 7 (python)\n";
    rankscope::KernelLogCapture refused;
    refused.node = 0;
    refused.host = QStringLiteral("gpu-a");
    refused.problem = QStringLiteral("dmesg not permitted on gpu-a: set kernel.dmesg_restrict=0 or run as root");
    QString error;
    const QString path = store.saveKernelLog(id, read, &error);
    QCOMPARE(path, store.runDir(id) + QStringLiteral("/kernel-node2.json"));
    QVERIFY2(!store.saveKernelLog(id, refused, &error).isEmpty(), qPrintable(error));
    // A later read of a node replaces the earlier one; a damaged file is left out.
    read.text += "[ 3.0] later\n";
    QVERIFY(!store.saveKernelLog(id, read).isEmpty());
    QFile damaged(store.runDir(id) + QStringLiteral("/kernel-node5.json"));
    QVERIFY(damaged.open(QIODevice::WriteOnly));
    damaged.write("{\"node\":");
    damaged.close();

    const QVector<rankscope::KernelLogCapture> kept = store.kernelLogs(id);
    QCOMPARE(kept.size(), 2);
    QCOMPARE(kept[0].node, 0);
    QCOMPARE(kept[0].problem, refused.problem);
    QCOMPARE(kept[1].node, 2);
    QCOMPARE(kept[1].host, QStringLiteral("gpu-c"));
    QCOMPARE(kept[1].text, read.text);
    // The file reads as the log did: one string per line.
    const QJsonArray lines = QJsonDocument::fromJson(readAll(path)).object().value("lines").toArray();
    QCOMPARE(lines.size(), 3);
    QCOMPARE(lines[1].toString(), QStringLiteral("[ 2.0] Out of memory: Killed process 7 (python)"));
}

void tst_RunStore::reattachNeverDuplicatesOrLosesBytes() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString id = QString::fromLatin1(kRunId);
    QByteArray node; // the file on the node, as it grows
    for (int i = 0; i < 500; ++i)
        node += QByteArray::number(i) + " {\"step\":" + QByteArray::number(i * 7) + "}\n";

    {
        RunStore store(dir.path());
        QVERIFY(store.save(minimalRecord(id)));
        // First attach: chunks of uneven sizes, cut mid-line, until the connection drops.
        qint64 offset = 0;
        for (const qint64 size : {1, 17, 300, 4, 1000}) {
            QVERIFY(store.appendStream(id, 1, RankStream::Events, offset, node.mid(offset, size)));
            offset += size;
        }
        // The last chunk was in flight when the link dropped and arrives again after reattach.
        QVERIFY(store.appendStream(id, 1, RankStream::Events, offset - 1000, node.mid(offset - 1000, 1000)));
    }

    // Reattach with a new store: it reads from the local size, but the node resends a little earlier too.
    RunStore store(dir.path());
    qint64 offset = store.streamSize(id, 1, RankStream::Events);
    QCOMPARE(offset, 1322);
    QVERIFY(store.appendStream(id, 1, RankStream::Events, offset - 50, node.mid(offset - 50, 200)));
    offset += 150;
    while (offset < node.size()) {
        QVERIFY(store.appendStream(id, 1, RankStream::Events, offset, node.mid(offset, 777)));
        offset = store.streamSize(id, 1, RankStream::Events);
    }
    QCOMPARE(readAll(store.streamPath(id, 1, RankStream::Events)), node);
}

void tst_RunStore::defaultRootHonoursRankscopeHome() {
    const EnvironmentGuard guard("RANKSCOPE_HOME");
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString home = dir.filePath(QStringLiteral("rankscope home"));

    qputenv("RANKSCOPE_HOME", home.toLocal8Bit());
    QCOMPARE(RunStore::defaultRoot(), home);
    RunStore store;
    QCOMPARE(store.root(), home);
    QVERIFY(store.save(minimalRecord(QString::fromLatin1(kRunId))));
    QVERIFY(QFile::exists(home + QStringLiteral("/runs/") + QString::fromLatin1(kRunId) + QStringLiteral("/run.json")));
    QVERIFY(QFile::exists(home + QStringLiteral("/runs/index.json")));

    // Unset or empty: the user's data directory.
    const QString fallback =
        QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + QStringLiteral("/rankscope");
    qputenv("RANKSCOPE_HOME", QByteArray());
    QCOMPARE(RunStore::defaultRoot(), fallback);
    qunsetenv("RANKSCOPE_HOME");
    QCOMPARE(RunStore::defaultRoot(), fallback);
    QCOMPARE(RunStore().root(), fallback);
}

QTEST_GUILESS_MAIN(tst_RunStore)
#include "tst_runstore.moc"
