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
#include <QInputDialog>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>
#include <QtTest>

#include <atomic>
#include <functional>
#include <memory>
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

// A port every interface of this machine listens on, by a socket of its own (closed by the caller).
int listeningPort(int* fd) {
    *fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t length = sizeof address;
    if (::bind(*fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(*fd, 16) != 0)
        return 0;
    ::getsockname(*fd, reinterpret_cast<sockaddr*>(&address), &length);
    return ntohs(address.sin_port);
}

QPushButton* button(const ClusterPanel& panel, const QString& text) {
    for (QPushButton* found : panel.findChildren<QPushButton*>())
        if (found->text() == text)
            return found;
    return nullptr;
}

bool statusIsRed(const ClusterPanel& panel) {
    return panel.findChild<QLabel*>(QStringLiteral("status"))->styleSheet().contains(QLatin1String("#c62828"));
}

// Answers the prompter's dialogs as a user would, from within their own event loops: every 20 ms the visible
// prompt is handed to `answer` when it is a Dialog, else refused and noted in *shown ("not a QInputDialog"), until
// the returned timer goes.
template <typename Dialog>
std::unique_ptr<QTimer> answerPrompts(QStringList* shown, std::function<void(Dialog*)> answer) {
    auto timer = std::make_unique<QTimer>();
    timer->setInterval(20);
    QObject::connect(timer.get(), &QTimer::timeout, [shown, answer = std::move(answer)] {
        for (QWidget* widget : QApplication::topLevelWidgets()) {
            auto* dialog = qobject_cast<QDialog*>(widget);
            if (!dialog || !dialog->isVisible() ||
                (dialog->objectName() != HostKeyPrompter::kHostKeyDialogName &&
                 dialog->objectName() != HostKeyPrompter::kSecretDialogName))
                continue;
            if (auto* expected = qobject_cast<Dialog*>(dialog)) {
                answer(expected);
            } else {
                *shown << QStringLiteral("not a %1").arg(QLatin1String(Dialog::staticMetaObject.className()));
                dialog->reject();
            }
            return;
        }
    });
    timer->start();
    return timer;
}

QString kindName(HostKeyPrompter::Kind kind) {
    switch (kind) {
    case HostKeyPrompter::Kind::HostKey:
        return QStringLiteral("host key");
    case HostKeyPrompter::Kind::Passphrase:
        return QStringLiteral("passphrase");
    case HostKeyPrompter::Kind::Password:
        return QStringLiteral("password");
    }
    return {};
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
                               {"master_port", test::freePort()},
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
        QPushButton* check = panel.findChild<QPushButton*>(QStringLiteral("check"));
        QPushButton* remove = button(panel, QStringLiteral("Remove"));
        QVERIFY(check->isEnabled());
        QVERIFY(!remove->isEnabled()); // nothing selected
        QSignalSpy finished(&panel, &ClusterPanel::checkFinished);
        QString error;
        QVERIFY2(panel.startCheck(&error), qPrintable(error));
        // startCheck returned at once: the check runs on its own threads.
        QVERIFY(panel.isChecking());
        QCOMPARE(cell(model, 0, NodeTableModel::State), QStringLiteral("checking"));
        QCOMPARE(panel.statusText(), QStringLiteral("Checking 1 node(s)…"));
        QVERIFY(!panel.startCheck(&error));
        QCOMPARE(error, QStringLiteral("a check is already running"));
        // While it runs, neither another check nor removing the node it checks.
        QVERIFY(!check->isEnabled());
        panel.findChild<QTableView*>()->selectRow(0);
        QVERIFY(!remove->isEnabled());
        panel.findChild<QTableView*>()->clearSelection();
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), kCheckTimeoutMs);
        QVERIFY(!panel.isChecking());
        QVERIFY(check->isEnabled());
        QVERIFY(!statusIsRed(panel));
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
        QVERIFY(remove->isEnabled());
        // The job's other settings edited: the outcome stays until the next check.
        JobSpec edited = panel.job();
        edited.trainer.epochs += 1;
        panel.setJob(edited);
        QVERIFY2(panel.statusText().contains(QLatin1String("passed")), qPrintable(panel.statusText()));
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
        QCOMPARE(panel.statusText(), QStringLiteral("1 of 2 node(s) failed the pre-flight."));
        QVERIFY(statusIsRed(panel));

        // A node's findings, each coloured by its level; a fix under each warning and failure that has one.
        auto* table = panel.findChild<QTableView*>();
        const auto* details = panel.findChild<QLabel*>(QStringLiteral("details"));
        const auto fixes = [&model](int row) {
            int count = 0;
            for (const remote::CheckVerdict& verdict : model.checkResult(row)->verdicts)
                count += verdict.fix.isEmpty() ? 0 : 1;
            return count;
        };
        table->selectRow(1);
        QVERIFY2(details->text().contains(QLatin1String("<span style='color:#c62828'>fail</span> <b>connect</b>: ")),
                 qPrintable(details->text()));
        QVERIFY2(details->text().contains(
                     QStringLiteral("fix: %1").arg(cell(model, 1, NodeTableModel::Fix).toHtmlEscaped())),
                 qPrintable(details->text()));
        QCOMPARE(details->text().count(QLatin1String("fix: ")), fixes(1));
        table->selectRow(0);
        QVERIFY2(details->text().contains(QLatin1String("<span style='color:#2e7d32'>ok</span> <b>")),
                 qPrintable(details->text()));
        QVERIFY2(
            details->text().contains(QLatin1String("<span style='color:#ef8f00'>warn</span> <b>socket-ifname</b>")),
            qPrintable(details->text()));
        QCOMPARE(details->text().count(QLatin1String("fix: ")), fixes(0));

        // An edit that drops the selected node's result (another user) leaves nothing of it to detail.
        QVERIFY(model.setData(model.index(0, NodeTableModel::User), QStringLiteral("someone-else")));
        QVERIFY2(details->text().contains(QLatin1String("Select a checked node")), qPrintable(details->text()));
        QVERIFY(details->isVisibleTo(&panel)); // "down" is still checked
        // The Remove button removes the selected row; with no checked node left there is nothing to detail.
        table->selectRow(1);
        button(panel, QStringLiteral("Remove"))->click();
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(panel.job().nodes.front().name, QStringLiteral("loop"));
        QVERIFY(!details->isVisibleTo(&panel));
    }

    // A check of the same nodes again after an edit, then nodes replaced while no row is selected: the details
    // follow what the table holds.
    void detailsFollowTheTable() {
        ClusterPanel panel;
        panel.setConnectionOptions(options(m_sshd.knownHostsPath()));
        panel.setJob(job({node(QStringLiteral("down"), closedPort())}));
        QSignalSpy finished(&panel, &ClusterPanel::checkFinished);
        QVERIFY(panel.startCheck());
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), kCheckTimeoutMs);
        const auto* details = panel.findChild<QLabel*>(QStringLiteral("details"));
        QVERIFY(details->isVisibleTo(&panel));
        panel.setJob(job({node(QStringLiteral("other"), closedPort())})); // another cluster: nothing checked
        QVERIFY(!details->isVisibleTo(&panel));
    }

    // The job editor may replace the nodes while their check runs: its results are not the new rows'.
    void nodesReplacedDuringTheirCheck() {
        ClusterPanel panel;
        panel.setConnectionOptions(options(m_sshd.knownHostsPath()));
        panel.setJob(job({node(QStringLiteral("down"), closedPort()), node(QStringLiteral("loop"), m_sshd.port())}));
        QSignalSpy finished(&panel, &ClusterPanel::checkFinished);
        QVERIFY(panel.startCheck());
        panel.setJob(job({node(QStringLiteral("loop"), m_sshd.port())}));
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), kCheckTimeoutMs);
        const NodeTableModel& model = *panel.model();
        QCOMPARE(model.rowCount(), 1);
        QVERIFY2(model.state(0) == NodeTableModel::NodeState::Unknown, qPrintable(dumpRow(model, 0)));
        QVERIFY(!model.checkResult(0));
        QCOMPARE(panel.statusText(), QStringLiteral("1 of 2 node(s) failed the pre-flight.")); // the check's own nodes
    }

    // No node: nothing to check, and the button says so by being off until a node comes.
    void nothingToCheckWithoutNodes() {
        ClusterPanel panel;
        QPushButton* check = panel.findChild<QPushButton*>(QStringLiteral("check"));
        QVERIFY(!check->isEnabled());
        QString error;
        QVERIFY(!panel.startCheck(&error));
        QVERIFY2(error.contains(QLatin1String("no node to check")), qPrintable(error));
        QVERIFY(!panel.isChecking());
        QSignalSpy edited(&panel, &ClusterPanel::nodesEdited);
        panel.addSshConfigHosts({QStringLiteral("gpu-x"), QStringLiteral("gpu-y")});
        QCOMPARE(edited.size(), 1);
        QVERIFY(check->isEnabled());
        QCOMPARE(panel.job().nodes.size(), 2);
        QCOMPARE(panel.job().nodes[1].host, QStringLiteral("gpu-y"));
        QCOMPARE(panel.job().nodes[1].name, QStringLiteral("gpu-y"));
        QCOMPARE(panel.statusText(), QStringLiteral("Add nodes, then Check them.")); // said by setJob only
        panel.setJob(panel.job());
        QCOMPARE(panel.statusText(), QStringLiteral("2 node(s): Check them before a run."));
        panel.setJob(JobSpec());
        QCOMPARE(panel.statusText(), QStringLiteral("Add nodes, then Check them."));
        QVERIFY(!check->isEnabled());
    }

    // What only the nodes together tell reaches the rows when the check ends: the master port taken, the master
    // fails on it and the other node, which finds the port open, is only warned (the port is the master's problem,
    // named there). Names the details must not read as markup.
    void theClustersVerdictsReachTheRows() {
        int taken = -1;
        const int port = listeningPort(&taken);
        const auto closeListener = qScopeGuard([taken] { ::close(taken); });
        QVERIFY(port > 0);
        JobSpec two =
            job({node(QStringLiteral("one&1"), m_sshd.port()), node(QStringLiteral("two<2>"), m_sshd.port())});
        two.masterPort = port;
        ClusterPanel panel;
        panel.setConnectionOptions(options(m_sshd.knownHostsPath()));
        panel.setJob(two);
        QSignalSpy finished(&panel, &ClusterPanel::checkFinished);
        QVERIFY(panel.startCheck());
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), kCheckTimeoutMs);
        const NodeTableModel& model = *panel.model();
        QVERIFY2(model.state(0) == NodeTableModel::NodeState::Failed, qPrintable(dumpRow(model, 0)));
        QVERIFY2(model.state(1) == NodeTableModel::NodeState::Warning, qPrintable(dumpRow(model, 1)));
        panel.findChild<QTableView*>()->selectRow(0);
        const QString details = panel.findChild<QLabel*>(QStringLiteral("details"))->text();
        QVERIFY2(details.startsWith(QLatin1String("<b>one&amp;1</b>")), qPrintable(details));
        QVERIFY2(details.contains(QStringLiteral("already in use on one&amp;1")), qPrintable(details));
        panel.findChild<QTableView*>()->selectRow(1);
        const QString other = panel.findChild<QLabel*>(QStringLiteral("details"))->text();
        QVERIFY2(other.contains(QLatin1String("(the master port is taken on one&amp;1)")), qPrintable(other));
        QVERIFY2(other.contains(QLatin1String("two&lt;2&gt;")), qPrintable(other));
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
        int answered = 0;
        prompter.setAnswerHook([&answered](const HostKeyPrompter::Question&) {
            ++answered;
            return std::optional<QString>("yes");
        });
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
        QCOMPARE(answered, 1);
    }

    // The first answer wins: a question cancelled while its dialog is open is refused, whatever the dialog says.
    void aCancelBeforeTheAnswerRefuses() {
        HostKeyPrompter prompter;
        prompter.setAnswerHook([&prompter](const HostKeyPrompter::Question&) {
            prompter.cancel(); // the panel starts another check, or closes
            return std::optional<QString>("trust");
        });
        QVERIFY(!prompter.hostKeyCallback()(QStringLiteral("h"), QStringLiteral("SHA256:x")));
    }

    // The host-key dialog names the host as given and shows the fingerprint; Enter and Escape refuse, only a click on
    // "Trust and remember" trusts.
    void hostKeyDialogRefusesUnlessTrusted() {
        HostKeyPrompter prompter;
        const auto confirm = prompter.hostKeyCallback();
        QStringList shown;
        int step = 0;
        const auto timer = answerPrompts<QMessageBox>(&shown, [&](QMessageBox* box) {
            shown << box->text() + QLatin1Char('\n') + box->informativeText();
            auto* trust = box->findChild<QPushButton*>(HostKeyPrompter::kTrustButtonName);
            auto* refuse = box->findChild<QPushButton*>(HostKeyPrompter::kRefuseButtonName);
            switch (step++) {
            case 0:
                QTest::keyClick(box, Qt::Key_Return);
                break;
            case 1:
                QTest::keyClick(box, Qt::Key_Escape);
                break;
            case 2:
                refuse->click();
                break;
            default:
                trust->click();
            }
        });
        QList<bool> trusted;
        for (int i = 0; i < 4; ++i)
            trusted << confirm(QStringLiteral("gpu<a>&b"), QStringLiteral("SHA256:abc+/def"));
        QCOMPARE(trusted, (QList<bool>{false, false, false, true}));
        QCOMPARE(shown.size(), 4);
        QVERIFY2(shown.front().startsWith(QLatin1String("<b>gpu&lt;a&gt;&amp;b</b> is not in your known hosts.")),
                 qPrintable(shown.front()));
        QVERIFY2(shown.front().contains(QLatin1String("SHA256:abc+/def")), qPrintable(shown.front()));
    }

    // A password or passphrase is typed hidden, under libssh's prompt, in a dialog titled for what it asks;
    // Cancel gives no secret at all (not an empty one).
    void secretsAreAskedHidden() {
        HostKeyPrompter prompter;
        QStringList shown;
        int step = 0;
        const auto timer = answerPrompts<QInputDialog>(&shown, [&](QInputDialog* input) {
            shown << QStringLiteral("%1 | %2 | %3")
                         .arg(input->windowTitle(), input->labelText())
                         .arg(input->textEchoMode() == QLineEdit::Password ? "hidden" : "shown");
            if (step++ % 2 == 0) {
                input->setTextValue(QStringLiteral("s3cret pass"));
                input->accept();
            } else {
                input->reject();
            }
        });
        const std::optional<QString> password = prompter.passwordCallback()(QStringLiteral("alice@gpu-a's password:"));
        const std::optional<QString> none = prompter.passwordCallback()(QStringLiteral("alice@gpu-a's password:"));
        const std::optional<QString> passphrase = prompter.passphraseCallback()(QStringLiteral("Key passphrase:"));
        QCOMPARE(shown, (QStringList{"SSH password | alice@gpu-a's password: | hidden",
                                     "SSH password | alice@gpu-a's password: | hidden",
                                     "Key passphrase | Key passphrase: | hidden"}));
        QVERIFY(password == QStringLiteral("s3cret pass"));
        QVERIFY(!none);
        QVERIFY(passphrase == QStringLiteral("s3cret pass"));
    }

    // install() gives the check's and the engine's options every question, each asked as its own kind.
    void installAsksEveryQuestion() {
        HostKeyPrompter prompter;
        QStringList asked;
        prompter.setAnswerHook([&asked](const HostKeyPrompter::Question& question) -> std::optional<QString> {
            asked << QStringLiteral("%1 %2 %3 %4")
                         .arg(kindName(question.kind), question.host, question.fingerprint, question.prompt);
            return QStringLiteral("answer");
        });
        remote::ConnectionOptions connection;
        prompter.install(connection);
        remote::EngineOptions engine;
        prompter.install(engine);
        QVERIFY(connection.confirmUnknownHost && connection.passphrase && connection.password);
        QVERIFY(engine.confirmUnknownHost && engine.passphrase && engine.password);
        QVERIFY(connection.confirmUnknownHost(QStringLiteral("h1"), QStringLiteral("SHA256:1")));
        QVERIFY(connection.passphrase(QStringLiteral("p1")) == QStringLiteral("answer"));
        QVERIFY(connection.password(QStringLiteral("w1")) == QStringLiteral("answer"));
        QVERIFY(engine.confirmUnknownHost(QStringLiteral("h2"), QStringLiteral("SHA256:2")));
        QVERIFY(engine.passphrase(QStringLiteral("p2")) == QStringLiteral("answer"));
        QVERIFY(engine.password(QStringLiteral("w2")) == QStringLiteral("answer"));
        QCOMPARE(asked, (QStringList{"host key h1 SHA256:1 ", "passphrase   p1", "password   w1",
                                     "host key h2 SHA256:2 ", "passphrase   p2", "password   w2"}));
    }

    // Closing the panel while a node's host key waits for its answer refuses it and returns: the check's threads are
    // not left waiting for a dialog that will never show, nor the window for them.
    void closingThePanelRefusesAWaitingQuestion() {
        const QString knownHosts = m_dir.filePath(QStringLiteral("known_hosts_closed"));
        QFile::remove(knownHosts);
        auto panel = std::make_unique<ClusterPanel>();
        panel->setConnectionOptions(options(knownHosts));
        panel->setJob(job({node(QStringLiteral("new"), m_sshd.port())}));
        QVERIFY(panel->startCheck());
        QThread::sleep(2); // no event served: the node's thread reaches the unknown key and waits on its question
        panel.reset();     // cancels the question, then joins the check's threads
        QFile file(knownHosts);
        QVERIFY(!file.open(QIODevice::ReadOnly) ||
                !file.readAll().contains(m_sshd.hostPublicKeyLine().section(' ', 1, 1).toUtf8()));
    }
};

QTEST_MAIN(tst_ClusterPanel)
#include "tst_clusterpanel.moc"
