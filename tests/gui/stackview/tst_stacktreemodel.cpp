// SPDX-License-Identifier: MIT
// The stack tree model over a real capture: the tree as StackTree orders it, the rank sets where the ranks
// part, the wait labels and colours, raw values under SortRole, and a clean reset for a new capture.
#include "stacksdata.h"
#include "stacktreemodel.h"

#include <QAbstractItemModelTester>
#include <QFont>
#include <QSignalSpy>
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

// A thread's stack, outermost frame first (as the tree shows it; the debuggers print it innermost first).
ThreadStack threadStack(const QStringList& outermostFirst, const QStringList& locations = {}) {
    ThreadStack stack;
    for (qsizetype i = outermostFirst.size() - 1; i >= 0; --i) {
        StackFrame frame;
        frame.function = outermostFirst[i];
        const QString location = locations.value(i);
        if (!location.isEmpty()) {
            frame.file = location.section(QLatin1Char(':'), 0, 0);
            frame.line = location.section(QLatin1Char(':'), 1).toInt();
        }
        stack.frames.append(frame);
    }
    return stack;
}

ProcessStacks process(const QVector<ThreadStack>& mainFirst) {
    ProcessStacks stacks;
    stacks.threads = mainFirst;
    return stacks;
}

// Three ranks: rank 0 is in its forward pass, ranks 1 and 2 are in `step` and part there, rank 1 to a collective's
// wait, rank 2 to a sleep. Each rank is at another line of `train`. Every rank has two helper threads in one loop,
// and rank 2 a third helper of its own, whose outermost frame only rank 2 has.
StackTree partingTree() {
    const ThreadStack loop1 = threadStack({"clone3", "start_thread", "runLoop"});
    const ThreadStack loop2 = threadStack({"clone3", "start_thread", "runLoop"});
    StackTree tree;
    tree.addRank(
        0, process({threadStack({"main", "train", "forward"}, {"main.cpp:10", "training.cpp:50"}), loop1, loop2}));
    tree.addRank(1, process({threadStack({"main", "train", "step", "c10d::ProcessGroupGloo::AsyncWork::wait"},
                                         {"main.cpp:10", "training.cpp:60", "training.cpp:200"}),
                             loop1, loop2}));
    tree.addRank(2, process({threadStack({"main", "train", "step", "std::this_thread::sleep_for"},
                                         {"main.cpp:10", "training.cpp:64", "training.cpp:210"}),
                             loop1, loop2, threadStack({"watchdog_thread", "poll"})}));
    return tree;
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

    // The tooltips say what the cells cut short: a frame's library, every place a frame was reached from, and
    // where ranks part, of how many ranks of the frame outside it (not of the whole capture).
    void tooltipsSayWhatCellsCutShort() {
        StackTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setTree(partingTree());
        const QModelIndex train = model.find(QStringLiteral("train"));
        QCOMPARE(at(train, StackTreeModel::LocationColumn).data().toString(),
                 QStringLiteral("training.cpp:50, training.cpp:60, training.cpp:64"));
        QCOMPARE(at(train, StackTreeModel::LocationColumn).data(Qt::ToolTipRole).toString(),
                 QStringLiteral("training.cpp:50\ntraining.cpp:60\ntraining.cpp:64"));
        QCOMPARE(at(train, StackTreeModel::LocationColumn).data(StackTreeModel::SortRole).toString(),
                 QStringLiteral("training.cpp:50"));
        QCOMPARE(at(train, StackTreeModel::RanksColumn).data(Qt::ToolTipRole).toString(), QStringLiteral("ranks 0-2"));
        const QModelIndex sleep = model.find(QStringLiteral("sleep_for"));
        QCOMPARE(ranksOf(sleep), QList<int>{2});
        QVERIFY(sleep.data(StackTreeModel::SplitRole).toBool());
        QCOMPARE(at(sleep, StackTreeModel::RanksColumn).data(Qt::ToolTipRole).toString(),
                 QStringLiteral("the ranks part here: 2 of the outer frame's 1-2"));

        StackTree unsymbolised;
        unsymbolised.addRank(3, parseStacks(recordedStacks(QStringLiteral("nccl-style-wrapped.gdb.txt"))));
        model.setTree(unsymbolised);
        bool libnccl = false;
        std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& parent) {
            for (int row = 0; row < model.rowCount(parent); ++row) {
                const QModelIndex child = model.index(row, 0, parent);
                if (model.node(child)->function == QLatin1String("??") &&
                    model.node(child)->library == QLatin1String("libnccl.so.2")) {
                    libnccl = true;
                    QCOMPARE(child.data(Qt::ToolTipRole).toString(), QStringLiteral("?? (libnccl.so.2)"));
                }
                walk(child);
            }
        };
        walk({});
        QVERIFY(libnccl);
    }

    // A split is where the set of ranks changes, below a frame they shared: not an outermost frame that only some
    // ranks have (a helper thread of one rank), and not where one rank's threads go two ways.
    void aSplitIsWhereRanksPart() {
        StackTreeModel model;
        model.setTree(partingTree());
        const QModelIndex watchdog = model.find(QStringLiteral("watchdog_thread"));
        QCOMPARE(ranksOf(watchdog), QList<int>{2});
        QCOMPARE(model.parent(watchdog), QModelIndex());
        QVERIFY(!watchdog.data(StackTreeModel::SplitRole).toBool());
        const QModelIndex loop = model.find(QStringLiteral("runLoop"));
        QCOMPARE(ranksOf(loop), (QList<int>{0, 1, 2}));
        QCOMPARE(at(loop, StackTreeModel::RanksColumn).data().toString(), QStringLiteral("0-2 · 6 threads"));
        const QModelIndex clone = model.find(QStringLiteral("clone3"));
        QCOMPARE(at(clone, StackTreeModel::RanksColumn).data().toString(), QStringLiteral("0-2 · 6 threads"));
        // One rank's threads parting is no split: the ranks stay the same.
        StackTree tree;
        for (int rank = 0; rank < 2; ++rank)
            tree.addRank(rank,
                         process({threadStack({"main", "train"}), threadStack({"clone3", "start_thread", "runLoop"}),
                                  threadStack({"clone3", "start_thread", "heartbeat"})}));
        model.setTree(tree);
        QCOMPARE(at(model.find(QStringLiteral("start_thread")), StackTreeModel::RanksColumn).data().toString(),
                 QStringLiteral("0-1 · 4 threads"));
        QCOMPARE(at(model.find(QStringLiteral("heartbeat")), StackTreeModel::RanksColumn).data().toString(),
                 QStringLiteral("0-1"));
        QVERIFY(!model.find(QStringLiteral("heartbeat")).data(StackTreeModel::SplitRole).toBool());
        QVERIFY(!model.find(QStringLiteral("runLoop")).data(StackTreeModel::SplitRole).toBool());
    }

    // How a split and a helper thread look: the split's Ranks cell alone is bold on a warm background; helper
    // threads are grey, main threads in the default colour.
    void splitsAndHelpersStandApart() {
        StackTreeModel model;
        model.setTree(partingTree());
        const QModelIndex sleep = model.find(QStringLiteral("sleep_for"));
        const QModelIndex ranks = at(sleep, StackTreeModel::RanksColumn);
        QVERIFY(ranks.data(Qt::FontRole).value<QFont>().bold());
        QVERIFY(ranks.data(Qt::BackgroundRole).value<QColor>().isValid());
        for (const int column :
             {int(StackTreeModel::FrameColumn), int(StackTreeModel::LocationColumn), int(StackTreeModel::WaitColumn)})
            QVERIFY2(!at(sleep, column).data(Qt::BackgroundRole).isValid(), qPrintable(QString::number(column)));
        QVERIFY(!at(model.find(QStringLiteral("train")), StackTreeModel::RanksColumn).data(Qt::FontRole).isValid());
        const QModelIndex helper = model.find(QStringLiteral("start_thread"));
        QCOMPARE(helper.data(Qt::ForegroundRole).value<QColor>(), QColor(0x61, 0x61, 0x61));
        QCOMPARE(at(helper, StackTreeModel::RanksColumn).data(Qt::ForegroundRole).value<QColor>(),
                 QColor(0x61, 0x61, 0x61));
        QVERIFY(!model.find(QStringLiteral("train")).data(Qt::ForegroundRole).isValid());
    }

    // Collectives' waits are red, whoever's (c10d, Gloo, NCCL); a sleep is orange, told apart from them.
    void waitColours() {
        const QColor red = waitKindColor(WaitKind::C10d);
        QVERIFY(red.isValid());
        QVERIFY(red.hue() < 15 || red.hue() > 345);
        QCOMPARE(waitKindColor(WaitKind::Gloo), red);
        QCOMPARE(waitKindColor(WaitKind::Nccl), red);
        const QColor sleep = waitKindColor(WaitKind::Sleep);
        QVERIFY2(sleep.hue() >= 15 && sleep.hue() <= 45, qPrintable(sleep.name()));
        QVERIFY(!waitKindColor(WaitKind::None).isValid());
    }

    // A capture replaces the last one as a reset, so that views drop their expanded rows and selection.
    void aCaptureIsAReset() {
        StackTreeModel model;
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        model.setTree(hungGlooTree());
        model.setTree(partingTree());
        model.clear();
        QCOMPARE(reset.size(), 3);
    }

    void headers() {
        StackTreeModel model;
        QStringList names;
        for (int column = 0; column < StackTreeModel::ColumnCount; ++column)
            names << model.headerData(column, Qt::Horizontal).toString();
        QCOMPARE(names, (QStringList{"Frame", "Ranks", "Location", "Waits for"}));
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
