// SPDX-License-Identifier: MIT
#include "core/runstore.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QSaveFile>
#include <QStandardPaths>

#include <algorithm>

namespace rankscope {

namespace {

constexpr qsizetype kIdSecondLength = 15; // a run id starts with its second: "yyyyMMdd-HHmmss"

bool writeJson(const QString& path, const QJsonObject& object, QString* error) {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(QJsonDocument(object).toJson()) < 0 || !file.commit()) {
        if (error)
            *error = QStringLiteral("cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    return true;
}

// Appends the bytes of a node's file that start at `offset`: bytes the local copy already has are skipped, and
// a gap (offset beyond the local size) is refused so that it can never be papered over.
bool appendAt(const QString& path, const QString& label, qint64 offset, QByteArrayView bytes, QString* error,
              qint64* appended) {
    QFile file(path);
    if (!file.open(QIODevice::ReadWrite | QIODevice::Append)) {
        if (error)
            *error = QStringLiteral("cannot write %1: %2").arg(file.fileName(), file.errorString());
        return false;
    }
    if (appended)
        *appended = 0;
    const qint64 have = file.size();
    if (offset < 0 || offset > have) {
        if (error)
            *error =
                QStringLiteral("%1: gap, have %2 bytes but got data from offset %3").arg(label).arg(have).arg(offset);
        return false;
    }
    const qint64 skip = have - offset;
    if (skip >= bytes.size())
        return true;
    const QByteArrayView fresh = bytes.sliced(skip);
    if (file.write(fresh.data(), fresh.size()) != fresh.size() || !file.flush()) {
        if (error)
            *error = QStringLiteral("cannot write %1: %2").arg(file.fileName(), file.errorString());
        return false;
    }
    if (appended)
        *appended = fresh.size();
    return true;
}

} // namespace

QString rankStreamSuffix(RankStream stream) {
    switch (stream) {
    case RankStream::Out:
        return QStringLiteral("out");
    case RankStream::Err:
        return QStringLiteral("err");
    case RankStream::Events:
        return QStringLiteral("events");
    }
    return {};
}

QString signalName(int signal) {
    static const char* const names[] = {"",        "SIGHUP",  "SIGINT",  "SIGQUIT", "SIGILL",  "SIGTRAP",
                                        "SIGABRT", "SIGBUS",  "SIGFPE",  "SIGKILL", "SIGUSR1", "SIGSEGV",
                                        "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM"};
    return signal > 0 && signal < 16 ? QString::fromLatin1(names[signal]) : QStringLiteral("signal %1").arg(signal);
}

QString describeExitStatus(int status) {
    if (status == kLostExitStatus)
        return QStringLiteral("lost: its node's supervisor stopped answering before the rank ended (node down?)");
    const int signal = RankExit{status, {}}.signal();
    return signal != 0 ? QStringLiteral("killed by %1").arg(signalName(signal))
                       : QStringLiteral("exit status %1").arg(status);
}

QString shortExitStatus(int status) {
    if (status == kLostExitStatus)
        return QStringLiteral("lost");
    const int signal = RankExit{status, {}}.signal();
    return signal != 0 ? signalName(signal) : QStringLiteral("exit %1").arg(status);
}

QJsonObject RunRecord::toJson() const {
    QJsonArray nodeArray;
    for (const RunNodeRecord& node : nodes) {
        QJsonArray rankArray;
        for (const int rank : node.ranks)
            rankArray.append(rank);
        nodeArray.append(QJsonObject{{"name", node.name},
                                     {"host", node.host},
                                     {"local", node.local},
                                     {"run_dir", node.runDir},
                                     {"ranks", rankArray}});
    }
    QJsonObject exitObject;
    for (auto it = exits.begin(); it != exits.end(); ++it) {
        QJsonObject exit{{"status", it->status}, {"seen_at", it->seenAt.toString(Qt::ISODateWithMs)}};
        if (it->stopped)
            exit.insert("stopped", true);
        exitObject.insert(QString::number(it.key()), exit);
    }
    QJsonObject object{{"id", id},
                       {"name", name},
                       {"mode", mode},
                       {"state", state},
                       {"created", created.toString(Qt::ISODateWithMs)},
                       {"ended", ended.isValid() ? ended.toString(Qt::ISODateWithMs) : QString()},
                       {"job", job},
                       {"world_size", worldSize},
                       {"nodes", nodeArray},
                       {"exits", exitObject},
                       {"first_failed_rank", firstFailedRank},
                       {"summary", summary}};
    if (!failedAlike.isEmpty()) {
        QJsonArray alike;
        for (const int rank : failedAlike)
            alike.append(rank);
        object.insert("failed_alike", alike);
    }
    if (!verdict.isEmpty())
        object.insert("verdict", verdict);
    if (debugRank >= 0)
        object.insert("debug_rank", debugRank);
    return object;
}

std::optional<RunRecord> RunRecord::fromJson(const QJsonObject& object) {
    RunRecord record;
    record.id = object.value("id").toString();
    if (record.id.isEmpty())
        return std::nullopt;
    record.name = object.value("name").toString();
    record.mode = object.value("mode").toString();
    record.state = object.value("state").toString();
    record.created = QDateTime::fromString(object.value("created").toString(), Qt::ISODateWithMs);
    record.ended = QDateTime::fromString(object.value("ended").toString(), Qt::ISODateWithMs);
    record.job = object.value("job").toObject();
    record.worldSize = object.value("world_size").toInt();
    for (const QJsonValue value : object.value("nodes").toArray()) {
        const QJsonObject n = value.toObject();
        RunNodeRecord node{n.value("name").toString(),
                           n.value("host").toString(),
                           n.value("local").toBool(),
                           n.value("run_dir").toString(),
                           {}};
        for (const QJsonValue rank : n.value("ranks").toArray())
            node.ranks.append(rank.toInt());
        record.nodes.append(node);
    }
    const QJsonObject exits = object.value("exits").toObject();
    for (auto it = exits.begin(); it != exits.end(); ++it) {
        const QJsonObject e = it.value().toObject();
        record.exits.insert(it.key().toInt(),
                            RankExit{e.value("status").toInt(),
                                     QDateTime::fromString(e.value("seen_at").toString(), Qt::ISODateWithMs),
                                     e.value("stopped").toBool()});
    }
    record.firstFailedRank = object.value("first_failed_rank").toInt(-1);
    for (const QJsonValue rank : object.value("failed_alike").toArray())
        record.failedAlike.append(rank.toInt());
    record.summary = object.value("summary").toString();
    record.verdict = object.value("verdict").toString();
    record.debugRank = object.value("debug_rank").toInt(-1);
    return record;
}

int RunRecord::nodeOfRank(int rank) const {
    for (int i = 0; i < nodes.size(); ++i)
        if (nodes[i].ranks.contains(rank))
            return i;
    return -1;
}

QHash<int, QString> RunRecord::rankHosts() const {
    QHash<int, QString> hosts;
    for (const RunNodeRecord& node : nodes)
        for (const int rank : node.ranks)
            hosts.insert(rank, node.host);
    return hosts;
}

RunStore::RunStore(QString root) : m_root(std::move(root)) {}

QString RunStore::defaultRoot() {
    const QString fromEnvironment = qEnvironmentVariable("RANKSCOPE_HOME");
    if (!fromEnvironment.isEmpty())
        return fromEnvironment;
    return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + QStringLiteral("/rankscope");
}

QString RunStore::newRunId(const QDateTime& now) const {
    // Sortable by time; the random tail keeps two runs started in the same second apart.
    return now.toString(QStringLiteral("yyyyMMdd-HHmmss-")) +
           QString::number(QRandomGenerator::global()->bounded(0x1000, 0xffff), 16);
}

QString RunStore::runDir(const QString& id) const {
    return m_root + QStringLiteral("/runs/") + id;
}

QString RunStore::saveStacks(const QString& id, const QJsonObject& stacks, const QDateTime& capturedAt,
                             QString* error) {
    const QString path = runDir(id) + QStringLiteral("/stacks-%1.json")
                                          .arg(capturedAt.toUTC().toString(QStringLiteral("yyyyMMdd'T'HHmmsszzz'Z'")));
    if (!QDir().mkpath(runDir(id))) {
        if (error)
            *error = QStringLiteral("cannot create %1").arg(runDir(id));
        return {};
    }
    return writeJson(path, stacks, error) ? path : QString();
}

bool RunStore::markStopRequested(const QString& id, const QDateTime& at, QString* error) {
    if (stopRequestedAt(id).isValid())
        return true;
    QSaveFile file(runDir(id) + QStringLiteral("/stop-requested"));
    if (!file.open(QIODevice::WriteOnly) || file.write(at.toUTC().toString(Qt::ISODateWithMs).toUtf8() + '\n') < 0 ||
        !file.commit()) {
        if (error)
            *error = QStringLiteral("cannot write %1: %2").arg(file.fileName(), file.errorString());
        return false;
    }
    return true;
}

QDateTime RunStore::stopRequestedAt(const QString& id) const {
    QFile file(runDir(id) + QStringLiteral("/stop-requested"));
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return QDateTime::fromString(QString::fromUtf8(file.readAll().trimmed()), Qt::ISODateWithMs);
}

QString RunStore::saveKernelLog(const QString& id, const KernelLogCapture& capture, QString* error) {
    if (!QDir().mkpath(runDir(id))) {
        if (error)
            *error = QStringLiteral("cannot create %1").arg(runDir(id));
        return {};
    }
    const QString path = runDir(id) + QStringLiteral("/kernel-node%1.json").arg(capture.node);
    return writeJson(path, capture.toJson(), error) ? path : QString();
}

std::optional<StackTree> RunStore::latestStacks(const QString& id, QString* path) const {
    // The names carry the UTC capture time, yyyyMMddTHHmmsszzzZ: the last by name is the newest.
    const QDir dir(runDir(id));
    for (const QString& name :
         dir.entryList({QStringLiteral("stacks-*.json")}, QDir::Files, QDir::Name | QDir::Reversed)) {
        QFile file(dir.filePath(name));
        if (!file.open(QIODevice::ReadOnly))
            continue;
        if (auto tree = StackTree::fromJson(QJsonDocument::fromJson(file.readAll()).object())) {
            if (path)
                *path = file.fileName();
            return tree;
        }
    }
    return std::nullopt;
}

QVector<KernelLogCapture> RunStore::kernelLogs(const QString& id) const {
    QVector<KernelLogCapture> captures;
    const QDir dir(runDir(id));
    for (const QString& name : dir.entryList({QStringLiteral("kernel-node*.json")}, QDir::Files)) {
        QFile file(dir.filePath(name));
        if (!file.open(QIODevice::ReadOnly))
            continue;
        if (const auto capture = KernelLogCapture::fromJson(QJsonDocument::fromJson(file.readAll()).object()))
            captures.append(*capture);
    }
    std::sort(captures.begin(), captures.end(),
              [](const KernelLogCapture& a, const KernelLogCapture& b) { return a.node < b.node; });
    return captures;
}

bool RunStore::save(const RunRecord& record, QString* error) {
    // A run whose end was seen keeps it: a front end that followed it without seeing the end (killed, detached,
    // cut off) holds an older picture, and saving it last must not make the run running again.
    if (!record.endSeen()) {
        if (const auto stored = load(record.id); stored && stored->endSeen())
            return true;
    }
    if (!QDir().mkpath(runDir(record.id))) {
        if (error)
            *error = QStringLiteral("cannot create %1").arg(runDir(record.id));
        return false;
    }
    if (!writeJson(runDir(record.id) + QStringLiteral("/run.json"), record.toJson(), error))
        return false;
    saveIndex();
    return true;
}

std::optional<RunRecord> RunStore::load(const QString& id, QString* error) const {
    QFile file(runDir(id) + QStringLiteral("/run.json"));
    if (!file.open(QIODevice::ReadOnly)) {
        if (error)
            *error = QStringLiteral("run %1: no run.json in %2").arg(id, runDir(id));
        return std::nullopt;
    }
    auto record = RunRecord::fromJson(QJsonDocument::fromJson(file.readAll()).object());
    if (!record && error)
        *error = QStringLiteral("run %1: run.json is damaged").arg(id);
    return record;
}

QVector<RunRecord> RunStore::list() const {
    QVector<RunRecord> runs;
    const QStringList ids = QDir(m_root + QStringLiteral("/runs")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    for (const QString& id : ids)
        if (auto record = load(id))
            runs.append(*record);
    // Newest first: by the second in the id, then by the creation time's milliseconds, as two runs started in the
    // same second have ids whose random tails say nothing of their order.
    std::sort(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) {
        const QStringView secondA = QStringView(a.id).left(kIdSecondLength);
        const QStringView secondB = QStringView(b.id).left(kIdSecondLength);
        if (secondA != secondB)
            return secondA > secondB;
        if (a.created != b.created)
            return a.created > b.created;
        return a.id > b.id;
    });
    return runs;
}

void RunStore::saveIndex() const {
    QJsonArray entries;
    for (const RunRecord& run : list()) {
        QJsonObject entry{{"id", run.id},
                          {"name", run.name},
                          {"mode", run.mode},
                          {"state", run.state},
                          {"created", run.created.toString(Qt::ISODateWithMs)},
                          {"world_size", run.worldSize},
                          {"summary", run.summary}};
        if (!run.verdict.isEmpty())
            entry.insert("verdict", run.verdict);
        entries.append(entry);
    }
    writeJson(m_root + QStringLiteral("/runs/index.json"), QJsonObject{{"runs", entries}}, nullptr);
}

QString RunStore::resolveId(const QString& idOrPrefix, QString* error) const {
    const QVector<RunRecord> runs = list();
    if (idOrPrefix == QLatin1String("latest")) {
        if (runs.isEmpty() && error)
            *error = QStringLiteral("no runs in %1").arg(m_root);
        return runs.isEmpty() ? QString() : runs.front().id;
    }
    QStringList matches;
    for (const RunRecord& run : runs) {
        if (run.id == idOrPrefix)
            return run.id;
        if (run.id.startsWith(idOrPrefix))
            matches << run.id;
    }
    if (matches.size() == 1)
        return matches.front();
    if (error)
        *error = matches.isEmpty()
                     ? QStringLiteral("no run '%1' (see rankscope-cli runs)").arg(idOrPrefix)
                     : QStringLiteral("'%1' matches several runs: %2").arg(idOrPrefix, matches.join(", "));
    return {};
}

QString RunStore::streamPath(const QString& id, int rank, RankStream stream) const {
    return runDir(id) + QStringLiteral("/rank%1.%2").arg(rank).arg(rankStreamSuffix(stream));
}

qint64 RunStore::streamSize(const QString& id, int rank, RankStream stream) const {
    return QFileInfo(streamPath(id, rank, stream)).size();
}

bool RunStore::appendStream(const QString& id, int rank, RankStream stream, qint64 offset, QByteArrayView bytes,
                            QString* error, qint64* appended, double arrivedAt) {
    qint64 added = 0;
    const QString path = streamPath(id, rank, stream);
    const bool ok = appendAt(path, QStringLiteral("rank %1 %2").arg(rank).arg(rankStreamSuffix(stream)), offset, bytes,
                             error, &added);
    if (appended)
        *appended = added;
    if (!ok)
        return false;
    if (added > 0 && arrivedAt > 0.0) {
        // "END MILLISECONDS\n": the stream's size after this append, and when it came.
        QFile arrivals(path + QStringLiteral(".arrivals"));
        if (arrivals.open(QIODevice::WriteOnly | QIODevice::Append))
            arrivals.write(QByteArray::number(offset + bytes.size()) + ' ' +
                           QByteArray::number(qRound64(arrivedAt * 1000.0)) + '\n');
    }
    return true;
}

QVector<QPair<qint64, double>> RunStore::arrivals(const QString& id, int rank, RankStream stream) const {
    QVector<QPair<qint64, double>> found;
    QFile file(streamPath(id, rank, stream) + QStringLiteral(".arrivals"));
    if (!file.open(QIODevice::ReadOnly))
        return found;
    for (const QByteArray& line : file.readAll().split('\n')) {
        const qsizetype space = line.indexOf(' ');
        bool endOk = false;
        bool timeOk = false;
        const qint64 end = line.left(space).toLongLong(&endOk);
        const qint64 ms = line.mid(space + 1).toLongLong(&timeOk);
        if (space > 0 && endOk && timeOk) // a line cut by a crash, or anything else, is left out
            found.append({end, static_cast<double>(ms) / 1000.0});
    }
    return found;
}

QString RunStore::nodeStreamPath(const QString& id, int node, const QString& name) const {
    return runDir(id) + QStringLiteral("/node%1.%2").arg(node).arg(name);
}

qint64 RunStore::nodeStreamSize(const QString& id, int node, const QString& name) const {
    return QFileInfo(nodeStreamPath(id, node, name)).size();
}

bool RunStore::appendNodeStream(const QString& id, int node, const QString& name, qint64 offset, QByteArrayView bytes,
                                QString* error, qint64* appended) {
    return appendAt(nodeStreamPath(id, node, name), QStringLiteral("node %1 %2").arg(node).arg(name), offset, bytes,
                    error, appended);
}

} // namespace rankscope
