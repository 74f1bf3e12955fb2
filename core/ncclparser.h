// SPDX-License-Identifier: MIT
#pragma once

#include "core/loglines.h"
#include "core/textstore.h"

#include <QHash>
#include <QList>
#include <QMap>
#include <QString>
#include <QStringList>

#include <array>
#include <deque>

namespace rankscope {

// One rank's line "comm 0x… rank R nranks N cudaDev D busId B commId C - Init START|COMPLETE".
struct NcclCommRank {
    int rank = -1;
    QString host;
    qint64 pid = -1;
    int cudaDev = -1;  // -1: not printed
    QString busId;     // empty: not printed
    QString init;      // "START" or "COMPLETE" (COMPLETE wins once seen)
};

struct NcclCommunicator {
    QString commId; // empty before NCCL 2.9, which did not print it
    int nranks = 0;
    QList<NcclCommRank> ranks; // sorted by rank
};

// "host:pid:tid [dev] file.cc:NN NCCL WARN text" and the "file.cc:NN -> code" lines that follow it.
struct NcclWarning {
    QString host;
    qint64 pid = -1;
    int rank = -1;  // from a launcher prefix, or the rank this host:pid has in the largest communicator
    QString source; // "misc/ibvwrap.cc:63"; empty when not printed
    QString text;
    QStringList chain; // the error-code propagation that followed, e.g. "init.cc:840 -> 5"
    qint64 line = 0;
    int localRank = -1; // torchrun's "[default3]:" before the line (LogLine::localRank)
};

} // namespace rankscope

Q_DECLARE_TYPEINFO(rankscope::NcclWarning, Q_RELOCATABLE_TYPE); // as LogError: a log can hold thousands

namespace rankscope {

// What one process ("host:pid" in its records' headers) said about its own set-up: where each process may choose
// differently (an interface, a network, its NCCL), the log's summed facts cannot say which.
struct NcclProcess {
    QString host;
    qint64 pid = -1;
    int rank = -1;          // its rank in the largest communicator; -1: not printed
    QStringList versions;   // in version order
    QStringList networks;   // each it chose ("Using network …"), in order
    QStringList interfaces; // as in NcclFacts::interfaces, sorted
    bool ibNoDevice = false;
};

struct NcclFacts {
    QStringList versions; // "2.10.3", in version order ("2.4.7" before "2.13.4")
    QStringList hosts;    // sorted
    QList<int> ranks;     // from communicator init lines, sorted
    int nranks = 0;       // the largest communicator's size; 0 when unknown
    QList<NcclCommunicator> communicators;
    QString network;                 // "IB", "Socket", "IBext", …: the most often chosen; empty when unknown
    QStringList interfaces;          // NET/Socket and NET/IB devices: "eth0", "mlx5_0:1/RoCE"; sorted
    bool ibNoDevice = false;         // "NET/IB : No device found" was printed
    QMap<QString, qint64> transports; // connections per transport: "P2P", "SHM", "NET/Socket", "NET/IB", "GDRDMA"…
    int channels = 0;                // the most channels any rank printed
    QList<NcclWarning> warnings;
    // Error-code chains with no WARN before them, "host:pid: a.cc:1 -> 3, b.cc:2 -> 3"; a step repeated at once is
    // said once with its count ("net.cc:79 -> 3 (1025 times)"), and a chain is cut after 32 steps ("…, and 7 more").
    QStringList orphanChains;
    // Each process that printed its version, network or interfaces, by host, then pid.
    QList<NcclProcess> processes;

    [[nodiscard]] bool isEmpty() const;
};

// Whether NCCL version `a` comes before `b` by their numbers ("2.4.7" before "2.13.4"); text after the numbers
// (a rank's versions joined by '/') is not looked at.
[[nodiscard]] bool ncclVersionBefore(const QString& a, const QString& b);

// NCCL's own output (NCCL_DEBUG=INFO or WARN), versions 2.4 to current. A record is found by its
// " NCCL INFO " / " NCCL WARN " marker and its header "host:pid:tid [dev]" read backwards from there, so any
// prefix before it (pdsh "node: ", Python logging, timestamps) does not matter, and several records that a
// terminal joined into one line are all read.
class NcclLogParser final : public LogLineSink {
public:
    NcclLogParser();

    void feed(QByteArrayView chunk) { m_scanner.feed(chunk); }
    void finish() { m_scanner.finish(); }

    [[nodiscard]] NcclFacts facts() const;

    [[nodiscard]] QList<QByteArray> keywords() const override;
    [[nodiscard]] bool wantsEveryLine() const override { return false; }
    void takeLine(const LogLine& line) override;
    void endOfStream() override;

private:
    struct Header {
        QByteArrayView host; // into the line being parsed
        qint64 pid = -1;
        qint64 tid = -1;
    };
    // A record's header, read backwards from its marker at `at`: "host:pid:tid [dev] [file.cc:NN] NCCL …". Sets
    // `start` to where the header starts and fills `header` and `source` when the header is whole; leaves them
    // as they are otherwise.
    static void readHeader(QByteArrayView line, qsizetype at, qsizetype& start, Header& header,
                           QByteArrayView& source);
    // The last header read whole: its bytes from its start to its marker, and what they say. A thread prints its
    // records in runs, so the next header is often the same bytes, and is then taken from here.
    struct LastHeader {
        std::array<char, 128> bytes;
        qsizetype size = 0; // 0: none (the last one was not whole, or was longer than `bytes`)
        qsizetype hostSize = 0;
        qsizetype sourceAt = 0; // in `bytes`
        qsizetype sourceSize = 0;
        qint64 pid = -1;
        qint64 tid = -1;
    };
    // As readHeader, when the bytes before `at` are the last header's; false otherwise.
    bool reuseLastHeader(QByteArrayView line, qsizetype at, qsizetype& start, Header& header,
                         QByteArrayView& source) const;
    void keepLastHeader(QByteArrayView line, qsizetype at, qsizetype start, const Header& header,
                        QByteArrayView source);
    void takeRecord(const Header& header, QByteArrayView source, bool warn, QByteArrayView message,
                    const LogLine& line);
    void takeCommInit(const Header& header, QByteArrayView message);
    void takeConnection(QByteArrayView message);
    void takeVersion(QByteArrayView text, qsizetype at); // at: where "NCCL version" starts
    // The version's digits and dots after "NCCL version" at `at`; empty when it is not one.
    [[nodiscard]] static QByteArrayView versionAt(QByteArrayView text, qsizetype at);
    void findHost(QByteArrayView host);                  // makes it lastHost()

    // The last warning of a thread "host:pid:tid", for its chain. Found by pid and tid (two numbers to hash),
    // then by host among the few with those numbers: a record's host is then the last host, lastHost()->key.
    struct OpenWarning {
        QByteArray host; // canonical UTF-8
        qsizetype index;
    };
    using ThreadNumbers = std::pair<qint64, qint64>;
    [[nodiscard]] OpenWarning* openWarning(const Header& header);
    void closeWarning(const Header& header);
    // Most records come from threads with no open warning: a count per slot of thread numbers says so without
    // a lookup.
    static constexpr int kThreadSlots = 64;
    [[nodiscard]] static int threadSlot(const Header& header);

    // A host as printed, made once: records of several hosts interleave.
    struct Host {
        QByteArray bytes; // as printed
        QByteArray key;   // canonical UTF-8
        QString name;
    };

    // Text kept as keys or for dedup is held as canonical UTF-8 (see ncclparser.cpp): equal exactly when the
    // QStrings made from it would be, and made without allocating for the ASCII that NCCL prints.
    LogLineScanner m_scanner;
    QStringList m_versions;
    QList<QByteArray> m_versionBytes; // the same, as printed
    QStringList m_hosts;
    std::deque<Host> m_hostBytes;                  // every host printed (first an empty one); never moved
    // Into m_hostBytes. The tables keyed by bytes hash with hashBytes: Qt's SipHash of a name cost more than the rest
    // of a record's reading, and a log of many hosts' ranks interleaved looks one up at nearly every change of host.
    QHash<HashedBytes, const Host*> m_hostsByBytes;
    // The hosts of the last records that had one, newest first (at first the empty host). Most records repeat the
    // last; ranks of a few hosts interleave, so the others are compared before the table is looked up.
    std::array<const Host*, 4> m_recentHosts{};
    [[nodiscard]] const Host* lastHost() const { return m_recentHosts.front(); }
    LastHeader m_lastHeader;
    QByteArray m_lastSource;                     // the source location of the last warning
    QString m_lastSourceName;
    TextStore m_texts; // of its warnings and their chains
    QHash<HashedBytes, NcclCommunicator> m_comms; // by commId, or "nranks:N" when no commId was printed
    // The communicator of the last comm init line, when that line printed a commId, and the id as printed: a job's
    // ranks print theirs one after another. Set again by every lookup in m_comms, so that it never points where an
    // insert has moved the table.
    NcclCommunicator* m_lastComm = nullptr;
    QByteArray m_lastCommId;
    QList<QByteArray> m_networkOrder;              // each network as first chosen
    QList<int> m_networkVotes;                    // how often each was chosen
    QHash<HashedBytes, qsizetype> m_networkIndex; // into both
    qsizetype m_lastNetwork = -1;                 // the last one chosen, and its bytes as printed
    QByteArray m_lastNetworkBytes;
    // Each process's own choices, kept only from the few records that state them (version, network, interfaces).
    struct Process {
        const Host* host = nullptr;
        qint64 pid = -1;
        QList<QByteArray> versions;   // as printed
        QList<qsizetype> networks;    // into m_networkOrder
        QList<QByteArray> interfaces; // canonical UTF-8
        bool ibNoDevice = false;
    };
    std::deque<Process> m_processes;
    QHash<QPair<const Host*, qint64>, Process*> m_processIndex;
    Process* m_lastProcess = nullptr; // the last one looked up
    // The record's process (its host is lastHost()); null when its header named no host or pid.
    [[nodiscard]] Process* process(const Header& header);
    bool m_lineHasVersion = false; // the line being taken holds "NCCL version"
    QList<QByteArray> m_interfaces;
    bool m_ibNoDevice = false;
    // The transports other than the common ones below, by their names' bytes, and the last one counted. An
    // iterator into a QHash stays valid until the next insert, which sets it again.
    QHash<HashedBytes, qint64> m_otherTransports;
    QHash<HashedBytes, qint64>::iterator m_lastTransport = m_otherTransports.end();
    enum CommonTransport { P2P, SHM, NetSocket, NetIB, GDRDMA, NVLS, kCommonTransports };
    qint64 m_common[kCommonTransports] = {};
    int m_channels = 0;
    QList<NcclWarning> m_warnings;
    QHash<ThreadNumbers, QList<OpenWarning>> m_openWarnings; // no empty lists
    std::array<int, kThreadSlots> m_openPerSlot{};           // open warnings per threadSlot()
    // The steps of each process's chains with no warning (a retry loop's may repeat for as long as the job runs):
    // a step the same as the one before it is counted, not kept again, and a process keeps kMaxOrphanSteps.
    struct ChainStep {
        QString text;
        qint64 times = 1;
    };
    struct OrphanChain {
        QList<ChainStep> steps;
        qint64 dropped = 0; // steps past kMaxOrphanSteps
    };
    static constexpr qsizetype kMaxOrphanSteps = 32;
    QMap<QString, OrphanChain> m_orphanChains;
    void addOrphanStep(OrphanChain& chain, QByteArrayView step);
    [[nodiscard]] const QString& orphanKey(const Header& header);
    const Host* m_orphanHost = nullptr; // the host and pid m_orphanKey was made for
    qint64 m_orphanPid = -1;
    QString m_orphanKey;
    QByteArray m_key;       // the key being looked up, reused so that a lookup does not allocate
    QByteArray m_canonical; // canonicalUtf8's scratch
};

} // namespace rankscope
