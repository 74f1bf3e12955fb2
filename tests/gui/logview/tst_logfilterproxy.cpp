// SPDX-License-Identifier: MIT
// LogFilterProxy over a LogModel fed in batches from recorded runs, both under QAbstractItemModelTester.
#include "logtestdata.h"
#include "logview/logfilterproxy.h"
#include "logview/logmodel.h"

#include <QAbstractItemModelTester>
#include <QtTest>

using rankscope::LogSeverity;
using rankscope::RankLogLine;
using rankscope::gui::LogFilterProxy;
using rankscope::gui::LogModel;
namespace test = rankscope::test;

class TestLogFilterProxy final : public QObject {
    Q_OBJECT

private:
    struct Fixture {
        LogModel model;
        LogFilterProxy proxy;
        QAbstractItemModelTester modelTester{&model, QAbstractItemModelTester::FailureReportingMode::QtTest};
        QAbstractItemModelTester proxyTester{&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest};
        Fixture() { proxy.setSourceModel(&model); }
        void feed(const QVector<RankLogLine>& lines) {
            for (const auto& batch : test::intoBatches(lines, 0.02))
                model.appendLines(batch);
        }
        QStringList shownTexts() const {
            QStringList texts;
            for (int row = 0; row < proxy.rowCount(); ++row)
                texts << proxy.index(row, LogModel::TextColumn).data().toString();
            return texts;
        }
    };

    static int countOf(const QVector<RankLogLine>& lines, const std::function<bool(const RankLogLine&)>& keep) {
        return int(std::count_if(lines.cbegin(), lines.cend(), keep));
    }

private Q_SLOTS:
    void rankFilterShowsOnlyThatRank() {
        Fixture f;
        const auto run = test::recordedTrainerRun(QStringLiteral("ok"));
        const auto half = run.size() / 2;
        f.feed(run.mid(0, half));
        f.proxy.setRanks({1});
        QVERIFY(f.proxy.isFiltering());
        f.feed(run.mid(half)); // live batches while filtered
        QCOMPARE(f.model.rowCount(), run.size());
        QCOMPARE(f.proxy.rowCount(), countOf(run, [](const RankLogLine& l) { return l.rank == 1; }));
        QVERIFY(f.proxy.rowCount() > 0);
        for (int row = 0; row < f.proxy.rowCount(); ++row)
            QCOMPARE(f.proxy.index(row, 0).data(LogModel::RankRole).toInt(), 1);
        f.proxy.setRanks({});
        QCOMPARE(f.proxy.rowCount(), run.size());
        f.proxy.setRanks({0, 1, 7});
        QCOMPARE(f.proxy.rowCount(), run.size());
    }

    void severityFilter() {
        Fixture f;
        const auto run = test::recordedTrainerRun(QStringLiteral("fail"));
        f.feed(run);
        f.feed(test::readNcclSample(QStringLiteral("nccl/issues/857"), 1795329000.0));
        f.proxy.setMinimumSeverity(LogSeverity::Warning);
        QStringList texts = f.shownTexts();
        QCOMPARE(texts.filter(QStringLiteral("NCCL WARN")).size(), 3);
        f.proxy.setMinimumSeverity(LogSeverity::Error);
        texts = f.shownTexts();
        // Each rank's stderr error and its error event.
        QCOMPARE(texts.size(), 4);
        QVERIFY(texts.filter(QStringLiteral("[rank 1] error: injected failure")).size() == 1);
        QVERIFY(texts.filter(QStringLiteral("[rank 0] error: gradient all-reduce")).size() == 1);
        QCOMPARE(texts.filter(QStringLiteral("NCCL WARN")).size(), 0);
        f.proxy.setMinimumSeverity(LogSeverity::Debug);
        QCOMPARE(f.proxy.rowCount(), f.model.rowCount());
    }

    void regexFilter() {
        Fixture f;
        const auto run = test::recordedTrainerRun(QStringLiteral("ok"));
        f.feed(run);
        QSignalSpy errors(&f.proxy, &LogFilterProxy::patternErrorChanged);
        f.proxy.setPattern(QStringLiteral(R"(STEP [2-3]/8 loss)")); // case-insensitive
        const QStringList texts = f.shownTexts();
        QCOMPARE(texts.size(), 4); // steps 2 and 3 of both ranks
        for (const QString& text : texts)
            QVERIFY2(text.contains(QRegularExpression(QStringLiteral("step [23]/8"))), qPrintable(text));
        QCOMPARE(errors.count(), 0);
        QVERIFY(f.proxy.patternError().isEmpty());
    }

    void invalidRegexIsReportedAndNotApplied() {
        Fixture f;
        f.feed(test::recordedTrainerRun(QStringLiteral("ok")));
        f.proxy.setPattern(QStringLiteral("loss"));
        const int matching = f.proxy.rowCount();
        QVERIFY(matching > 0 && matching < f.model.rowCount());
        QSignalSpy errors(&f.proxy, &LogFilterProxy::patternErrorChanged);
        f.proxy.setPattern(QStringLiteral("loss ("));
        QCOMPARE(errors.count(), 1);
        QVERIFY(!f.proxy.patternError().isEmpty());
        QVERIFY2(f.proxy.patternError().contains(QStringLiteral("position")), qPrintable(f.proxy.patternError()));
        QCOMPARE(f.proxy.rowCount(), f.model.rowCount()); // not applied
        f.proxy.setPattern(QStringLiteral("loss (2\\.3)"));
        QCOMPARE(errors.count(), 2);
        QVERIFY(f.proxy.patternError().isEmpty());
        QVERIFY(f.proxy.rowCount() > 0 && f.proxy.rowCount() < matching);
    }

    void ncclOnly() {
        Fixture f;
        const auto nccl = test::readNcclSample(QStringLiteral("XPixelGroup"), 1795328000.002);
        f.feed(test::recordedTrainerRun(QStringLiteral("ok")) + nccl);
        f.proxy.setNcclOnly(true);
        QCOMPARE(f.proxy.rowCount(), nccl.size());
        for (const QString& text : f.shownTexts())
            QVERIFY(text.contains(QStringLiteral("ProcessGroupNCCL")));
        // Combined with a rank filter.
        f.proxy.setRanks({2});
        QCOMPARE(f.proxy.rowCount(), 1);
    }
};

QTEST_MAIN(TestLogFilterProxy)
#include "tst_logfilterproxy.moc"
