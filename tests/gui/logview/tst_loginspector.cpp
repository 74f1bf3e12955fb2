// SPDX-License-Identifier: MIT
// The log inspector widget under the offscreen platform, fed batches from recorded runs.
#include "logtestdata.h"
#include "logview/logcollapsemodel.h"
#include "logview/logfilterproxy.h"
#include "logview/loginspector.h"
#include "logview/logmodel.h"

#include "core/runstore.h"
#include "core/streamlines.h"

#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QScrollBar>
#include <QTemporaryDir>
#include <QToolButton>
#include <QTreeView>
#include <QtTest>

#include <memory>

using rankscope::RankLogLine;
using rankscope::RankStream;
using rankscope::gui::LogCollapseModel;
using rankscope::gui::LogInspector;
using rankscope::gui::LogModel;
namespace test = rankscope::test;

class TestLogInspector final : public QObject {
    Q_OBJECT

private:
    static void feed(LogInspector& inspector, const QVector<RankLogLine>& lines, double tick = 0.02) {
        for (const auto& batch : test::intoBatches(lines, tick))
            inspector.model()->appendLines(batch);
    }
    // `count` plain lines of `rank`, numbered from `first`, one per 10 ms from `start`.
    static QVector<RankLogLine> progress(int rank, int first, int count, double start) {
        QVector<RankLogLine> lines;
        for (int i = 0; i < count; ++i)
            lines.append({rank, RankStream::Err, first + i,
                          QStringLiteral("[rank %1] line %2").arg(rank).arg(first + i), start + i * 0.01});
        return lines;
    }
    static bool isRowVisible(const QTreeView* view, const QModelIndex& index) {
        const QRect rect = view->visualRect(index);
        return rect.isValid() && view->viewport()->rect().intersects(rect);
    }
    static QModelIndex lastRow(const QTreeView* view) { return view->model()->index(view->model()->rowCount() - 1, 0); }

private Q_SLOTS:
    void rankFilterShowsOnlyThatRank() {
        LogInspector inspector;
        QAbstractItemModelTester tester(inspector.view()->model(),
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        const auto run = test::recordedTrainerRun(QStringLiteral("ok"));
        feed(inspector, run);
        inspector.focusRank(0);
        const QAbstractItemModel* shown = inspector.view()->model();
        const int rank0 =
            int(std::count_if(run.cbegin(), run.cend(), [](const RankLogLine& l) { return l.rank == 0; }));
        QCOMPARE(shown->rowCount(), rank0);
        for (int row = 0; row < shown->rowCount(); ++row)
            QCOMPARE(shown->index(row, 0).data(LogModel::RankRole).toInt(), 0);
        QCOMPARE(inspector.statusText(), QStringLiteral("%1 lines (%2 shown)").arg(run.size()).arg(rank0));
        QCOMPARE(inspector.findChild<QLineEdit*>(QStringLiteral("ranks"))->text(), QStringLiteral("0"));

        inspector.setRankFilter({0, 1});
        QCOMPARE(shown->rowCount(), run.size());
        inspector.focusRank(-1);
        QCOMPARE(shown->rowCount(), run.size());
    }

    void invalidRegexShownInRed() {
        LogInspector inspector;
        feed(inspector, test::recordedTrainerRun(QStringLiteral("ok")));
        inspector.show();
        auto* errorLabel = inspector.findChild<QLabel*>(QStringLiteral("patternError"));
        QVERIFY(errorLabel);
        inspector.setPattern(QStringLiteral("step (3"));
        QVERIFY(errorLabel->isVisible());
        QVERIFY2(errorLabel->text().contains(QStringLiteral("Invalid regular expression")),
                 qPrintable(errorLabel->text()));
        QCOMPARE(inspector.view()->model()->rowCount(), inspector.model()->rowCount());
        auto* patternEdit = inspector.findChild<QLineEdit*>(QStringLiteral("pattern"));
        QVERIFY(patternEdit);
        QCOMPARE(patternEdit->text(), QStringLiteral("step (3"));
        QVERIFY(patternEdit->styleSheet().contains(QStringLiteral("#b71c1c")));
        // Typing fixes it: applied after a short pause.
        patternEdit->setText(QStringLiteral("step (3)"));
        QTRY_VERIFY(!errorLabel->isVisible());
        QVERIFY(patternEdit->styleSheet().isEmpty());
        QCOMPARE(inspector.view()->model()->rowCount(), 2);
    }

    void firstErrorFindsEarliestAcrossRanks() {
        LogInspector inspector;
        inspector.resize(1000, 300);
        inspector.show();
        QVERIFY(QTest::qWaitForWindowExposed(&inspector));
        // Rank 0's streams arrive first, but rank 1 failed earlier: its lines come in a later batch
        // (a slow node) with earlier times.
        QVector<RankLogLine> run = test::recordedTrainerRun(QStringLiteral("fail"), 1000.0);
        QVector<RankLogLine> rank0;
        QVector<RankLogLine> rank1;
        for (auto line : run) {
            if (line.rank == 0)
                line.receivedAt += 1.0;
            (line.rank == 0 ? rank0 : rank1).append(line);
        }
        feed(inspector, progress(2, 1, 300, 990.0)); // enough lines to scroll
        inspector.model()->appendLines(rank0);
        inspector.model()->appendLines(rank1);
        inspector.focusRank(0); // hides rank 1: the jump clears it
        inspector.setMinimumSeverity(rankscope::LogSeverity::Error);
        QVERIFY(inspector.showFirstError());
        const QModelIndex current = inspector.view()->currentIndex();
        QVERIFY(current.isValid());
        QCOMPARE(current.data(LogModel::RankRole).toInt(), 1);
        QCOMPARE(current.siblingAtColumn(LogModel::TextColumn).data().toString(),
                 QStringLiteral("[rank 1] error: injected failure at step 3 (--fail-at-step)"));
        QVERIFY(inspector.filterProxy()->ranks().isEmpty());
        QVERIFY(!inspector.isFollowing()); // new lines must not scroll the error away
        QTRY_VERIFY(isRowVisible(inspector.view(), current));

        // In the collapsed tree too.
        inspector.setMinimumSeverity(rankscope::LogSeverity::Debug);
        inspector.setCollapsed(true);
        QVERIFY(inspector.showFirstError());
        QCOMPARE(inspector.view()->currentIndex().data(LogModel::RankRole).toInt(), 1);
        QCOMPARE(inspector.view()->currentIndex().data(LogModel::SeverityRole).toInt(),
                 int(rankscope::LogSeverity::Error));

        LogInspector empty;
        feed(empty, progress(0, 1, 5, 1.0));
        QVERIFY(!empty.showFirstError());
    }

    void followModeDoesNotFightTheUser() {
        LogInspector inspector;
        inspector.resize(900, 300);
        inspector.show();
        QVERIFY(QTest::qWaitForWindowExposed(&inspector));
        QTreeView* view = inspector.view();
        QScrollBar* bar = view->verticalScrollBar();
        auto* follow = inspector.findChild<QToolButton*>(QStringLiteral("follow"));
        QVERIFY(follow && follow->isChecked());

        // At the bottom: new rows scroll into view.
        feed(inspector, progress(0, 1, 200, 100.0));
        QTRY_VERIFY(bar->maximum() > 0);
        QTRY_COMPARE(bar->value(), bar->maximum());
        QTRY_VERIFY(isRowVisible(view, lastRow(view)));
        inspector.model()->appendLines(progress(1, 1, 50, 103.0));
        QTRY_VERIFY(isRowVisible(view, lastRow(view)));
        QVERIFY(inspector.isFollowing());

        // The user scrolls up: following stops, and new rows do not move the view.
        bar->setValue(bar->maximum() / 2);
        QVERIFY(!inspector.isFollowing());
        QVERIFY(!follow->isChecked());
        const int position = bar->value();
        const QModelIndex top = view->indexAt(QPoint(5, 5));
        for (int batch = 0; batch < 5; ++batch) {
            inspector.model()->appendLines(progress(0, 201 + batch * 20, 20, 110.0 + batch));
            QTest::qWait(20);
        }
        QCOMPARE(bar->value(), position);
        QCOMPARE(view->indexAt(QPoint(5, 5)), top);
        QVERIFY(!isRowVisible(view, lastRow(view)));

        // Back to the bottom: following again.
        bar->setValue(bar->maximum());
        QVERIFY(inspector.isFollowing());
        QVERIFY(follow->isChecked());
        inspector.model()->appendLines(progress(0, 301, 30, 120.0));
        QTRY_VERIFY(isRowVisible(view, lastRow(view)));

        // The Follow button does the same.
        bar->setValue(0);
        QVERIFY(!follow->isChecked());
        inspector.model()->appendLines(progress(0, 331, 30, 121.0));
        QTest::qWait(20);
        QCOMPARE(bar->value(), 0);
        follow->click();
        QVERIFY(inspector.isFollowing());
        QTRY_VERIFY(isRowVisible(view, lastRow(view)));
    }

    void collapsedViewShowsRankGroups() {
        LogInspector inspector;
        inspector.setCollapsed(true);
        QVERIFY(inspector.view()->model() == inspector.collapseModel());
        QAbstractItemModelTester tester(inspector.view()->model(),
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        feed(inspector, test::readNcclSample(QStringLiteral("nccl/issues/857"), 1700000000.0), 0.005);
        const QAbstractItemModel* shown = inspector.view()->model();
        QStringList groups;
        for (int row = 0; row < shown->rowCount(); ++row)
            if (shown->rowCount(shown->index(row, 0)) > 0)
                groups << shown->index(row, LogModel::TextColumn).data().toString();
        QVERIFY2(
            groups.contains(QStringLiteral("ranks 0-2: misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]")),
            qPrintable(groups.join(u'\n')));
        inspector.setCollapsed(false);
        QVERIFY(inspector.view()->model() == inspector.filterProxy());
        QCOMPARE(inspector.collapseModel()->rowCount(), 0); // not kept while not shown
    }

    void exportWritesTheRanksLines() {
        LogInspector inspector;
        const auto run = test::recordedTrainerRun(QStringLiteral("ok"));
        feed(inspector, run);
        inspector.focusRank(0); // the filter does not limit the export
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("rank1.log"));
        QString error;
        QVERIFY2(inspector.exportRankLog(1, path, &error), qPrintable(error));
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QStringList written = QString::fromUtf8(file.readAll()).split(u'\n', Qt::SkipEmptyParts);
        QStringList expected;
        for (int row = 0; row < inspector.model()->rowCount(); ++row)
            if (inspector.model()->line(row).rank == 1)
                expected << inspector.model()->line(row).text;
        QCOMPARE(written, expected);
        const int rank1 =
            int(std::count_if(run.cbegin(), run.cend(), [](const RankLogLine& l) { return l.rank == 1; }));
        QCOMPARE(written.size(), rank1);
        QVERIFY(written.contains(QStringLiteral("[rank 1] epoch 1/1 step 5/8 loss 2.2701 2046 img/s")));

        QVERIFY(!inspector.exportRankLog(1, QStringLiteral("/nonexistent/dir/rank1.log"), &error));
        QVERIFY2(error.contains(QStringLiteral("/nonexistent/dir/rank1.log")), qPrintable(error));
    }

    void statusSaysOlderLinesAreOnDisk() {
        LogInspector inspector;
        inspector.model()->setMaxRows(100);
        feed(inspector, progress(0, 1, 150, 1.0));
        QVERIFY2(inspector.statusText().startsWith(QStringLiteral("100 lines (100 shown)")),
                 qPrintable(inspector.statusText()));
        QVERIFY(inspector.statusText().contains(QStringLiteral("50 older lines are in the run store on disk")));
    }

    // The window let the oldest lines go; "Older lines" reads them back from the run store, in order, into the top
    // of the view, only for the ranks shown. They stay while the user reads and go when following resumes.
    void olderLinesAreReadBackFromTheRunStore() {
        QTemporaryDir dir;
        rankscope::RunStore store(dir.path());
        rankscope::RunRecord record;
        record.id = store.newRunId();
        QVERIFY(store.save(record));
        const QString run = record.id;
        QVector<RankLogLine> live;
        for (int rank = 0; rank < 2; ++rank) {
            const QVector<RankLogLine> lines = progress(rank, 1, 300, 1.0 + rank * 0.001);
            QByteArray bytes;
            for (const RankLogLine& line : lines)
                bytes += line.text.toUtf8() + '\n';
            QString error;
            QVERIFY2(store.appendStream(run, rank, RankStream::Err, 0, bytes, &error), qPrintable(error));
            live += lines;
        }
        std::stable_sort(live.begin(), live.end(),
                         [](const RankLogLine& a, const RankLogLine& b) { return a.receivedAt < b.receivedAt; });

        LogInspector inspector;
        QAbstractItemModelTester tester(inspector.view()->model(),
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        LogModel* model = inspector.model();
        model->setMaxRows(100);
        feed(inspector, live);
        QCOMPARE(model->rowCount(), 100);
        QCOMPARE(model->olderLines(), 500); // 250 + 250
        auto* button = inspector.findChild<QToolButton*>(QStringLiteral("olderLines"));
        QVERIFY(button);
        QVERIFY(!button->isEnabled()); // no source yet

        auto pager = std::make_shared<rankscope::RunLinePager>(&store, run);
        inspector.setOlderLinesSource([pager](const QVector<rankscope::RunLinePager::StreamStart>& streams, int count) {
            return pager->before(streams, count);
        });
        QVERIFY(button->isEnabled());
        QVERIFY(inspector.statusText().contains(QStringLiteral("500 older lines in the run store")));

        inspector.focusRank(1);
        QVERIFY(inspector.loadOlderLines(40) == 40);
        QVERIFY(!inspector.isFollowing());
        QCOMPARE(model->rowCount(), 140);
        QCOMPARE(model->firstLineHeld(1, RankStream::Err), 211);
        QCOMPARE(model->firstLineHeld(0, RankStream::Err), 251); // rank 0 is not shown: not read
        for (int row = 0; row < 40; ++row) {
            const LogModel::Line& line = model->line(row);
            QCOMPARE(line.rank, 1);
            QCOMPARE(line.lineNumber, 211 + row);
            QCOMPARE(line.text, QStringLiteral("[rank 1] line %1").arg(211 + row));
            QVERIFY(line.timeUnknown); // stored without arrival times
        }
        QCOMPARE(model->index(0, LogModel::TimeColumn).data().toString(), QStringLiteral("(stored)"));
        QCOMPARE(model->line(40).lineNumber, 251); // then what was held
        QVERIFY(!model->line(40).timeUnknown);

        // The button does the same, up to one window's worth of read-back lines: memory stays bounded.
        button->click();
        QCOMPARE(model->rowCount(), 200);
        QCOMPARE(model->firstLineHeld(1, RankStream::Err), 151);
        QCOMPARE(model->line(0).lineNumber, 151);
        QCOMPARE(model->line(99).lineNumber, 250);
        QVERIFY(!button->isEnabled());
        QVERIFY2(inspector.statusText().contains(QStringLiteral("as many as the view holds were read back")),
                 qPrintable(inspector.statusText()));
        // Live lines keep coming: below twice the window they push nothing out; at it, the oldest goes first.
        model->appendLines({{1, RankStream::Err, 301, QStringLiteral("[rank 1] line 301"), 9.0}});
        QCOMPARE(model->rowCount(), 200);
        QCOMPARE(model->line(0).lineNumber, 152);
        QCOMPARE(model->line(199).lineNumber, 301);

        // Following again lets the read-back lines go: the window is back to its size.
        inspector.setFollowing(true);
        QCOMPARE(model->rowCount(), 100);
        QCOMPARE(model->olderLines(), 501); // rank 0's 251 (its line 251 went for line 301), rank 1's 250
        QVERIFY(button->isEnabled());
    }

    // A run stored with its arrival times reads back as it was shown live: the ranks' older lines interleaved by
    // when they came, each with its clock time. Rank 0 speaks every 10 ms and rank 1 every 50 ms, so 40 lines of
    // each reach back 0.4 s and 2 s: rank 1's lines from before rank 0's oldest line read wait for the next read,
    // or the view would show 1.6 s in which rank 0 seems silent.
    void olderLinesComeBackInTheOrderTheyArrived() {
        QTemporaryDir dir;
        rankscope::RunStore store(dir.path());
        rankscope::RunRecord record;
        record.id = store.newRunId();
        QVERIFY(store.save(record));
        const QVector<RankLogLine> rank0 = progress(0, 1, 600, 1000.0);
        QVector<RankLogLine> rank1;
        for (int i = 0; i < 120; ++i)
            rank1.append(
                {1, RankStream::Err, i + 1, QStringLiteral("[rank 1] line %1").arg(i + 1), 1000.005 + i * 0.05});
        QVector<RankLogLine> live = rank0 + rank1;
        for (const RankLogLine& line : std::as_const(live)) { // one piece per line, as slow ranks' lines come
            QString error;
            QVERIFY2(store.appendStream(record.id, line.rank, line.stream,
                                        store.streamSize(record.id, line.rank, line.stream), line.text.toUtf8() + '\n',
                                        &error, nullptr, line.receivedAt),
                     qPrintable(error));
        }
        std::stable_sort(live.begin(), live.end(),
                         [](const RankLogLine& a, const RankLogLine& b) { return a.receivedAt < b.receivedAt; });

        LogInspector inspector;
        LogModel* model = inspector.model();
        model->setMaxRows(100);
        feed(inspector, live);
        const qint64 held0 = model->firstLineHeld(0, RankStream::Err);
        const qint64 held1 = model->firstLineHeld(1, RankStream::Err);
        QCOMPARE(held0 + held1, 720 - 100 + 2); // the window holds the newest 100 lines of both
        auto pager = std::make_shared<rankscope::RunLinePager>(&store, record.id);
        inspector.setOlderLinesSource([pager](const QVector<rankscope::RunLinePager::StreamStart>& streams, int count) {
            return pager->before(streams, count);
        });

        const int added = inspector.loadOlderLines(40);
        QCOMPARE(model->firstLineHeld(0, RankStream::Err), held0 - 40);
        const double oldest0 = rank0[int(held0 - 40 - 1)].receivedAt; // rank 0's oldest line read
        // Rank 1: only its lines from rank 0's oldest line read on, about 0.4 s of them, not all 40.
        qint64 first1 = held1;
        while (first1 > 1 && rank1[int(first1 - 2)].receivedAt >= oldest0)
            --first1;
        QCOMPARE(model->firstLineHeld(1, RankStream::Err), first1);
        QVERIFY2(held1 - first1 >= 6 && held1 - first1 <= 10, qPrintable(QString::number(held1 - first1)));
        QCOMPARE(added, int(40 + held1 - first1));
        // Interleaved as they came: the rows read back, then those held, are the live lines in live order.
        const auto liveFrom = std::find_if(live.cbegin(), live.cend(), [&](const RankLogLine& line) {
            return line.rank == 0 && line.lineNumber == held0 - 40;
        });
        for (int row = 0; row < model->rowCount(); ++row) {
            const LogModel::Line& line = model->line(row);
            const RankLogLine& expected = *(liveFrom + row);
            QCOMPARE(line.rank, expected.rank);
            QCOMPARE(line.lineNumber, expected.lineNumber);
            QVERIFY(!line.timeUnknown);
            QCOMPARE(line.receivedAt, expected.receivedAt);
        }
        QCOMPARE(model->index(0, LogModel::TimeColumn).data().toString(),
                 QDateTime::fromMSecsSinceEpoch(qint64(oldest0 * 1000)).toString(QStringLiteral("hh:mm:ss.zzz")));

        // The next read goes on from there with no line of either rank left out.
        inspector.loadOlderLines(40);
        QCOMPARE(model->firstLineHeld(0, RankStream::Err), held0 - 80);
        QCOMPARE(model->line(0).rank, 0);
        for (int row = 1; row < model->rowCount(); ++row)
            QVERIFY(model->line(row - 1).receivedAt <= model->line(row).receivedAt);
        QCOMPARE(model->rowCount(), 100 + 80 + int(held1 - model->firstLineHeld(1, RankStream::Err)));
    }

    // Not a check: RANKSCOPE_SCREENSHOT=path saves a picture of the inspector on recorded logs.
    // The toolbar's own controls drive the filters: typed ranks (an unfinished list keeps the last filter), the
    // severity chosen, the Ranks menu and the First error button.
    void theToolbarDrivesTheFilters() {
        LogInspector inspector;
        inspector.resize(1000, 300);
        inspector.show();
        QVERIFY(QTest::qWaitForWindowExposed(&inspector));
        const auto run = test::recordedTrainerRun(QStringLiteral("fail"));
        feed(inspector, run);
        auto* ranks = inspector.findChild<QLineEdit*>(QStringLiteral("ranks"));
        QVERIFY(ranks);
        QTest::keyClicks(ranks, QStringLiteral("1"));
        QCOMPARE(inspector.filterProxy()->ranks(), QSet<int>{1});
        QTest::keyClicks(ranks, QStringLiteral("-"));
        QCOMPARE(inspector.filterProxy()->ranks(), QSet<int>{1});
        QVERIFY(ranks->styleSheet().contains(QLatin1String("#b71c1c")));

        // The Ranks menu: "All ranks" unticked while a filter hides some, each rank ticked while shown.
        std::unique_ptr<QMenu> menu(inspector.rankMenu(nullptr));
        QList<QAction*> actions = menu->actions();
        QCOMPARE(actions.size(), 4); // All ranks, a separator, ranks 0 and 1
        QCOMPARE(actions[0]->text(), QStringLiteral("All ranks"));
        QVERIFY(!actions[0]->isChecked());
        QVERIFY(!actions[2]->isChecked());
        QVERIFY(actions[3]->isChecked());
        actions[2]->toggle(); // rank 0 too
        QCOMPARE(inspector.filterProxy()->ranks(), (QSet<int>{0, 1}));
        actions[0]->trigger();
        QVERIFY(inspector.filterProxy()->ranks().isEmpty());
        menu.reset(inspector.rankMenu(nullptr));
        QVERIFY(menu->actions().at(0)->isChecked());

        inspector.setMinimumSeverity(rankscope::LogSeverity::Error);
        QCOMPARE(inspector.filterProxy()->minimumSeverity(), rankscope::LogSeverity::Error);
        QVERIFY(inspector.view()->model()->rowCount() < inspector.model()->rowCount());
        for (int row = 0; row < inspector.view()->model()->rowCount(); ++row)
            QVERIFY(inspector.view()->model()->index(row, 0).data(LogModel::SeverityRole).toInt() >=
                    int(rankscope::LogSeverity::Error));

        QPushButton* firstError = nullptr;
        for (QPushButton* button : inspector.findChildren<QPushButton*>())
            if (button->text() == QLatin1String("First error"))
                firstError = button;
        QVERIFY(firstError);
        QVERIFY(!inspector.view()->currentIndex().isValid());
        QTest::mouseClick(firstError, Qt::LeftButton);
        QVERIFY(inspector.view()->currentIndex().isValid());
        QCOMPARE(inspector.view()->currentIndex().data(LogModel::SeverityRole).toInt(),
                 int(rankscope::LogSeverity::Error));
        // The error was shown: the severity the user chose stays.
        QCOMPARE(inspector.filterProxy()->minimumSeverity(), rankscope::LogSeverity::Error);
    }

    // In the collapsed tree, with a filter that hides the lines before it, the first error is found where the
    // filtered view shows it.
    void firstErrorInTheCollapsedFilteredTree() {
        LogInspector inspector;
        QVector<RankLogLine> run = test::recordedTrainerRun(QStringLiteral("fail"), 1000.0);
        feed(inspector, progress(2, 1, 50, 990.0) + run);
        inspector.setCollapsed(true);
        inspector.setMinimumSeverity(rankscope::LogSeverity::Error);
        QVERIFY(inspector.showFirstError());
        const QModelIndex current = inspector.view()->currentIndex();
        QCOMPARE(current.data(LogModel::SeverityRole).toInt(), int(rankscope::LogSeverity::Error));
        int earliest = -1;
        for (int row = 0; row < inspector.model()->rowCount(); ++row)
            if (inspector.model()->line(row).severity >= rankscope::LogSeverity::Error &&
                (earliest < 0 ||
                 inspector.model()->line(row).receivedAt < inspector.model()->line(earliest).receivedAt))
                earliest = row;
        QCOMPARE(current.siblingAtColumn(LogModel::TextColumn).data().toString(),
                 inspector.model()->line(earliest).text);
    }

    // Lines read back go above what the view showed; the view keeps the newest of them at its bottom, next to the
    // lines the user was reading, rather than jumping to the oldest.
    void readBackLinesEndAtTheBottomOfTheView() {
        LogInspector inspector;
        inspector.resize(1000, 300);
        inspector.show();
        QVERIFY(QTest::qWaitForWindowExposed(&inspector));
        inspector.model()->setMaxRows(100);
        feed(inspector, progress(0, 1, 300, 1.0));
        inspector.setOlderLinesSource([](const QVector<rankscope::RunLinePager::StreamStart>& streams, int count) {
            QVector<RankLogLine> lines;
            for (const auto& start : streams)
                for (qint64 n = std::max<qint64>(1, start.before - count); n < start.before; ++n)
                    lines.append(
                        {start.rank, start.stream, n, QStringLiteral("[rank %1] line %2").arg(start.rank).arg(n), 0.0});
            return lines;
        });
        QCOMPARE(inspector.loadOlderLines(60), 60);
        const QAbstractItemModel* shown = inspector.view()->model();
        QCOMPARE(shown->index(59, LogModel::TextColumn).data().toString(), QStringLiteral("[rank 0] line 200"));
        QTRY_VERIFY(isRowVisible(inspector.view(), shown->index(59, 0)));
        QVERIFY(!isRowVisible(inspector.view(), shown->index(0, 0)));
    }

    void screenshot() {
        const QString path = qEnvironmentVariable("RANKSCOPE_SCREENSHOT");
        if (path.isEmpty())
            QSKIP("set RANKSCOPE_SCREENSHOT=/tmp/loginspector.png to save one");
        LogInspector inspector;
        inspector.resize(1200, 520);
        inspector.model()->setRankHosts(
            {{0, QStringLiteral("node-a")}, {1, QStringLiteral("node-a")}, {2, QStringLiteral("node-b")}});
        feed(inspector, test::readNcclSample(QStringLiteral("nccl/issues/857"), 1795327990.0), 0.005);
        feed(inspector, test::recordedTrainerRun(QStringLiteral("fail")));
        inspector.setCollapsed(qEnvironmentVariableIsSet("RANKSCOPE_SCREENSHOT_COLLAPSED"));
        inspector.show();
        QVERIFY(QTest::qWaitForWindowExposed(&inspector));
        if (inspector.isCollapsed())
            inspector.view()->expandAll();
        QTest::qWait(50);
        QVERIFY(inspector.grab().save(path));
    }
};

QTEST_MAIN(TestLogInspector)
#include "tst_loginspector.moc"
