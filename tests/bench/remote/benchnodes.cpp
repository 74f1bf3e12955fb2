// SPDX-License-Identifier: MIT
#include "benchnodes.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QProcess>

#include <cerrno>
#include <csignal>
#include <unistd.h>

namespace rankscope::bench {

namespace {

const QString kNetnsEtc = QStringLiteral("/etc/netns");
// Marks a /etc/netns/NAME directory as written by this program, so that a crashed run's are found and removed.
const QString kOverrideMarker = QStringLiteral(".rankscope-bench");

// /etc/passwd with root's login shell replaced.
QByteArray passwdWithShell(const QString& shell) {
    QFile file(QStringLiteral("/etc/passwd"));
    if (!file.open(QIODevice::ReadOnly))
        return {};
    QByteArray out;
    for (QByteArray line : file.readAll().split('\n')) {
        if (line.startsWith("root:")) {
            QList<QByteArray> fields = line.split(':');
            fields.last() = shell.toUtf8();
            line = fields.join(':');
        }
        if (!line.isEmpty())
            out += line + '\n';
    }
    return out;
}

void removeStaleOverrides() {
    const QStringList entries = QDir(kNetnsEtc).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    for (const QString& entry : entries) {
        const QString dir = kNetnsEtc + QLatin1Char('/') + entry;
        if (!QFileInfo::exists(dir + QLatin1Char('/') + kOverrideMarker))
            continue;
        const qint64 pid = QString(entry).remove(0, 2).section(QLatin1Char('n'), 0, 0).toLongLong();
        if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
            QDir(dir).removeRecursively();
    }
}

} // namespace

BenchNodes::BenchNodes(QString loginShell) : m_loginShell(std::move(loginShell)) {}

BenchNodes::~BenchNodes() {
    stop();
}

bool BenchNodes::start(int nodes, QString* error) {
    if (const QString reason = test::NetnsFixture::skipReason(); !reason.isEmpty()) {
        *error = reason;
        return false;
    }
    if (!m_dir.isValid()) {
        *error = QStringLiteral("cannot create a temporary directory");
        return false;
    }
    // The fixture names its namespaces rs<pid>n<i> (netnsfixture.h): the override must exist before its sshd
    // starts, since `ip netns exec` mounts /etc/netns/NAME/* as the command starts.
    for (int i = 0; i < nodes; ++i)
        m_overrideDirs << QStringLiteral("%1/rs%2n%3").arg(kNetnsEtc).arg(::getpid()).arg(i);
    if (!m_loginShell.isEmpty() && !overrideLoginShell(error))
        return false;
    if (!m_fixture.start(nodes, error))
        return false;
    QProcess ssh;
    ssh.start(QStringLiteral("ssh"), sshArguments(target(0), QStringLiteral("readlink /proc/$$/exe; :")));
    if (!ssh.waitForFinished(30000) || ssh.exitCode() != 0) {
        *error = QStringLiteral("ssh to node 0 failed: %1").arg(QString::fromUtf8(ssh.readAllStandardError()));
        return false;
    }
    m_shellSeen = QString::fromUtf8(ssh.readAllStandardOutput()).trimmed();
    if (!m_loginShell.isEmpty() &&
        QFileInfo(m_shellSeen).canonicalFilePath() != QFileInfo(m_loginShell).canonicalFilePath()) {
        *error = QStringLiteral("asked for login shell %1, the nodes run %2").arg(m_loginShell, m_shellSeen);
        return false;
    }
    return true;
}

bool BenchNodes::overrideLoginShell(QString* error) {
    removeStaleOverrides();
    const QByteArray passwd = passwdWithShell(m_loginShell);
    for (const QString& dir : std::as_const(m_overrideDirs)) {
        if (QFileInfo::exists(dir)) {
            *error = QStringLiteral("%1 exists and is not ours: refusing to replace it").arg(dir);
            m_overrideDirs.clear();
            return false;
        }
        QFile marker(dir + QLatin1Char('/') + kOverrideMarker);
        QFile file(dir + QStringLiteral("/passwd"));
        if (!QDir().mkpath(dir) || !marker.open(QIODevice::WriteOnly) || !file.open(QIODevice::WriteOnly) ||
            file.write(passwd) != passwd.size()) {
            *error = QStringLiteral("cannot write %1/passwd").arg(dir);
            return false;
        }
    }
    return true;
}

void BenchNodes::removeOverrides() {
    if (m_loginShell.isEmpty())
        return;
    for (const QString& dir : std::as_const(m_overrideDirs))
        if (QFileInfo::exists(dir + QLatin1Char('/') + kOverrideMarker))
            QDir(dir).removeRecursively();
    m_overrideDirs.clear();
}

void BenchNodes::stop() {
    m_fixture.stop();
    removeOverrides();
}

QString BenchNodes::workDir(int node) const {
    return m_dir.filePath(QStringLiteral("node%1/rankscope").arg(node));
}

OpensshTarget BenchNodes::target(int node) const {
    OpensshTarget target;
    target.host = m_fixture.nodeAddress(node);
    target.user = m_fixture.userName();
    target.identityFile = m_fixture.userKeyPath();
    target.knownHosts = m_fixture.knownHostsPath();
    return target;
}

QJsonObject BenchNodes::job(const QString& name, int maxSteps, int epochs) const {
    QJsonArray nodes;
    for (int i = 0; i < count(); ++i)
        nodes.append(m_fixture.nodeJson(i, QStringLiteral("node-%1").arg(QChar('a' + i)), workDir(i), 1));
    const QJsonObject trainer{{"dataset", "synthetic"}, {"model", "mlp"},
                              {"epochs", epochs},       {"max_steps", maxSteps},
                              {"batch_size", 16},       {"backend", "gloo"},
                              {"device", "cpu"},        {"extra_args", QJsonArray{"--threads", "1", "--no-eval"}}};
    return QJsonObject{{"version", 1},         {"name", name},   {"mode", "submit"},  {"deploy", "binary"},
                       {"master_port", 29500}, {"nodes", nodes}, {"trainer", trainer}};
}

remote::EngineOptions BenchNodes::engineOptions(const QString& trainer, int pollIntervalMs) const {
    remote::EngineOptions options;
    options.knownHostsPath = m_fixture.knownHostsPath();
    options.sshConfigPath = QStringLiteral("none");
    options.localTrainer = trainer;
    options.worker.pollIntervalMs = pollIntervalMs;
    return options;
}

bool BenchNodes::runToEnd(remote::RunEngine& engine, const JobSpec& job, int timeoutMs, QString* error) {
    std::optional<RunRecord> record;
    const auto connection = QObject::connect(&engine, &remote::RunEngine::finished, &engine,
                                             [&record](const RunRecord& finished) { record = finished; });
    const bool launched = engine.launch(job, RunMode::Submit, error);
    if (launched && !waitUntil([&] { return record.has_value(); }, timeoutMs)) {
        engine.stop();
        waitUntil([&] { return record.has_value(); }, 30000);
        *error = QStringLiteral("the run did not end within %1 s").arg(timeoutMs / 1000);
    }
    QObject::disconnect(connection);
    if (launched && record && record->state != QLatin1String("finished"))
        *error = QStringLiteral("run %1 %2: %3").arg(record->id, record->state, record->summary);
    return launched && record && record->state == QLatin1String("finished");
}

} // namespace rankscope::bench
