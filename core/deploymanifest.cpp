// SPDX-License-Identifier: MIT
#include "core/deploymanifest.h"

#include <QCryptographicHash>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QSet>

#include <algorithm>

namespace rankscope {

QByteArray sha256OfFile(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    QCryptographicHash hash(QCryptographicHash::Sha256);
    hash.addData(&file);
    return hash.result().toHex();
}

bool DeployManifest::isSafeRelativePath(const QString& path) {
    if (path.isEmpty() || path.startsWith(QLatin1Char('/')) || path.contains(QLatin1Char('\\')))
        return false;
    for (const QChar c : path)
        if (c.unicode() < 0x20 || c.unicode() == 0x7f)
            return false;
    const QStringList segments = path.split(QLatin1Char('/'));
    return std::none_of(segments.begin(), segments.end(), [](const QString& segment) {
        return segment.isEmpty() || segment == QLatin1String(".") || segment == QLatin1String("..");
    });
}

std::optional<DeployManifest> DeployManifest::fromDirectory(const QString& root, QString* error) {
    DeployManifest manifest;
    const QDir base(root);
    QDirIterator it(root, QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString file = it.next();
        const QByteArray sha256 = sha256OfFile(file);
        if (sha256.isEmpty()) {
            if (error)
                *error = QStringLiteral("cannot read %1").arg(file);
            return std::nullopt;
        }
        const QString relative = base.relativeFilePath(file);
        if (!isSafeRelativePath(relative)) {
            if (error)
                *error = QStringLiteral("%1: unsafe path in the deploy tree").arg(relative);
            return std::nullopt;
        }
        manifest.m_entries.append({relative, sha256, QFileInfo(file).size()});
    }
    if (manifest.m_entries.isEmpty()) {
        if (error)
            *error = QStringLiteral("%1: no files to deploy").arg(root);
        return std::nullopt;
    }
    std::sort(manifest.m_entries.begin(), manifest.m_entries.end(),
              [](const ManifestEntry& a, const ManifestEntry& b) { return a.path < b.path; });
    return manifest;
}

std::optional<DeployManifest> DeployManifest::parse(QByteArrayView text, QString* error) {
    DeployManifest manifest;
    QSet<QString> seen;
    int lineNumber = 0;
    for (const QByteArray& line : text.toByteArray().split('\n')) {
        ++lineNumber;
        if (line.isEmpty())
            continue;
        const qsizetype first = line.indexOf(' ');
        const qsizetype second = first < 0 ? -1 : line.indexOf(' ', first + 1);
        bool sizeOk = false;
        ManifestEntry entry;
        if (second > 0) {
            entry.sha256 = line.left(first);
            entry.size = line.mid(first + 1, second - first - 1).toLongLong(&sizeOk);
            entry.path = QString::fromUtf8(line.mid(second + 1));
        }
        const bool hexHash = entry.sha256.size() == 64 &&
                             std::all_of(entry.sha256.begin(), entry.sha256.end(),
                                         [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
        if (!sizeOk || entry.size < 0 || !hexHash || !isSafeRelativePath(entry.path) || seen.contains(entry.path)) {
            if (error)
                *error = QStringLiteral("manifest line %1: not 'SHA256 SIZE SAFE-PATH'").arg(lineNumber);
            return std::nullopt;
        }
        seen.insert(entry.path);
        manifest.m_entries.append(entry);
    }
    return manifest;
}

QByteArray DeployManifest::serialize() const {
    QByteArray text;
    for (const ManifestEntry& entry : m_entries)
        text += entry.sha256 + ' ' + QByteArray::number(entry.size) + ' ' + entry.path.toUtf8() + '\n';
    return text;
}

QByteArray DeployManifest::hash() const {
    return QCryptographicHash::hash(serialize(), QCryptographicHash::Sha256).toHex();
}

QVector<ManifestEntry> DeployManifest::changedFrom(const DeployManifest& deployed) const {
    QHash<QString, QByteArray> before;
    for (const ManifestEntry& entry : deployed.m_entries)
        before.insert(entry.path, entry.sha256);
    QVector<ManifestEntry> changed;
    for (const ManifestEntry& entry : m_entries)
        if (before.value(entry.path) != entry.sha256)
            changed.append(entry);
    return changed;
}

} // namespace rankscope
