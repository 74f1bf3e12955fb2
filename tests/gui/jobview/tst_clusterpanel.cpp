// SPDX-License-Identifier: MIT
// The cluster panel's pre-flight against a real sshd on loopback (tests/remote/fixtures): rows go through
// "checking" to their result with the real cause, and an unknown host key is asked in a dialog.
#include "clusterpanel.h"
#include "fixtures/sshdfixture.h"
#include "hostkeyprompter.h"
#include "nodetablemodel.h"

#include "core/jobspec.h"

#include <QApplication>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>
#include <QtTest>

#include <atomic>
#include <thread>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace rankscope;
using rankscope::gui::ClusterPanel;
using rankscope::gui::HostKeyPrompter;
using rankscope::gui::NodeTableModel;
using rankscope::test::SshdFixture;

namespace {

constexpr int kCheckTimeoutMs = 90000;

// A loopback port nothing listens on: bound by the kernel's choice, then released.
int closedPort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    ::close(fd);
    return ntohs(address.sin_port);
}

// PRETTY_NAME of this machine, read here rather than through the probe.
QString prettyOsName() {
    QFile file(QStringLiteral("/etc/os-release"));
    if (!file.open(QIODevice::ReadOnly))
        return {};
    for (const QByteArray& line : file.readAll().split('\n'))
        if (line.startsWith("PRETTY_NAME="))
            return QString::fromUtf8(line.mid(12)).remove(QLatin1Char('"'));
    return {};
}

QString cell(const NodeTableModel& model, int row, int column) {
    return model.data(model.index(row, column)).toString();
}

} // namespace

class tst_ClusterPanel final : public QObject {
    Q_OBJECT

private:
    SshdFixture m_sshd;
    QTemporaryDir m_dir;

    QJsonObject node(const QString& name, int port) const {
        QJsonObject json = m_sshd.nodeJson(name, m_dir.filePath(QStringLiteral("work/") + name));
        json.insert("port", port);
        return json;
    }
    JobSpec job(const QJsonArray& nodes) const {
        const QJsonObject json{{"name", "panel"},
                               {"master_port", 20000 + static_cast<int>(QCoreApplication::applicationPid() % 20000)},
                               {"nodes", nodes},
                               {"trainer", QJsonObject{{"backend", "gloo"}, {"device", "cpu"}}}};
        const JobParseResult result = parseJob(QJsonDocument(json).toJson());
        if (!result.ok())
            qWarning("job: %s", qPrintable(result.issues.value(0).toString()));
        return result.job.value_or(JobSpec());
    }
    remote::ConnectionOptions options(const QString& knownHosts) const {
        remote::ConnectionOptions o;
        o.knownHostsPath = knownHosts;
        o.sshConfigPath = QStringLiteral("none");
        o.connectTimeout = std::chrono::seconds(5);
        return o;
    }
    // "SHA256:..." of the fixture's host key, by ssh-keygen rather than by the code under test.
    QString hostKeyFingerprint() const {
        const QString pub = m_dir.filePath(QStringLiteral("hostkey.pub"));
        QFile file(pub);
        if (!file.open(QIODevice::WriteOnly))
            return {};
        file.write(m_sshd.hostPublicKeyLine().toUtf8() + '\n');
        file.close();
        const test::CommandResult result = test::runCommand(QStringLiteral("ssh-keygen"), {"-l", "-E", "sha256", "-f", pub});
        return QString::fromUtf8(result.output).section(QLatin1Char(' '), 1, 1);
    }
    static QString dumpRow(const NodeTableModel& model, int row) {
        QStringList cells;
        for (int column = 0; column < NodeTableModel::ColumnCount; ++column)
            cells << cell(model, row, column);
        return cells.join(QStringLiteral(" | "));
    }

private slots:
    void initTestCase() {
        QString error;
        QVERIFY2(m_sshd.start(&error), qPrintable(error));
    }

    void reachableNodeIsReadyWithItsOs() {
        ClusterPanel panel;
        QCOMPARE(panel.statusText(), QStringLiteral("Add nodes, then Check them."));
        panel.setConnectionOptions(options(m_sshd.knownHostsPath()));
        panel.setJob(job({node(QStringLiteral("loop"), m_sshd.port())}));
        QCOMPARE(panel.statusText(), QStringLiteral("1 node(s): Check them before a run.")); // it has nodes now
        // Nothing to detail before a check: the node table has the room.
        const auto* details = panel.findChild<QLabel*>(QStringLiteral("details"));
        QVERIFY(details && !details->isVisibleTo(&panel));
        NodeTableModel& model = *panel.model();
        QSignalSpy finished(&panel, &ClusterPanel::checkFinished);
        QString error;
        QVERIFY2(panel.startCheck(&error), qPrintable(error));
        // startCheck returned at once: the check runs on its own threads.
        QVERIFY(panel.isChecking());
        QCOMPARE(cell(model, 0, NodeTableModel::State), QStringLiteral("checking"));
        QVERIFY(!panel.startCheck(&error));
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), kCheckTimeoutMs);
        QVERIFY(!panel.isChecking());
        QVERIFY2(model.state(0) == NodeTableModel::NodeState::Ready, qPrintable(dumpRow(model, 0)));
        QCOMPARE(cell(model, 0, NodeTableModel::State), QStringLiteral("ready"));
        const QString os = prettyOsName();
        QVERIFY(!os.isEmpty());
        QVERIFY2(cell(model, 0, NodeTableModel::Summary).startsWith(os), qPrintable(dumpRow(model, 0)));
        QVERIFY(cell(model, 0, NodeTableModel::Cause).isEmpty());
        QVERIFY(panel.statusText().contains(QLatin1String("passed")));
        QVERIFY(details->isVisibleTo(&panel));
        QVERIFY2(details->text().contains(QLatin1String("Select a checked node")), qPrintable(details->text()));
        panel.findChild<QTableView*>()->selectRow(0);
        QVERIFY2(details->text().contains(QLatin1String("<b>loop</b>")), qPrintable(details->text()));
    }

    // However little room the window gives the panel, four nodes show before the table scrolls.
    void nodeTableShowsFourNodes() {
        ClusterPanel panel;
        panel.resize(900, 120);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        const auto* table = panel.findChild<QTableView*>();
        const int rows = 4 * table->verticalHeader()->defaultSectionSize();
        QVERIFY2(table->viewport()->height() >= rows,
                 qPrintable(QStringLiteral("%1 < %2 (table %3, header %4, frame %5)")
                                .arg(table->viewport()->height())
                                .arg(rows)
                                .arg(table->height())
                                .arg(table->horizontalHeader()->height())
                                .arg(table->frameWidth())));
    }

    void closedPortFailsWithRefused() {
        ClusterPanel panel;
        panel.setConnectionOptions(options(m_sshd.knownHostsPath()));
        panel.setJob(job({node(QStringLiteral("loop"), m_sshd.port()), node(QStringLiteral("down"), closedPort())}));
        NodeTableModel& model = *panel.model();
        QCOMPARE(model.rowCount(), 2);
        QSignalSpy finished(&panel, &ClusterPanel::checkFinished);
        QVERIFY(panel.startCheck());
        QCOMPARE(model.state(0), NodeTableModel::NodeState::Checking);
        QCOMPARE(model.state(1), NodeTableModel::NodeState::Checking);
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), kCheckTimeoutMs);
        // Reached (two nodes on loopback earn an NCCL_SOCKET_IFNAME warning, nothing worse).
        QVERIFY2(model.state(0) != NodeTableModel::NodeState::Failed, qPrintable(dumpRow(model, 0)));
        QVERIFY(!cell(model, 0, NodeTableModel::Summary).isEmpty());
        QCOMPARE(model.state(1), NodeTableModel::NodeState::Failed);
        QCOMPARE(cell(model, 1, NodeTableModel::State), QStringLiteral("failed"));
        QVERIFY2(cell(model, 1, NodeTableModel::Cause).startsWith(QLatin1String("refused: ")),
                 qPrintable(dumpRow(model, 1)));
        QVERIFY(!cell(model, 1, NodeTableModel::Fix).isEmpty());
        QVERIFY(panel.statusText().contains(QLatin1String("1 of 2")));
    }

    void unknownHostKeyIsAskedWithItsFingerprint() {
        const QString fingerprint = hostKeyFingerprint();
        QVERIFY2(fingerprint.startsWith(QLatin1String("SHA256:")), qPrintable(fingerprint));
        const QString knownHosts = m_dir.filePath(QStringLiteral("known_hosts_trust"));
        QFile::remove(knownHosts);

        ClusterPanel panel;
        panel.setConnectionOptions(options(knownHosts));
        panel.setJob(job({node(QStringLiteral("new"), m_sshd.port())}));
        // Answer the dialog as a user would: read it, then press "Trust and remember".
        QString shown;
        bool onGuiThread = false;
        QTimer answerer;
        answerer.setInterval(50);
        connect(&answerer, &QTimer::timeout, this, [&] {
            for (QWidget* widget : QApplication::topLevelWidgets()) {
                auto* box = qobject_cast<QMessageBox*>(widget);
                if (!box || box->objectName() != HostKeyPrompter::kHostKeyDialogName || !box->isVisible())
                    continue;
                shown = box->text() + QLatin1Char('\n') + box->informativeText();
                onGuiThread = QThread::currentThread() == box->thread();
                box->findChild<QPushButton*>(HostKeyPrompter::kTrustButtonName)->click();
            }
        });
        answerer.start();
        QSignalSpy finished(&panel, &ClusterPanel::checkFinished);
        QString error;
        QVERIFY2(panel.startCheck(&error), qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), kCheckTimeoutMs);
        QVERIFY2(shown.contains(fingerprint), qPrintable(shown));
        QVERIFY(shown.contains(m_sshd.host()));
        QVERIFY(onGuiThread);
        const NodeTableModel& model = *panel.model();
        QVERIFY2(model.state(0) == NodeTableModel::NodeState::Ready, qPrintable(dumpRow(model, 0)));
        // "and remember": the key is in known_hosts now.
        QFile file(knownHosts);
        QVERIFY(file.open(QIODevice::ReadOnly));
        QVERIFY(file.readAll().contains(m_sshd.hostPublicKeyLine().section(QLatin1Char(' '), 1, 1).toUtf8()));
    }

    void refusedHostKeyFailsTheNode() {
        const QString knownHosts = m_dir.filePath(QStringLiteral("known_hosts_refuse"));
        QFile::remove(knownHosts);
        ClusterPanel panel;
        panel.setConnectionOptions(options(knownHosts));
        panel.setJob(job({node(QStringLiteral("new"), m_sshd.port())}));
        QStringList asked;
        panel.prompter()->setAnswerHook([&asked](const HostKeyPrompter::Question& question) -> std::optional<QString> {
            asked << question.fingerprint;
            return std::nullopt; // refuse
        });
        QSignalSpy finished(&panel, &ClusterPanel::checkFinished);
        QVERIFY(panel.startCheck());
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), kCheckTimeoutMs);
        QCOMPARE(asked.size(), 1);
        QVERIFY(asked.front().startsWith(QLatin1String("SHA256:")));
        const NodeTableModel& model = *panel.model();
        QCOMPARE(model.state(0), NodeTableModel::NodeState::Failed);
        QVERIFY2(cell(model, 0, NodeTableModel::Cause).startsWith(QLatin1String("host-key-unknown: ")),
                 qPrintable(dumpRow(model, 0)));
        QVERIFY(cell(model, 0, NodeTableModel::Fix).contains(asked.front()));
    }

    void cancelAnswersAWaitingThread() {
        HostKeyPrompter prompter;
        prompter.setAnswerHook([](const HostKeyPrompter::Question&) { return std::optional<QString>("yes"); });
        const auto confirm = prompter.hostKeyCallback();
        QVERIFY(confirm(QStringLiteral("h"), QStringLiteral("SHA256:x"))); // on the GUI thread itself
        // From another thread while the GUI thread does not serve events: only cancel() can answer.
        std::atomic<int> answer{-1};
        std::thread worker([&] { answer = confirm(QStringLiteral("h"), QStringLiteral("SHA256:x")) ? 1 : 0; });
        QThread::msleep(100);
        QCOMPARE(answer.load(), -1);
        prompter.cancel();
        worker.join();
        QCOMPARE(answer.load(), 0);
        prompter.cancel(true);
        QVERIFY(!confirm(QStringLiteral("h"), QStringLiteral("SHA256:x")));
        QCoreApplication::processEvents(); // the stale queued question finds its answer given: no dialog
    }
};

QTEST_MAIN(tst_ClusterPanel)
#include "tst_clusterpanel.moc"
