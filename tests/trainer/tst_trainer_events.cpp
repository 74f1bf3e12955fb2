// SPDX-License-Identifier: MIT
// Every line a real trainer run prints parses against the event schema, read by core's own parser (the
// one every front end uses): a clean 2-rank run with validation, checkpoints and heartbeats, and a run
// with an injected failure for the error events.
#include "core/eventstreamparser.h"
#include "core/runsummary.h"
#include "fixtures/sshdfixture.h"

#include <QProcess>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>

using namespace rankscope;

class TestTrainerEvents final : public QObject {
    Q_OBJECT

private:
    struct RankOutput {
        int exitCode = -1;
        QByteArray out;
        QByteArray err;
    };

    static QVector<RankOutput> runTwoRanks(const QStringList& extra) {
        const int port = test::freePort();
        QVector<QProcess*> processes;
        for (int rank = 0; rank < 2; ++rank) {
            auto* p = new QProcess;
            QStringList args{QStringLiteral("--rank"),        QString::number(rank),
                             QStringLiteral("--world-size"),  QStringLiteral("2"),
                             QStringLiteral("--init-method"), QStringLiteral("tcp://127.0.0.1:%1").arg(port),
                             QStringLiteral("--threads"),     QStringLiteral("1"),
                             QStringLiteral("--events"),      QStringLiteral("stdout")};
            p->start(QStringLiteral(RANKSCOPE_TRAINER_BIN), args + extra);
            processes.append(p);
        }
        QVector<RankOutput> outputs;
        for (QProcess* p : processes) {
            p->waitForFinished(180000);
            outputs.append({p->exitStatus() == QProcess::NormalExit ? p->exitCode() : -1, p->readAllStandardOutput(),
                            p->readAllStandardError()});
            delete p;
        }
        return outputs;
    }

    // Parses in small uneven chunks, as a live stream arrives; returns the decoded events.
    static QVector<TrainerEvent> parseStrictly(const QByteArray& stream) {
        EventStreamParser parser;
        ParsedBatch all;
        for (qsizetype at = 0; at < stream.size(); at += 97)
            all.append(parser.feed(QByteArrayView(stream).sliced(at, std::min<qsizetype>(97, stream.size() - at))));
        all.append(parser.finish());
        for (const DecodeError& e : all.errors)
            qWarning("line %lld: %s: %s", e.lineNumber, qPrintable(e.message), e.rawLine.constData());
        if (!all.errors.isEmpty())
            return {};
        // With --events stdout and progress on stderr, every stdout line is an event.
        if (!all.logLines.isEmpty())
            qWarning("unexpected non-event line: %s", qPrintable(all.logLines.first().text));
        return all.logLines.isEmpty() ? all.events : QVector<TrainerEvent>{};
    }

private Q_SLOTS:
    void cleanRunEmitsEveryEventTypeAndAllParse() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const auto ranks =
            runTwoRanks({QStringLiteral("--model"), QStringLiteral("cnn"), QStringLiteral("--epochs"),
                         QStringLiteral("2"), QStringLiteral("--synthetic-samples"), QStringLiteral("128"),
                         QStringLiteral("--batch-size"), QStringLiteral("16"), QStringLiteral("--checkpoint-dir"),
                         dir.path(), QStringLiteral("--heartbeat-s"), QStringLiteral("0.05")});
        RunSummary summary;
        QSet<TrainerEventType> types;
        for (int rank = 0; rank < 2; ++rank) {
            QCOMPARE(ranks[rank].exitCode, 0);
            const auto events = parseStrictly(ranks[rank].out);
            QVERIFY2(!events.isEmpty(), ranks[rank].err.constData());
            for (const TrainerEvent& e : events) {
                QCOMPARE(e.rank, rank);
                types.insert(e.type);
            }
            QCOMPARE(events.first().type, TrainerEventType::Heartbeat); // beats start before rendezvous ends
            QCOMPARE(events.last().type, TrainerEventType::End);
            summary.add(events);
        }
        for (const auto type : {TrainerEventType::Start, TrainerEventType::Step, TrainerEventType::Eval,
                                TrainerEventType::Checkpoint, TrainerEventType::Heartbeat, TrainerEventType::End})
            QVERIFY2(types.contains(type), qPrintable(QStringLiteral("missing type %1").arg(int(type))));
        QCOMPARE(summary.worldSize(), 2);
        for (const RankState& s : summary.ranks()) {
            QCOMPARE(s.status, RankStatus::FinishedOk);
            QCOMPARE(s.step, 8);
            QCOMPARE(s.evalEpoch, 2);
        }
        QCOMPARE(*summary.rank(0)->paramChecksum, *summary.rank(1)->paramChecksum);
    }

    void failedRunErrorEventsParse() {
        const auto ranks =
            runTwoRanks({QStringLiteral("--model"), QStringLiteral("mlp"), QStringLiteral("--synthetic-samples"),
                         QStringLiteral("64"), QStringLiteral("--batch-size"), QStringLiteral("8"),
                         QStringLiteral("--fail-at-step"), QStringLiteral("2"), QStringLiteral("--fail-rank"),
                         QStringLiteral("0")});
        RunSummary summary;
        for (int rank = 0; rank < 2; ++rank) {
            QCOMPARE(ranks[rank].exitCode, 1);
            const auto events = parseStrictly(ranks[rank].out);
            QVERIFY(!events.isEmpty());
            summary.add(events);
        }
        const RankState* failed = summary.rank(0);
        QVERIFY(failed);
        QCOMPARE(failed->status, RankStatus::Failed);
        QVERIFY(!failed->errors.isEmpty());
        QCOMPARE(failed->errors.first().kind, QStringLiteral("injected"));
        QCOMPARE(summary.rank(1)->errors.first().kind, QStringLiteral("collective"));
    }
};

QTEST_GUILESS_MAIN(TestTrainerEvents)
#include "tst_trainer_events.moc"
