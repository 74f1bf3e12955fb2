// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QString>

#include <optional>

namespace rankscope::bridge {

// Where clients find a running bridge, the way Jupyter's kernels are found: one JSON file per bridge, readable
// by the user only, in the user's runtime directory. See docs/bridge.md.
struct ConnectionInfo {
    quint16 port = 0;
    QByteArray token; // 64 hex digits; never logged
    qint64 pid = 0;
    QString server; // "rankscope-cli" or "rankscope"

    [[nodiscard]] QString url() const;
    [[nodiscard]] QJsonObject toJson() const;
};

// $RANKSCOPE_RUNTIME_DIR, else $XDG_RUNTIME_DIR/rankscope, else ~/.local/share/rankscope/runtime.
[[nodiscard]] QString runtimeDirectory();

// 32 bytes from the system's random source, as 64 hex digits.
[[nodiscard]] QByteArray newToken();

// Writes DIR/bridge-PID.json with mode 0600 (created that way, then renamed into place), making the directory
// with mode 0700 when missing and taking group and other permissions away from it when present.
// The file's path, or std::nullopt with *error set.
[[nodiscard]] std::optional<QString> writeConnectionFile(const ConnectionInfo& info, QString* error,
                                                         const QString& directory = runtimeDirectory());

// Compares two secrets in time that depends on their lengths only.
[[nodiscard]] bool sameSecret(const QByteArray& a, const QByteArray& b);

} // namespace rankscope::bridge
