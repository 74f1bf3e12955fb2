// SPDX-License-Identifier: MIT
#include "connectionfile.h"

#include <QDateTime>
#include <QDir>
#include <QJsonDocument>
#include <QRandomGenerator>

#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rankscope::bridge {

QString ConnectionInfo::url() const {
    return QStringLiteral("ws://127.0.0.1:%1/").arg(port);
}

QJsonObject ConnectionInfo::toJson() const {
    return QJsonObject{{"version", 1},
                       {"url", url()},
                       {"host", "127.0.0.1"},
                       {"port", port},
                       {"token", QString::fromLatin1(token)},
                       {"pid", pid},
                       {"server", server},
                       {"started", QDateTime::currentDateTimeUtc().toString(Qt::ISODate)}};
}

QString runtimeDirectory() {
    if (const QString own = qEnvironmentVariable("RANKSCOPE_RUNTIME_DIR"); !own.isEmpty())
        return own;
    if (const QString xdg = qEnvironmentVariable("XDG_RUNTIME_DIR"); !xdg.isEmpty())
        return xdg + QStringLiteral("/rankscope");
    return QDir::homePath() + QStringLiteral("/.local/share/rankscope/runtime");
}

QByteArray newToken() {
    std::array<quint32, 8> words{};
    QRandomGenerator::system()->fillRange(words.data(), words.size());
    return QByteArray(reinterpret_cast<const char*>(words.data()), sizeof(words)).toHex();
}

std::optional<QString> writeConnectionFile(const ConnectionInfo& info, QString* error, const QString& directory) {
    const auto fail = [error](const QString& message) -> std::optional<QString> {
        if (error)
            *error = message;
        return std::nullopt;
    };
    if (!QDir().mkpath(directory))
        return fail(QStringLiteral("cannot create the runtime directory %1").arg(directory));
    const QByteArray dir = QFile::encodeName(directory);
    struct stat st {};
    if (::stat(dir.constData(), &st) != 0)
        return fail(QStringLiteral("%1: %2").arg(directory, QString::fromLocal8Bit(std::strerror(errno))));
    if (st.st_uid != ::getuid())
        return fail(QStringLiteral("%1 belongs to another user").arg(directory));
    if ((st.st_mode & 077) != 0 && ::chmod(dir.constData(), st.st_mode & 0700) != 0)
        return fail(QStringLiteral("cannot restrict %1 to its owner").arg(directory));

    const QString path = QStringLiteral("%1/bridge-%2.json").arg(directory).arg(info.pid);
    const QByteArray temporary = QFile::encodeName(path + QStringLiteral(".tmp"));
    ::unlink(temporary.constData());
    const int fd = ::open(temporary.constData(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return fail(QStringLiteral("%1: %2").arg(path, QString::fromLocal8Bit(std::strerror(errno))));
    const QByteArray text = QJsonDocument(info.toJson()).toJson();
    const bool written = ::write(fd, text.constData(), static_cast<size_t>(text.size())) == text.size() &&
                         ::fchmod(fd, 0600) == 0 && ::fsync(fd) == 0;
    ::close(fd);
    if (!written || ::rename(temporary.constData(), QFile::encodeName(path).constData()) != 0) {
        ::unlink(temporary.constData());
        return fail(QStringLiteral("cannot write %1").arg(path));
    }
    return path;
}

bool sameSecret(const QByteArray& a, const QByteArray& b) {
    if (a.size() != b.size())
        return false;
    unsigned char difference = 0;
    for (qsizetype i = 0; i < a.size(); ++i)
        difference |= static_cast<unsigned char>(a[i] ^ b[i]);
    return difference == 0;
}

} // namespace rankscope::bridge
