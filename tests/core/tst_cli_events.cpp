// SPDX-License-Identifier: MIT
// Runs the built rankscope-cli on the sample files and checks exit codes and output.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

namespace {

const QString kDataDir = QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/events/");

struct CliRun {
    int exitCode = -1;
    QString out;
    QString err;
};

CliRun runCli(const QStringList& arguments) {
    QProcess process;
    process.start(QStringLiteral(RANKSCOPE_CLI_PATH), arguments);
    if (!process.waitForFinished(30000) || process.exitStatus() != QProcess::NormalExit)
        return {};
    return {process.exitCode(), QString::fromUtf8(process.readAllStandardOutput()),
            QString::fromUtf8(process.readAllStandardError())};
}

QStringList dataFiles(const QStringList& names) {
    QStringList paths;
    for (const QString& name : names)
        paths << kDataDir + name;
    return paths;
}

bool hasLine(const QString& text, const QString& pattern) {
    return QRegularExpression(pattern, QRegularExpression::MultilineOption).match(text).hasMatch();
}

} // namespace

class tst_CliEvents final : public QObject {
    Q_OBJECT

private slots:
    void exitCodes_data();
    void exitCodes();
    void cleanRunTable();
    void decodeErrorsAreListed();
    void rankErrorsAreListed();
    void jsonOutput();
    void missingFileIsNamed();
    void jsonOfAFailedRankIsWhole();
    void aRankTheEventsSayLittleOf();
    void helpAndVersion();
};

void tst_CliEvents::exitCodes_data() {
    QTest::addColumn<QStringList>("arguments");
    QTest::addColumn<int>("exitCode");
    const QStringList events{"events"};
    QTest::newRow("clean") << events + dataFiles({"clean-rank0.events", "clean-rank1.events"}) << 0;
    QTest::newRow("clean, json") << events + dataFiles({"clean-rank0.events"}) + QStringList{"--json"} << 0;
    QTest::newRow("rank errors are not decode errors") << events + dataFiles({"error-with-logs.events"}) << 0;
    QTest::newRow("crlf, invalid utf8") << events + dataFiles({"crlf-invalid-utf8.events"}) << 0;
    QTest::newRow("malformed") << events + dataFiles({"malformed.events"}) << 1;
    QTest::newRow("malformed among clean") << events + dataFiles({"clean-rank0.events", "malformed.events"}) << 1;
    QTest::newRow("malformed, json") << events + dataFiles({"malformed.events"}) + QStringList{"--json"} << 1;
    QTest::newRow("no command") << QStringList{} << 2;
    QTest::newRow("unknown command") << QStringList{"frobnicate"} << 2;
    QTest::newRow("events without files") << events << 2;
    QTest::newRow("unknown option") << events + dataFiles({"clean-rank0.events"}) + QStringList{"--bogus"} << 2;
    QTest::newRow("json is an events option") << QStringList{"--json"} << 2;
    QTest::newRow("missing file") << events + dataFiles({"clean-rank0.events", "no-such.events"}) << 2;
    QTest::newRow("help") << QStringList{"--help"} << 0;
    QTest::newRow("version") << QStringList{"--version"} << 0;
}

void tst_CliEvents::exitCodes() {
    QFETCH(QStringList, arguments);
    QFETCH(int, exitCode);
    const CliRun run = runCli(arguments);
    QVERIFY2(run.exitCode == exitCode,
             qPrintable(QStringLiteral("exit %1, stderr: %2").arg(run.exitCode).arg(run.err)));
}

void tst_CliEvents::cleanRunTable() {
    const CliRun run = runCli(QStringList{"events"} + dataFiles({"clean-rank0.events", "clean-rank1.events"}));
    QCOMPARE(run.exitCode, 0);
    QVERIFY2(hasLine(run.out, R"(^\s*RANK\s+HOST\s+EPOCH\s+STEP\s+LOSS\s+IMG/S\s+VAL ACC\s+STATUS$)"),
             qPrintable(run.out));
    QVERIFY2(hasLine(run.out, R"(^\s*0\s+node-a\s+2\s+4\s+1\.125\s+1510\.5\s+0\.7500\s+ok$)"), qPrintable(run.out));
    QVERIFY2(hasLine(run.out, R"(^\s*1\s+node-b\s+2\s+4\s+1\.0625\s+1498\.4\s+0\.7500\s+ok$)"), qPrintable(run.out));
    QVERIFY2(hasLine(run.out, R"(^\s*\S*clean-rank0\.events\s+15\s+0\s+0$)"), qPrintable(run.out));
    QVERIFY2(hasLine(run.out, R"(^\s*\S*clean-rank1\.events\s+13\s+0\s+0$)"), qPrintable(run.out));
    // Numbers are right-aligned under their headers.
    QVERIFY2(run.out.contains("  RANK  HOST    EPOCH  STEP    LOSS   IMG/S  VAL ACC  STATUS\n"
                              "     0  node-a      2     4   1.125  1510.5   0.7500  ok\n"
                              "     1  node-b      2     4  1.0625  1498.4   0.7500  ok\n"),
             qPrintable(run.out));
    QVERIFY(run.out.contains("Ranks (world size 2)"));
    QVERIFY(!run.out.contains("Decode errors"));
    QVERIFY(run.err.isEmpty());
}

void tst_CliEvents::decodeErrorsAreListed() {
    const CliRun run = runCli(QStringList{"events"} + dataFiles({"malformed.events"}));
    QCOMPARE(run.exitCode, 1);
    const QString file = QRegularExpression::escape(kDataDir + "malformed.events");
    QVERIFY2(hasLine(run.out, file + R"(\s+3\s+6\s+5$)"), qPrintable(run.out));
    QVERIFY2(hasLine(run.out, "^  " + file + ":3: invalid JSON: "), qPrintable(run.out));
    QVERIFY2(run.out.contains(kDataDir + "malformed.events:5: step event: missing field 'loss'\n"),
             qPrintable(run.out));
    QVERIFY2(run.out.contains(kDataDir + "malformed.events:6: step event: field 'loss' must be a number\n"),
             qPrintable(run.out));
    QVERIFY2(run.out.contains(kDataDir + "malformed.events:4: step event: unsupported schema version \"2.0\""),
             qPrintable(run.out));
    QVERIFY2(run.out.contains(kDataDir + "malformed.events:7: heartbeat event: field 'step' must be a non-negative "
                                         "integer\n"),
             qPrintable(run.out));
    // The good events around the bad ones still count: step 4 is the last good step.
    QVERIFY2(hasLine(run.out, R"(^\s*0\s+node-a\s+1\s+4\s+1\.25\s+1510\.0\s+-\s+running$)"), qPrintable(run.out));
}

void tst_CliEvents::rankErrorsAreListed() {
    const CliRun run = runCli(QStringList{"events"} + dataFiles({"error-with-logs.events"}));
    QCOMPARE(run.exitCode, 0);
    QVERIFY2(hasLine(run.out, R"(^\s*1\s+node-b\s+1\s+2\s+1\.875\s+1480\.4\s+-\s+failed$)"), qPrintable(run.out));
    QVERIFY2(
        run.out.contains("rank 1: collective: allreduce #5 timed out after 60000 ms (rank 0 did not join) (fatal)"),
        qPrintable(run.out));
    QVERIFY2(run.out.contains("rank 1: checkpoint: checkpoint /scratch/run1/ckpt-epoch0.pt is truncated; starting "
                              "from scratch\n"),
             qPrintable(run.out));
    QVERIFY2(hasLine(run.out, R"(error-with-logs\.events\s+9\s+13\s+0$)"), qPrintable(run.out));
}

void tst_CliEvents::jsonOutput() {
    const CliRun run = runCli(QStringList{"events", "--json"} +
                              dataFiles({"clean-rank0.events", "crlf-invalid-utf8.events", "malformed.events"}));
    QCOMPARE(run.exitCode, 1);
    QJsonParseError error;
    const QJsonObject root = QJsonDocument::fromJson(run.out.toUtf8(), &error).object();
    QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(run.out));
    QCOMPARE(root["decode_error_count"].toInt(), 5);
    QCOMPARE(root["world_size"].toInt(), 2);

    const QJsonArray files = root["files"].toArray();
    QCOMPARE(files.size(), 3);
    QCOMPARE(files[0]["path"].toString(), kDataDir + "clean-rank0.events");
    QCOMPARE(files[0]["events"].toInt(), 15);
    QCOMPARE(files[1]["log_lines"].toInt(), 4);
    const QJsonArray decodeErrors = files[2]["decode_errors"].toArray();
    QCOMPARE(decodeErrors.size(), 5);
    QCOMPARE(decodeErrors[2]["line"].toInt(), 5);
    QCOMPARE(decodeErrors[2]["message"].toString(), QStringLiteral("step event: missing field 'loss'"));

    // All three files are rank 0; the crlf file's eval comes last in its stream, the malformed file's step last.
    const QJsonArray ranks = root["ranks"].toArray();
    QCOMPARE(ranks.size(), 1);
    const QJsonObject rank0 = ranks[0].toObject();
    QCOMPARE(rank0["rank"].toInt(), 0);
    QCOMPARE(rank0["host"].toString(), QStringLiteral("node-a"));
    QCOMPARE(rank0["step"].toInt(), 4);
    QCOMPARE(rank0["loss"].toDouble(), 1.25);
    QCOMPARE(rank0["val_loss"].toString(), QStringLiteral("inf")); // non-finite as on the wire
    QCOMPARE(rank0["val_accuracy"].toDouble(), 0.125);
    QCOMPARE(rank0["status"].toString(), QStringLiteral("ok"));
}

// Every field of a rank that failed, as its events gave it: errors with their time and whether fatal, the last
// step's throughput beside the whole run's, the run's wall time, the events counted; the file's log lines apart.
void tst_CliEvents::jsonOfAFailedRankIsWhole() {
    const CliRun run = runCli(QStringList{"events", "--json"} + dataFiles({"error-with-logs.events"}));
    QCOMPARE(run.exitCode, 0);
    const QJsonObject root = QJsonDocument::fromJson(run.out.toUtf8()).object();
    QCOMPARE(root["world_size"].toInt(), 2);
    const QJsonObject file = root["files"].toArray().at(0).toObject();
    QCOMPARE(file["events"].toInt(), 9);
    QCOMPARE(file["log_lines"].toInt(), 13);
    const QJsonObject expected{
        {"rank", 1},
        {"host", "node-b"},
        {"epoch", 1},
        {"step", 2},
        {"loss", 1.875},
        {"images_per_sec", 1490.5},
        {"val_loss", QJsonValue::Null},
        {"val_accuracy", QJsonValue::Null},
        {"end_images_per_sec", 1480.4},
        {"wall_s", 63.25},
        {"status", "failed"},
        {"events", 9},
        {"errors",
         QJsonArray{
             QJsonObject{{"time", 1732240801.75},
                         {"kind", "checkpoint"},
                         {"message", "checkpoint /scratch/run1/ckpt-epoch0.pt is truncated; starting from scratch"},
                         {"fatal", false}},
             QJsonObject{{"time", 1732240863.5},
                         {"kind", "collective"},
                         {"message", "allreduce #5 timed out after 60000 ms (rank 0 did not join)"},
                         {"fatal", true}}}}};
    QCOMPARE(root["ranks"].toArray(), QJsonArray{expected});
}

// A rank known by one step event, without its start: no host, epoch and step 0, a loss that is not a number. The
// table says "-" for what is not known, "nan" as the wire does; the JSON null and "nan". A file of log lines alone
// has no ranks to show.
void tst_CliEvents::aRankTheEventsSayLittleOf() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const auto write = [&dir](const QString& name, const QByteArray& bytes) {
        QFile file(dir.filePath(name));
        return file.open(QIODevice::WriteOnly) && file.write(bytes) == bytes.size() ? file.fileName() : QString();
    };
    const QString little = write(
        QStringLiteral("little.events"),
        "plain log line\n"
        "@rankscope {\"v\":\"1.0\",\"type\":\"step\",\"rank\":3,\"time\":1732240801.5,\"epoch\":0,\"step\":0,"
        "\"loss\":\"nan\",\"lr\":0.1,\"images_per_sec\":1470.0,\"step_ms\":42.5,\"data_ms\":3.25,\"forward_ms\":12.0,"
        "\"backward_ms\":20.5,\"comm_wait_ms\":4.5,\"optimizer_ms\":2.25}\n");
    const QString quiet = write(QStringLiteral("quiet.events"), "just a log line\n");
    QVERIFY(!little.isEmpty() && !quiet.isEmpty());

    CliRun run = runCli({"events", little});
    QCOMPARE(run.exitCode, 0);
    const QString files = QStringLiteral("Files\n"
                                         "  FILE%1  EVENTS  LOG LINES  DECODE ERRORS\n"
                                         "  %2       1          1              0\n")
                              .arg(QString(little.size() - 4, QLatin1Char(' ')), little);
    QCOMPARE(run.out, files + QStringLiteral("\n"
                                             "Ranks (world size 0)\n"
                                             "  RANK  HOST  EPOCH  STEP  LOSS   IMG/S  VAL ACC  STATUS\n"
                                             "     3  -         -     -   nan  1470.0        -  running\n"));

    run = runCli({"events", "--json", little});
    QCOMPARE(run.exitCode, 0);
    const QJsonObject rank = QJsonDocument::fromJson(run.out.toUtf8()).object()["ranks"].toArray().at(0).toObject();
    QVERIFY(rank["host"].isNull());
    QCOMPARE(rank["loss"].toString(), QStringLiteral("nan"));
    QCOMPARE(rank["epoch"].toInt(), 0);

    run = runCli({"events", quiet});
    QCOMPARE(run.exitCode, 0);
    QVERIFY2(run.out.endsWith(QLatin1String("\nRanks (world size 0)\n  (no events)\n")), qPrintable(run.out));
}

void tst_CliEvents::missingFileIsNamed() {
    const QString missing = kDataDir + "no-such.events";
    const CliRun run = runCli({"events", kDataDir + "clean-rank0.events", missing});
    QCOMPARE(run.exitCode, 2);
    QVERIFY2(run.err.contains("'" + missing + "'"), qPrintable(run.err));
    QVERIFY(run.out.isEmpty());
}

void tst_CliEvents::helpAndVersion() {
    const CliRun help = runCli({"--help"});
    QCOMPARE(help.exitCode, 0);
    QVERIFY2(help.out.contains("events FILE... [--json]"), qPrintable(help.out));
    const CliRun eventsHelp = runCli({"events", "--help"});
    QCOMPARE(eventsHelp.exitCode, 0);
    QVERIFY2(eventsHelp.out.contains("--json"), qPrintable(eventsHelp.out));
    const CliRun version = runCli({"--version"});
    QCOMPARE(version.exitCode, 0);
    QCOMPARE(version.out.trimmed(), QStringLiteral("rankscope-cli " RANKSCOPE_VERSION));
}

QTEST_GUILESS_MAIN(tst_CliEvents)
#include "tst_cli_events.moc"
