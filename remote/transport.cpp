// SPDX-License-Identifier: MIT
#include "remote/transport.h"

#include "remote/shellcommand.h"

#include <QThread>

namespace rankscope::remote {

bool leaving(CommandEffect effect) {
    return effect == CommandEffect::ReadsOnly && QThread::currentThread()->isInterruptionRequested();
}

QString abandonedMessage() {
    return QStringLiteral("command given up: the run is being left");
}

QString transportErrorKindName(TransportErrorKind kind) {
    switch (kind) {
    case TransportErrorKind::Dns:
        return QStringLiteral("dns");
    case TransportErrorKind::Refused:
        return QStringLiteral("refused");
    case TransportErrorKind::Unreachable:
        return QStringLiteral("unreachable");
    case TransportErrorKind::HostKeyUnknown:
        return QStringLiteral("host-key-unknown");
    case TransportErrorKind::HostKeyChanged:
        return QStringLiteral("host-key-changed");
    case TransportErrorKind::Auth:
        return QStringLiteral("auth");
    case TransportErrorKind::LinkLost:
        return QStringLiteral("link-lost");
    case TransportErrorKind::Timeout:
        return QStringLiteral("timeout");
    case TransportErrorKind::Io:
        return QStringLiteral("io");
    case TransportErrorKind::Abandoned:
        return QStringLiteral("abandoned");
    case TransportErrorKind::Protocol:
        return QStringLiteral("protocol");
    }
    return QStringLiteral("unknown");
}

TransportError::TransportError(TransportErrorKind kind, const QString& host, const QString& message)
    : std::runtime_error((host + QStringLiteral(": ") + message).toStdString()), m_kind(kind), m_host(host),
      m_message(message) {}

QString wrapForNoisyShell(const QString& command, const QByteArray& marker) {
    // .bashrc banners, conda and pyenv init print before the command runs; the marker tells where the
    // command's own output starts on both streams.
    const QString quoted = shellQuote(QString::fromLatin1(marker));
    return QStringLiteral("printf '%s\\n' %1; printf '%s\\n' %1 >&2; %2").arg(quoted, command);
}

QByteArray stripBeforeMarker(const QByteArray& output, const QByteArray& marker) {
    const qsizetype at = output.indexOf(marker + '\n');
    if (at < 0)
        return output;
    return output.mid(at + marker.size() + 1);
}

} // namespace rankscope::remote
