// SPDX-License-Identifier: MIT
#include "core/ncclfindings.h"

#include "core/ncclparser.h"
#include "core/netinterface.h"
#include "core/ranklist.h"
#include "core/repeats.h"

#include <QCryptographicHash>
#include <QSet>

#include <algorithm>
#include <functional>
#include <map>
#include <vector>

namespace rankscope {

namespace {

QString interfaceName(const QString& device) {
    return device.section(QLatin1Char(':'), 0, 0); // "eth0:10.0.0.1<0>" or "mlx5_0:1/IB" -> the device
}

bool isLoopback(const QString& name) {
    return name.startsWith(QLatin1String("lo"));
}

Diagnosis finding(const QString& key, QVector<int> ranks, const QString& host, double now, const QString& message) {
    Diagnosis diagnosis;
    diagnosis.kind = DiagnosisKind::Network;
    diagnosis.key = key;
    diagnosis.ranks = std::move(ranks);
    diagnosis.host = host;
    diagnosis.time = now;
    diagnosis.message = message;
    return diagnosis;
}

// What one rank's process, or one process of a log, chose for itself.
struct NetworkChoice {
    QStringList versions;
    QString network; // empty: not printed
    QStringList interfaces;
    bool ibNoDevice = false;
};

// Who made the choices at these indexes, for a message: "rank(s) 0-1 (node-a)", or a log's "node-a (rank(s) 3)".
// `withHost`: whether a rank's host is wanted too (not inside a list of groups, where it would crowd them).
using DescribeChoosers = std::function<QString(const QVector<int>& indexes, bool withHost)>;

// The network findings over each chooser's choices: the loopback or a bridge chosen for sockets, and sockets for
// want of InfiniBand (only in a run across nodes), and choosers that disagree on the network or NCCL's version.
// `ranksOf` gives the findings' ranks, `hostOf` the host of one chooser.
QVector<Diagnosis> networkChoiceFindings(const QVector<NetworkChoice>& choices, const DescribeChoosers& who,
                                         const std::function<QVector<int>(const QVector<int>&)>& ranksOf,
                                         const std::function<QString(int)>& hostOf, int nodeCount, double now) {
    QVector<Diagnosis> found;
    const bool acrossNodes = nodeCount > 1;
    QVector<int> onLoopback;
    QVector<int> onBridge;
    QStringList bridgeNames;
    QVector<int> socketWithoutIb;
    QMap<QString, QVector<int>> byNetwork;
    QMap<QString, QVector<int>> byVersion;
    for (int i = 0; i < choices.size(); ++i) {
        const NetworkChoice& choice = choices[i];
        QSet<QString> names;
        for (const QString& device : choice.interfaces)
            names.insert(interfaceName(device));
        if (std::any_of(names.begin(), names.end(), isLoopback))
            onLoopback.append(i);
        for (const QString& name : std::as_const(names))
            if (isVirtualInterface(name)) {
                onBridge.append(i);
                if (!bridgeNames.contains(name))
                    bridgeNames.append(name);
            }
        if (choice.ibNoDevice && choice.network == QLatin1String("Socket"))
            socketWithoutIb.append(i);
        if (!choice.network.isEmpty())
            byNetwork[choice.network].append(i);
        if (!choice.versions.isEmpty())
            byVersion[choice.versions.join(QLatin1Char('/'))].append(i);
    }
    bridgeNames.sort();
    const auto add = [&](const QString& key, const QVector<int>& indexes, const QString& message) {
        found.append(
            finding(key, ranksOf(indexes), indexes.isEmpty() ? QString() : hostOf(indexes.front()), now, message));
    };
    if (acrossNodes && !onLoopback.isEmpty())
        add(QStringLiteral("nccl:loopback"), onLoopback,
            QStringLiteral("NCCL on %1 uses the loopback interface for its sockets in a run across %2 nodes: ranks on "
                           "other nodes cannot reach it. Set NCCL_SOCKET_IFNAME to the interface the nodes share "
                           "(rankscope-cli check lists each node's interfaces).")
                .arg(who(onLoopback, true))
                .arg(nodeCount));
    if (acrossNodes && !onBridge.isEmpty())
        add(QStringLiteral("nccl:virtual-interface"), onBridge,
            QStringLiteral("NCCL on %1 uses %2, a container or VM bridge, for its sockets: other nodes usually cannot "
                           "reach it. Set NCCL_SOCKET_IFNAME to the nodes' real interface (or exclude it: "
                           "NCCL_SOCKET_IFNAME=^%3).")
                .arg(who(onBridge, true), bridgeNames.join(QStringLiteral(", ")), bridgeNames.front()));
    if (acrossNodes && !socketWithoutIb.isEmpty())
        add(QStringLiteral("nccl:socket-fallback"), socketWithoutIb,
            QStringLiteral("NCCL found no InfiniBand device for %1 and uses TCP sockets between nodes (\"NET/IB : No "
                           "device found\"): expect a fraction of the bandwidth. If the nodes have InfiniBand or RoCE, "
                           "check the driver (ibv_devices) and NCCL_IB_DISABLE / NCCL_IB_HCA.")
                .arg(who(socketWithoutIb, true)));
    // Choosers that disagree: one finding naming each group, e.g. "IB on rank(s) 0; Socket on rank(s) 1", in the
    // order of `before` (the groups' text order when none).
    const auto disagreement = [&](const QString& key, const QMap<QString, QVector<int>>& groups, const QString& text,
                                  const std::function<bool(const QString&, const QString&)>& before = {}) {
        if (groups.size() < 2)
            return;
        QStringList names = groups.keys();
        if (before)
            std::sort(names.begin(), names.end(), before);
        QStringList parts;
        QVector<int> all;
        for (const QString& name : std::as_const(names)) {
            parts << QStringLiteral("%1 on %2").arg(name, who(groups.value(name), false));
            all += groups.value(name);
        }
        found.append(finding(key, ranksOf(all), QString(), now, text.arg(parts.join(QStringLiteral("; ")))));
    };
    disagreement(QStringLiteral("nccl:network-mismatch"), byNetwork,
                 QStringLiteral("the ranks chose different NCCL networks (%1): the slowest decides the speed of "
                                "every collective; give the nodes the same NCCL_NET / NCCL_IB_* settings."));
    // By version, as inspect lists them: "2.4.7" before "2.13.4" (a chooser's versions are joined by '/').
    disagreement(QStringLiteral("nccl:version-mismatch"), byVersion,
                 QStringLiteral("the ranks run different NCCL versions (%1): mixed versions can hang or fail in "
                                "init; deploy the same LibTorch everywhere."),
                 ncclVersionBefore);
    return found;
}

} // namespace

QVector<Diagnosis> ncclNetworkFindings(const QMap<int, NcclFacts>& perRank, const QHash<int, QString>& hosts,
                                       int nodeCount, double now) {
    const QVector<int> rankAt(perRank.keyBegin(), perRank.keyEnd());
    QVector<NetworkChoice> choices;
    for (const NcclFacts& facts : perRank)
        choices.append({facts.versions, facts.network, facts.interfaces, facts.ibNoDevice});
    const auto ranksOf = [&rankAt](const QVector<int>& indexes) {
        QVector<int> ranks;
        for (const int i : indexes)
            ranks.append(rankAt[i]);
        return ranks;
    };
    const auto hostOf = [&](int index) { return hosts.value(rankAt[index]); };
    const auto who = [&](const QVector<int>& indexes, bool withHost) {
        const QString ranks = QStringLiteral("rank(s) ") + formatRankList(ranksOf(indexes));
        return withHost ? QStringLiteral("%1 (%2)").arg(ranks, hostOf(indexes.front())) : ranks;
    };
    QVector<Diagnosis> found = networkChoiceFindings(choices, who, ranksOf, hostOf, nodeCount, now);
    const auto hostOfRank = [&](int rank) { return hosts.value(rank); };

    // Each distinct warning once, with every rank that printed it.
    struct RankWarning {
        int rank;
        const NcclWarning* warning;
        QString identity;
    };
    std::vector<RankWarning> warnings;
    for (auto it = perRank.begin(); it != perRank.end(); ++it)
        for (const NcclWarning& warning : it.value().warnings)
            warnings.push_back({it.key(), &warning, warning.source + QLatin1Char('|') + warning.text});
    for (const Repeats<RankWarning>& repeats :
         groupRepeats<RankWarning>(warnings, [](const RankWarning& w) { return w.identity; })) {
        const NcclWarning& warning = *repeats.first->warning;
        const QString& identity = repeats.first->identity;
        QVector<int> ranks{repeats.first->rank};
        for (const RankWarning* again : repeats.again)
            if (!ranks.contains(again->rank))
                ranks.append(again->rank);
        QString message = QStringLiteral("NCCL WARN on rank(s) %1 (%2): %3")
                              .arg(formatRankList(ranks),
                                   warning.host.isEmpty() ? hostOfRank(ranks.front()) : warning.host, warning.text);
        if (!warning.source.isEmpty())
            message += QStringLiteral(" [%1]").arg(warning.source);
        if (!warning.chain.isEmpty())
            message += QStringLiteral(" -> %1").arg(warning.chain.join(QStringLiteral(", ")));
        const QByteArray hash = QCryptographicHash::hash(identity.toUtf8(), QCryptographicHash::Sha1).toHex().left(12);
        found.append(finding(QStringLiteral("nccl:warn:") + QString::fromLatin1(hash), ranks,
                             warning.host.isEmpty() ? hostOfRank(ranks.front()) : warning.host, now, message));
    }
    return found;
}

QVector<Diagnosis> ncclLogFindings(const NcclFacts& facts) {
    // The run's processes: those with a rank in the largest communicator. Logs of other jobs given with them, or
    // snippets without their communicator lines, are no part of it, and comparing them would be noise.
    QVector<const NcclProcess*> members;
    QSet<QString> hosts;
    for (const NcclProcess& process : facts.processes)
        if (process.rank >= 0) {
            members.append(&process);
            hosts.insert(process.host);
        }
    QVector<NetworkChoice> choices;
    for (const NcclProcess* process : std::as_const(members))
        choices.append(
            {process->versions, process->networks.join(QLatin1Char('/')), process->interfaces, process->ibNoDevice});
    const auto ranksOf = [&members](const QVector<int>& indexes) {
        QVector<int> ranks;
        for (const int i : indexes)
            ranks.append(members[i]->rank);
        return ranks;
    };
    const auto hostOf = [&members](int index) { return members[index]->host; };
    // "node-a (rank(s) 0-1), node-b (rank(s) 2)": by host, each with its processes' ranks.
    const auto who = [&](const QVector<int>& indexes, bool) {
        constexpr int kHostsNamed = 6;
        QStringList named;
        QMap<QString, QVector<int>> byHost;
        for (const int i : indexes)
            byHost[hostOf(i)].append(members[i]->rank);
        for (auto it = byHost.cbegin(); it != byHost.cend() && named.size() < kHostsNamed; ++it)
            named.append(QStringLiteral("%1 (rank(s) %2)").arg(it.key(), formatRankList(it.value())));
        if (byHost.size() > kHostsNamed)
            named.append(QStringLiteral("%1 more hosts").arg(byHost.size() - kHostsNamed));
        return named.join(QStringLiteral(", "));
    };
    return networkChoiceFindings(choices, who, ranksOf, hostOf, static_cast<int>(hosts.size()), 0.0);
}

struct NcclNetworkWatch::Parsers {
    std::map<int, NcclLogParser> byRank;
};

NcclNetworkWatch::NcclNetworkWatch() : m_parsers(std::make_unique<Parsers>()) {}
NcclNetworkWatch::~NcclNetworkWatch() = default;

void NcclNetworkWatch::feed(int rank, QByteArrayView stdoutBytes) {
    m_parsers->byRank[rank].feed(stdoutBytes);
    m_dirty = true;
}

RankNcclFacts rankNcclFacts(int rank, const NcclFacts& facts) {
    RankNcclFacts flat;
    flat.rank = rank;
    flat.host = facts.hosts.join(QStringLiteral(", "));
    flat.versions = facts.versions;
    int largest = 0;
    for (const NcclCommunicator& comm : facts.communicators)
        for (const NcclCommRank& member : comm.ranks)
            if (member.rank == rank && comm.nranks >= largest) {
                largest = comm.nranks;
                flat.cudaDev = member.cudaDev;
                flat.busId = member.busId;
                if (!member.host.isEmpty())
                    flat.host = member.host;
            }
    flat.network = facts.network;
    flat.interfaces = facts.interfaces;
    flat.transports = facts.transports;
    flat.channels = facts.channels;
    for (const NcclWarning& warning : facts.warnings)
        flat.warnings.append(warning.source.isEmpty() ? warning.text
                                                      : QStringLiteral("%1 [%2]").arg(warning.text, warning.source));
    return flat;
}

QVector<RankNcclFacts> NcclNetworkWatch::rankFacts() const {
    QVector<RankNcclFacts> all;
    for (const auto& [rank, parser] : m_parsers->byRank)
        if (const NcclFacts facts = parser.facts(); !facts.isEmpty())
            all.append(rankNcclFacts(rank, facts));
    return all;
}

QVector<Diagnosis> NcclNetworkWatch::changedFindings(const QHash<int, QString>& hosts, int nodeCount, double now) {
    m_dirty = false;
    QMap<int, NcclFacts> facts;
    for (const auto& [rank, parser] : m_parsers->byRank)
        facts.insert(rank, parser.facts());
    QVector<Diagnosis> changed;
    for (const Diagnosis& finding : ncclNetworkFindings(facts, hosts, nodeCount, now))
        if (m_reported.value(finding.key) != finding.message) {
            m_reported.insert(finding.key, finding.message);
            changed.append(finding);
        }
    return changed;
}

void NcclNetworkWatch::clear() {
    m_parsers->byRank.clear();
    m_reported.clear();
    m_dirty = false;
}

} // namespace rankscope
