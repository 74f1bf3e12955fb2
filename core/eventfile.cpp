// SPDX-License-Identifier: MIT
#include "core/eventfile.h"

#include <QFile>

namespace rankscope {

std::optional<QString> readEventFile(const QString& path, const std::function<void(const ParsedBatch&)>& onBatch) {
    constexpr qint64 kChunkBytes = 64 * 1024;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return QStringLiteral("cannot open '%1': %2").arg(path, file.errorString());
    EventStreamParser parser;
    QByteArray chunk;
    while (!(chunk = file.read(kChunkBytes)).isEmpty())
        onBatch(parser.feed(chunk));
    if (file.error() != QFileDevice::NoError)
        return QStringLiteral("cannot read '%1': %2").arg(path, file.errorString());
    onBatch(parser.finish());
    return std::nullopt;
}

} // namespace rankscope
