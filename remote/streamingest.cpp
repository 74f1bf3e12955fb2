// SPDX-License-Identifier: MIT
#include "remote/streamingest.h"

#include <QDateTime>

namespace rankscope::remote {

StreamIngest::StreamIngest(RunStore* store, QString runId, RankStreamParsers parsers, int generation)
    : m_store(store), m_runId(std::move(runId)), m_parsers(std::move(parsers)), m_generation(generation) {}

void StreamIngest::onData(int node, int rank, int stream, qint64 offset, const QByteArray& bytes) {
    const auto kind = static_cast<RankStream>(stream);
    QString error;
    qint64 appended = 0;
    const double now = static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000.0;
    if (!m_store->appendStream(m_runId, rank, kind, offset, bytes, &error, &appended, now)) {
        qWarning("rankscope: %s", qPrintable(error));
        return;
    }
    if (appended <= 0)
        return;
    RankStreamChunk chunk = m_parsers.feed(rank, kind, QByteArrayView(bytes).last(appended), now);
    if (!chunk.isEmpty())
        emit parsed(node, m_generation, chunk);
}

} // namespace rankscope::remote
