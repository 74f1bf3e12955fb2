// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArray>
#include <QString>
#include <QVector>

#include <optional>

namespace rankscope {

// The hex SHA-256 of a file's content; empty when the file cannot be read. Names deployed builds and binaries.
[[nodiscard]] QByteArray sha256OfFile(const QString& path);

struct ManifestEntry {
    QString path;      // relative, '/'-separated, never leaving the deploy root
    QByteArray sha256; // hex
    qint64 size = 0;
};

// What a deploy uploads: every file under a root with its content hash. Two manifests tell which files
// changed; the hash of the whole manifest names the build, so an unchanged tree is never rebuilt.
class DeployManifest final {
public:
    // Walks root (a directory or a Qt resource path such as ":/rankscope/trainer"), sorted by path.
    [[nodiscard]] static std::optional<DeployManifest> fromDirectory(const QString& root, QString* error);
    // Reads serialize()'s text. Any line with a path that could escape the root makes the whole manifest
    // invalid: a manifest found on a node is not trusted.
    [[nodiscard]] static std::optional<DeployManifest> parse(QByteArrayView text, QString* error);
    // A path is safe when it is relative, has no "." or ".." segment, no empty segment, no backslash and
    // no control character.
    [[nodiscard]] static bool isSafeRelativePath(const QString& path);

    [[nodiscard]] QByteArray serialize() const; // "SHA256 SIZE PATH\n" per file
    [[nodiscard]] QByteArray hash() const;      // hex SHA-256 of serialize()
    [[nodiscard]] const QVector<ManifestEntry>& entries() const { return m_entries; }
    // The entries of this manifest that `deployed` lacks or has with other content.
    [[nodiscard]] QVector<ManifestEntry> changedFrom(const DeployManifest& deployed) const;

private:
    QVector<ManifestEntry> m_entries;
};

} // namespace rankscope
