// SPDX-License-Identifier: MIT
#include "core/jobspec.h"
#include "core/rankplan.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTest>

using rankscope::DeployStrategy;
using rankscope::JobIssue;
using rankscope::JobParseResult;
using rankscope::JobSpec;
using rankscope::Launcher;
using rankscope::NodeSpec;
using rankscope::RunMode;

namespace {

const QString kJobsDir = QStringLiteral(RANKSCOPE_JOBS_DIR);

QStringList issueTexts(const QVector<JobIssue>& issues) {
    QStringList texts;
    for (const JobIssue& issue : issues)
        texts.append(issue.toString());
    return texts;
}

JobParseResult parse(const QByteArray& json) {
    return rankscope::parseJob(json);
}

// The job of a document that must parse; the issues are the failure message otherwise.
JobSpec parseOk(const QByteArray& json) {
    const JobParseResult result = parse(json);
    if (!result.ok())
        qWarning().noquote() << issueTexts(result.issues).join(QLatin1Char('\n'));
    return result.job.value_or(JobSpec{});
}

bool writeFile(const QString& path, const QByteArray& content) {
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(content) == content.size();
}

QByteArray readFile(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

// Every value in a JSON tree, by its path through objects and arrays.
void collectPaths(const QJsonValue& value, const QStringList& prefix, QList<QStringList>& paths) {
    if (!prefix.isEmpty())
        paths.append(prefix);
    if (value.isObject()) {
        const QJsonObject object = value.toObject();
        for (auto it = object.begin(); it != object.end(); ++it)
            collectPaths(it.value(), prefix + QStringList{it.key()}, paths);
    } else if (value.isArray()) {
        const QJsonArray array = value.toArray();
        for (qsizetype i = 0; i < array.size(); ++i)
            collectPaths(array[i], prefix + QStringList{QString::number(i)}, paths);
    }
}

QJsonValue replaced(const QJsonValue& value, QStringList path, const QJsonValue& replacement) {
    if (path.isEmpty())
        return replacement;
    const QString step = path.takeFirst();
    if (value.isArray()) {
        QJsonArray array = value.toArray();
        const int index = step.toInt();
        array[index] = replaced(array[index], path, replacement);
        return array;
    }
    QJsonObject object = value.toObject();
    object[step] = replaced(object[step], path, replacement);
    return object;
}

} // namespace

class tst_JobSpec final : public QObject {
    Q_OBJECT

private slots:
    void defaults();
    void everyField();
    void rejectsMistake_data();
    void rejectsMistake();
    void reportsEveryMistake();
    void syntaxError_data();
    void syntaxError();
    void commentsAreIgnoredEverywhere();
    void envKeepsFileOrder_data();
    void envKeepsFileOrder();
    void procsResolution_data();
    void procsResolution();
    void nodeDefaults();
    void hostfileMerging();
    void hostfileProblems_data();
    void hostfileProblems();
    void loadJobFile();
    void roundTrip_data();
    void roundTrip();
    void roundTripOfBuiltJob();
    void trainerArguments_data();
    void trainerArguments();
    void exampleFilesParse_data();
    void exampleFilesParse();
    void exampleFileContents();
    void neverCrashesOnAnyValue();
    void neverCrashesOnTruncatedText();
};

void tst_JobSpec::defaults() {
    const JobSpec job = parseOk(R"({"nodes": [{"host": "gpu-a"}]})");
    QCOMPARE(job.version, 1);
    QCOMPARE(job.name, QString());
    QCOMPARE(job.mode, RunMode::Submit);
    QCOMPARE(job.launcher, Launcher::Direct);
    QCOMPARE(job.deploy, DeployStrategy::Auto);
    QCOMPARE(job.masterPort, 29500);
    QVERIFY(job.env.isEmpty());
    QCOMPARE(job.nodes.size(), 1);
    const NodeSpec& node = job.nodes[0];
    QCOMPARE(node.host, QStringLiteral("gpu-a"));
    QCOMPARE(node.name, QStringLiteral("gpu-a"));
    QCOMPARE(node.port, 0);
    QCOMPARE(node.user, QString());
    QCOMPARE(node.identityFile, QString());
    QCOMPARE(node.address, QString());
    QCOMPARE(node.rendezvousAddress(), QStringLiteral("gpu-a"));
    QCOMPARE(node.workDir, QStringLiteral("rankscope"));
    QCOMPARE(node.gpus, 0);
    QCOMPARE(node.procs, 1);
    QCOMPARE(job.trainer, rankscope::TrainerSpec{});
    QCOMPARE(job.trainer.dataset, QStringLiteral("synthetic"));
    QCOMPARE(job.trainer.model, QStringLiteral("cnn"));
    QCOMPARE(job.debug.node, QStringLiteral("local"));
    QCOMPARE(job.debug.procs, 2);
    QCOMPARE(job.debug.maxSteps, 20);
    QCOMPARE(job.debug.verbose, true);

    // A local debug run needs no nodes at all.
    const JobSpec local = parseOk(R"({"mode": "debug"})");
    QCOMPARE(local.mode, RunMode::Debug);
    QVERIFY(local.nodes.isEmpty());
}

void tst_JobSpec::everyField() {
    const JobSpec job = parseOk(R"({
        "version": 1, "name": "full", "mode": "debug", "launcher": "torchrun", "deploy": "binary",
        "master_port": 29400, "torchrun": "/opt/conda/bin/torchrun",
        "nodes": [{"host": "10.0.0.1", "name": "a", "port": 2222, "user": "alice", "identity_file": "~/.ssh/k",
                   "address": "192.168.1.1", "work_dir": "/scratch/rs", "gpus": 4, "procs": 2}],
        "trainer": {"dataset": "cifar10", "model": "resnet18", "data_dir": "/data", "epochs": 3, "max_steps": 100,
                    "batch_size": 32, "lr": 0.01, "optimizer": "sgd", "backend": "nccl", "device": "cuda",
                    "extra_args": ["--amp", "bf16"]},
        "env": {"NCCL_DEBUG": "WARN"},
        "debug": {"node": "a", "procs": 3, "max_steps": 5, "verbose": false}
    })");
    QCOMPARE(job.name, QStringLiteral("full"));
    QCOMPARE(job.mode, RunMode::Debug);
    QCOMPARE(job.launcher, Launcher::Torchrun);
    QCOMPARE(job.torchrun, QStringLiteral("/opt/conda/bin/torchrun"));
    QCOMPARE(job.deploy, DeployStrategy::Binary);
    QCOMPARE(job.masterPort, 29400);
    QCOMPARE(job.nodes.size(), 1);
    const NodeSpec& node = job.nodes[0];
    QCOMPARE(node.host, QStringLiteral("10.0.0.1"));
    QCOMPARE(node.name, QStringLiteral("a"));
    QCOMPARE(node.port, 2222);
    QCOMPARE(node.user, QStringLiteral("alice"));
    QCOMPARE(node.identityFile, QStringLiteral("~/.ssh/k"));
    QCOMPARE(node.address, QStringLiteral("192.168.1.1"));
    QCOMPARE(node.workDir, QStringLiteral("/scratch/rs"));
    QCOMPARE(node.gpus, 4);
    QCOMPARE(node.procs, 2);
    QCOMPARE(job.trainer.dataset, QStringLiteral("cifar10"));
    QCOMPARE(job.trainer.model, QStringLiteral("resnet18"));
    QCOMPARE(job.trainer.dataDir, QStringLiteral("/data"));
    QCOMPARE(job.trainer.epochs, 3);
    QCOMPARE(job.trainer.maxSteps, 100);
    QCOMPARE(job.trainer.batchSize, 32);
    QCOMPARE(job.trainer.lr, 0.01);
    QCOMPARE(job.trainer.optimizer, QStringLiteral("sgd"));
    QCOMPARE(job.trainer.backend, QStringLiteral("nccl"));
    QCOMPARE(job.trainer.device, QStringLiteral("cuda"));
    QCOMPARE(job.trainer.extraArgs, (QStringList{"--amp", "bf16"}));
    QCOMPARE(job.env, (QList<QPair<QString, QString>>{{"NCCL_DEBUG", "WARN"}}));
    QCOMPARE(job.debug.node, QStringLiteral("a"));
    QCOMPARE(job.debug.procs, 3);
    QCOMPARE(job.debug.maxSteps, 5);
    QCOMPARE(job.debug.verbose, false);
}

void tst_JobSpec::rejectsMistake_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("message");

    // A document with one node "a" plus `extra` top-level members.
    const auto top = [](const char* tag, const QByteArray& extra, const char* path, const char* message) {
        QTest::newRow(tag) << QByteArray(R"({"nodes": [{"host": "a"}], )") + extra + "}" << QString(path)
                           << QString(message);
    };
    // A document whose only node also has `fields`.
    const auto node = [](const char* tag, const QByteArray& fields, const char* path, const char* message) {
        QTest::newRow(tag) << QByteArray(R"({"nodes": [{"host": "a", )") + fields + "}]}" << QString(path)
                           << QString(message);
    };
    const auto trainer = [&](const char* tag, const QByteArray& fields, const char* path, const char* message) {
        top(tag, R"("trainer": {)" + fields + "}", path, message);
    };
    const auto debug = [&](const char* tag, const QByteArray& fields, const char* path, const char* message) {
        top(tag, R"("debug": {)" + fields + "}", path, message);
    };

    top("version 2", R"("version": 2)", "version", "must be 1");
    top("version string", R"("version": "1")", "version", "must be 1");
    top("name not a string", R"("name": 5)", "name", "must be a string");
    top("mode", R"("mode": "run")", "mode", "must be one of debug, submit");
    top("mode not a string", R"("mode": 1)", "mode", "must be one of debug, submit");
    top("launcher", R"("launcher": "mpirun")", "launcher", "must be one of direct, torchrun");
    top("torchrun empty", R"("torchrun": "")", "torchrun", "must not be empty");
    top("torchrun option", R"("torchrun": "--help")", "torchrun", "must not start with '-'");
    top("deploy", R"("deploy": "copy")", "deploy", "must be one of auto, build, binary");
    top("master_port 0", R"("master_port": 0)", "master_port", "must be 1-65535");
    top("master_port 65536", R"("master_port": 65536)", "master_port", "must be 1-65535");
    top("master_port fraction", R"("master_port": 29500.5)", "master_port", "must be an integer");
    top("master_port string", R"("master_port": "29500")", "master_port", "must be an integer");
    top("master_port huge", R"("master_port": 1e300)", "master_port", "must be 1-65535");
    top("typo near a field", R"("node": [])", "node", "unknown field (did you mean \"nodes\"?)");
    top("unknown field", R"("colour": "blue")", "colour", "unknown field");
    top("single slash is no comment", R"("/comment": "x")", "/comment", "unknown field");
    top("trainer not an object", R"("trainer": [])", "trainer", "must be an object");
    top("debug not an object", R"("debug": "local")", "debug", "must be an object");
    top("env not an object", R"("env": ["A=1"])", "env", "must be an object");
    top("node_defaults not an object", R"("node_defaults": 1)", "node_defaults", "must be an object");
    top("hostfile not a string", R"("hostfile": 5)", "hostfile", "must be a string");
    top("hostfile empty", R"("hostfile": "")", "hostfile", "must not be empty");

    QTest::newRow("no nodes") << QByteArray("{}") << "nodes"
                              << "at least one node is required (only a local debug run needs none)";
    QTest::newRow("empty nodes") << QByteArray(R"({"nodes": []})") << "nodes"
                                 << "at least one node is required (only a local debug run needs none)";
    QTest::newRow("nodes not an array") << QByteArray(R"({"nodes": {"host": "a"}})") << "nodes"
                                        << "must be an array";
    QTest::newRow("node not an object") << QByteArray(R"({"nodes": ["a"]})") << "nodes[0]"
                                        << "must be an object";
    QTest::newRow("missing host") << QByteArray(R"({"nodes": [{"name": "a"}]})") << "nodes[0].host"
                                  << "is required";
    QTest::newRow("second node bad") << QByteArray(R"({"nodes": [{"host": "a"}, {"host": "b", "port": 0}]})")
                                     << "nodes[1].port"
                                     << "must be 1-65535";
    QTest::newRow("duplicate host") << QByteArray(R"({"nodes": [{"host": "a"}, {"host": "a"}]})") << "nodes[1].host"
                                    << "duplicate node name \"a\" (also nodes[0])";
    QTest::newRow("duplicate name") << QByteArray(
                                           R"({"nodes": [{"host": "a", "name": "x"}, {"host": "b", "name": "x"}]})")
                                    << "nodes[1].name"
                                    << "duplicate node name \"x\" (also nodes[0])";
    QTest::newRow("name as another's host")
        << QByteArray(R"({"nodes": [{"host": "a"}, {"host": "b", "name": "a"}]})") << "nodes[1].name"
        << "duplicate node name \"a\" (also nodes[0])";

    node("host empty", R"("host": "")", "nodes[0].host", "must not be empty");
    node("host not a string", R"("host": 5)", "nodes[0].host", "must be a string");
    node("host with space", R"("host": "a b")", "nodes[0].host", "must not contain whitespace");
    node("host as ssh option", R"("host": "-oProxyCommand=x")", "nodes[0].host", "must not start with '-'");
    node("name empty", R"("name": "")", "nodes[0].name", "must not be empty");
    node("name local", R"("name": "local")", "nodes[0].name",
         "\"local\" is reserved for this machine in debug mode; give the node another name");
    node("port 0", R"("port": 0)", "nodes[0].port", "must be 1-65535");
    node("port 65536", R"("port": 65536)", "nodes[0].port", "must be 1-65535");
    node("port negative", R"("port": -22)", "nodes[0].port", "must be 1-65535");
    node("port string", R"("port": "22")", "nodes[0].port", "must be an integer");
    node("port fraction", R"("port": 22.5)", "nodes[0].port", "must be an integer");
    node("port null", R"("port": null)", "nodes[0].port", "must be an integer");
    node("user not a string", R"("user": 7)", "nodes[0].user", "must be a string");
    node("user with space", R"("user": "a b")", "nodes[0].user", "must not contain whitespace");
    node("identity_file empty", R"("identity_file": "")", "nodes[0].identity_file", "must not be empty");
    node("address array", R"("address": [])", "nodes[0].address", "must be a string");
    node("work_dir empty", R"("work_dir": "")", "nodes[0].work_dir", "must not be empty");
    node("gpus negative", R"("gpus": -1)", "nodes[0].gpus", "must be >= 0");
    node("gpus fraction", R"("gpus": 1.5)", "nodes[0].gpus", "must be an integer");
    node("gpus bool", R"("gpus": true)", "nodes[0].gpus", "must be an integer");
    node("gpus too many", R"("gpus": 5000)", "nodes[0].gpus", "must be <= 4096");
    node("procs 0", R"("procs": 0)", "nodes[0].procs", "must be >= 1");
    node("procs over gpus", R"("gpus": 2, "procs": 3)", "nodes[0].procs",
         "must be <= gpus (2): each rank needs its own GPU");
    node("typo gpu", R"("gpu": 2)", "nodes[0].gpu", "unknown field (did you mean \"gpus\"?)");
    node("typo identity", R"("identityfile": "k")", "nodes[0].identityfile",
         "unknown field (did you mean \"identity_file\"?)");

    top("defaults host", R"("node_defaults": {"host": "x"})", "node_defaults.host",
        "cannot have a default (each node sets its own)");
    top("defaults name", R"("node_defaults": {"name": "x"})", "node_defaults.name",
        "cannot have a default (each node sets its own)");
    top("defaults port", R"("node_defaults": {"port": 0})", "node_defaults.port", "must be 1-65535");
    top("defaults procs over gpus", R"("node_defaults": {"gpus": 1, "procs": 2})", "node_defaults.procs",
        "must be <= gpus (1): each rank needs its own GPU");
    top("defaults typo", R"("node_defaults": {"usr": "x"})", "node_defaults.usr",
        "unknown field (did you mean \"user\"?)");
    QTest::newRow("default gpus, own procs")
        << QByteArray(R"({"node_defaults": {"gpus": 1}, "nodes": [{"host": "a", "procs": 2}]})") << "nodes[0].procs"
        << "must be <= gpus (1): each rank needs its own GPU";
    QTest::newRow("own gpus, default procs")
        << QByteArray(R"({"node_defaults": {"procs": 4}, "nodes": [{"host": "a", "gpus": 2}]})") << "nodes[0].procs"
        << "must be <= gpus (2): each rank needs its own GPU";

    trainer("dataset", R"("dataset": "imagenet")", "trainer.dataset",
            "must be one of synthetic, fashion-mnist, mnist, cifar10");
    trainer("model", R"("model": "vgg")", "trainer.model", "must be one of resnet18, cnn, mlp");
    trainer("data_dir empty", R"("data_dir": "")", "trainer.data_dir", "must not be empty");
    trainer("data_dir number", R"("data_dir": 3)", "trainer.data_dir", "must be a string");
    trainer("epochs 0", R"("epochs": 0)", "trainer.epochs", "must be >= 1");
    trainer("epochs string", R"("epochs": "2")", "trainer.epochs", "must be an integer");
    trainer("max_steps negative", R"("max_steps": -1)", "trainer.max_steps", "must be >= 0");
    trainer("batch_size 0", R"("batch_size": 0)", "trainer.batch_size", "must be >= 1");
    trainer("batch_size huge", R"("batch_size": 2000000)", "trainer.batch_size", "must be <= 1048576");
    trainer("epochs huge", R"("epochs": 1000001)", "trainer.epochs", "must be <= 1000000");
    trainer("lr 0", R"("lr": 0)", "trainer.lr", "must be > 0");
    {
        QByteArray nodes;
        for (int i = 0; i < 17; ++i)
            nodes += (i ? ", " : "") + QByteArray(R"({"host": "n)") + QByteArray::number(i) + R"(", "procs": 4096})";
        QTest::newRow("more ranks than a run may have") << R"({"nodes": [)" + nodes + "]}" << QStringLiteral("nodes")
                                                        << QStringLiteral("69632 ranks in all; at most 65536");
    }
    trainer("lr negative", R"("lr": -0.1)", "trainer.lr", "must be > 0");
    trainer("lr string", R"("lr": "0.1")", "trainer.lr", "must be a number");
    trainer("optimizer", R"("optimizer": "rmsprop")", "trainer.optimizer", "must be one of adam, sgd");
    trainer("backend", R"("backend": "mpi")", "trainer.backend", "must be one of gloo, nccl");
    trainer("device", R"("device": "tpu")", "trainer.device", "must be one of cpu, cuda");
    trainer("nccl on cpu", R"("backend": "nccl", "device": "cpu")", "trainer.backend",
            "nccl needs device cuda (use gloo on CPU)");
    trainer("typo epoch", R"("epoch": 2)", "trainer.epoch", "unknown field (did you mean \"epochs\"?)");
    trainer("extra_args string", R"("extra_args": "--amp bf16")", "trainer.extra_args", "must be an array of strings");
    trainer("extra_args number", R"("extra_args": ["--seed", 7])", "trainer.extra_args[1]", "must be a string");
    trainer("extra_args --rank", R"("extra_args": ["--amp", "bf16", "--rank", "3"])", "trainer.extra_args[2]",
            "--rank is set by RankScope for each rank");
    trainer("extra_args --world-size=", R"("extra_args": ["--world-size=4"])", "trainer.extra_args[0]",
            "--world-size is set by RankScope for each rank");
    trainer("extra_args --init-method", R"("extra_args": ["--init-method", "tcp://x:1"])", "trainer.extra_args[0]",
            "--init-method is set by RankScope for each rank");
    trainer("extra_args --events=", R"("extra_args": ["--events=none"])", "trainer.extra_args[0]",
            "--events is set by RankScope for each rank");

    debug("debug.node unknown", R"("node": "gpu-z")", "debug.node",
          "no node named \"gpu-z\" (use \"local\" or the name of a node)");
    debug("debug.node empty", R"("node": "")", "debug.node", "must not be empty");
    debug("debug.procs 0", R"("procs": 0)", "debug.procs", "must be >= 1");
    debug("debug.max_steps negative", R"("max_steps": -1)", "debug.max_steps", "must be >= 0");
    debug("debug.verbose string", R"("verbose": "yes")", "debug.verbose", "must be a boolean");
    debug("debug typo", R"("nodes": "a")", "debug.nodes", "unknown field (did you mean \"node\"?)");
    QTest::newRow("debug on a named node needs it")
        << QByteArray(R"({"mode": "debug", "debug": {"node": "a"}, "nodes": [{"host": "b"}]})") << "debug.node"
        << "no node named \"a\" (use \"local\" or the name of a node)";

    top("env bad name", R"("env": {"1X": "a"})", "env.1X", "not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)");
    top("env dash", R"("env": {"A-B": "a"})", "env.A-B", "not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)");
    top("env empty name", R"("env": {"": "a"})", "env.", "not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)");
    top("env number", R"("env": {"OMP_NUM_THREADS": 4})", "env.OMP_NUM_THREADS", "must be a string");
    top("env null", R"("env": {"A": null})", "env.A", "must be a string");
    top("env owned", R"("env": {"RANK": "0"})", "env.RANK", "is set by RankScope for each rank");
    top("env owned gpu", R"("env": {"CUDA_VISIBLE_DEVICES": "0"})", "env.CUDA_VISIBLE_DEVICES",
        "is set by RankScope for each rank");

    QTest::newRow("not an object") << QByteArray("[1, 2]") << ""
                                   << "a job file must be a JSON object";
}

void tst_JobSpec::rejectsMistake() {
    QFETCH(QByteArray, json);
    QFETCH(QString, path);
    QFETCH(QString, message);
    const JobParseResult result = parse(json);
    QVERIFY(!result.ok());
    QVERIFY(!result.job.has_value());
    QCOMPARE(issueTexts(result.issues), QStringList(JobIssue{path, message}.toString()));
    QCOMPARE(result.issues[0].path, path);
    QCOMPARE(result.issues[0].message, message);
}

void tst_JobSpec::reportsEveryMistake() {
    const JobParseResult result = parse(R"({
        "modee": "debug",
        "master_port": 0,
        "trainer": {"model": "vgg", "epochs": 0, "extra_args": ["--events", "x", "--rank=1"]},
        "debug": {"node": "nowhere", "verbose": 1},
        "env": {"1X": "a", "OK": 2},
        "node_defaults": {"gpus": -2},
        "nodes": [{"host": "a", "port": 0}, {"name": "b", "gpus": 1, "procs": 2}, {"host": "a"}]
    })");
    QVERIFY(!result.job);
    const QStringList expected = {
        "modee: unknown field (did you mean \"mode\"?)",
        "master_port: must be 1-65535",
        "trainer.model: must be one of resnet18, cnn, mlp",
        "trainer.epochs: must be >= 1",
        "trainer.extra_args[0]: --events is set by RankScope for each rank",
        "trainer.extra_args[2]: --rank is set by RankScope for each rank",
        "debug.verbose: must be a boolean",
        "env.1X: not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)",
        "env.OK: must be a string",
        "node_defaults.gpus: must be >= 0",
        "nodes[0].port: must be 1-65535",
        "nodes[1].host: is required",
        "nodes[1].procs: must be <= gpus (1): each rank needs its own GPU",
        "nodes[2].host: duplicate node name \"a\" (also nodes[0])",
        "debug.node: no node named \"nowhere\" (use \"local\" or the name of a node)",
    };
    QCOMPARE(issueTexts(result.issues), expected);
}

void tst_JobSpec::syntaxError_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("position");
    QTest::newRow("missing value") << QByteArray("{\n  \"name\": \"x\",\n  \"mode\": ,\n}") << "3:11";
    QTest::newRow("trailing comma") << QByteArray("{\"nodes\": [],}") << "1:14";
    QTest::newRow("after multibyte") << QByteArray("{\"name\": \"\xc3\xa9t\xc3\xa9\" x}") << "1:16";
    QTest::newRow("empty") << QByteArray() << "1:1";
    QTest::newRow("comment syntax") << QByteArray("{\n// no\n}") << "2:1";
}

// Qt words the reason; the frame and the position are ours.
void tst_JobSpec::syntaxError() {
    QFETCH(QByteArray, json);
    QFETCH(QString, position);
    const JobParseResult result = parse(json);
    QVERIFY(!result.job);
    QCOMPARE(result.issues.size(), 1);
    QCOMPARE(result.issues[0].path, QString());
    const QString prefix = QStringLiteral("JSON syntax error at %1: ").arg(position);
    QVERIFY2(result.issues[0].message.startsWith(prefix), qPrintable(result.issues[0].message));
    QVERIFY(result.issues[0].message.size() > prefix.size());
}

void tst_JobSpec::commentsAreIgnoredEverywhere() {
    const JobSpec job = parseOk(R"({
        "//": "top", "// mode": "comments may have any value", "//n": [1, {"x": 2}],
        "nodes": [{"//": "node", "host": "a"}],
        "node_defaults": {"//": "defaults", "gpus": 1},
        "trainer": {"//": "trainer"},
        "debug": {"//": "debug"},
        "env": {"//": "env", "A": "1"}
    })");
    QCOMPARE(job.nodes.size(), 1);
    QCOMPARE(job.nodes[0].gpus, 1);
    QCOMPARE(job.env, (QList<QPair<QString, QString>>{{"A", "1"}}));
}

void tst_JobSpec::envKeepsFileOrder_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QStringList>("names");
    QTest::newRow("unsorted") << QByteArray(R"({"mode": "debug", "env": {"ZED": "1", "ALPHA": "2", "MID": "3"}})")
                              << QStringList{"ZED", "ALPHA", "MID"};
    // Strings that look like structure, nested objects elsewhere and an escaped key do not confuse it.
    QTest::newRow("tricky text") << QByteArray(R"({"//": "not \"env\": {\"Q\": 1} here", "mode": "debug",
                          "trainer": {"//": {"env": {"X": "1"}}},
                          "env": {"Z": "{", "\u0042ETA": "}", "A": "\"env\": {"}})")
                                 << QStringList{"Z", "BETA", "A"};
    QTest::newRow("env before others") << QByteArray(R"({"env": {"B": "1", "A": "2"}, "mode": "debug"})")
                                       << QStringList{"B", "A"};
}

void tst_JobSpec::envKeepsFileOrder() {
    QFETCH(QByteArray, json);
    QFETCH(QStringList, names);
    const JobSpec job = parseOk(json);
    QStringList actual;
    for (const auto& [name, value] : job.env)
        actual.append(name);
    QCOMPARE(actual, names);
}

void tst_JobSpec::procsResolution_data() {
    QTest::addColumn<QByteArray>("node");
    QTest::addColumn<int>("gpus");
    QTest::addColumn<int>("procs");
    QTest::newRow("cpu node") << QByteArray(R"({"host": "a"})") << 0 << 1;
    QTest::newRow("gpu node: a rank per gpu") << QByteArray(R"({"host": "a", "gpus": 4})") << 4 << 4;
    QTest::newRow("fewer ranks than gpus") << QByteArray(R"({"host": "a", "gpus": 4, "procs": 2})") << 4 << 2;
    QTest::newRow("cpu node, several ranks") << QByteArray(R"({"host": "a", "procs": 3})") << 0 << 3;
    QTest::newRow("gpus 0 explicit") << QByteArray(R"({"host": "a", "gpus": 0, "procs": 8})") << 0 << 8;
}

void tst_JobSpec::procsResolution() {
    QFETCH(QByteArray, node);
    QFETCH(int, gpus);
    QFETCH(int, procs);
    const JobSpec job = parseOk(R"({"nodes": [)" + node + "]}");
    QCOMPARE(job.nodes.size(), 1);
    QCOMPARE(job.nodes[0].gpus, gpus);
    QCOMPARE(job.nodes[0].procs, procs);
}

void tst_JobSpec::nodeDefaults() {
    const JobSpec job = parseOk(R"({
        "node_defaults": {"user": "train", "port": 2200, "identity_file": "~/.ssh/k", "work_dir": "/w",
                          "address": "shared", "gpus": 4},
        "nodes": [{"host": "a"},
                  {"host": "b", "user": "root", "port": 22, "work_dir": "rs", "gpus": 2, "procs": 1},
                  {"host": "c", "gpus": 0}]
    })");
    QCOMPARE(job.nodes.size(), 3);
    const NodeSpec& a = job.nodes[0];
    QCOMPARE(a.user, QStringLiteral("train"));
    QCOMPARE(a.port, 2200);
    QCOMPARE(a.identityFile, QStringLiteral("~/.ssh/k"));
    QCOMPARE(a.workDir, QStringLiteral("/w"));
    QCOMPARE(a.address, QStringLiteral("shared"));
    QCOMPARE(a.gpus, 4);
    QCOMPARE(a.procs, 4);
    const NodeSpec& b = job.nodes[1];
    QCOMPARE(b.user, QStringLiteral("root"));
    QCOMPARE(b.port, 22);
    QCOMPARE(b.identityFile, QStringLiteral("~/.ssh/k"));
    QCOMPARE(b.workDir, QStringLiteral("rs"));
    QCOMPARE(b.gpus, 2);
    QCOMPARE(b.procs, 1);
    const NodeSpec& c = job.nodes[2]; // its own 0 beats the default 4
    QCOMPARE(c.gpus, 0);
    QCOMPARE(c.procs, 1);
}

void tst_JobSpec::hostfileMerging() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(writeFile(dir.filePath("hosts"), "# cluster\nw1 slots=2\nw2\n"));
    const QByteArray json = R"({
        "hostfile": "hosts",
        "node_defaults": {"user": "u", "gpus": 1},
        "nodes": [{"host": "head", "gpus": 0, "user": "admin"}]
    })";
    const JobParseResult result = rankscope::parseJob(json, dir.path());
    QVERIFY2(result.ok(), qPrintable(issueTexts(result.issues).join('\n')));
    const QVector<NodeSpec>& nodes = result.job->nodes;
    QCOMPARE(nodes.size(), 3);
    // The "nodes" array first, then the hostfile in its order.
    QCOMPARE(nodes[0].host, QStringLiteral("head"));
    QCOMPARE(nodes[0].user, QStringLiteral("admin"));
    QCOMPARE(nodes[0].procs, 1);
    QCOMPARE(nodes[1].host, QStringLiteral("w1"));
    QCOMPARE(nodes[1].name, QStringLiteral("w1"));
    QCOMPARE(nodes[1].user, QStringLiteral("u"));
    QCOMPARE(nodes[1].gpus, 2); // slots beat the default
    QCOMPARE(nodes[1].procs, 2);
    QCOMPARE(nodes[2].host, QStringLiteral("w2"));
    QCOMPARE(nodes[2].gpus, 1); // no slots: the default
    QCOMPARE(nodes[2].procs, 1);

    // An absolute path needs no base folder.
    const QByteArray absolute = R"({"hostfile": ")" + dir.filePath("hosts").toUtf8() + R"("})";
    const JobParseResult fromAbsolute = rankscope::parseJob(absolute, QStringLiteral("/nonexistent"));
    QVERIFY(fromAbsolute.ok());
    QCOMPARE(fromAbsolute.job->nodes.size(), 2);
}

void tst_JobSpec::hostfileProblems_data() {
    QTest::addColumn<QByteArray>("hostfile");
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QStringList>("issues");
    QTest::newRow("bad lines") << QByteArray("w1 slots=2\nw2 slots=x\nw3 cores=4\n")
                               << QByteArray(R"({"hostfile": "hosts"})")
                               << QStringList{"hostfile:2: bad slots \"x\" (must be an integer 1-4096)",
                                              "hostfile:3: unknown token \"cores=4\" (expected slots=N)"};
    QTest::newRow("host also in nodes") << QByteArray("# x\nw1 slots=1\n")
                                        << QByteArray(R"({"hostfile": "hosts", "nodes": [{"host": "w1"}]})")
                                        << QStringList{"hostfile:2: host: duplicate node name \"w1\" (also nodes[0])"};
    QTest::newRow("empty hostfile") << QByteArray("# nobody yet\n") << QByteArray(R"({"hostfile": "hosts"})")
                                    << QStringList{"nodes: at least one node is required (only a local debug run "
                                                   "needs none)"};
    QTest::newRow("missing file") << QByteArray() << QByteArray(R"({"hostfile": "nope"})")
                                  << QStringList{"hostfile: cannot read \"DIR/nope\": No such file or directory"};
}

void tst_JobSpec::hostfileProblems() {
    QFETCH(QByteArray, hostfile);
    QFETCH(QByteArray, json);
    QFETCH(QStringList, issues);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(writeFile(dir.filePath("hosts"), hostfile));
    const JobParseResult result = rankscope::parseJob(json, dir.path());
    QVERIFY(!result.job);
    QStringList expected;
    for (const QString& issue : std::as_const(issues))
        expected.append(QString(issue).replace("DIR", dir.path()));
    QCOMPARE(issueTexts(result.issues), expected);
}

void tst_JobSpec::loadJobFile() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(QDir(dir.path()).mkdir("jobs"));
    QVERIFY(writeFile(dir.filePath("jobs/hosts"), "w1 slots=2\n"));
    QVERIFY(writeFile(dir.filePath("jobs/nightly.json"), R"({"hostfile": "hosts"})"));
    // The hostfile is found next to the job file, whatever the current directory.
    const JobParseResult result = rankscope::loadJobFile(dir.filePath("jobs/nightly.json"));
    QVERIFY2(result.ok(), qPrintable(issueTexts(result.issues).join('\n')));
    QCOMPARE(result.job->name, QStringLiteral("nightly")); // no "name": the file's
    QCOMPARE(result.job->nodes.size(), 1);

    QVERIFY(writeFile(dir.filePath("jobs/named.json"), R"({"name": "given", "mode": "debug"})"));
    QCOMPARE(rankscope::loadJobFile(dir.filePath("jobs/named.json")).job->name, QStringLiteral("given"));

    // The mode asked for (`--mode debug`) is the one the job is checked for: a submit job without nodes is a valid
    // local debug run, and not a valid submit.
    QVERIFY(writeFile(dir.filePath("jobs/local.json"), R"({"mode": "submit", "debug": {"node": "local"}})"));
    const JobParseResult asSubmit = rankscope::loadJobFile(dir.filePath("jobs/local.json"));
    QVERIFY(!asSubmit.ok());
    QCOMPARE(asSubmit.issues.value(0).path, QStringLiteral("nodes"));
    const JobParseResult asDebug = rankscope::loadJobFile(dir.filePath("jobs/local.json"), rankscope::RunMode::Debug);
    QVERIFY2(asDebug.ok(), qPrintable(issueTexts(asDebug.issues).join('\n')));
    QCOMPARE(asDebug.job->mode, rankscope::RunMode::Debug);

    const JobParseResult missing = rankscope::loadJobFile(dir.filePath("absent.json"));
    QVERIFY(!missing.job);
    QCOMPARE(missing.issues.size(), 1);
    QVERIFY(
        missing.issues[0].message.startsWith(QStringLiteral("cannot read \"%1\"").arg(dir.filePath("absent.json"))));
}

void tst_JobSpec::roundTrip_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::newRow("minimal") << QByteArray(R"({"nodes": [{"host": "a"}]})");
    QTest::newRow("local debug") << QByteArray(R"({"mode": "debug", "debug": {"procs": 4, "verbose": false}})");
    QTest::newRow("every field") << QByteArray(R"({
        "version": 1, "name": "full", "mode": "debug", "launcher": "torchrun", "deploy": "build",
        "master_port": 1234, "torchrun": "/usr/local/bin/torchrun",
        "node_defaults": {"user": "u"},
        "nodes": [{"host": "10.0.0.1", "name": "a", "port": 2222, "user": "alice", "identity_file": "~/.ssh/k",
                   "address": "fe80::1", "work_dir": "/scratch/rs", "gpus": 4, "procs": 2},
                  {"host": "b", "work_dir": "rankscope"}],
        "trainer": {"dataset": "mnist", "model": "mlp", "data_dir": "/data", "epochs": 3, "max_steps": 100,
                    "batch_size": 32, "lr": 0.1, "optimizer": "sgd", "backend": "gloo", "device": "cpu",
                    "extra_args": ["--seed", "7", "--no-eval"]},
        "env": {"A": "1", "B": "two words", "C": ""},
        "debug": {"node": "b", "procs": 3, "max_steps": 0, "verbose": false}
    })");
    QTest::newRow("example.json") << readFile(kJobsDir + "/example.json");
    QTest::newRow("local-debug.json") << readFile(kJobsDir + "/local-debug.json");
}

void tst_JobSpec::roundTrip() {
    QFETCH(QByteArray, json);
    const JobSpec job = parseOk(json);
    const QJsonObject written = rankscope::jobToJson(job);
    const JobParseResult again = parse(QJsonDocument(written).toJson());
    QVERIFY2(again.ok(), qPrintable(issueTexts(again.issues).join('\n')));
    QVERIFY(*again.job == job);
    QCOMPARE(rankscope::jobToJson(*again.job), written);
}

void tst_JobSpec::roundTripOfBuiltJob() {
    JobSpec job;
    job.name = QStringLiteral("built");
    job.mode = RunMode::Debug;
    job.launcher = Launcher::Torchrun;
    job.deploy = DeployStrategy::Binary;
    job.masterPort = 40000;
    NodeSpec a;
    a.host = QStringLiteral("a.example.org");
    a.name = QStringLiteral("a");
    a.gpus = 8;
    a.procs = 8;
    NodeSpec b;
    b.host = QStringLiteral("b");
    b.name = QStringLiteral("b");
    b.procs = 2;
    b.workDir = QStringLiteral("/opt/rs");
    job.nodes = {a, b};
    job.trainer.lr = 3e-4;
    job.trainer.maxSteps = 5;
    job.env = {{"X", "1"}};
    job.debug = {QStringLiteral("a"), 1, 7, false};
    const JobParseResult again = parse(QJsonDocument(rankscope::jobToJson(job)).toJson());
    QVERIFY2(again.ok(), qPrintable(issueTexts(again.issues).join('\n')));
    QVERIFY(*again.job == job);
    QCOMPARE(again.job->trainer.lr, 3e-4);
}

void tst_JobSpec::trainerArguments_data() {
    QTest::addColumn<QByteArray>("trainer");
    QTest::addColumn<QStringList>("args");
    QTest::newRow("defaults") << QByteArray("{}") << QStringList{"--dataset", "synthetic", "--model",      "cnn",
                                                                 "--epochs",  "1",         "--batch-size", "64"};
    QTest::newRow("every field")
        << QByteArray(R"({"dataset": "cifar10", "model": "resnet18", "data_dir": "/d", "epochs": 2, "max_steps": 9,
                          "batch_size": 8, "lr": 0.1, "optimizer": "sgd", "backend": "nccl", "device": "cuda",
                          "extra_args": ["--amp", "bf16"]})")
        << QStringList{"--dataset",   "cifar10", "--model",      "resnet18", "--data-dir", "/d",  "--epochs",    "2",
                       "--max-steps", "9",       "--batch-size", "8",        "--lr",       "0.1", "--optimizer", "sgd",
                       "--backend",   "nccl",    "--device",     "cuda",     "--amp",      "bf16"};
    // The shortest text that reads back as the same double.
    QTest::newRow("small lr") << QByteArray(R"({"lr": 0.0003})")
                              << QStringList{"--dataset", "synthetic",    "--model", "cnn",  "--epochs",
                                             "1",         "--batch-size", "64",      "--lr", "3e-04"};
}

void tst_JobSpec::trainerArguments() {
    QFETCH(QByteArray, trainer);
    QFETCH(QStringList, args);
    const JobSpec job = parseOk(R"({"mode": "debug", "trainer": )" + trainer + "}");
    QCOMPARE(job.trainer.toArguments(), args);
}

void tst_JobSpec::exampleFilesParse_data() {
    QTest::addColumn<QString>("path");
    const QStringList files = QDir(kJobsDir).entryList({"*.json"}, QDir::Files, QDir::Name);
    QVERIFY(files.contains("example.json"));
    QVERIFY(files.contains("local-debug.json"));
    for (const QString& file : files)
        QTest::newRow(qPrintable(file)) << QDir(kJobsDir).filePath(file);
}

void tst_JobSpec::exampleFilesParse() {
    QFETCH(QString, path);
    const JobParseResult result = rankscope::loadJobFile(path);
    QVERIFY2(result.ok(), qPrintable(issueTexts(result.issues).join('\n')));
    const rankscope::RankPlan plan = rankscope::planRanks(*result.job, result.job->mode);
    QVERIFY(plan.worldSize > 0);
}

void tst_JobSpec::exampleFileContents() {
    const JobSpec example = rankscope::loadJobFile(kJobsDir + "/example.json").job.value_or(JobSpec{});
    QCOMPARE(example.mode, RunMode::Submit);
    QCOMPARE(example.nodes.size(), 2);
    QCOMPARE(example.nodes[0].name, QStringLiteral("gpu-a"));
    QCOMPARE(example.nodes[0].procs, 2); // from node_defaults' gpus
    QCOMPARE(example.nodes[1].port, 2222);
    QCOMPARE(rankscope::planRanks(example, RunMode::Submit).worldSize, 4);

    const JobSpec local = rankscope::loadJobFile(kJobsDir + "/local-debug.json").job.value_or(JobSpec{});
    QCOMPARE(local.mode, RunMode::Debug);
    QCOMPARE(local.debug.node, QStringLiteral("local"));
    QCOMPARE(local.debug.procs, 2);
    QCOMPARE(local.trainer.dataset, QStringLiteral("fashion-mnist"));
    QCOMPARE(local.trainer.model, QStringLiteral("cnn"));
    QCOMPARE(rankscope::planRanks(local, RunMode::Debug).worldSize, 2);
}

// Every value of the example, swapped for every kind of JSON value: a job or issues, never a crash.
void tst_JobSpec::neverCrashesOnAnyValue() {
    const QJsonObject example = QJsonDocument::fromJson(readFile(kJobsDir + "/example.json")).object();
    QVERIFY(!example.isEmpty());
    QList<QStringList> paths;
    collectPaths(example, {}, paths);
    const QList<QJsonValue> values = {QJsonValue::Null,
                                      true,
                                      -1,
                                      0,
                                      1.5,
                                      1e300,
                                      -1e300,
                                      "",
                                      "x",
                                      "local",
                                      QJsonArray(),
                                      QJsonObject(),
                                      QJsonArray{"--rank"},
                                      QJsonObject{{"a", 1}}};
    int rejected = 0;
    for (const QStringList& path : std::as_const(paths)) {
        for (const QJsonValue& value : values) {
            const QJsonObject mutated = replaced(example, path, value).toObject();
            const JobParseResult result = parse(QJsonDocument(mutated).toJson());
            QCOMPARE(result.ok(), result.job.has_value());
            QCOMPARE(result.ok(), result.issues.isEmpty());
            if (result.ok()) {
                for (const RunMode mode : {RunMode::Submit, RunMode::Debug})
                    QVERIFY(rankscope::planRanks(*result.job, mode).worldSize <= rankscope::kMaxWorldSize);
            } else {
                ++rejected;
            }
            for (const JobIssue& issue : result.issues)
                QVERIFY(!issue.message.isEmpty());
        }
    }
    QVERIFY(rejected > 0);
}

void tst_JobSpec::neverCrashesOnTruncatedText() {
    const QByteArray text = readFile(kJobsDir + "/example.json").trimmed();
    QVERIFY(!text.isEmpty());
    for (qsizetype size = 0; size < text.size(); ++size) {
        const JobParseResult result = parse(text.left(size));
        QVERIFY(!result.ok());
        QCOMPARE(result.issues.size(), 1);
    }
}

QTEST_GUILESS_MAIN(tst_JobSpec)
#include "tst_jobspec.moc"
