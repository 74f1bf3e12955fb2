// SPDX-License-Identifier: MIT
#include "remote/localtransport.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QSaveFile>

namespace rankscope::remote {

namespace {

QFileDevice::Permissions permissionsFromMode(int mode) {
    QFileDevice::Permissions permissions;
    if (mode & 0400)
        permissions |= QFileDevice::ReadOwner | QFileDevice::ReadUser;
    if (mode & 0200)
        permissions |= QFileDevice::WriteOwner | QFileDevice::WriteUser;
    if (mode & 0100)
        permissions |= QFileDevice::ExeOwner | QFileDevice::ExeUser;
    if (mode & 0040)
        permissions |= QFileDevice::ReadGroup;
    if (mode & 0010)
        permissions |= QFileDevice::ExeGroup;
    if (mode & 0004)
        permissions |= QFileDevice::ReadOther;
    if (mode & 0001)
        permissions |= QFileDevice::ExeOther;
    return permissions;
}

} // namespace

QString LocalTransport::resolve(const QString& path) const {
    if (path.startsWith(QLatin1String("~/")))
        return QDir::homePath() + path.mid(1);
    return QDir::isAbsolutePath(path) ? path : QDir::home().filePath(path);
}

ExecResult LocalTransport::exec(const QString& command, const QByteArray& input, std::chrono::milliseconds timeout,
                                CommandEffect effect) {
    QProcess process;
    process.setWorkingDirectory(QDir::homePath());
    process.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), command});
    if (!process.waitForStarted())
        throw TransportError(TransportErrorKind::Io, host(), QStringLiteral("cannot start /bin/sh"));
    process.write(input);
    process.closeWriteChannel();
    // The shell ends; what it started ends by its own time limit (a capture's `timeout`), or on writing to the
    // closed pipe.
    const auto end = [&process] {
        process.kill();
        process.waitForFinished();
    };
    QDeadlineTimer deadline(timeout);
    while (!process.waitForFinished(static_cast<int>(std::min<qint64>(deadline.remainingTime(), 50)))) {
        if (leaving(effect)) {
            end();
            throw TransportError(TransportErrorKind::Abandoned, host(), abandonedMessage());
        }
        if (deadline.hasExpired()) {
            end();
            throw TransportError(TransportErrorKind::Timeout, host(),
                                 QStringLiteral("command did not finish within %1 s").arg(timeout.count() / 1000.0));
        }
    }
    ExecResult result;
    result.exitStatus = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : 128 + 9;
    result.out = process.readAllStandardOutput();
    result.err = process.readAllStandardError();
    return result;
}

void LocalTransport::writeFile(const QString& path, const QByteArray& data, int mode) {
    QSaveFile file(resolve(path));
    if (!file.open(QIODevice::WriteOnly) || file.write(data) != data.size() || !file.commit())
        throw TransportError(TransportErrorKind::Io, host(),
                             QStringLiteral("cannot write %1: %2").arg(path, file.errorString()));
    QFile::setPermissions(resolve(path), permissionsFromMode(mode));
}

void LocalTransport::uploadFile(const QString& localPath, const QString& remotePath, int mode) {
    QFile source(localPath);
    if (!source.open(QIODevice::ReadOnly))
        throw TransportError(TransportErrorKind::Io, host(),
                             QStringLiteral("cannot read %1: %2").arg(localPath, source.errorString()));
    writeFile(remotePath, source.readAll(), mode);
}

QByteArray LocalTransport::readFrom(const QString& path, qint64 offset, qint64 maxBytes) {
    QFile file(resolve(path));
    if (!file.open(QIODevice::ReadOnly))
        return {};
    if (!file.seek(offset))
        return {};
    return file.read(maxBytes);
}

std::optional<QByteArray> LocalTransport::readWhole(const QString& path) {
    QFile file(resolve(path));
    if (!file.exists())
        return std::nullopt;
    if (!file.open(QIODevice::ReadOnly))
        throw TransportError(TransportErrorKind::Io, host(),
                             QStringLiteral("cannot read %1: %2").arg(path, file.errorString()));
    return file.readAll();
}

std::optional<qint64> LocalTransport::fileSize(const QString& path) {
    const QFileInfo info(resolve(path));
    if (!info.exists())
        return std::nullopt;
    return info.size();
}

void LocalTransport::makeDirectories(const QString& path) {
    if (!QDir().mkpath(resolve(path)))
        throw TransportError(TransportErrorKind::Io, host(), QStringLiteral("cannot create directory %1").arg(path));
}

QString LocalTransport::homeDirectory() {
    return QDir::homePath();
}

} // namespace rankscope::remote
