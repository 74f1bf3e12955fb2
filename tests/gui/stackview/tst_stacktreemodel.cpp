// SPDX-License-Identifier: MIT
// The stack tree model over a real capture: the tree as StackTree orders it, the rank sets where the ranks
// part, the wait labels and colours, raw values under SortRole, and a clean reset for a new capture.
#include "stacksdata.h"
#include "stacktreemodel.h"

#include <QAbstractItemModelTester>
#include <QFont>
#include <QTest>

#include <functional>

using namespace rankscope;
using namespace rankscope::gui;

namespace {

QList<int> ranksOf(const QModelIndex& index) {
    return index.data(StackTreeModel::RanksRole).value<QList<int>>();
}

QModelIndex at(const QModelIndex& index, int column) {
    return index.siblingAtColumn(column);
}

} // namespace

class tst_StackTreeModel final : public QObject {
    Q_OBJECT

private slots:
    void treeAsStackTreeOrdersIt() {
        StackTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model.rowCount(), 0);
        const StackTree tree = hungGlooTree();
        model.setTree(tree);
        QCOMPARE(model.rowCount(), int(tree.root().children.size()));
        QCOMPARE(model.columnCount(), int(StackTreeModel::ColumnCount));
        // The main threads lead: `main`, shared by both ranks, is the first row.
        const QModelIndex main = model.index(0, StackTreeModel::FrameColumn);
        QCOMPARE(main.data().toString(), QStringLiteral("main"));
        QCOMPARE(ranksOf(main), (QList<int>{0, 1}));
        QCOMPARE(at(main, StackTreeModel::RanksColumn).data().toString(), QStringLiteral("0-1"));
        QCOMPARE(at(main, StackTreeModel::LocationColumn).data().toString(), QStringLiteral("main.cpp:49"));
        QVERIFY(main.data(StackTreeModel::MainThreadRole).toBool());
        QVERIFY(!main.data(StackTreeModel::SplitRole).toBool());
        QCOMPARE(model.parent(main), QModelIndex());
        // Every node of the tree is reachable, with its parent.
        const QModelIndex inject = model.find(QStringLiteral("injectFaults"));
        QVERIFY(inject.isValid());
        QCOMPARE(model.node(inject), tree.find(QStringLiteral("injectFaults")).front());
        QVERIFY(model.parent(inject).isValid());
        QCOMPARE(model.index(inject.row(), 0, model.parent(inject)), inject);
    }

    void ranksPartAtTheSplit() {
        StackTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setTree(hungGlooTree());
        // Rank 1's path to its sleep: walk out to where it left rank 0's.
        QModelIndex split = model.find(QStringLiteral("injectFaults"));
        QCOMPARE(ranksOf(split), QList<int>{1});
        while (ranksOf(model.parent(split)) == QList<int>{1})
            split = model.parent(split);
        const QModelIndex shared = model.parent(split);
        QCOMPARE(ranksOf(shared), (QList<int>{0, 1}));
        QVERIFY(split.data(StackTreeModel::SplitRole).toBool());
        QVERIFY(!shared.data(StackTreeModel::SplitRole).toBool());
        const QModelIndex ranks = at(split, StackTreeModel::RanksColumn);
        QCOMPARE(ranks.data().toString(), QStringLiteral("1"));
        QVERIFY(ranks.data(Qt::BackgroundRole).value<QColor>().isValid());
        QVERIFY(ranks.data(Qt::ToolTipRole).toString().contains(QLatin1String("part here")));
        QVERIFY(!at(shared, StackTreeModel::RanksColumn).data(Qt::BackgroundRole).isValid());
        // Below the split, rank 1's frames are no new split: one rank all the way down.
        if (const QModelIndex inject = model.find(QStringLiteral("injectFaults")); inject != split)
            QVERIFY(!inject.data(StackTreeModel::SplitRole).toBool());
        // Rank 0 went the other way at the same frame.
        bool rank0Apart = false;
        for (int row = 0; row < model.rowCount(shared); ++row) {
            const QModelIndex sibling = model.index(row, 0, shared);
            if (ranksOf(sibling) == QList<int>{0}) {
                rank0Apart = true;
                QVERIFY(sibling.data(StackTreeModel::SplitRole).toBool());
            }
        }
        QVERIFY(rank0Apart);
    }

    void waitFramesLabelled_data() {
        QTest::addColumn<QString>("function");
        QTest::addColumn<QList<int>>("ranks");
        QTest::addColumn<int>("wait");
        QTest::addColumn<QString>("label");
        QTest::newRow("reducer") << "finalize_backward" << QList<int>{0} << int(WaitKind::C10d) << "c10d wait";
        QTest::newRow("gloo recv") << "waitRecv" << QList<int>{0} << int(WaitKind::Gloo) << "gloo wait";
        QTest::newRow("sleep") << "sleep_for" << QList<int>{1} << int(WaitKind::Sleep) << "sleep";
        QTest::newRow("not a wait") << "injectFaults" << QList<int>{1} << int(WaitKind::None) << "";
    }
    void waitFramesLabelled() {
        QFETCH(QString, function);
        QFETCH(int, wait);
        StackTreeModel model;
        model.setTree(hungGlooTree());
        const QModelIndex frame = model.find(function);
        QVERIFY(frame.isValid());
        QTEST(ranksOf(frame), "ranks");
        QCOMPARE(frame.data(StackTreeModel::WaitRole).toInt(), wait);
        const QModelIndex label = at(frame, StackTreeModel::WaitColumn);
        QTEST(label.data().toString(), "label");
        QCOMPARE(label.data(StackTreeModel::SortRole).toInt(), wait);
        if (wait == int(WaitKind::None)) {
            QVERIFY(!label.data(Qt::ForegroundRole).isValid());
            QVERIFY(frame.data(Qt::ForegroundRole).value<QColor>() != waitKindColor(WaitKind::C10d));
        } else {
            // The frame and its label in the wait's colour: red for a collective, orange for a sleep.
            QVERIFY(waitKindColor(WaitKind(wait)).isValid());
            QCOMPARE(label.data(Qt::ForegroundRole).value<QColor>(), waitKindColor(WaitKind(wait)));
            QCOMPARE(frame.data(Qt::ForegroundRole).value<QColor>(), waitKindColor(WaitKind(wait)));
            QVERIFY(label.data(Qt::FontRole).value<QFont>().bold());
        }
    }

    void helperThreadsCounted() {
        StackTreeModel model;
        model.setTree(hungGlooTree());
        const QModelIndex loop = model.find(QStringLiteral("ProcessGroupGloo::runLoop"));
        QVERIFY(loop.isValid());
        QCOMPARE(ranksOf(loop), (QList<int>{0, 1}));
        QVERIFY(!loop.data(StackTreeModel::MainThreadRole).toBool());
        // More threads than ranks: the count is said.
        QVERIFY2(at(loop, StackTreeModel::RanksColumn).data().toString().startsWith(QStringLiteral("0-1 · ")),
                 qPrintable(at(loop, StackTreeModel::RanksColumn).data().toString()));
        QVERIFY(at(loop, StackTreeModel::RanksColumn).data().toString().endsWith(QLatin1String(" threads")));
        QCOMPARE(at(loop, StackTreeModel::RanksColumn).data(StackTreeModel::SortRole).toInt(), 2);
        // Helper threads are kept after every main-thread path.
        const QModelIndex top = model.index(model.rowCount() - 1, 0);
        QVERIFY(!top.data(StackTreeModel::MainThreadRole).toBool());
    }

    void unsymbolisedFramesNameTheirLibrary() {
        StackTree tree;
        tree.addRank(3, parseStacks(recordedStacks(QStringLiteral("nccl-style-wrapped.gdb.txt"))));
        StackTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setTree(tree);
        const QModelIndex nccl = model.find(QStringLiteral("ncclGroupEnd"));
        QCOMPARE(at(nccl, StackTreeModel::WaitColumn).data().toString(), QStringLiteral("nccl wait"));
        QCOMPARE(at(nccl, StackTreeModel::RanksColumn).data().toString(), QStringLiteral("3"));
        bool libnccl = false;
        std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& parent) {
            for (int row = 0; row < model.rowCount(parent); ++row) {
                const QModelIndex child = model.index(row, 0, parent);
                libnccl |= child.data().toString() == QLatin1String("?? (libnccl.so.2)");
                walk(child);
            }
        };
        walk({});
        QVERIFY(libnccl);
    }

    void newCaptureReplacesTheOld() {
        StackTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setTree(hungGlooTree());
        StackTree sleeping;
        sleeping.addRank(5, parseStacks(recordedStacks(QStringLiteral("sleep.eu-stack.txt"))));
        model.setTree(sleeping);
        QVERIFY(!model.find(QStringLiteral("injectFaults")).isValid());
        QCOMPARE(ranksOf(model.index(0, 0)), QList<int>{5});
        model.clear();
        QCOMPARE(model.rowCount(), 0);
        QVERIFY(model.tree().isEmpty());
    }
};

QTEST_MAIN(tst_StackTreeModel)
#include "tst_stacktreemodel.moc"
