// SPDX-License-Identifier: MIT
#pragma once

#include "core/rankstreams.h"
#include "core/runstore.h"

#include <QObject>
#include <QString>

namespace rankscope::remote {

// One node's rank streams, stored and parsed on that node's worker thread: the worker's `data` is connected
// to onData directly, on the worker's thread, and only parsed chunks cross to the engine's thread, queued and
// in order. The run store's appends touch no shared state (one file per stream), so each node's ingest writes
// its own ranks' files.
class StreamIngest final : public QObject {
    Q_OBJECT

public:
    // `generation` comes back with every chunk: the engine drops chunks of a run it no longer follows.
    StreamIngest(RunStore* store, QString runId, RankStreamParsers parsers, int generation);

public slots:
    // Appends what the store does not have yet, and parses only those bytes: a re-delivered chunk is not parsed
    // twice.
    void onData(int node, int rank, int stream, qint64 offset, const QByteArray& bytes);

signals:
    void parsed(int node, int generation, const rankscope::RankStreamChunk& chunk);

private:
    RunStore* m_store;
    QString m_runId;
    RankStreamParsers m_parsers;
    int m_generation;
};

} // namespace rankscope::remote

Q_DECLARE_METATYPE(rankscope::RankStreamChunk)
