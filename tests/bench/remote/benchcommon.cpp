// SPDX-License-Identifier: MIT
#include "benchcommon.h"

#include <QEventLoop>
#include <QFile>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QScopeGuard>
#include <QTimer>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace rankscope::bench {

BenchArgs::BenchArgs(const QStringList& arguments) {
    for (int i = 0; i < arguments.size(); ++i) {
        const QString& word = arguments[i];
        if (!word.startsWith(QLatin1String("--")))
            continue;
        const bool hasValue = i + 1 < arguments.size() && !arguments[i + 1].startsWith(QLatin1String("--"));
        m_values.insert(word.mid(2), hasValue ? arguments[++i] : QStringLiteral("1"));
    }
}

QString BenchArgs::text(const QString& name, const QString& fallback) const {
    return m_values.value(name, fallback);
}

int BenchArgs::integer(const QString& name, int fallback) const {
    bool ok = false;
    const int value = m_values.value(name).toInt(&ok);
    return ok ? value : fallback;
}

QString BenchArgs::trainer() const {
    return text(QStringLiteral("trainer"), QStringLiteral(RANKSCOPE_BIN_DIR "/rankscope-trainer"));
}

double percentile(QVector<double> values, double p) {
    if (values.isEmpty())
        return std::nan("");
    std::sort(values.begin(), values.end());
    const auto rank = static_cast<qsizetype>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
    return values[std::clamp<qsizetype>(rank - 1, 0, values.size() - 1)];
}

double median(const QVector<double>& values) {
    if (values.isEmpty())
        return std::nan("");
    QVector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    const qsizetype mid = sorted.size() / 2;
    return sorted.size() % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

QJsonArray toJson(const QVector<double>& values) {
    QJsonArray array;
    for (const double value : values)
        array.append(std::round(value * 10) / 10);
    return array;
}

QJsonObject summary(const QVector<double>& values) {
    const auto [low, high] = std::minmax_element(values.begin(), values.end());
    return QJsonObject{{"median", std::round(median(values) * 10) / 10},
                       {"min", values.isEmpty() ? 0.0 : std::round(*low * 10) / 10},
                       {"max", values.isEmpty() ? 0.0 : std::round(*high * 10) / 10},
                       {"n", static_cast<int>(values.size())},
                       {"values", toJson(values)}};
}

double wallMs() {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    return static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(now).count()) / 1000.0;
}

bool waitUntil(const std::function<bool()>& done, int timeoutMs) {
    if (done())
        return true;
    QEventLoop loop;
    QTimer check;
    check.setInterval(5);
    QObject::connect(&check, &QTimer::timeout, &loop, [&] {
        if (done())
            loop.quit();
    });
    QTimer::singleShot(timeoutMs, &loop, &QEventLoop::quit);
    check.start();
    loop.exec();
    return done();
}

std::optional<JobSpec> jobFromJson(const QJsonObject& json, QString* error) {
    const JobParseResult result = parseJob(QJsonDocument(json).toJson());
    if (result.ok())
        return result.job;
    QStringList issues;
    for (const JobIssue& issue : result.issues)
        issues << issue.toString();
    *error = issues.join(QStringLiteral("; "));
    return std::nullopt;
}

int freshMasterPort() {
    return 20000 + static_cast<int>(QRandomGenerator::global()->bounded(20000));
}

QStringList opensshOptions(const OpensshTarget& target) {
    return {QStringLiteral("-F"), target.config,
            QStringLiteral("-i"), target.identityFile,
            QStringLiteral("-o"), QStringLiteral("IdentitiesOnly=yes"),
            QStringLiteral("-o"), QStringLiteral("UserKnownHostsFile=%1").arg(target.knownHosts),
            QStringLiteral("-o"), QStringLiteral("StrictHostKeyChecking=yes"),
            QStringLiteral("-o"), QStringLiteral("BatchMode=yes"),
            QStringLiteral("-o"), QStringLiteral("LogLevel=ERROR")};
}

QStringList sshArguments(const OpensshTarget& target, const QString& command) {
    return opensshOptions(target) + QStringList{QStringLiteral("-p"), QString::number(target.port),
                                                QStringLiteral("%1@%2").arg(target.user, target.host), command};
}

TimingTransport::TimingTransport(std::unique_ptr<remote::Transport> inner) : m_inner(std::move(inner)) {
    m_clock.start();
}

QVector<TimingTransport::Call> TimingTransport::calls() const {
    QMutexLocker lock(&m_mutex);
    return m_calls;
}

double TimingTransport::elapsedMs() const {
    return static_cast<double>(m_clock.nsecsElapsed()) / 1e6;
}

template <typename F> auto TimingTransport::timed(const QString& what, F&& call) -> decltype(call()) {
    const double start = elapsedMs();
    const auto record = qScopeGuard([&] {
        QMutexLocker lock(&m_mutex);
        m_calls.append({what, start, elapsedMs() - start});
    });
    return call();
}

void TimingTransport::connect() {
    timed(QStringLiteral("connect"), [&] { m_inner->connect(); });
}

void TimingTransport::disconnect() {
    m_inner->disconnect();
}

remote::ExecResult TimingTransport::exec(const QString& command, const QByteArray& input,
                                         std::chrono::milliseconds timeout, remote::CommandEffect effect) {
    return timed(QStringLiteral("exec %1").arg(command.left(60)),
                 [&] { return m_inner->exec(command, input, timeout, effect); });
}

void TimingTransport::writeFile(const QString& path, const QByteArray& data, int mode) {
    timed(QStringLiteral("writeFile %1").arg(path), [&] { m_inner->writeFile(path, data, mode); });
}

void TimingTransport::uploadFile(const QString& localPath, const QString& remotePath, int mode) {
    timed(QStringLiteral("uploadFile %1").arg(remotePath), [&] { m_inner->uploadFile(localPath, remotePath, mode); });
}

QByteArray TimingTransport::readFrom(const QString& path, qint64 offset, qint64 maxBytes) {
    return m_inner->readFrom(path, offset, maxBytes); // the follow loop: too many calls to record
}

std::optional<QByteArray> TimingTransport::readWhole(const QString& path) {
    return timed(QStringLiteral("readWhole %1").arg(path), [&] { return m_inner->readWhole(path); });
}

std::optional<qint64> TimingTransport::fileSize(const QString& path) {
    return timed(QStringLiteral("fileSize %1").arg(path), [&] { return m_inner->fileSize(path); });
}

void TimingTransport::makeDirectories(const QString& path) {
    timed(QStringLiteral("makeDirectories %1").arg(path), [&] { m_inner->makeDirectories(path); });
}

QString TimingTransport::homeDirectory() {
    return timed(QStringLiteral("homeDirectory (starts SFTP)"), [&] { return m_inner->homeDirectory(); });
}

} // namespace rankscope::bench
