// SPDX-License-Identifier: MIT
// The Stacks dock: a capture shown with the main threads' paths open, a click on a single rank's frame
// asking for that rank's log, the context menu's per-rank entries, the capture button, per-rank errors, and
// a screenshot of the panel on the offscreen platform (/tmp/rankscope-stacks-panel.png) to look at.
#include "stackpanel.h"
#include "stacksdata.h"

#include <QAction>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTest>
#include <QTreeView>

using namespace rankscope;
using namespace rankscope::gui;

namespace {

void clickFrame(StackPanel& panel, const QModelIndex& index) {
    panel.view()->scrollTo(index);
    const QRect rect = panel.view()->visualRect(index);
    QVERIFY(rect.isValid());
    QTest::mouseClick(panel.view()->viewport(), Qt::LeftButton, {}, rect.center());
}

} // namespace

class tst_StackPanel final : public QObject {
    Q_OBJECT

private slots:
    void mainPathsOpenDownToTheirWaits() {
        StackPanel panel;
        panel.resize(900, 520);
        panel.setTree(hungGlooTree(), QStringLiteral("/store/runs/x/stacks-20261122T120000000Z.json"));
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        // Both ranks' waits are on screen without a click: rank 1's sleep and rank 0's reducer wait.
        for (const char* frame : {"sleep_for", "finalize_backward"}) {
            const QModelIndex index = panel.model()->find(QLatin1String(frame));
            QVERIFY(index.isValid());
            for (QModelIndex p = index.parent(); p.isValid(); p = p.parent())
                QVERIFY2(panel.view()->isExpanded(p), frame);
        }
        // Helper threads stay folded.
        const QModelIndex loop = panel.model()->find(QStringLiteral("ProcessGroupGloo::runLoop"));
        QVERIFY(!panel.view()->isExpanded(loop.parent()));
        QVERIFY(panel.summaryLabel()->text().contains(QLatin1String("2 rank(s)")));
        QVERIFY(panel.summaryLabel()->text().contains(QLatin1String("stacks-20261122T120000000Z.json")));
        QVERIFY(panel.errorsLabel()->isHidden());
    }

    // With the hang's culprit (rank 1) in focus, the frame where its main thread parts from rank 0's is selected
    // and scrolled into view (to the top, as far as the view scrolls), before or after the capture comes; without
    // it, rank 0's long reducer wait fills the view and rank 1's branch is below it.
    void hungRanksBranchIsWhereTheViewOpens() {
        const auto inView = [](const StackPanel& panel, const QModelIndex& index) {
            const QRect rect = panel.view()->visualRect(index);
            return rect.isValid() && panel.view()->viewport()->rect().contains(rect);
        };
        {
            StackPanel panel;
            panel.resize(900, 260);
            panel.show();
            QVERIFY(QTest::qWaitForWindowExposed(&panel));
            panel.setTree(hungGlooTree());
            QVERIFY(!inView(panel, panel.model()->find(QStringLiteral("sleep_for"))));
        }
        for (const bool focusFirst : {true, false}) {
            StackPanel panel;
            panel.resize(900, 260);
            panel.show();
            QVERIFY(QTest::qWaitForWindowExposed(&panel));
            if (focusFirst)
                panel.setFocusRanks({1});
            panel.setTree(hungGlooTree());
            if (!focusFirst)
                panel.setFocusRanks({1});
            const QModelIndex current = panel.view()->currentIndex();
            QVERIFY(current.isValid());
            QCOMPARE(current.data(StackTreeModel::RanksRole).value<QList<int>>(), QList<int>{1});
            QCOMPARE(current.parent().data(StackTreeModel::RanksRole).value<QList<int>>(), (QList<int>{0, 1}));
            QVERIFY(inView(panel, current));
            const QScrollBar* bar = panel.view()->verticalScrollBar();
            QVERIFY(panel.view()->visualRect(current).top() <= 2 || bar->value() == bar->maximum());
            QVERIFY(inView(panel, panel.model()->find(QStringLiteral("sleep_for"))));
        }
    }

    void clickOnASingleRankFrameAsksForItsLog() {
        StackPanel panel;
        panel.resize(900, 520);
        panel.setTree(hungGlooTree());
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QSignalSpy requested(&panel, &StackPanel::rankRequested);
        // A frame both ranks share names no one rank: nothing is asked.
        clickFrame(panel, panel.model()->index(0, StackTreeModel::FrameColumn));
        QCOMPARE(requested.size(), 0);
        // Rank 1's own frame: its log.
        clickFrame(panel, panel.model()->find(QStringLiteral("injectFaults")));
        QCOMPARE(requested.size(), 1);
        QCOMPARE(requested.takeFirst().at(0).toInt(), 1);
        // Rank 0's wait, clicked on its ranks column: rank 0.
        clickFrame(
            panel,
            panel.model()->find(QStringLiteral("finalize_backward")).siblingAtColumn(StackTreeModel::RanksColumn));
        QCOMPARE(requested.size(), 1);
        QCOMPARE(requested.takeFirst().at(0).toInt(), 0);
    }

    void contextMenuOffersEachRanksLog() {
        StackPanel panel;
        panel.setTree(hungGlooTree());
        QSignalSpy requested(&panel, &StackPanel::rankRequested);
        std::unique_ptr<QMenu> menu(panel.contextMenuFor(panel.model()->index(0, 0), nullptr));
        const QList<QAction*> actions = menu->actions();
        QCOMPARE(actions.size(), 2);
        QCOMPARE(actions[0]->text(), QStringLiteral("Show rank 0's log"));
        QCOMPARE(actions[1]->text(), QStringLiteral("Show rank 1's log"));
        actions[1]->trigger();
        QCOMPARE(requested.size(), 1);
        QCOMPARE(requested.takeFirst().at(0).toInt(), 1);
    }

    void captureButtonAsksTheWindow() {
        StackPanel panel;
        QSignalSpy requested(&panel, &StackPanel::captureRequested);
        panel.setCaptureEnabled(false);
        QTest::mouseClick(panel.captureButton(), Qt::LeftButton);
        QCOMPARE(requested.size(), 0);
        panel.setCaptureEnabled(true);
        QTest::mouseClick(panel.captureButton(), Qt::LeftButton);
        QCOMPARE(requested.size(), 1);
    }

    void rankErrorsListed() {
        StackPanel panel;
        StackTree tree = hungGlooTree();
        tree.addError(2, QStringLiteral("node-b: ptrace not permitted (kernel.yama.ptrace_scope = 2)"));
        tree.addError(3, QStringLiteral("node-b: the process is gone"));
        panel.setTree(tree);
        QVERIFY(!panel.errorsLabel()->isHidden());
        QCOMPARE(panel.errorsLabel()->text(),
                 QStringLiteral("rank 2: no stacks: node-b: ptrace not permitted (kernel.yama.ptrace_scope = 2)\n"
                                "rank 3: no stacks: node-b: the process is gone"));
        panel.addError(QStringLiteral("cannot write the stacks file"));
        QVERIFY(panel.errorsLabel()->text().startsWith(QLatin1String("cannot write the stacks file\n")));
        // A new run starts clean.
        panel.clear();
        QVERIFY(panel.errorsLabel()->isHidden());
        QCOMPARE(panel.model()->rowCount(), 0);
        QVERIFY(panel.summaryLabel()->text().startsWith(QLatin1String("No stacks captured")));
    }

    // A capture's errors are its own: the last capture's are gone, and a single one shows.
    void eachCaptureShowsItsOwnErrors() {
        StackPanel panel;
        panel.addError(QStringLiteral("cannot write the stacks file"));
        QVERIFY(!panel.errorsLabel()->isHidden());
        panel.setTree(hungGlooTree());
        QVERIFY(panel.errorsLabel()->isHidden());
        StackTree tree = hungGlooTree();
        tree.addError(1, QStringLiteral("node-b: the process is gone"));
        panel.setTree(tree);
        QVERIFY(!panel.errorsLabel()->isHidden());
        QCOMPARE(panel.errorsLabel()->text(), QStringLiteral("rank 1: no stacks: node-b: the process is gone"));
    }

    // A capture that came while the dock was hidden opens at the hung rank's branch once it is shown.
    void aHiddenPanelOpensAtTheBranchWhenShown() {
        StackPanel panel;
        panel.resize(900, 260);
        panel.setFocusRanks({1});
        panel.setTree(hungGlooTree());
        QTest::qWait(20); // the capture's own deferred scroll runs while the panel is hidden
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        const QModelIndex current = panel.view()->currentIndex();
        QCOMPARE(current.data(StackTreeModel::RanksRole).value<QList<int>>(), QList<int>{1});
        const QRect rect = panel.view()->visualRect(current);
        QVERIFY(rect.isValid() && panel.view()->viewport()->rect().contains(rect));
        const QModelIndex sleep = panel.model()->find(QStringLiteral("sleep_for"));
        QVERIFY(panel.view()->viewport()->rect().contains(panel.view()->visualRect(sleep)));
    }

    // A frame of many ranks lists the first 32 and says how many more there are.
    void contextMenuOfManyRanks() {
        StackTree tree;
        for (int rank = 0; rank < 40; ++rank)
            tree.addRank(rank, parseStacks(recordedStacks(QStringLiteral("gloo-hang-rank0.gdb.txt"))));
        StackPanel panel;
        panel.setTree(tree);
        std::unique_ptr<QMenu> menu(panel.contextMenuFor(panel.model()->index(0, 0), nullptr));
        const QList<QAction*> actions = menu->actions();
        QCOMPARE(actions.size(), 33);
        QCOMPARE(actions[31]->text(), QStringLiteral("Show rank 31's log"));
        QCOMPARE(actions[32]->text(), QStringLiteral("(8 more ranks)"));
        QVERIFY(!actions[32]->isEnabled());
    }

    void screenshot() {
        StackPanel panel;
        panel.resize(960, 560);
        StackTree tree = hungGlooTree();
        tree.addError(2, QStringLiteral("node-b: ptrace not permitted (kernel.yama.ptrace_scope = 2)"));
        panel.setTree(tree, QStringLiteral("/store/runs/x/stacks-20261122T120000000Z.json"));
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        const QString path = QStringLiteral("/tmp/rankscope-stacks-panel.png");
        QVERIFY(panel.grab().save(path));
        qInfo("screenshot: %s", qPrintable(path));
    }
};

QTEST_MAIN(tst_StackPanel)
#include "tst_stackpanel.moc"
