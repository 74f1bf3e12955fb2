// SPDX-License-Identifier: MIT
// GPU telemetry end to end, over SSH to a private sshd on loopback: the node's supervisor samples its GPUs with
// nvidia-smi into gpu.csv, the engine follows that file into the run store, parses it in core, and replays it
// when the run is opened again. Real supervisor, real trainer runs (Gloo on CPU), real files.
//
// This machine has no GPU, so nvidia-smi is the one stand-in: a small sh script, put first on the job's PATH
// (the job's env reaches the sampler as it reaches the ranks), that prints a real recorded nvidia-smi output
// (tests/data/nvidia-smi/) every 200 ms and notes how it was called.
#include "enginetestutil.h"
#include "fixtures/sshdfixture.h"

#include <QDir>
#include <QTemporaryDir>

#include <signal.h>

using namespace rankscope;
using namespace rankscope::test;

namespace {

const QString kTrainer = QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-trainer");
const QString kRecorded =
    QStringLiteral(RANKSCOPE_SOURCE_DIR "/tests/data/nvidia-smi/csv-forum-timestamp-busid-na.csv");
const QString kSupervisorQuery =
    QStringLiteral("--query-gpu=timestamp,index,name,pci.bus_id,utilization.gpu,memory.used,memory.total,"
                   "temperature.gpu,power.draw,power.limit --format=csv -lms 1000");

QVector<GpuSample> allSamples(const QSignalSpy& spy) {
    QVector<GpuSample> all;
    for (const auto& call : spy)
        all += call.at(2).value<QVector<GpuSample>>();
    return all;
}

bool groupAlive(const QString& pidFile) {
    const qint64 group = readAll(pidFile).trimmed().toLongLong();
    return group > 1 && ::kill(static_cast<pid_t>(-group), 0) == 0;
}

} // namespace

class tst_GpuTelemetry final : public QObject {
    Q_OBJECT

private:
    // `withNvidiaSmi`: the stand-in first on the job's PATH; without it the node has none (nor has this machine).
    QJsonObject job(const QString& name, int gpus, bool withNvidiaSmi = true) const {
        QJsonObject node = m_sshd.nodeJson(name, m_dir.filePath(QStringLiteral("work")), 1);
        if (gpus > 0)
            node.insert("gpus", gpus);
        const QJsonObject trainer{{"dataset", "synthetic"},
                                  {"model", "mlp"},
                                  {"epochs", 1},
                                  {"max_steps", 25},
                                  {"batch_size", 16},
                                  {"backend", "gloo"},
                                  {"device", "cpu"},
                                  {"extra_args", QJsonArray{"--slow-rank", "0", "--slow-ms", "120"}}};
        return QJsonObject{{"version", 1},
                           {"name", name},
                           {"mode", "submit"},
                           {"deploy", "binary"},
                           {"master_port", freePort()},
                           {"nodes", QJsonArray{node}},
                           {"trainer", trainer},
                           {"env", QJsonObject{{"PATH", (withNvidiaSmi ? m_fakeBin + QLatin1Char(':') : QString()) +
                                                            QStringLiteral("/usr/local/bin:/usr/bin:/bin")}}}};
    }
    remote::EngineOptions engineOptions() const {
        remote::EngineOptions options;
        options.knownHostsPath = m_sshd.knownHostsPath();
        options.sshConfigPath = QStringLiteral("none");
        options.localTrainer = kTrainer;
        return options;
    }
    static RunRecord waitForEnd(remote::RunEngine& engine, int timeoutMs) {
        QSignalSpy finished(&engine, &remote::RunEngine::finished);
        if (finished.isEmpty())
            finished.wait(timeoutMs);
        return finished.isEmpty() ? RunRecord() : finished.front().front().value<RunRecord>();
    }
    QStringList fakeCalls() const {
        const QString text = QString::fromUtf8(readAll(m_fakeBin + QStringLiteral("/calls"))).trimmed();
        return text.isEmpty() ? QStringList() : text.split(QLatin1Char('\n'));
    }

    SshdFixture m_sshd;
    QTemporaryDir m_dir;
    QString m_fakeBin;
    QStringList m_samplerPidFiles;

private slots:
    void initTestCase() {
        qRegisterMetaType<RunRecord>();
        QString error;
        QVERIFY2(m_sshd.start(&error), qPrintable(error));
        QVERIFY(QFileInfo(kTrainer).isExecutable());
        QVERIFY(QFileInfo(kRecorded).isReadable());
        m_fakeBin = m_dir.filePath(QStringLiteral("fake-bin"));
        QVERIFY(QDir().mkpath(m_fakeBin));
        // The recorded output's header once, then its data lines over and over, as `-lms` repeats them.
        const QByteArray script = "#!/bin/sh\n"
                                  "printf '%s\\n' \"$*\" >>'" +
                                  m_fakeBin.toUtf8() +
                                  "/calls'\n"
                                  "header=1\n"
                                  "while :; do\n"
                                  "    first=1\n"
                                  "    while IFS= read -r line; do\n"
                                  "        if [ \"$first\" = 1 ]; then\n"
                                  "            first=0\n"
                                  "            [ \"$header\" = 1 ] && printf '%s\\n' \"$line\"\n"
                                  "            continue\n"
                                  "        fi\n"
                                  "        printf '%s\\n' \"$line\"\n"
                                  "    done <'" +
                                  kRecorded.toUtf8() +
                                  "'\n"
                                  "    header=0\n"
                                  "    sleep 0.2\n"
                                  "done\n";
        QFile fake(m_fakeBin + QStringLiteral("/nvidia-smi"));
        QVERIFY(fake.open(QIODevice::WriteOnly) && fake.write(script) == script.size());
        fake.close();
        QVERIFY(fake.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner | QFile::ReadGroup |
                                    QFile::ExeGroup | QFile::ReadOther | QFile::ExeOther));
    }

    // A sampler the supervisor failed to end must not outlive the test: end it by its recorded process group.
    void cleanupTestCase() {
        for (const QString& pidFile : std::as_const(m_samplerPidFiles))
            if (groupAlive(pidFile))
                ::kill(static_cast<pid_t>(-readAll(pidFile).trimmed().toLongLong()), SIGKILL);
    }

    void gpuNodeSamplesAreStreamedStoredAndReplayed() {
        RunStore store(m_dir.filePath(QStringLiteral("store-gpu")));
        remote::RunEngine engine(&store, engineOptions());
        QSignalSpy samples(&engine, &remote::RunEngine::gpuSamples);
        QString error;
        QVERIFY2(engine.launch(jobFrom(job(QStringLiteral("gpu-node"), 1)), RunMode::Submit, &error),
                 qPrintable(error));
        const RunRecord record = waitForEnd(engine, 120000);
        QCOMPARE(record.state, QStringLiteral("finished"));
        const QString runDir = record.nodes.front().runDir;
        m_samplerPidFiles << runDir + QStringLiteral("/gpu.pid");

        // The supervisor ran nvidia-smi with its query, from the job's PATH.
        QCOMPARE(fakeCalls(), QStringList{kSupervisorQuery});
        QCOMPARE(readAll(runDir + QStringLiteral("/gpus")), QByteArray("1\n"));

        // Samples arrived live, with the recorded values, named after the node.
        const QVector<GpuSample> live = allSamples(samples);
        QVERIFY2(live.size() >= 3, qPrintable(QString::number(live.size())));
        for (const auto& call : std::as_const(samples)) {
            QCOMPARE(call.at(0).toInt(), 0);
            QCOMPARE(call.at(1).toString(), m_sshd.host());
        }
        const double recordedTime =
            static_cast<double>(QDateTime(QDate(2022, 6, 30), QTime(15, 11, 58, 136), Qt::UTC).toMSecsSinceEpoch()) /
            1000.0;
        for (const GpuSample& sample : live) {
            QCOMPARE(sample.node, QStringLiteral("gpu-node"));
            QCOMPARE(sample.index, 0);
            QCOMPARE(sample.busId, QStringLiteral("00000000:01:00.0"));
            QCOMPARE(sample.utilizationPercent, 5.0);
            QCOMPARE(sample.temperatureC, 39.0);
            QCOMPARE(sample.powerWatts, 3.29);
            QVERIFY(!GpuSample::has(sample.memoryUsedMiB)); // not in the recorded output
            QCOMPARE(sample.time, recordedTime);
        }

        // The store holds the node's file byte for byte, up to what was read before the run ended (the
        // sampler may write a last line between the final read and its end).
        const QByteArray stored = readAll(store.nodeStreamPath(record.id, 0, QStringLiteral("gpu.csv")));
        const QByteArray onNode = readAll(runDir + QStringLiteral("/gpu.csv"));
        QVERIFY(!stored.isEmpty());
        QVERIFY(onNode.startsWith(stored));
        QVERIFY(stored.startsWith(readAll(kRecorded)));
        NvidiaSmiParser parser;
        QCOMPARE(parser.feed(stored).size() + parser.finish().size(), live.size());

        // The sampler ended with the run: its process group is gone.
        QTRY_VERIFY_WITH_TIMEOUT(!groupAlive(runDir + QStringLiteral("/gpu.pid")), 10000);

        // Opening the stored run replays the same samples.
        remote::RunEngine offline(&store, engineOptions());
        QSignalSpy replayed(&offline, &remote::RunEngine::gpuSamples);
        QVERIFY2(offline.open(record.id, &error), qPrintable(error));
        const QVector<GpuSample> again = allSamples(replayed);
        QCOMPARE(again.size(), live.size());
        QCOMPARE(again.front().node, QStringLiteral("gpu-node"));
        QCOMPARE(again.back().powerWatts, 3.29);
    }

    // A node declared with GPUs whose PATH has no nvidia-smi: the sampler's reason reaches the front ends (live,
    // and again when the stored run is opened) instead of a silent "no GPUs".
    void gpuNodeWithoutNvidiaSmiSaysWhy() {
        RunStore store(m_dir.filePath(QStringLiteral("store-nosmi")));
        remote::RunEngine engine(&store, engineOptions());
        QSignalSpy errors(&engine, &remote::RunEngine::gpuTelemetryError);
        QSignalSpy samples(&engine, &remote::RunEngine::gpuSamples);
        QString error;
        QVERIFY2(engine.launch(jobFrom(job(QStringLiteral("bare-node"), 1, false)), RunMode::Submit, &error),
                 qPrintable(error));
        const RunRecord record = waitForEnd(engine, 120000);
        QCOMPARE(record.state, QStringLiteral("finished"));
        QVERIFY(samples.isEmpty());
        QCOMPARE(errors.size(), 1);
        QCOMPARE(errors.front().at(0).toInt(), 0);
        QCOMPARE(errors.front().at(1).toString(), m_sshd.host());
        const QString message = errors.front().at(2).toString();
        QVERIFY2(message.startsWith(QStringLiteral("supervisor: no nvidia-smi on PATH (/usr/local/bin:/usr/bin:/bin)")),
                 qPrintable(message));
        QCOMPARE(readAll(store.nodeStreamPath(record.id, 0, QStringLiteral("gpu.err"))),
                 readAll(record.nodes.front().runDir + QStringLiteral("/gpu.err")));

        remote::RunEngine offline(&store, engineOptions());
        QSignalSpy replayed(&offline, &remote::RunEngine::gpuTelemetryError);
        QVERIFY2(offline.open(record.id, &error), qPrintable(error));
        QCOMPARE(replayed.size(), 1);
        QCOMPARE(replayed.front().at(2).toString(), message);
    }

    void nodeWithoutGpusStartsNoSampler() {
        const qsizetype callsBefore = fakeCalls().size();
        RunStore store(m_dir.filePath(QStringLiteral("store-cpu")));
        remote::RunEngine engine(&store, engineOptions());
        QSignalSpy samples(&engine, &remote::RunEngine::gpuSamples);
        QString error;
        QVERIFY2(engine.launch(jobFrom(job(QStringLiteral("cpu-node"), 0)), RunMode::Submit, &error),
                 qPrintable(error));
        const RunRecord record = waitForEnd(engine, 120000);
        QCOMPARE(record.state, QStringLiteral("finished"));
        const QString runDir = record.nodes.front().runDir;
        for (const char* name : {"gpus", "gpu.cmd", "gpu.pid", "gpu.csv", "gpu.err"})
            QVERIFY2(!QFileInfo::exists(runDir + QLatin1Char('/') + QLatin1String(name)), name);
        QCOMPARE(fakeCalls().size(), callsBefore);
        QVERIFY(samples.isEmpty());
        QVERIFY(!QFileInfo::exists(store.nodeStreamPath(record.id, 0, QStringLiteral("gpu.csv"))));
    }
};

QTEST_GUILESS_MAIN(tst_GpuTelemetry)
#include "tst_gputelemetry.moc"
