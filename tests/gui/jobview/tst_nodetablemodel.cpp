// SPDX-License-Identifier: MIT
// The node table: the job's nodes and their pre-flight results, edited in place; nodes added by hand or from
// a hostfile.
#include "clusterpanel.h"
#include "nodedialogs.h"
#include "nodetablemodel.h"

#include "core/jobspec.h"

#include <QAbstractItemModelTester>
#include <QDialogButtonBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include <utility>

using namespace rankscope;
using rankscope::gui::ClusterPanel;
using rankscope::gui::NodeDialog;
using rankscope::gui::NodeTableModel;
using rankscope::gui::SshHostsDialog;

namespace {

JobSpec exampleJob() {
    const JobParseResult result = loadJobFile(QStringLiteral(RANKSCOPE_JOBS_DIR "/example.json"));
    return result.job.value_or(JobSpec());
}

// A node the probe reached: what a healthy GPU node reports.
remote::NodeCheck healthyCheck(int index) {
    remote::NodeCheck check;
    check.index = index;
    check.name = QStringLiteral("gpu-b");
    check.host = QStringLiteral("gpu-b");
    check.reachable = true;
    check.report = parseProbeOutput("@@rankscope-probe-begin v1\nos=Debian GNU/Linux 12 (bookworm)\narch=x86_64\n"
                                    "disk_free_kb=52428800\nnvidia_smi=ok\ngpu=GPU 0: A100\ngpu=GPU 1: A100\n"
                                    "torch=system|2.1.0|yes|/usr/lib/x86_64-linux-gnu/cmake/Torch\n"
                                    "iface=lo 127.0.0.1/8 up\niface=eth0 10.0.0.12/24 up\n@@rankscope-probe-end\n");
    check.verdicts = {{remote::VerdictLevel::Ok, QStringLiteral("gpus"), QStringLiteral("2 GPUs"), QString()}};
    return check;
}

remote::NodeCheck refusedCheck(int index) {
    remote::NodeCheck check;
    check.index = index;
    check.name = QStringLiteral("gpu-a");
    check.host = QStringLiteral("gpu-a.example.org");
    check.errorKind = remote::TransportErrorKind::Refused;
    check.errorMessage = QStringLiteral("connection to gpu-a.example.org:22 refused");
    check.verdicts = {{remote::VerdictLevel::Fail, QStringLiteral("connect"),
                       QStringLiteral("cannot connect to gpu-a.example.org: refused"),
                       QStringLiteral("start sshd on the node or fix the port")}};
    return check;
}

QString cell(const NodeTableModel& model, int row, int column, int role = Qt::DisplayRole) {
    return model.data(model.index(row, column), role).toString();
}

} // namespace

class tst_NodeTableModel final : public QObject {
    Q_OBJECT

private slots:
    void showsNodesAndTheirChecks() {
        NodeTableModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setJob(exampleJob());
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.columnCount(), int(NodeTableModel::ColumnCount));
        QCOMPARE(cell(model, 0, NodeTableModel::Name), QStringLiteral("gpu-a"));
        QCOMPARE(cell(model, 1, NodeTableModel::Port), QStringLiteral("2222"));
        QCOMPARE(model.data(model.index(1, NodeTableModel::Port), NodeTableModel::SortRole).toInt(), 2222);
        QCOMPARE(model.data(model.index(0, NodeTableModel::Port), NodeTableModel::SortRole).toInt(), 0);
        QCOMPARE(cell(model, 0, NodeTableModel::State), QStringLiteral("unknown"));

        model.setChecking();
        QCOMPARE(model.state(0), NodeTableModel::NodeState::Checking);
        QCOMPARE(cell(model, 1, NodeTableModel::State), QStringLiteral("checking"));

        model.setCheckResult(refusedCheck(0));
        model.setCheckResult(healthyCheck(1));
        QCOMPARE(model.state(0), NodeTableModel::NodeState::Failed);
        QCOMPARE(model.data(model.index(0, NodeTableModel::State), NodeTableModel::SortRole).toInt(),
                 int(NodeTableModel::NodeState::Failed));
        QVERIFY(cell(model, 0, NodeTableModel::Cause).startsWith(QLatin1String("refused: ")));
        QCOMPARE(cell(model, 0, NodeTableModel::Fix), QStringLiteral("start sshd on the node or fix the port"));
        QVERIFY(cell(model, 0, NodeTableModel::Summary).isEmpty());

        QCOMPARE(model.state(1), NodeTableModel::NodeState::Ready);
        const QString summary = cell(model, 1, NodeTableModel::Summary);
        for (const char* part : {"Debian GNU/Linux 12 (bookworm) x86_64", "2 GPU", "LibTorch 2.1.0", "50.0 GB free",
                                 "eth0 10.0.0.12", "NCCL_SOCKET_IFNAME=eth0"})
            QVERIFY2(summary.contains(QLatin1String(part)), qPrintable(summary));
        QVERIFY(cell(model, 1, NodeTableModel::Cause).isEmpty());

        model.setCheckResult(refusedCheck(7)); // not a row: ignored
        model.clearChecks();
        QCOMPARE(model.state(0), NodeTableModel::NodeState::Unknown);
    }

    void editingANodeEditsTheJob() {
        NodeTableModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setJob(exampleJob());
        model.setChecking();
        model.setCheckResult(healthyCheck(1));
        QSignalSpy edited(&model, &NodeTableModel::nodesEdited);
        QVERIFY(model.flags(model.index(1, NodeTableModel::Port)) & Qt::ItemIsEditable);
        QVERIFY(!(model.flags(model.index(1, NodeTableModel::State)) & Qt::ItemIsEditable));

        QVERIFY(model.setData(model.index(1, NodeTableModel::Gpus), 4));
        QCOMPARE(model.job().nodes[1].gpus, 4);
        QCOMPARE(model.state(1), NodeTableModel::NodeState::Ready); // same connection: the result stays
        QVERIFY(model.setData(model.index(1, NodeTableModel::Port), 2022));
        QCOMPARE(model.job().nodes[1].port, 2022);
        QCOMPARE(model.state(1), NodeTableModel::NodeState::Unknown); // another server: the result is stale
        QVERIFY(!model.setData(model.index(1, NodeTableModel::Port), QStringLiteral("abc")));
        QCOMPARE(model.job().nodes[1].port, 2022);
        QCOMPARE(edited.size(), 2);

        NodeSpec extra;
        extra.host = QStringLiteral("gpu-c");
        extra.name = QStringLiteral("gpu-c");
        model.addNodes({extra, extra});
        QCOMPARE(model.rowCount(), 4);
        model.removeNodes({3, 0, 3});
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.job().nodes[0].name, QStringLiteral("gpu-b"));
        QVERIFY(model.removeRows(0, 2));
        QCOMPARE(model.rowCount(), 0);
        QCOMPARE(edited.size(), 5);
    }

    void hostfileImportAddsNodes() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("hostfile"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("# the workers\nworker-1 slots=4\nworker-2   # no slots\ngpu-a.example.org slots=2\n");
        file.close();

        ClusterPanel panel;
        panel.setJob(exampleJob());
        QSignalSpy edited(&panel, &ClusterPanel::nodesEdited);
        QString error;
        QVERIFY2(panel.importHostfile(path, &error), qPrintable(error));
        NodeTableModel* model = panel.model();
        QCOMPARE(model->rowCount(), 4); // gpu-a.example.org is already a node
        QCOMPARE(model->job().nodes[2].host, QStringLiteral("worker-1"));
        QCOMPARE(model->job().nodes[2].gpus, 4);
        QCOMPARE(cell(*model, 2, NodeTableModel::Procs), QStringLiteral("4"));
        QCOMPARE(model->job().nodes[3].name, QStringLiteral("worker-2"));
        QCOMPARE(cell(*model, 3, NodeTableModel::Procs), QStringLiteral("1"));
        QCOMPARE(edited.size(), 1);
        QCOMPARE(panel.statusText(), QStringLiteral("2 node(s) imported from %1").arg(path));

        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
        file.write("worker-9\nworker-10 slots=x\n");
        file.close();
        QVERIFY(!panel.importHostfile(path, &error));
        QVERIFY2(error.contains(QLatin1String("hostfile:2")), qPrintable(error));
        QCOMPARE(model->rowCount(), 5); // the good line is kept
        QVERIFY(!panel.importHostfile(dir.filePath(QStringLiteral("absent")), &error));
        QVERIFY(error.contains(QLatin1String("absent")));
    }

    void nodeDialogValidatesLikeTheJob() {
        const JobSpec job = exampleJob();
        NodeSpec node;
        node.host = QStringLiteral("gpu-c");
        node.name = QStringLiteral("gpu-c");
        QVERIFY(NodeDialog::nodeIssues(job, node).isEmpty());
        node.port = 70000;
        node.gpus = 2;
        node.procs = 3;
        const QVector<JobIssue> issues = NodeDialog::nodeIssues(job, node);
        QStringList paths;
        for (const JobIssue& issue : issues)
            paths << issue.path;
        QCOMPARE(paths, (QStringList{"nodes[2].port", "nodes[2].procs"}));
        node = NodeSpec();
        node.host = QStringLiteral("gpu-b"); // the name of an existing node
        const JobIssue duplicate = NodeDialog::nodeIssues(job, node).value(0);
        QVERIFY2(duplicate.path.startsWith(QLatin1String("nodes[2].")) && duplicate.message.contains("duplicate"),
                 qPrintable(duplicate.toString()));

        NodeDialog dialog(job);
        auto* ok = dialog.findChild<QLineEdit*>(QStringLiteral("host"));
        QVERIFY(ok);
        QVERIFY(!dialog.issues().isEmpty()); // no host yet
        QTest::keyClicks(ok, QStringLiteral("gpu-d"));
        QVERIFY(dialog.issues().isEmpty());
        QCOMPARE(dialog.node().name, QStringLiteral("gpu-d"));
    }

    // Every field of the dialog reaches the node, trimmed; what is wrong is said under the form by field, and OK
    // waits until nothing is.
    void nodeDialogFields() {
        NodeDialog dialog(exampleJob());
        const auto edit = [&dialog](const char* name) { return dialog.findChild<QLineEdit*>(QLatin1String(name)); };
        const auto spin = [&dialog](const char* name) { return dialog.findChild<QSpinBox*>(QLatin1String(name)); };
        auto* problems = dialog.findChild<QLabel*>(QStringLiteral("problems"));
        QPushButton* ok = dialog.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
        QVERIFY(!ok->isEnabled());
        QVERIFY2(problems->text().startsWith(QLatin1String("host: ")), qPrintable(problems->text()));
        QVERIFY(!problems->isHidden());
        // Unset numbers say what applies instead.
        QCOMPARE(spin("port")->text(), QStringLiteral("from ssh config, else 22"));
        QCOMPARE(spin("gpus")->text(), QStringLiteral("none (CPU node)"));

        QTest::keyClicks(edit("host"), QStringLiteral("  gpu-d  "));
        QTest::keyClicks(edit("name"), QStringLiteral(" trainer-d "));
        QTest::keyClicks(edit("user"), QStringLiteral(" alice "));
        QTest::keyClicks(edit("identity_file"), QStringLiteral(" ~/.ssh/id_gpu "));
        QTest::keyClicks(edit("address"), QStringLiteral(" 10.0.0.4 "));
        edit("work_dir")->setText(QStringLiteral(" /scratch/rs "));
        spin("port")->setValue(2222);
        spin("gpus")->setValue(4);
        spin("procs")->setValue(2);
        QVERIFY(ok->isEnabled());
        QVERIFY(problems->isHidden());
        const NodeSpec node = dialog.node();
        QCOMPARE(node.host, QStringLiteral("gpu-d"));
        QCOMPARE(node.name, QStringLiteral("trainer-d"));
        QCOMPARE(node.user, QStringLiteral("alice"));
        QCOMPARE(node.identityFile, QStringLiteral("~/.ssh/id_gpu"));
        QCOMPARE(node.address, QStringLiteral("10.0.0.4"));
        QCOMPARE(node.workDir, QStringLiteral("/scratch/rs"));
        QCOMPARE(node.port, 2222);
        QCOMPARE(node.gpus, 4);
        QCOMPARE(node.procs, 2);

        // Each field, once wrong, is named and blocks OK; a port out of range is the job's error, not the spin box's.
        spin("port")->setValue(70000);
        QVERIFY(!ok->isEnabled());
        QVERIFY2(problems->text().startsWith(QLatin1String("port: ")), qPrintable(problems->text()));
        spin("port")->setValue(22);
        spin("procs")->setValue(5);
        QVERIFY2(problems->text().startsWith(QLatin1String("procs: ")), qPrintable(problems->text()));
        spin("procs")->setValue(0);
        edit("work_dir")->clear();
        QVERIFY2(problems->text().startsWith(QLatin1String("work_dir: ")), qPrintable(problems->text()));
        QVERIFY(!ok->isEnabled());
    }

    // The config's aliases to tick: those already nodes are shown, greyed, and never chosen; nothing is ticked at
    // first.
    void sshHostsDialogOffersNewHosts() {
        SshHostsDialog dialog({QStringLiteral("gpu-b"), QStringLiteral("gpu-c"), QStringLiteral("gpu-d")},
                              {QStringLiteral("gpu-a.example.org"), QStringLiteral("gpu-b")});
        auto* list = dialog.findChild<QListWidget*>();
        QCOMPARE(list->count(), 3);
        QCOMPARE(list->item(0)->text(), QStringLiteral("gpu-b (already a node)"));
        QVERIFY(!(list->item(0)->flags() & Qt::ItemIsEnabled));
        QVERIFY(list->item(1)->flags() & Qt::ItemIsUserCheckable);
        QVERIFY(dialog.chosen().isEmpty());
        list->item(2)->setCheckState(Qt::Checked);
        list->item(0)->setCheckState(Qt::Checked); // not a choice, whatever its state
        QCOMPARE(dialog.chosen(), QStringList{QStringLiteral("gpu-d")});
        QVERIFY(dialog.findChild<QLabel*>()->text().startsWith(QLatin1String("Tick the hosts")));

        SshHostsDialog none({}, {});
        QCOMPARE(none.findChild<QLabel*>()->text(), QStringLiteral("No host aliases found."));
        QVERIFY(none.chosen().isEmpty());
    }

    // Another list of nodes is another cluster: no row keeps a result found on a node it no longer shows. The same
    // nodes (the job's other settings edited) keep theirs.
    void otherNodesStartUnchecked() {
        NodeTableModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        JobSpec job = exampleJob();
        model.setJob(job);
        model.setChecking();
        model.setCheckResult(refusedCheck(0));
        job.trainer.epochs += 1;
        model.setJob(job);
        QCOMPARE(model.state(0), NodeTableModel::NodeState::Failed);
        std::swap(job.nodes[0], job.nodes[1]);
        model.setJob(job);
        QCOMPARE(model.state(0), NodeTableModel::NodeState::Unknown);
        QVERIFY(!model.checkResult(0));
        QVERIFY(cell(model, 0, NodeTableModel::Cause).isEmpty());
    }

    // A new pre-flight, or clearing it, forgets what the last one found: no cause or fix of an old result shows
    // beside "checking" or "unknown".
    void aNewCheckForgetsTheLast() {
        NodeTableModel model;
        model.setJob(exampleJob());
        model.setChecking();
        model.setCheckResult(refusedCheck(0));
        model.setChecking();
        QVERIFY(!model.checkResult(0));
        QVERIFY(cell(model, 0, NodeTableModel::Cause).isEmpty());
        QVERIFY(cell(model, 0, NodeTableModel::Fix).isEmpty());
        model.setCheckResult(refusedCheck(0));
        model.clearChecks();
        QVERIFY(!model.checkResult(0));
        QVERIFY(cell(model, 0, NodeTableModel::Cause).isEmpty());
        QVERIFY(cell(model, 0, NodeTableModel::Fix).isEmpty());
    }

    // Each state by name and on every column of its own row; the fix shown is the failure's, also when a warning
    // came first.
    void statesAndTheirFixes() {
        NodeTableModel model;
        model.setJob(exampleJob());
        model.setChecking();
        remote::NodeCheck warned = healthyCheck(1);
        warned.verdicts = {{remote::VerdictLevel::Ok, QStringLiteral("gpus"), QStringLiteral("2 GPUs"), QString()},
                           {remote::VerdictLevel::Warn, QStringLiteral("disk"), QStringLiteral("1.2 GB free on gpu-b"),
                            QStringLiteral("free disk space")}};
        model.setCheckResult(refusedCheck(0));
        model.setCheckResult(warned);
        QCOMPARE(model.state(1), NodeTableModel::NodeState::Warning);
        QCOMPARE(cell(model, 1, NodeTableModel::State), QStringLiteral("warning"));
        QCOMPARE(cell(model, 0, NodeTableModel::State), QStringLiteral("failed"));
        QCOMPARE(cell(model, 1, NodeTableModel::Fix), QStringLiteral("free disk space"));
        for (int column = 0; column < NodeTableModel::ColumnCount; ++column) {
            QCOMPARE(model.index(0, column).data(NodeTableModel::StateRole).toInt(),
                     int(NodeTableModel::NodeState::Failed));
            QCOMPARE(model.index(1, column).data(NodeTableModel::StateRole).toInt(),
                     int(NodeTableModel::NodeState::Warning));
        }
        warned.verdicts.append({remote::VerdictLevel::Fail, QStringLiteral("torch"),
                                QStringLiteral("no LibTorch on gpu-b"), QStringLiteral("install libtorch-dev")});
        model.setCheckResult(warned);
        QCOMPARE(cell(model, 1, NodeTableModel::State), QStringLiteral("failed"));
        QCOMPARE(cell(model, 1, NodeTableModel::Cause), QStringLiteral("no LibTorch on gpu-b"));
        QCOMPARE(cell(model, 1, NodeTableModel::Fix), QStringLiteral("install libtorch-dev"));
    }

    // What the user may type into (name, host, port, user, GPUs, procs) and what the pre-flight fills in; rows are
    // numbered, columns named.
    void editableColumnsAndHeaders() {
        NodeTableModel model;
        model.setJob(exampleJob());
        for (int column = 0; column < NodeTableModel::ColumnCount; ++column)
            QCOMPARE(bool(model.flags(model.index(0, column)) & Qt::ItemIsEditable), column <= NodeTableModel::Procs);
        QCOMPARE(model.headerData(NodeTableModel::Summary, Qt::Horizontal).toString(), QStringLiteral("Pre-flight"));
        QCOMPARE(model.headerData(0, Qt::Vertical).toInt(), 1);
        QCOMPARE(model.headerData(1, Qt::Vertical).toInt(), 2);
    }

    // A node added by its host alone is named by it; removing a row twice in one request removes it once.
    void unnamedNodesAndRepeatedRemovals() {
        NodeTableModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setJob(exampleJob());
        NodeSpec bare;
        bare.host = QStringLiteral("10.0.0.7");
        model.addNodes({bare, bare});
        QCOMPARE(cell(model, 2, NodeTableModel::Name), QStringLiteral("10.0.0.7"));
        model.removeNodes({2, 2});
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.job().nodes[2].host, QStringLiteral("10.0.0.7"));
    }

    // An edit repaints its row and drops the result when it changes where or as whom the node is reached (the user
    // too); a number column takes numbers only.
    void editsAndTheResult() {
        NodeTableModel model;
        model.setJob(exampleJob());
        model.setChecking();
        model.setCheckResult(healthyCheck(1));
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        QVERIFY(model.setData(model.index(1, NodeTableModel::Name), QStringLiteral("gpu-b-renamed")));
        QCOMPARE(model.state(1), NodeTableModel::NodeState::Ready);
        QCOMPARE(changed.size(), 1);
        QCOMPARE(changed.at(0).at(0).toModelIndex(), model.index(1, 0));
        QCOMPARE(changed.at(0).at(1).toModelIndex(), model.index(1, NodeTableModel::ColumnCount - 1));
        QVERIFY(model.setData(model.index(1, NodeTableModel::User), QStringLiteral("someone-else")));
        QCOMPARE(model.state(1), NodeTableModel::NodeState::Unknown);
        QVERIFY(!model.checkResult(1));
        const int gpus = model.job().nodes[1].gpus;
        QVERIFY(!model.setData(model.index(1, NodeTableModel::Gpus), QStringLiteral("abc")));
        QCOMPARE(model.job().nodes[1].gpus, gpus);
        QVERIFY(!model.setData(model.index(1, NodeTableModel::Procs), QStringLiteral("two")));
    }
};

QTEST_MAIN(tst_NodeTableModel)
#include "tst_nodetablemodel.moc"
