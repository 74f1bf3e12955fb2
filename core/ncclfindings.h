// SPDX-License-Identifier: MIT
#pragma once

#include "core/diagnostics.h"

#include <QByteArrayView>
#include <QHash>
#include <QMap>
#include <QString>
#include <QStringList>
#include <QVector>

#include <memory>

namespace rankscope {

struct NcclFacts; // core/ncclparser.h

// What one rank's NCCL lines said, flattened for a front end that lists the ranks side by side (plain Qt
// types: a front end needs no parser header).
struct RankNcclFacts {
    int rank = -1;
    QString host;
    QStringList versions;
    int cudaDev = -1; // from the rank's line in its largest communicator; -1: not printed
    QString busId;
    QString network;
    QStringList interfaces;
    QMap<QString, qint64> transports; // connections per transport
    int channels = 0;
    QStringList warnings; // "text [source]"
};
[[nodiscard]] RankNcclFacts rankNcclFacts(int rank, const NcclFacts& facts);

// What NCCL's own log lines say about the network a run's ranks chose, as findings a user can act on (kind
// Network, keys "nccl:..."): the loopback or a container bridge chosen for sockets in a run across nodes, TCP
// sockets because no InfiniBand device was found, ranks that chose different networks or run different NCCL
// versions, and each distinct NCCL WARN with where it came from. `perRank` holds what each rank's output showed;
// `nodeCount` is the run's number of nodes (one-node runs need no inter-node network). Nothing is guessed: no
// NCCL lines, no findings.
[[nodiscard]] QVector<Diagnosis> ncclNetworkFindings(const QMap<int, NcclFacts>& perRank,
                                                     const QHash<int, QString>& hosts, int nodeCount, double now);

// The same network findings from logs, where no run says which rank ran where: each process ("host:pid" in its
// records' headers, NcclFacts::processes) with a rank in the largest communicator is one of the run's, named by
// its host and that rank; the loopback, a bridge or sockets for want of InfiniBand are findings when those
// processes run on more than one host. Processes without a communicator line (another job's log given with the
// run's, a snippet) are left out rather than guessed at. The diagnoses' time is 0.
[[nodiscard]] QVector<Diagnosis> ncclLogFindings(const NcclFacts& facts);

// The live side: each rank's stdout (where NCCL writes) fed as it arrives, one NCCL parser per rank, and the
// findings that are new or changed since the last call.
class NcclNetworkWatch final {
public:
    NcclNetworkWatch();
    ~NcclNetworkWatch();
    NcclNetworkWatch(const NcclNetworkWatch&) = delete;
    NcclNetworkWatch& operator=(const NcclNetworkWatch&) = delete;

    void feed(int rank, QByteArrayView stdoutBytes);
    [[nodiscard]] bool hasNewBytes() const { return m_dirty; }
    // What each rank's output showed so far, by rank; ranks whose output held no NCCL line are left out.
    [[nodiscard]] QVector<RankNcclFacts> rankFacts() const;
    [[nodiscard]] QVector<Diagnosis> changedFindings(const QHash<int, QString>& hosts, int nodeCount, double now);
    void clear();

private:
    struct Parsers;
    std::unique_ptr<Parsers> m_parsers;
    QHash<QString, QString> m_reported; // finding key -> message as last returned
    bool m_dirty = false;
};

} // namespace rankscope
