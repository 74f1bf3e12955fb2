// SPDX-License-Identifier: MIT
#pragma once

#include "remote/transport.h"

namespace rankscope::remote {

// This machine, without SSH: the same interface, so debug runs on this machine use the same supervisor,
// the same run directory layout and the same streaming as remote nodes.
class LocalTransport final : public Transport {
public:
    [[nodiscard]] QString host() const override { return QStringLiteral("localhost"); }
    [[nodiscard]] bool isLocal() const override { return true; }
    void connect() override { m_connected = true; }
    void disconnect() override { m_connected = false; }
    [[nodiscard]] bool isConnected() const override { return m_connected; }

    ExecResult exec(const QString& command, const QByteArray& input = {},
                    std::chrono::milliseconds timeout = std::chrono::seconds(60),
                    CommandEffect effect = CommandEffect::Changes) override;
    void writeFile(const QString& path, const QByteArray& data, int mode = 0644) override;
    void uploadFile(const QString& localPath, const QString& remotePath, int mode = 0644) override;
    QByteArray readFrom(const QString& path, qint64 offset, qint64 maxBytes) override;
    std::optional<QByteArray> readWhole(const QString& path) override;
    std::optional<qint64> fileSize(const QString& path) override;
    void makeDirectories(const QString& path) override;
    [[nodiscard]] QString homeDirectory() override;

private:
    [[nodiscard]] QString resolve(const QString& path) const;

    bool m_connected = false;
};

} // namespace rankscope::remote
