// SPDX-License-Identifier: MIT
// LogFilterProxy over a LogModel fed in batches from recorded runs, both under QAbstractItemModelTester.
#include "logtestdata.h"
#include "logview/logfilterproxy.h"
#include "logview/logmodel.h"

#include <QAbstractItemModelTester>
#include <QStandardItemModel>
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
    // Sorting a column sorts its raw value: rank 10 after rank 2, not before it as text ("gpu:10", "gpu:2") would.
    void sortsByRawValues() {
        Fixture f;
        f.model.setRankHosts({{2, QStringLiteral("gpu")}, {10, QStringLiteral("gpu")}});
        f.model.appendLines({{10, rankscope::RankStream::Out, 1, QStringLiteral("from ten"), 1795328000.0},
                             {2, rankscope::RankStream::Out, 1, QStringLiteral("from two"), 1795328000.1}});
        f.proxy.sort(LogModel::RankColumn);
        QCOMPARE(f.shownTexts(), (QStringList{"from two", "from ten"}));
    }

    // A new pattern applies as it is typed, also where the last one was valid too.
    void anotherPatternRefilters() {
        Fixture f;
        f.feed(test::recordedTrainerRun(QStringLiteral("ok")));
        f.proxy.setPattern(QStringLiteral("step 2/8 loss"));
        QCOMPARE(f.proxy.rowCount(), 2);
        f.proxy.setPattern(QStringLiteral("step 3/8 loss"));
        QCOMPARE(f.proxy.rowCount(), 2);
        for (const QString& text : f.shownTexts())
            QVERIFY2(text.contains(QLatin1String("step 3/8")), qPrintable(text));
    }

    // Each criterion says it filters while it does, and no longer once it is back at its default.
    void filteringOnlyWhileACriterionHides() {
        Fixture f;
        f.feed(test::recordedTrainerRun(QStringLiteral("ok")));
        QVERIFY(!f.proxy.isFiltering());
        f.proxy.setNcclOnly(true);
        QVERIFY(f.proxy.isFiltering());
        f.proxy.setNcclOnly(false);
        QVERIFY(!f.proxy.isFiltering());
        QCOMPARE(f.proxy.rowCount(), f.model.rowCount());
        f.proxy.setMinimumSeverity(LogSeverity::Info);
        QVERIFY(f.proxy.isFiltering());
        f.proxy.setMinimumSeverity(LogSeverity::Debug);
        QVERIFY(!f.proxy.isFiltering());
        f.proxy.setPattern(QStringLiteral("loss"));
        QVERIFY(f.proxy.isFiltering());
        f.proxy.setPattern({});
        QVERIFY(!f.proxy.isFiltering());
        QCOMPARE(f.proxy.rowCount(), f.model.rowCount());
    }

    // Any model with LogModel's roles filters alike (the collapsed view is one): by rank, severity from the
    // minimum up, NCCL and pattern.
    void anyModelWithTheRoles() {
        QStandardItemModel source(0, LogModel::ColumnCount);
        const auto add = [&source](int rank, LogSeverity severity, bool nccl, const QString& text) {
            QList<QStandardItem*> row;
            for (int column = 0; column < LogModel::ColumnCount; ++column)
                row << new QStandardItem(text);
            QStandardItem* item = row[LogModel::TextColumn];
            item->setData(rank, LogModel::RankRole);
            item->setData(int(severity), LogModel::SeverityRole);
            item->setData(nccl, LogModel::NcclRole);
            item->setData(text, LogModel::TextRole);
            source.appendRow(row);
        };
        add(0, LogSeverity::Info, false, QStringLiteral("epoch 1 step 3"));
        add(1, LogSeverity::Warning, true, QStringLiteral("NCCL WARN Call to connect returned Connection refused"));
        add(1, LogSeverity::Error, false, QStringLiteral("RuntimeError: NCCL error"));
        LogFilterProxy proxy;
        QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
        proxy.setSourceModel(&source);
        const auto shown = [&proxy] {
            QStringList texts;
            for (int row = 0; row < proxy.rowCount(); ++row)
                texts << proxy.index(row, LogModel::TextColumn).data(LogModel::TextRole).toString();
            return texts;
        };
        proxy.setMinimumSeverity(LogSeverity::Warning);
        QCOMPARE(shown(),
                 (QStringList{"NCCL WARN Call to connect returned Connection refused", "RuntimeError: NCCL error"}));
        proxy.setMinimumSeverity(LogSeverity::Debug);
        proxy.setRanks({0});
        QCOMPARE(shown(), QStringList{"epoch 1 step 3"});
        proxy.setRanks({});
        proxy.setNcclOnly(true);
        QCOMPARE(shown(), QStringList{"NCCL WARN Call to connect returned Connection refused"});
        proxy.setNcclOnly(false);
        proxy.setPattern(QStringLiteral("runtimeerror"));
        QCOMPARE(shown(), QStringList{"RuntimeError: NCCL error"});
    }
};

QTEST_MAIN(TestLogFilterProxy)
#include "tst_logfilterproxy.moc"
