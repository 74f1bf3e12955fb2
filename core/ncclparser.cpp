// SPDX-License-Identifier: MIT
#include "core/ncclparser.h"

#include "core/nccltext.h"

#include <QSet>
#include <QVarLengthArray>
#include <QVersionNumber>
#include <QtAlgorithms>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

namespace rankscope {

using namespace nccltext;

namespace {

// keywords()
constexpr int kNcclKeyword = 0;
constexpr int kVersionKeyword = 1;

constexpr qsizetype kMarkerSize = 10; // "NCCL INFO " and "NCCL WARN "

// What is searched for in every record, each with its rarest byte found when compiling.
constexpr Needle kVia{" via "};
constexpr Needle kSpaceColon{" :"};
constexpr Needle kCollChannels{" coll channels"};
constexpr Needle kComm{"comm 0x"};
constexpr Needle kNranksWord{" nranks "};
constexpr Needle kUsingList{" : Using ["};
constexpr Needle kGdrDma{"/GDRDMA"};

QString str(QByteArrayView bytes) { return QString::fromUtf8(bytes); }

// What QString::fromUtf8(bytes).toUtf8() gives: `bytes` itself when it is ASCII, else the round trip, in
// `scratch`. Two byte strings have the same canonical form exactly when they make the same QString (invalid
// sequences all become U+FFFD), so keys kept this way behave as QString keys would, without building a QString.
QByteArrayView canonicalUtf8(QByteArrayView bytes, QByteArray& scratch) {
    for (const char c : bytes) {
        if (static_cast<unsigned char>(c) >= 0x80) {
            scratch = QString::fromUtf8(bytes).toUtf8();
            return scratch;
        }
    }
    return bytes;
}

// Sets `target` to `bytes` in the memory it already has (QByteArray::clear would free it).
void setBytes(QByteArray& target, QByteArrayView bytes) {
    target.resize(0);
    target.append(bytes);
}

void appendNumber(QByteArray& target, qint64 value) {
    char digits[24];
    const std::to_chars_result end = std::to_chars(digits, digits + sizeof digits, value);
    target.append(digits, end.ptr - digits);
}

} // namespace

bool NcclFacts::isEmpty() const {
    return versions.isEmpty() && hosts.isEmpty() && ranks.isEmpty() && nranks == 0 && communicators.isEmpty() &&
           network.isEmpty() && interfaces.isEmpty() && !ibNoDevice && transports.isEmpty() && channels == 0 &&
           warnings.isEmpty() && orphanChains.isEmpty();
}

NcclLogParser::NcclLogParser() : m_scanner({this}) { m_recentHosts.front() = &m_hostBytes.emplace_back(); }

QList<QByteArray> NcclLogParser::keywords() const {
    return {QByteArrayLiteral("NCCL"), QByteArrayLiteral("NCCL version")};
}

void NcclLogParser::takeLine(const LogLine& line) {
    const QByteArrayView text = line.text;
    m_lineHasVersion = line.holds(kVersionKeyword);
    if (m_lineHasVersion)
        takeVersion(text, line.indexOf(kVersionKeyword));
    struct Record {
        qsizetype marker = 0;      // where "NCCL INFO " or "NCCL WARN " starts
        qsizetype start = 0;       // where the record starts: its header, or the marker when it has none
        bool warn = false;
        Header header;
        QByteArrayView source;
    };
    QVarLengthArray<Record, 2> records;
    // Each "NCCL " from the start, as a search for it would find them: the scanner found every "NCCL".
    qsizetype from = 0;
    for (const KeywordAt* hit = line.found; hit != line.found + line.foundCount; ++hit) {
        const qsizetype at = hit->at;
        if (hit->keyword != kNcclKeyword || at < from || at + 4 >= text.size() || text[at + 4] != ' ')
            continue;
        from = at + 5;
        const QByteArrayView rest = text.sliced(at);
        const bool warn = startsWithLiteral(rest, "NCCL WARN ");
        if ((!warn && !startsWithLiteral(rest, "NCCL INFO ")) || (at > 0 && !isSpace(text[at - 1])))
            continue;
        // Filled in place: a record built on the stack and copied in is read back before its stores land.
        Record& record = records.emplace_back();
        record.marker = record.start = at;
        record.warn = warn;
        if (!reuseLastHeader(text, at, record.start, record.header, record.source)) {
            readHeader(text, at, record.start, record.header, record.source);
            keepLastHeader(text, at, record.start, record.header, record.source);
        }
    }
    for (qsizetype i = 0; i < records.size(); ++i) {
        const Record& record = records[i];
        const qsizetype messageStart = record.marker + kMarkerSize;
        const qsizetype messageEnd = i + 1 < records.size() ? records[i + 1].start : text.size();
        const QByteArrayView message =
            trimmedBlanks(text.sliced(messageStart, std::max<qsizetype>(0, messageEnd - messageStart)));
        takeRecord(record.header, record.source, record.warn, message, line);
    }
}

// Written on the bytes: it runs for every record of a log.
void NcclLogParser::readHeader(QByteArrayView line, qsizetype at, qsizetype& start, Header& header,
                               QByteArrayView& source) {
    const char* const text = line.data();
    // The token that ends before `end`, after the blanks before `end`.
    const auto tokenBefore = [text](qsizetype end, qsizetype& tokenStart) {
        while (end > 0 && isSpace(text[end - 1]))
            --end;
        tokenStart = blankBefore(text, end) + 1;
        return end;
    };
    const auto isDevice = [text](qsizetype begin, qsizetype end) {
        if (end - begin < 3 || end - begin > 20 || text[begin] != '[' || text[end - 1] != ']')
            return false;
        for (qsizetype i = begin + 1; i < end - 1; ++i) {
            if (!isDigit(text[i]))
                return false;
        }
        return true;
    };
    qsizetype tokenStart = 0;
    qsizetype tokenEnd = tokenBefore(at, tokenStart);
    QByteArrayView location;
    if (!isDevice(tokenStart, tokenEnd)) {
        const QByteArrayView token(text + tokenStart, tokenEnd - tokenStart);
        if (!isSourceLocation(token))
            return;
        location = token;
        tokenEnd = tokenBefore(tokenStart, tokenStart);
        if (!isDevice(tokenStart, tokenEnd))
            return;
    }
    qsizetype idStart = 0;
    const qsizetype idEnd = tokenBefore(tokenStart, idStart);
    // "host:pid:tid": each number read backwards up to the colon before it; 1 to 18 digits.
    const auto numberBefore = [text, idStart](qsizetype& end) {
        qint64 value = 0;
        qsizetype colon = end - 1;
        const int run = Q_BYTE_ORDER == Q_LITTLE_ENDIAN && end >= 8 ? digitsBefore(text + end) : 8;
        if (run < 8) {
            // Up to 7 digits (all a Linux pid or tid has), found and read without a loop.
            colon -= run;
            if (run > 0)
                value = digitsValue(text + end, run);
        } else {
            qint64 place = 1;
            for (; colon > idStart && isDigit(text[colon]); --colon) {
                if (end - colon > 18)
                    return qint64(-1);
                value += (text[colon] - '0') * place;
                place *= 10;
            }
        }
        if (colon <= idStart || text[colon] != ':' || colon == end - 1)
            return qint64(-1);
        end = colon;
        return value;
    };
    qsizetype colon = idEnd;
    const qint64 tid = numberBefore(colon);
    if (tid < 0)
        return;
    const qint64 pid = numberBefore(colon);
    if (pid < 0)
        return;
    header.host = QByteArrayView(text + idStart, colon - idStart);
    header.pid = pid;
    header.tid = tid;
    source = location;
    start = idStart;
}

inline bool NcclLogParser::reuseLastHeader(QByteArrayView line, qsizetype at, qsizetype& start, Header& header,
                                           QByteArrayView& source) const {
    const LastHeader& last = m_lastHeader;
    const qsizetype from = at - last.size;
    // The same bytes, and its token not going on before them.
    if (last.size == 0 || from < 0 || (from > 0 && !isSpace(line[from - 1])) ||
        std::memcmp(line.data() + from, last.bytes.data(), static_cast<size_t>(last.size)) != 0)
        return false;
    start = from;
    header = {line.sliced(from, last.hostSize), last.pid, last.tid};
    if (last.sourceSize > 0)
        source = line.sliced(from + last.sourceAt, last.sourceSize);
    return true;
}

inline void NcclLogParser::keepLastHeader(QByteArrayView line, qsizetype at, qsizetype start, const Header& header,
                                          QByteArrayView source) {
    LastHeader& last = m_lastHeader;
    last.size = header.pid >= 0 && at - start <= qsizetype(last.bytes.size()) ? at - start : 0;
    if (last.size == 0)
        return;
    // In words, inline: a call to memcpy for a few dozen bytes cost more than the copy. The last word may take up to
    // 7 bytes past the header, which the record's marker ("NCCL INFO ", 10 bytes) holds; `bytes` has room for
    // them, as its size is a multiple of 8.
    static_assert(sizeof(last.bytes) % 8 == 0);
    const char* from = line.data() + start;
    for (qsizetype copied = 0; copied < last.size; copied += 8)
        std::memcpy(last.bytes.data() + copied, from + copied, 8);
    last.hostSize = header.host.size();
    last.pid = header.pid;
    last.tid = header.tid;
    last.sourceAt = source.isEmpty() ? 0 : source.data() - line.data() - start;
    last.sourceSize = source.size();
}

void NcclLogParser::takeRecord(const Header& header, QByteArrayView source, bool warn, QByteArrayView message,
                               const LogLine& line) {
    if (!header.host.isEmpty() && !sameBytes(header.host, lastHost()->bytes))
        findHost(header.host);
    if (warn) {
        // A job repeats its warnings: their host and source strings are shared, not made again for each.
        if (!sameBytes(source, m_lastSource)) {
            m_lastSource = source.toByteArray();
            m_lastSourceName = str(source);
        }
        m_warnings.append({header.host.isEmpty() ? QString() : lastHost()->name,
                           header.pid,
                           line.reportedRank(),
                           m_lastSourceName,
                           m_texts.string(message),
                           {},
                           line.number,
                           line.localRank()});
        if (header.pid < 0)
            return;
        if (OpenWarning* open = openWarning(header)) {
            open->index = m_warnings.size() - 1;
        } else {
            m_openWarnings[{header.pid, header.tid}].append({lastHost()->key, m_warnings.size() - 1});
            ++m_openPerSlot[threadSlot(header)];
        }
        return;
    }
    if (isChainStep(message)) {
        const OpenWarning* open = header.pid >= 0 ? openWarning(header) : nullptr;
        if (open)
            m_warnings[open->index].chain.append(m_texts.string(message));
        else if (header.pid >= 0)
            addOrphanStep(m_orphanChains[orphanKey(header)], message);
        return;
    }
    if (!m_openWarnings.isEmpty() && header.pid >= 0 && m_openPerSlot[threadSlot(header)] != 0)
        closeWarning(header);

    if (startsWithLiteral(message, "Channel ")) {
        const qsizetype via = findBytes(message, kVia);
        if (via >= 0) {
            takeConnection(message.sliced(via + 5));
            return;
        }
        // "Channel 00/02 :    0   1": the second number is how many channels the rank has.
        const qsizetype slash = indexOfByte(message, '/');
        const qsizetype colon = findBytes(message, kSpaceColon);
        if (slash > 0 && colon > slash)
            m_channels = std::max<int>(m_channels, static_cast<int>(decimalValue(
                                                       trimmedBlanks(message.sliced(slash + 1, colon - slash - 1)))));
        return;
    }
    // "16 coll channels, 16 collnet channels, …": the most channels of any rank.
    if (!message.isEmpty() && isDigit(message.front()) && containsBytes(message, kCollChannels)) {
        const qsizetype space = indexOfByte(message, ' ');
        m_channels = std::max<int>(m_channels, static_cast<int>(decimalValue(message.first(space))));
        return;
    }
    if (startsWithLiteral(message, "Connected NVLS")) {
        ++m_common[NVLS];
        return;
    }
    if (containsBytes(message, kComm) && containsBytes(message, kNranksWord)) {
        takeCommInit(header, message);
        return;
    }
    const bool network = startsWithLiteral(message, "Using network ");
    if (!network && !startsWithLiteral(message, "NET/")) {
        // The process's own version line, "host:pid:tid [0] NCCL INFO NCCL version 2.18.1+cuda12.1".
        if (m_lineHasVersion && startsWithLiteral(message, "NCCL version")) {
            const QByteArrayView version = versionAt(message, 0);
            Process* own = version.isEmpty() ? nullptr : process(header);
            if (own && std::none_of(own->versions.cbegin(), own->versions.cend(),
                                    [&](const QByteArray& known) { return sameBytes(known, version); }))
                own->versions.append(version.toByteArray());
        }
        return;
    }
    if (network) {
        // Every rank prints it, mostly with the same name as the last: that one is counted without a lookup.
        const QByteArrayView name = trimmedBlanks(message.sliced(14));
        if (m_lastNetwork < 0 || !sameBytes(name, m_lastNetworkBytes)) {
            const QByteArrayView key = canonicalUtf8(name, m_canonical);
            auto index = m_networkIndex.constFind(viewAsKey(key));
            if (index == m_networkIndex.cend()) {
                index = m_networkIndex.insert({key.toByteArray()}, m_networkOrder.size());
                m_networkOrder.append(key.toByteArray());
                m_networkVotes.append(0);
            }
            m_lastNetwork = *index;
            setBytes(m_lastNetworkBytes, name);
        }
        ++m_networkVotes[m_lastNetwork];
        if (Process* own = process(header); own && !own->networks.contains(m_lastNetwork))
            own->networks.append(m_lastNetwork);
        return;
    }
    // "NET/…": "NET/IB : No device found", or a list "NET/Socket : Using [0]eth0:10.0.0.1<0> [1]…".
    if (startsWithLiteral(message, "NET/IB : No device found")) {
        m_ibNoDevice = true;
        if (Process* own = process(header))
            own->ibNoDevice = true;
        return;
    }
    const qsizetype using_ = findBytes(message, kUsingList);
    if (using_ > 0) {
        Process* own = process(header);
        const auto addOnce = [](QList<QByteArray>& devices, QByteArrayView device) {
            if (!device.isEmpty() && std::none_of(devices.cbegin(), devices.cend(), [&](const QByteArray& seen) {
                    return QByteArrayView(seen) == device;
                }))
                devices.append(device.toByteArray());
        };
        QByteArrayView list = message.sliced(using_ + 9);
        const qsizetype oob = indexOfByte(list, ';');
        if (oob >= 0)
            list = list.first(oob);
        const bool socket = startsWithLiteral(message, "NET/Socket");
        while (true) {
            const qsizetype open = indexOfByte(list, '[');
            if (open < 0)
                break;
            const qsizetype close = indexOfByte(list, ']', open);
            if (close < 0)
                break;
            qsizetype end = close + 1;
            while (end < list.size() && !isSpace(list[end]) && !(socket && list[end] == ':'))
                ++end;
            const QByteArrayView device = canonicalUtf8(list.sliced(close + 1, end - close - 1), m_canonical);
            addOnce(m_interfaces, device);
            if (own)
                addOnce(own->interfaces, device);
            list = list.sliced(end);
        }
    }
}

// The host of a record whose host differs from the last record's. Ranks of a few hosts interleave: the hosts seen
// most recently are compared before the table is looked up, which hashes the name.
void NcclLogParser::findHost(QByteArrayView host) {
    auto recent = std::find_if(m_recentHosts.begin() + 1, m_recentHosts.end(),
                               [host](const Host* seen) { return seen && sameBytes(host, seen->bytes); });
    if (recent == m_recentHosts.end()) {
        --recent; // the oldest makes room
        const auto found = m_hostsByBytes.constFind(viewAsKey(host));
        if (found != m_hostsByBytes.cend()) {
            *recent = *found;
        } else {
            Host& added = m_hostBytes.emplace_back();
            added.bytes = host.toByteArray();
            added.key = canonicalUtf8(host, m_canonical).toByteArray();
            added.name = str(host);
            if (!m_hosts.contains(added.name))
                m_hosts.append(added.name);
            m_hostsByBytes.insert({added.bytes}, &added);
            *recent = &added;
        }
    }
    // To the front: it is the last host now. Moved one by one: std::rotate, or a loop the compiler turns into one,
    // calls memmove for the three pointers, which cost more than the rest of the lookup.
    static_assert(std::tuple_size_v<decltype(m_recentHosts)> == 4);
    const auto index = recent - m_recentHosts.begin(); // 1 to 3
    const Host* const newest = *recent;
    if (index == 3)
        m_recentHosts[3] = m_recentHosts[2];
    if (index >= 2)
        m_recentHosts[2] = m_recentHosts[1];
    m_recentHosts[1] = m_recentHosts[0];
    m_recentHosts[0] = newest;
}

void NcclLogParser::takeConnection(QByteArrayView via) {
    via = trimmedBlanks(via);
    if (containsBytes(via, kGdrDma))
        ++m_common[GDRDMA];
    if (startsWithLiteral(via, "P2P")) {
        ++m_common[P2P];
    } else if (startsWithLiteral(via, "SHM")) {
        ++m_common[SHM];
    } else if (startsWithLiteral(via, "NET/Socket")) {
        ++m_common[NetSocket];
    } else if (startsWithLiteral(via, "NET/IB/")) {
        ++m_common[NetIB];
    } else {
        // "NET/IBext/2/GDRDMA" is "NET/IBext"; other names end at their first '/'.
        qsizetype end = startsWithLiteral(via, "NET/") ? 4 : 0;
        while (end < via.size() && via[end] != '/' && !isSpace(via[end]))
            ++end;
        if (end == 0)
            return;
        // Counted by the bytes, most often the same as the last: no string is made for a name seen before.
        const QByteArrayView name = via.first(end);
        if (m_lastTransport == m_otherTransports.end() || !sameBytes(name, m_lastTransport.key().bytes)) {
            m_lastTransport = m_otherTransports.find(viewAsKey(name));
            if (m_lastTransport == m_otherTransports.end())
                m_lastTransport = m_otherTransports.insert({name.toByteArray()}, 0);
        }
        ++*m_lastTransport;
    }
}

// Repeated for every rank and every run of a job: looked up without building strings, which are made only for a
// rank not seen before or a field it did not have yet.
void NcclLogParser::takeCommInit(const Header& header, QByteArrayView message) {
    const CommInitFields fields = readCommInit(message);
    const int rankNumber = static_cast<int>(decimalValue(fields.rank));
    const int nranks = static_cast<int>(decimalValue(fields.nranks));
    if (rankNumber < 0 || nranks <= 0)
        return;
    const qint64 cudaDev = decimalValue(fields.cudaDev);
    const QByteArrayView busId = fields.busId;
    QString init;
    if (fields.complete)
        init = QStringLiteral("COMPLETE");
    else if (fields.start)
        init = QStringLiteral("START");
    const QByteArrayView commId = fields.commId;
    if (commId == "0x")
        return; // the id was cut by a wrapped line: which communicator this is is not known
    NcclCommunicator* communicator = m_lastComm;
    if (!communicator || commId.isEmpty() || !sameBytes(commId, m_lastCommId)) {
        QByteArrayView key;
        if (commId.isEmpty()) {
            setBytes(m_key, "nranks:");
            appendNumber(m_key, nranks);
            key = m_key;
        } else {
            key = canonicalUtf8(commId, m_canonical);
        }
        auto found = m_comms.find(viewAsKey(key));
        if (found == m_comms.end()) {
            found = m_comms.insert({key.toByteArray()}, {}); // a copy: m_key stays unshared, and reused
            found->commId = str(commId);
        }
        communicator = &*found;
        m_lastComm = commId.isEmpty() ? nullptr : communicator;
        setBytes(m_lastCommId, commId);
    }
    NcclCommunicator& comm = *communicator;
    comm.nranks = nranks;
    // Sorted by rank, each rank once.
    const auto at = std::lower_bound(comm.ranks.begin(), comm.ranks.end(), rankNumber,
                                     [](const NcclCommRank& r, int value) { return r.rank < value; });
    if (at != comm.ranks.end() && at->rank == rankNumber) {
        NcclCommRank& known = *at;
        if (known.init != QLatin1String("COMPLETE") && !init.isEmpty())
            known.init = init;
        if (known.busId.isEmpty())
            known.busId = str(busId);
        if (known.cudaDev < 0)
            known.cudaDev = cudaDev >= 0 ? static_cast<int>(cudaDev) : -1;
        return;
    }
    NcclCommRank rank;
    rank.rank = rankNumber;
    rank.host = str(header.host);
    rank.pid = header.pid;
    rank.cudaDev = cudaDev >= 0 ? static_cast<int>(cudaDev) : -1;
    rank.busId = str(busId);
    rank.init = init;
    comm.ranks.insert(at, rank);
}

QByteArrayView NcclLogParser::versionAt(QByteArrayView text, qsizetype at) {
    qsizetype i = at + 12;
    while (i < text.size() && (text[i] == ':' || isSpace(text[i])))
        ++i;
    qsizetype end = i;
    while (end < text.size() && (isDigit(text[end]) || text[end] == '.'))
        ++end;
    const QByteArrayView version = text.sliced(std::min(i, text.size()), end - std::min(i, text.size()));
    return version.size() >= 3 && version.contains('.') && isDigit(version.back()) ? version : QByteArrayView();
}

void NcclLogParser::takeVersion(QByteArrayView text, qsizetype at) {
    const QByteArrayView version = versionAt(text, at);
    // Digits and dots: equal bytes are equal strings, so a version seen before needs no string.
    if (!version.isEmpty() && std::none_of(m_versionBytes.cbegin(), m_versionBytes.cend(),
                                           [&](const QByteArray& known) { return sameBytes(known, version); })) {
        m_versionBytes.append(version.toByteArray());
        m_versions.append(str(version));
    }
}

NcclLogParser::Process* NcclLogParser::process(const Header& header) {
    if (header.pid < 0 || header.host.isEmpty())
        return nullptr;
    // A process prints its set-up in a run of records: most are the last one's.
    if (m_lastProcess && m_lastProcess->pid == header.pid && m_lastProcess->host == lastHost())
        return m_lastProcess;
    Process*& found = m_processIndex[{lastHost(), header.pid}];
    if (!found) {
        found = &m_processes.emplace_back();
        found->host = lastHost();
        found->pid = header.pid;
    }
    m_lastProcess = found;
    return found;
}

void NcclLogParser::addOrphanStep(OrphanChain& chain, QByteArrayView step) {
    if (chain.dropped == 0 && !chain.steps.isEmpty() && chain.steps.back().text == str(step)) {
        ++chain.steps.back().times;
        return;
    }
    if (chain.steps.size() < kMaxOrphanSteps)
        chain.steps.append({str(step)});
    else
        ++chain.dropped;
}

// "host:pid" of the record being taken; its host is lastHost(). A chain repeats it: made once per change.
const QString& NcclLogParser::orphanKey(const Header& header) {
    if (m_orphanHost != lastHost() || m_orphanPid != header.pid) {
        // Joined, not QString::arg: a '%' in the host would be read as a placeholder by a second arg().
        m_orphanKey = lastHost()->name + QLatin1Char(':') + QString::number(header.pid);
        m_orphanHost = lastHost();
        m_orphanPid = header.pid;
    }
    return m_orphanKey;
}

NcclLogParser::OpenWarning* NcclLogParser::openWarning(const Header& header) {
    if (m_openPerSlot[threadSlot(header)] == 0)
        return nullptr;
    const auto found = m_openWarnings.find({header.pid, header.tid});
    if (found == m_openWarnings.end())
        return nullptr;
    for (OpenWarning& open : *found) {
        if (open.host == lastHost()->key)
            return &open;
    }
    return nullptr;
}

void NcclLogParser::closeWarning(const Header& header) {
    const int slot = threadSlot(header);
    if (m_openPerSlot[slot] == 0)
        return;
    const auto found = m_openWarnings.find({header.pid, header.tid});
    if (found == m_openWarnings.end())
        return;
    m_openPerSlot[slot] -=
        static_cast<int>(found->removeIf([this](const OpenWarning& open) { return open.host == lastHost()->key; }));
    if (found->isEmpty())
        m_openWarnings.erase(found);
}

void NcclLogParser::endOfStream() {
    m_openWarnings.clear();
    m_openPerSlot.fill(0);
}

int NcclLogParser::threadSlot(const Header& header) {
    return static_cast<int>((quint64(header.pid) * 0x9e3779b97f4a7c15ULL ^ quint64(header.tid)) % kThreadSlots);
}

bool ncclVersionBefore(const QString& a, const QString& b) {
    return QVersionNumber::compare(QVersionNumber::fromString(a), QVersionNumber::fromString(b)) < 0;
}

NcclFacts NcclLogParser::facts() const {
    NcclFacts facts;
    facts.versions = m_versions;
    std::sort(facts.versions.begin(), facts.versions.end(), ncclVersionBefore);
    facts.hosts = m_hosts;
    facts.hosts.sort();
    QSet<int> ranks;
    const NcclCommunicator* largest = nullptr;
    // In the order of their keys as strings (they were a QMap<QString, …>).
    QList<QPair<QString, const NcclCommunicator*>> comms;
    for (auto it = m_comms.cbegin(); it != m_comms.cend(); ++it)
        comms.append({str(it.key().bytes), &it.value()});
    std::sort(comms.begin(), comms.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [key, commPointer] : std::as_const(comms)) {
        const NcclCommunicator& comm = *commPointer;
        facts.communicators.append(comm);
        facts.nranks = std::max(facts.nranks, comm.nranks);
        if (!largest || comm.nranks > largest->nranks)
            largest = &comm;
        for (const NcclCommRank& rank : comm.ranks)
            ranks.insert(rank.rank);
    }
    facts.ranks = ranks.values();
    std::sort(facts.ranks.begin(), facts.ranks.end());
    int bestVotes = 0;
    for (qsizetype i = 0; i < m_networkOrder.size(); ++i) {
        if (m_networkVotes[i] > bestVotes) {
            bestVotes = m_networkVotes[i];
            facts.network = str(m_networkOrder[i]);
        }
    }
    for (const QByteArray& device : m_interfaces)
        facts.interfaces.append(str(device));
    facts.interfaces.sort();
    facts.ibNoDevice = m_ibNoDevice;
    for (auto it = m_otherTransports.cbegin(); it != m_otherTransports.cend(); ++it)
        facts.transports[str(it.key().bytes)] += it.value(); // names that differ only in invalid UTF-8 are one string
    const char* const commonNames[kCommonTransports] = {"P2P", "SHM", "NET/Socket", "NET/IB", "GDRDMA", "NVLS"};
    for (int i = 0; i < kCommonTransports; ++i) {
        if (m_common[i] > 0)
            facts.transports[QString::fromLatin1(commonNames[i])] += m_common[i];
    }
    facts.channels = m_channels;
    facts.warnings = m_warnings;
    // The rank a process has in the largest communicator; -1 when it is not there.
    const auto rankOf = [largest](const QString& host, qint64 pid) {
        if (largest && pid >= 0)
            for (const NcclCommRank& rank : largest->ranks)
                if (rank.pid == pid && rank.host == host)
                    return rank.rank;
        return -1;
    };
    // A warning without a launcher prefix gets its process's. The list is the parser's, shared, until one does: a
    // log can hold thousands of warnings of processes that no communicator names.
    for (qsizetype i = 0; i < m_warnings.size(); ++i) {
        const NcclWarning& warning = m_warnings[i];
        if (warning.rank >= 0)
            continue;
        if (const int rank = rankOf(warning.host, warning.pid); rank >= 0)
            facts.warnings[i].rank = rank;
    }
    for (auto it = m_orphanChains.cbegin(); it != m_orphanChains.cend(); ++it) {
        QStringList steps;
        for (const ChainStep& step : it->steps)
            steps.append(step.times == 1 ? step.text : QStringLiteral("%1 (%2 times)").arg(step.text).arg(step.times));
        if (it->dropped > 0)
            steps.append(QStringLiteral("and %1 more").arg(it->dropped));
        facts.orphanChains.append(it.key() + QStringLiteral(": ") + steps.join(QStringLiteral(", ")));
    }
    for (const Process& own : m_processes) {
        NcclProcess& process = facts.processes.emplace_back();
        process.host = own.host->name;
        process.pid = own.pid;
        process.rank = rankOf(process.host, own.pid);
        for (const QByteArray& version : own.versions)
            process.versions.append(str(version));
        std::sort(process.versions.begin(), process.versions.end(), ncclVersionBefore);
        for (const qsizetype network : own.networks)
            process.networks.append(str(m_networkOrder[network]));
        for (const QByteArray& device : own.interfaces)
            process.interfaces.append(str(device));
        process.interfaces.sort();
        process.ibNoDevice = own.ibNoDevice;
    }
    std::sort(facts.processes.begin(), facts.processes.end(), [](const NcclProcess& a, const NcclProcess& b) {
        return a.host != b.host ? a.host < b.host : a.pid < b.pid;
    });
    return facts;
}

} // namespace rankscope
