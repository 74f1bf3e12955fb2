// SPDX-License-Identifier: MIT
#include "core/jobspec.h"

#include "core/hostfile.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>
#include <QJsonValue>
#include <QLocale>
#include <QSet>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace rankscope {

namespace {

using Issues = QVector<JobIssue>;

const QStringList kTopKeys = {"version", "name",     "nodes",    "hostfile",    "node_defaults", "trainer",
                              "env",     "launcher", "torchrun", "mode",       "master_port",   "debug",
                              "deploy"};
const QStringList kNodeKeys = {"host", "name", "port", "user", "identity_file", "address", "work_dir", "gpus", "procs"};
const QStringList kTrainerKeys = {"dataset", "model",     "data_dir", "epochs", "max_steps", "batch_size",
                                  "lr",      "optimizer", "backend",  "device", "extra_args"};
const QStringList kDebugKeys = {"node", "procs", "max_steps", "verbose"};

const QStringList kDatasets = {"synthetic", "fashion-mnist", "mnist", "cifar10"};
const QStringList kModels = {"resnet18", "cnn", "mlp"};
const QStringList kOptimizers = {"adam", "sgd"};
const QStringList kBackends = {"gloo", "nccl"};
const QStringList kDevices = {"cpu", "cuda"};
const QStringList kModes = {"debug", "submit"};
const QStringList kLaunchers = {"direct", "torchrun"};
const QStringList kDeployStrategies = {"auto", "build", "binary"};

// The engine sets these per rank; a second value from the job file would contradict it.
const QStringList kOwnedFlags = {"--rank", "--world-size", "--init-method", "--events"};
const QStringList kOwnedEnv = {"RANK",       "LOCAL_RANK",  "WORLD_SIZE",  "LOCAL_WORLD_SIZE",
                               "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES"};

bool isCommentKey(const QString& key) {
    return key.startsWith(QLatin1String("//"));
}

QString childPath(const QString& parent, const QString& key) {
    return parent.isEmpty() ? key : parent + QLatin1Char('.') + key;
}

QString indexPath(const QString& parent, qsizetype index) {
    return QStringLiteral("%1[%2]").arg(parent).arg(index);
}

QString oneOfMessage(const QStringList& allowed) {
    return QStringLiteral("must be one of ") + allowed.join(QLatin1String(", "));
}

// Levenshtein distance, for "did you mean" on a misspelt key.
int editDistance(QStringView a, QStringView b) {
    QVector<int> previous(b.size() + 1);
    QVector<int> current(b.size() + 1);
    for (qsizetype j = 0; j <= b.size(); ++j)
        previous[j] = static_cast<int>(j);
    for (qsizetype i = 1; i <= a.size(); ++i) {
        current[0] = static_cast<int>(i);
        for (qsizetype j = 1; j <= b.size(); ++j) {
            const int substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
        }
        std::swap(previous, current);
    }
    return previous[b.size()];
}

QString unknownFieldMessage(const QString& key, const QStringList& known) {
    QString best;
    int bestDistance = 3; // further than two edits is not a typo
    for (const QString& candidate : known) {
        const int distance = editDistance(key, candidate);
        if (distance < bestDistance && distance < key.size()) {
            best = candidate;
            bestDistance = distance;
        }
    }
    if (best.isEmpty())
        return QStringLiteral("unknown field");
    return QStringLiteral("unknown field (did you mean \"%1\"?)").arg(best);
}

void rejectUnknownKeys(const QJsonObject& object, const QString& path, const QStringList& known, Issues& issues) {
    for (auto it = object.begin(); it != object.end(); ++it) {
        if (!isCommentKey(it.key()) && !known.contains(it.key()))
            issues.append({childPath(path, it.key()), unknownFieldMessage(it.key(), known)});
    }
}

struct IntRange {
    int min = 0;
    int max = std::numeric_limits<int>::max();
    bool showBoth = false; // "must be 1-65535" rather than ">= 1" or "<= 4096"
};

enum class Text {
    Any,
    NonEmpty,
    Word, // non-empty, no whitespace, no leading '-' (ssh would read it as an option)
};

QString textProblem(const QString& value, Text text) {
    if (text == Text::Any)
        return {};
    if (value.isEmpty())
        return QStringLiteral("must not be empty");
    if (text == Text::Word) {
        if (std::any_of(value.cbegin(), value.cend(), [](QChar c) { return c.isSpace(); }))
            return QStringLiteral("must not contain whitespace");
        if (value.startsWith(QLatin1Char('-')))
            return QStringLiteral("must not start with '-'");
    }
    return {};
}

// Reads typed fields of one JSON object; each bad field is reported at its path and remembered as bad.
class FieldReader final {
public:
    FieldReader(const QJsonObject& object, QString path, Issues& issues)
        : m_object(object), m_path(std::move(path)), m_issues(issues) {}

    [[nodiscard]] QString pathOf(const QString& key) const { return childPath(m_path, key); }
    [[nodiscard]] bool isBad(const QString& key) const { return m_bad.contains(key); }

    void report(const QString& key, const QString& message) {
        m_issues.append({pathOf(key), message});
        m_bad.insert(key);
    }

    std::optional<QString> string(const QString& key, Text text = Text::Any) {
        const QJsonValue value = m_object.value(key);
        if (value.isUndefined()) // absent: the default, silently
            return std::nullopt;
        if (!value.isString())
            return fail<QString>(key, QStringLiteral("must be a string"));
        if (const QString problem = textProblem(value.toString(), text); !problem.isEmpty())
            return fail<QString>(key, problem);
        return value.toString();
    }

    std::optional<QString> oneOf(const QString& key, const QStringList& allowed) {
        const QJsonValue value = m_object.value(key);
        if (value.isUndefined()) // absent: the default, silently
            return std::nullopt;
        if (!value.isString() || !allowed.contains(value.toString()))
            return fail<QString>(key, oneOfMessage(allowed));
        return value.toString();
    }

    std::optional<int> integer(const QString& key, IntRange range) {
        const QJsonValue value = m_object.value(key);
        if (value.isUndefined()) // absent: the default, silently
            return std::nullopt;
        const double number = value.toDouble(0.5);
        if (!value.isDouble() || std::trunc(number) != number)
            return fail<int>(key, QStringLiteral("must be an integer"));
        if (number < range.min || number > range.max) {
            if (range.showBoth)
                return fail<int>(key, QStringLiteral("must be %1-%2").arg(range.min).arg(range.max));
            if (number < range.min)
                return fail<int>(key, QStringLiteral("must be >= %1").arg(range.min));
            return fail<int>(key, QStringLiteral("must be <= %1").arg(range.max));
        }
        return static_cast<int>(number);
    }

    std::optional<double> positiveNumber(const QString& key) {
        const QJsonValue value = m_object.value(key);
        if (value.isUndefined()) // absent: the default, silently
            return std::nullopt;
        if (!value.isDouble())
            return fail<double>(key, QStringLiteral("must be a number"));
        if (!(value.toDouble() > 0.0) || !std::isfinite(value.toDouble()))
            return fail<double>(key, QStringLiteral("must be > 0"));
        return value.toDouble();
    }

    std::optional<bool> boolean(const QString& key) {
        const QJsonValue value = m_object.value(key);
        if (value.isUndefined()) // absent: the default, silently
            return std::nullopt;
        if (!value.isBool())
            return fail<bool>(key, QStringLiteral("must be a boolean"));
        return value.toBool();
    }

private:
    template <typename T> std::optional<T> fail(const QString& key, const QString& message) {
        report(key, message);
        return std::nullopt;
    }

    const QJsonObject& m_object;
    QString m_path;
    Issues& m_issues;
    QSet<QString> m_bad;
};

template <typename T> void assign(T& target, const std::optional<T>& value) {
    if (value)
        target = *value;
}

// The member `key` of `parent` as an object; reports anything else. Absent: nothing.
std::optional<QJsonObject> objectMember(const QJsonObject& parent, const QString& key, Issues& issues) {
    const QJsonValue value = parent.value(key);
    if (value.isUndefined())
        return std::nullopt;
    if (!value.isObject()) {
        issues.append({key, QStringLiteral("must be an object")});
        return std::nullopt;
    }
    return value.toObject();
}

// ---- syntax errors ----

// Qt reports a byte offset just past where it gave up; people need a line and a column.
QString syntaxErrorMessage(QByteArrayView json, const QJsonParseError& error) {
    const qsizetype at = std::clamp<qsizetype>(error.offset - 1, 0, json.size());
    int line = 1;
    int column = 1;
    for (qsizetype i = 0; i < at; ++i) {
        const auto byte = static_cast<unsigned char>(json[i]);
        if (byte == '\n') {
            ++line;
            column = 1;
        } else if ((byte & 0xC0) != 0x80) { // count characters, not UTF-8 continuation bytes
            ++column;
        }
    }
    return QStringLiteral("JSON syntax error at %1:%2: %3").arg(line).arg(column).arg(error.errorString());
}

// ---- env order ----

// QJsonObject keeps its keys sorted, so the file order of "env" is recovered from the text that Qt has
// already accepted: only string boundaries and nesting depth are tracked here, and Qt decodes each key.
qsizetype endOfString(QByteArrayView json, qsizetype quote) {
    for (qsizetype i = quote + 1; i < json.size(); ++i) {
        if (json[i] == '\\')
            ++i;
        else if (json[i] == '"')
            return i + 1;
    }
    return json.size();
}

qsizetype skipSpace(QByteArrayView json, qsizetype i) {
    while (i < json.size() && (json[i] == ' ' || json[i] == '\t' || json[i] == '\n' || json[i] == '\r'))
        ++i;
    return i;
}

QString decodeJsonString(QByteArrayView quoted) {
    const QByteArray wrapped = "[" + quoted.toByteArray() + "]";
    return QJsonDocument::fromJson(wrapped).array().at(0).toString();
}

QStringList envKeysInFileOrder(QByteArrayView json) {
    QStringList keys;
    int depth = 0;
    bool envNext = false; // the value after the top-level key "env" comes next
    bool inEnv = false;
    for (qsizetype i = 0; i < json.size();) {
        const char c = json[i];
        if (c == '"') {
            const qsizetype end = endOfString(json, i);
            const qsizetype after = skipSpace(json, end);
            const bool isKey = after < json.size() && json[after] == ':';
            if (isKey && depth == 1) {
                envNext = decodeJsonString(json.sliced(i, end - i)) == QLatin1String("env");
            } else if (isKey && depth == 2 && inEnv) {
                if (const QString key = decodeJsonString(json.sliced(i, end - i)); !keys.contains(key))
                    keys.append(key);
            }
            i = end;
            continue;
        }
        if (c == '{' || c == '[') {
            ++depth;
            if (depth == 2 && envNext && c == '{') {
                inEnv = true;
                keys.clear(); // of duplicate "env" members Qt keeps the last
            }
            envNext = false;
        } else if (c == '}' || c == ']') {
            --depth;
            if (depth < 2)
                inEnv = false;
        }
        ++i;
    }
    return keys;
}

// ---- top level, trainer, debug, env ----

void readHeader(const QJsonObject& root, JobSpec& job, Issues& issues) {
    FieldReader r(root, {}, issues);
    if (const QJsonValue version = root.value("version"); !version.isUndefined() && version != kJobFileVersion)
        r.report("version", QStringLiteral("must be %1").arg(kJobFileVersion));
    assign(job.name, r.string("name"));
    // The name lists are in enum order.
    if (const auto launcher = r.oneOf("launcher", kLaunchers))
        job.launcher = static_cast<Launcher>(kLaunchers.indexOf(*launcher));
    assign(job.torchrun, r.string("torchrun", Text::Word));
    if (const auto mode = r.oneOf("mode", kModes))
        job.mode = static_cast<RunMode>(kModes.indexOf(*mode));
    if (const auto deploy = r.oneOf("deploy", kDeployStrategies))
        job.deploy = static_cast<DeployStrategy>(kDeployStrategies.indexOf(*deploy));
    assign(job.masterPort, r.integer("master_port", {1, 65535, true}));
}

// The flag an argument sets, for both "--flag value" and "--flag=value".
QString flagOf(const QString& argument) {
    const qsizetype equals = argument.indexOf(QLatin1Char('='));
    return equals < 0 ? argument : argument.left(equals);
}

void readExtraArgs(const QJsonObject& trainer, TrainerSpec& spec, Issues& issues) {
    const QJsonValue value = trainer.value("extra_args");
    if (value.isUndefined())
        return;
    if (!value.isArray()) {
        issues.append({"trainer.extra_args", QStringLiteral("must be an array of strings")});
        return;
    }
    const QJsonArray array = value.toArray();
    for (qsizetype i = 0; i < array.size(); ++i) {
        const QString path = indexPath("trainer.extra_args", i);
        if (!array[i].isString()) {
            issues.append({path, QStringLiteral("must be a string")});
            continue;
        }
        const QString argument = array[i].toString();
        if (kOwnedFlags.contains(flagOf(argument))) {
            issues.append({path, QStringLiteral("%1 is set by RankScope for each rank").arg(flagOf(argument))});
            continue;
        }
        spec.extraArgs.append(argument);
    }
}

void readTrainer(const QJsonObject& root, TrainerSpec& spec, Issues& issues) {
    const auto object = objectMember(root, "trainer", issues);
    if (!object)
        return;
    rejectUnknownKeys(*object, "trainer", kTrainerKeys, issues);
    FieldReader r(*object, "trainer", issues);
    assign(spec.dataset, r.oneOf("dataset", kDatasets));
    assign(spec.model, r.oneOf("model", kModels));
    assign(spec.dataDir, r.string("data_dir", Text::NonEmpty));
    // The upper bounds are the trainer's own, so that the mistake shows here rather than on every rank.
    assign(spec.epochs, r.integer("epochs", {1, 1000000}));
    assign(spec.maxSteps, r.integer("max_steps", {0}));
    assign(spec.batchSize, r.integer("batch_size", {1, 1 << 20}));
    assign(spec.lr, r.positiveNumber("lr"));
    assign(spec.optimizer, r.oneOf("optimizer", kOptimizers));
    assign(spec.backend, r.oneOf("backend", kBackends));
    assign(spec.device, r.oneOf("device", kDevices));
    readExtraArgs(*object, spec, issues);
    if (spec.backend == QLatin1String("nccl") && spec.device == QLatin1String("cpu"))
        r.report("backend", QStringLiteral("nccl needs device cuda (use gloo on CPU)"));
}

void readDebug(const QJsonObject& root, DebugSpec& spec, Issues& issues) {
    const auto object = objectMember(root, "debug", issues);
    if (!object)
        return;
    rejectUnknownKeys(*object, "debug", kDebugKeys, issues);
    FieldReader r(*object, "debug", issues);
    assign(spec.node, r.string("node", Text::NonEmpty));
    assign(spec.procs, r.integer("procs", {1, kMaxProcsPerNode}));
    assign(spec.maxSteps, r.integer("max_steps", {0}));
    assign(spec.verbose, r.boolean("verbose"));
}

bool isVariableName(const QString& name) {
    if (name.isEmpty() || name[0].isDigit())
        return false;
    return std::all_of(name.cbegin(), name.cend(), [](QChar c) {
        return (c >= QLatin1Char('A') && c <= QLatin1Char('Z')) || (c >= QLatin1Char('a') && c <= QLatin1Char('z')) ||
               (c >= QLatin1Char('0') && c <= QLatin1Char('9')) || c == QLatin1Char('_');
    });
}

void readEnv(const QJsonObject& root, QByteArrayView json, JobSpec& job, Issues& issues) {
    const auto object = objectMember(root, "env", issues);
    if (!object)
        return;
    QStringList keys = envKeysInFileOrder(json);
    keys.removeIf([&](const QString& key) { return !object->contains(key); });
    for (const QString& key : object->keys()) { // a safety net: the scan should have found every key
        if (!keys.contains(key))
            keys.append(key);
    }
    for (const QString& name : std::as_const(keys)) {
        if (isCommentKey(name))
            continue;
        const QString path = childPath("env", name);
        const QJsonValue value = object->value(name);
        if (!isVariableName(name))
            issues.append({path, QStringLiteral("not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)")});
        else if (kOwnedEnv.contains(name))
            issues.append({path, QStringLiteral("is set by RankScope for each rank")});
        else if (!value.isString())
            issues.append({path, QStringLiteral("must be a string")});
        else
            job.env.append({name, value.toString()});
    }
}

// ---- nodes ----

// A node as written: each field set or not. Fields present but invalid are in `bad`, so that they neither
// take a default nor cause follow-up complaints.
struct NodeFields {
    std::optional<QString> host, name, user, identityFile, address, workDir;
    std::optional<int> port, gpus, procs;
    QSet<QString> bad;
};

// Where a node came from: "nodes[2]" (a JSON path) or "hostfile:7" (a line).
struct NodeOrigin {
    QString path;
    bool hostfile = false;
};

JobIssue nodeIssue(const NodeOrigin& origin, const QString& field, const QString& message) {
    if (origin.hostfile)
        return {origin.path, field + QStringLiteral(": ") + message};
    return {childPath(origin.path, field), message};
}

QString procsOverGpusMessage(int gpus) {
    return QStringLiteral("must be <= gpus (%1): each rank needs its own GPU").arg(gpus);
}

NodeFields readNodeFields(const QJsonObject& object, const QString& path, bool defaults, Issues& issues) {
    rejectUnknownKeys(object, path, kNodeKeys, issues);
    FieldReader r(object, path, issues);
    NodeFields fields;
    for (const char* key : {"host", "name"}) {
        if (defaults && object.contains(key))
            r.report(key, QStringLiteral("cannot have a default (each node sets its own)"));
    }
    if (!defaults) {
        fields.host = r.string("host", Text::Word);
        fields.name = r.string("name", Text::NonEmpty);
    }
    fields.port = r.integer("port", {1, 65535, true});
    fields.user = r.string("user", Text::Word);
    fields.identityFile = r.string("identity_file", Text::NonEmpty);
    fields.address = r.string("address", Text::Word);
    fields.workDir = r.string("work_dir", Text::NonEmpty);
    fields.gpus = r.integer("gpus", {0, kMaxProcsPerNode});
    fields.procs = r.integer("procs", {1, kMaxProcsPerNode});
    if (defaults && fields.gpus && fields.procs && *fields.gpus > 0 && *fields.procs > *fields.gpus)
        r.report("procs", procsOverGpusMessage(*fields.gpus));
    for (const QString& key : kNodeKeys) {
        if (r.isBad(key))
            fields.bad.insert(key);
    }
    return fields;
}

// A field of the node, else of node_defaults, else unset; a bad field of the node stays unset.
template <typename T>
std::optional<T> merged(const std::optional<T>& own, const std::optional<T>& fallback, const NodeFields& node,
                        const QString& key) {
    if (own || node.bad.contains(key))
        return own;
    return fallback;
}

NodeSpec resolveNode(const NodeFields& own, const NodeFields& defaults, const NodeOrigin& origin, Issues& issues) {
    NodeSpec node;
    if (own.host)
        node.host = *own.host;
    else if (!own.bad.contains("host"))
        issues.append(nodeIssue(origin, "host", QStringLiteral("is required")));
    node.name = own.name.value_or(node.host);
    assign(node.port, merged(own.port, defaults.port, own, "port"));
    assign(node.user, merged(own.user, defaults.user, own, "user"));
    assign(node.identityFile, merged(own.identityFile, defaults.identityFile, own, "identity_file"));
    assign(node.address, merged(own.address, defaults.address, own, "address"));
    assign(node.workDir, merged(own.workDir, defaults.workDir, own, "work_dir"));
    const auto gpus = merged(own.gpus, defaults.gpus, own, "gpus");
    const auto procs = merged(own.procs, defaults.procs, own, "procs");
    node.gpus = gpus.value_or(0);
    node.procs = procs.value_or(0);
    // node_defaults has checked its own pair already.
    const bool bothDefaults = !own.gpus && !own.procs;
    if (gpus && procs && node.gpus > 0 && node.procs > node.gpus && !bothDefaults)
        issues.append(nodeIssue(origin, "procs", procsOverGpusMessage(node.gpus)));
    node.procs = node.effectiveProcs();
    return node;
}

NodeFields hostfileNodeFields(const NodeSpec& node) {
    NodeFields fields;
    fields.host = node.host;
    if (node.procs > 0) { // the line had slots=N
        fields.gpus = node.gpus;
        fields.procs = node.procs;
    }
    return fields;
}

struct PendingNode {
    NodeFields fields;
    NodeOrigin origin;
};

void readHostfile(const QJsonObject& root, const QString& baseDir, QVector<PendingNode>& pending, Issues& issues) {
    FieldReader r(root, {}, issues);
    const auto path = r.string("hostfile", Text::NonEmpty);
    if (!path)
        return;
    const QString filePath = QDir(baseDir).filePath(*path);
    QFile file(filePath);
    if (!file.open(QIODevice::ReadOnly)) {
        r.report("hostfile", QStringLiteral("cannot read \"%1\": %2").arg(filePath, file.errorString()));
        return;
    }
    const HostfileResult hostfile = parseHostfile(file.readAll());
    issues.append(hostfile.issues);
    for (qsizetype i = 0; i < hostfile.nodes.size(); ++i)
        pending.append({hostfileNodeFields(hostfile.nodes[i]), {hostfileLinePath(hostfile.lines[i]), true}});
}

void readNodeArray(const QJsonObject& root, QVector<PendingNode>& pending, Issues& issues) {
    const QJsonValue value = root.value("nodes");
    if (value.isUndefined())
        return;
    if (!value.isArray()) {
        issues.append({"nodes", QStringLiteral("must be an array")});
        return;
    }
    const QJsonArray array = value.toArray();
    for (qsizetype i = 0; i < array.size(); ++i) {
        const QString path = indexPath("nodes", i);
        if (array[i].isObject())
            pending.append({readNodeFields(array[i].toObject(), path, false, issues), {path, false}});
        else
            issues.append({path, QStringLiteral("must be an object")});
    }
}

void checkNodeNames(const QVector<NodeSpec>& nodes, const QVector<PendingNode>& pending, Issues& issues) {
    QHash<QString, QString> firstOrigin;
    for (qsizetype i = 0; i < nodes.size(); ++i) {
        const QString& name = nodes[i].name;
        const NodeOrigin& origin = pending[i].origin;
        const QString field = pending[i].fields.name ? QStringLiteral("name") : QStringLiteral("host");
        if (name.isEmpty())
            continue; // no host: reported already
        if (name == kLocalNodeName) {
            issues.append(nodeIssue(origin, field,
                                    QStringLiteral("\"local\" is reserved for this machine in debug mode; "
                                                   "give the node another name")));
        } else if (const auto it = firstOrigin.constFind(name); it != firstOrigin.cend()) {
            issues.append(
                nodeIssue(origin, field, QStringLiteral("duplicate node name \"%1\" (also %2)").arg(name, *it)));
        } else {
            firstOrigin.insert(name, origin.path);
        }
    }
}

// Nodes of the "nodes" array first, then those of the hostfile, each merged with node_defaults.
void readNodes(const QJsonObject& root, const QString& baseDir, JobSpec& job, Issues& issues) {
    NodeFields defaults;
    if (const auto object = objectMember(root, "node_defaults", issues))
        defaults = readNodeFields(*object, "node_defaults", true, issues);
    QVector<PendingNode> pending;
    readNodeArray(root, pending, issues);
    readHostfile(root, baseDir, pending, issues);
    for (const PendingNode& node : std::as_const(pending))
        job.nodes.append(resolveNode(node.fields, defaults, node.origin, issues));
    checkNodeNames(job.nodes, pending, issues);
}

void checkJob(const JobSpec& job, Issues& issues) {
    const bool localDebug = job.mode == RunMode::Debug && job.debug.node == kLocalNodeName;
    // When node entries were given but are all bad, those issues say enough.
    const bool nodeIssues = std::any_of(issues.cbegin(), issues.cend(), [](const JobIssue& issue) {
        return issue.path.startsWith(QLatin1String("nodes")) || issue.path.startsWith(QLatin1String("hostfile"));
    });
    if (job.nodes.isEmpty() && !localDebug && !nodeIssues)
        issues.append({"nodes", QStringLiteral("at least one node is required (only a local debug run needs none)")});

    if (job.debug.node != kLocalNodeName) {
        const bool found = std::any_of(job.nodes.cbegin(), job.nodes.cend(),
                                       [&](const NodeSpec& node) { return node.name == job.debug.node; });
        if (!found) {
            issues.append(
                {"debug.node",
                 QStringLiteral("no node named \"%1\" (use \"local\" or the name of a node)").arg(job.debug.node)});
        }
    }

    qint64 worldSize = 0;
    for (const NodeSpec& node : job.nodes)
        worldSize += node.effectiveProcs();
    if (worldSize > kMaxWorldSize)
        issues.append({"nodes", QStringLiteral("%1 ranks in all; at most %2").arg(worldSize).arg(kMaxWorldSize)});
}

} // namespace

QLatin1String runModeName(RunMode mode) {
    return mode == RunMode::Debug ? QLatin1String("debug") : QLatin1String("submit");
}

QLatin1String launcherName(Launcher launcher) {
    return launcher == Launcher::Torchrun ? QLatin1String("torchrun") : QLatin1String("direct");
}

QLatin1String deployStrategyName(DeployStrategy strategy) {
    if (strategy == DeployStrategy::Build)
        return QLatin1String("build");
    return strategy == DeployStrategy::Binary ? QLatin1String("binary") : QLatin1String("auto");
}

QStringList TrainerSpec::fieldArguments() const {
    QStringList args = {"--dataset", dataset, "--model", model};
    if (!dataDir.isEmpty())
        args << "--data-dir" << dataDir;
    args << "--epochs" << QString::number(epochs);
    if (maxSteps > 0)
        args << "--max-steps" << QString::number(maxSteps);
    args << "--batch-size" << QString::number(batchSize);
    if (lr > 0)
        args << "--lr" << QString::number(lr, 'g', QLocale::FloatingPointShortest);
    if (!optimizer.isEmpty())
        args << "--optimizer" << optimizer;
    if (!backend.isEmpty())
        args << "--backend" << backend;
    if (!device.isEmpty())
        args << "--device" << device;
    return args;
}

QStringList TrainerSpec::toArguments() const {
    return fieldArguments() + extraArgs;
}

bool operator==(const NodeSpec& a, const NodeSpec& b) {
    return a.host == b.host && a.name == b.name && a.port == b.port && a.user == b.user &&
           a.identityFile == b.identityFile && a.address == b.address && a.workDir == b.workDir && a.gpus == b.gpus &&
           a.procs == b.procs;
}

bool operator==(const TrainerSpec& a, const TrainerSpec& b) {
    return a.dataset == b.dataset && a.model == b.model && a.dataDir == b.dataDir && a.epochs == b.epochs &&
           a.maxSteps == b.maxSteps && a.batchSize == b.batchSize && a.lr == b.lr && a.optimizer == b.optimizer &&
           a.backend == b.backend && a.device == b.device && a.extraArgs == b.extraArgs;
}

bool operator==(const DebugSpec& a, const DebugSpec& b) {
    return a.node == b.node && a.procs == b.procs && a.maxSteps == b.maxSteps && a.verbose == b.verbose;
}

bool operator==(const JobSpec& a, const JobSpec& b) {
    return a.version == b.version && a.name == b.name && a.nodes == b.nodes && a.trainer == b.trainer &&
           a.env == b.env && a.launcher == b.launcher && a.torchrun == b.torchrun && a.mode == b.mode && a.masterPort == b.masterPort &&
           a.debug == b.debug && a.deploy == b.deploy;
}

bool operator==(const JobIssue& a, const JobIssue& b) {
    return a.path == b.path && a.message == b.message;
}

QString JobIssue::toString() const {
    return path.isEmpty() ? message : path + QStringLiteral(": ") + message;
}

JobParseResult parseJob(QByteArrayView json, const QString& baseDir, std::optional<RunMode> mode) {
    QJsonParseError error;
    const QJsonDocument document = QJsonDocument::fromJson(json.toByteArray(), &error);
    if (error.error != QJsonParseError::NoError)
        return {std::nullopt, {{QString(), syntaxErrorMessage(json, error)}}};
    if (!document.isObject())
        return {std::nullopt, {{QString(), QStringLiteral("a job file must be a JSON object")}}};

    const QJsonObject root = document.object();
    Issues issues;
    JobSpec job;
    rejectUnknownKeys(root, {}, kTopKeys, issues);
    readHeader(root, job, issues);
    if (mode)
        job.mode = *mode;
    readTrainer(root, job.trainer, issues);
    readDebug(root, job.debug, issues);
    readEnv(root, json, job, issues);
    readNodes(root, baseDir, job, issues);
    checkJob(job, issues);
    if (!issues.isEmpty())
        return {std::nullopt, issues};
    return {std::move(job), {}};
}

JobParseResult loadJobFile(const QString& path, std::optional<RunMode> mode) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {std::nullopt, {{QString(), QStringLiteral("cannot read \"%1\": %2").arg(path, file.errorString())}}};
    const QFileInfo info(path);
    JobParseResult result = parseJob(file.readAll(), info.absolutePath(), mode);
    if (result.job && result.job->name.isEmpty())
        result.job->name = info.completeBaseName();
    return result;
}

QJsonObject nodeToJson(const NodeSpec& node) {
    QJsonObject object{{"host", node.host}};
    if (!node.name.isEmpty() && node.name != node.host)
        object.insert("name", node.name);
    if (node.port != 0)
        object.insert("port", node.port);
    if (!node.user.isEmpty())
        object.insert("user", node.user);
    if (!node.identityFile.isEmpty())
        object.insert("identity_file", node.identityFile);
    if (!node.address.isEmpty())
        object.insert("address", node.address);
    if (!node.workDir.isEmpty() && node.workDir != kDefaultWorkDir)
        object.insert("work_dir", node.workDir);
    if (node.gpus != 0)
        object.insert("gpus", node.gpus);
    object.insert("procs", node.effectiveProcs());
    return object;
}

namespace {

QJsonObject trainerToJson(const TrainerSpec& trainer) {
    QJsonObject object{{"dataset", trainer.dataset},
                       {"model", trainer.model},
                       {"epochs", trainer.epochs},
                       {"batch_size", trainer.batchSize}};
    if (!trainer.dataDir.isEmpty())
        object.insert("data_dir", trainer.dataDir);
    if (trainer.maxSteps != 0)
        object.insert("max_steps", trainer.maxSteps);
    if (trainer.lr != 0)
        object.insert("lr", trainer.lr);
    if (!trainer.optimizer.isEmpty())
        object.insert("optimizer", trainer.optimizer);
    if (!trainer.backend.isEmpty())
        object.insert("backend", trainer.backend);
    if (!trainer.device.isEmpty())
        object.insert("device", trainer.device);
    if (!trainer.extraArgs.isEmpty())
        object.insert("extra_args", QJsonArray::fromStringList(trainer.extraArgs));
    return object;
}

} // namespace

QJsonObject jobToJson(const JobSpec& job) {
    QJsonObject object{{"version", job.version},
                       {"mode", runModeName(job.mode)},
                       {"launcher", launcherName(job.launcher)},
                       {"deploy", deployStrategyName(job.deploy)},
                       {"master_port", job.masterPort},
                       {"trainer", trainerToJson(job.trainer)},
                       {"debug", QJsonObject{{"node", job.debug.node},
                                             {"procs", job.debug.procs},
                                             {"max_steps", job.debug.maxSteps},
                                             {"verbose", job.debug.verbose}}}};
    if (!job.name.isEmpty())
        object.insert("name", job.name);
    if (job.torchrun != JobSpec().torchrun)
        object.insert("torchrun", job.torchrun);
    QJsonArray nodes;
    for (const NodeSpec& node : job.nodes)
        nodes.append(nodeToJson(node));
    object.insert("nodes", nodes);
    if (!job.env.isEmpty()) {
        QJsonObject env;
        for (const auto& [name, value] : job.env)
            env.insert(name, value);
        object.insert("env", env);
    }
    return object;
}

} // namespace rankscope
