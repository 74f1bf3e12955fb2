// SPDX-License-Identifier: MIT
#include "core/preflight.h"

#include "core/netinterface.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonValue>

#include <array>
#include <optional>

namespace rankscope {

namespace {

// The markers as probe.sh writes them; "v1" changes when a key changes meaning (added keys do not).
constexpr QByteArrayView kBeginPrefix = "@@rankscope-probe-begin ";
constexpr QByteArrayView kVersion = "v1";
constexpr QByteArrayView kEndMarker = "@@rankscope-probe-end";

// ---- IP addresses: QHostAddress is QtNetwork, which core does not link.

struct IpAddress {
    bool v6 = false;
    std::array<quint8, 16> bytes{}; // IPv4 uses the first four

    [[nodiscard]] int bits() const { return v6 ? 128 : 32; }
};

bool isDigits(QStringView text, int base) {
    for (const QChar c : text) {
        const bool decimal = c >= QLatin1Char('0') && c <= QLatin1Char('9');
        const bool hex =
            (c >= QLatin1Char('a') && c <= QLatin1Char('f')) || (c >= QLatin1Char('A') && c <= QLatin1Char('F'));
        if (!decimal && !(base == 16 && hex))
            return false;
    }
    return !text.isEmpty();
}

std::optional<IpAddress> parseIpv4(QStringView text) {
    const QList<QStringView> parts = text.split(QLatin1Char('.'));
    if (parts.size() != 4)
        return std::nullopt;
    IpAddress address;
    for (int i = 0; i < 4; ++i) {
        if (!isDigits(parts[i], 10) || parts[i].size() > 3 || parts[i].toInt() > 255)
            return std::nullopt;
        address.bytes[i] = static_cast<quint8>(parts[i].toInt());
    }
    return address;
}

// Appends the 16-bit groups of one side of "::"; the last group may be a dotted IPv4 tail.
bool appendIpv6Groups(QStringView text, QVector<quint16>& groups) {
    if (text.isEmpty())
        return true;
    const QList<QStringView> parts = text.split(QLatin1Char(':'));
    for (qsizetype i = 0; i < parts.size(); ++i) {
        if (i == parts.size() - 1 && parts[i].contains(QLatin1Char('.'))) {
            const auto v4 = parseIpv4(parts[i]);
            if (!v4)
                return false;
            groups << quint16(v4->bytes[0] << 8 | v4->bytes[1]) << quint16(v4->bytes[2] << 8 | v4->bytes[3]);
        } else if (isDigits(parts[i], 16) && parts[i].size() <= 4) {
            groups << static_cast<quint16>(parts[i].toUInt(nullptr, 16));
        } else {
            return false;
        }
    }
    return true;
}

std::optional<IpAddress> parseIpv6(QStringView text) {
    const qsizetype gap = text.indexOf(QLatin1String("::"));
    if (gap >= 0 && text.indexOf(QLatin1String("::"), gap + 1) >= 0)
        return std::nullopt;
    QVector<quint16> head;
    QVector<quint16> tail;
    if (!appendIpv6Groups(gap >= 0 ? text.left(gap) : text, head))
        return std::nullopt;
    if (gap >= 0 && !appendIpv6Groups(text.sliced(gap + 2), tail))
        return std::nullopt;
    const qsizetype count = head.size() + tail.size();
    if (gap < 0 ? count != 8 : count > 7)
        return std::nullopt;
    QVector<quint16> groups = head;
    groups.resize(8 - tail.size(), 0);
    groups += tail;
    IpAddress address;
    address.v6 = true;
    for (int i = 0; i < 8; ++i) {
        address.bytes[2 * i] = static_cast<quint8>(groups[i] >> 8);
        address.bytes[2 * i + 1] = static_cast<quint8>(groups[i] & 0xff);
    }
    return address;
}

// Accepts "[v6]" brackets and "%zone" suffixes; an IPv4-mapped IPv6 address comes back as IPv4.
std::optional<IpAddress> parseIp(QStringView text) {
    text = text.trimmed();
    if (text.startsWith(QLatin1Char('[')) && text.endsWith(QLatin1Char(']')))
        text = text.sliced(1).chopped(1);
    if (!text.contains(QLatin1Char(':')))
        return parseIpv4(text);
    if (const qsizetype zone = text.indexOf(QLatin1Char('%')); zone >= 0)
        text = text.left(zone);
    auto address = parseIpv6(text);
    constexpr std::array<quint8, 12> kMappedPrefix = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (address && std::equal(kMappedPrefix.begin(), kMappedPrefix.end(), address->bytes.begin())) {
        IpAddress v4;
        std::copy(address->bytes.begin() + 12, address->bytes.end(), v4.bytes.begin());
        return v4;
    }
    return address;
}

// RFC 5952: lower case, no leading zeros, the longest run (two or more) of zero groups as "::".
QString formatIpv6(const IpAddress& address) {
    std::array<quint16, 8> groups{};
    for (int i = 0; i < 8; ++i)
        groups[i] = static_cast<quint16>(address.bytes[2 * i] << 8 | address.bytes[2 * i + 1]);
    int runStart = -1;
    int runLength = 1;
    for (int i = 0; i < 8;) {
        int j = i;
        while (j < 8 && groups[j] == 0)
            ++j;
        if (j - i > runLength) {
            runStart = i;
            runLength = j - i;
        }
        i = j == i ? i + 1 : j;
    }
    QString text;
    for (int i = 0; i < 8; ++i) {
        if (i == runStart) {
            text += QLatin1String("::");
            i += runLength - 1;
            continue;
        }
        if (!text.isEmpty() && !text.endsWith(QLatin1Char(':')))
            text += QLatin1Char(':');
        text += QString::number(groups[i], 16);
    }
    return text;
}

bool subnetContains(const IpAddress& network, int prefixLength, const IpAddress& address) {
    if (network.v6 != address.v6)
        return false;
    const int bits = qBound(0, prefixLength, network.bits());
    for (int i = 0; i < bits / 8; ++i) {
        if (network.bytes[i] != address.bytes[i])
            return false;
    }
    if (bits % 8 == 0)
        return true;
    const auto mask = static_cast<quint8>(0xff << (8 - bits % 8));
    return (network.bytes[bits / 8] & mask) == (address.bytes[bits / 8] & mask);
}

// ---- The key=value lines.

using StringField = QString ProbeReport::*;

const QHash<QString, StringField>& stringFields() {
    static const QHash<QString, StringField> fields = {
        {QStringLiteral("os"), &ProbeReport::os},
        {QStringLiteral("os_id"), &ProbeReport::osId},
        {QStringLiteral("os_version"), &ProbeReport::osVersion},
        {QStringLiteral("arch"), &ProbeReport::arch},
        {QStringLiteral("kernel"), &ProbeReport::kernel},
        {QStringLiteral("hostname"), &ProbeReport::hostname},
        {QStringLiteral("user"), &ProbeReport::user},
        {QStringLiteral("home"), &ProbeReport::home},
        {QStringLiteral("workdir"), &ProbeReport::workdir},
        {QStringLiteral("workdir_tested"), &ProbeReport::workdirTested},
        {QStringLiteral("nvidia_smi"), &ProbeReport::nvidiaSmi},
        {QStringLiteral("nvidia_smi_detail"), &ProbeReport::nvidiaSmiDetail},
        {QStringLiteral("cmake"), &ProbeReport::cmake},
        {QStringLiteral("cxx"), &ProbeReport::cxx},
        {QStringLiteral("listen_port_in_use"), &ProbeReport::listenPortInUse},
        {QStringLiteral("connect_detail"), &ProbeReport::connectDetail},
    };
    return fields;
}

// "name address[/prefix] state"; a point-to-point address may come without a prefix.
std::optional<NetInterface> parseInterface(const QString& value) {
    const QStringList parts = value.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    if (parts.size() < 2)
        return std::nullopt;
    NetInterface interface;
    interface.name = parts[0];
    const qsizetype slash = parts[1].indexOf(QLatin1Char('/'));
    interface.address = slash < 0 ? parts[1] : parts[1].left(slash);
    const auto ip = parseIp(interface.address);
    if (ip && ip->v6)
        interface.address = formatIpv6(*ip);
    bool ok = true;
    interface.prefixLength = slash < 0 ? (ip ? ip->bits() : 0) : parts[1].sliced(slash + 1).toInt(&ok);
    if (!ok)
        return std::nullopt;
    interface.up = parts.size() > 2 && parts[2] == QLatin1String("up");
    return interface;
}

// "SOURCE|VERSION|CONFIG|DIR"; DIR is last because a path may contain "|".
std::optional<TorchInstall> parseTorch(const QString& value) {
    const QStringList parts = value.split(QLatin1Char('|'));
    if (parts.size() < 4)
        return std::nullopt;
    return TorchInstall{parts.mid(3).join(QLatin1Char('|')), parts[0], parts[1], parts[2] == QLatin1String("yes")};
}

// "HOST:PORT RESULT", HOST in brackets when it is an IPv6 literal.
bool parseConnect(const QString& value, ProbeReport& report) {
    const qsizetype space = value.lastIndexOf(QLatin1Char(' '));
    if (space < 0)
        return false;
    const QString hostPort = value.left(space);
    const bool bracketed = hostPort.startsWith(QLatin1Char('['));
    const qsizetype colon =
        bracketed ? hostPort.indexOf(QLatin1String("]:")) + 1 : hostPort.lastIndexOf(QLatin1Char(':'));
    if (colon <= 0)
        return false;
    bool ok = false;
    report.connectPort = hostPort.sliced(colon + 1).toInt(&ok);
    report.connectHost = bracketed ? hostPort.mid(1, colon - 2) : hostPort.left(colon);
    report.connectResult = value.sliced(space + 1);
    return ok;
}

// Returns false for a value it cannot read; unknown keys are the caller's business.
bool applySpecialKey(const QString& key, const QString& value, ProbeReport& report) {
    const auto yes = [&value] { return value == QLatin1String("yes"); };
    if (key == QLatin1String("workdir_exists")) {
        report.workdirExists = yes();
    } else if (key == QLatin1String("workdir_writable")) {
        report.workdirWritable = yes();
    } else if (key == QLatin1String("disk_free_kb")) {
        bool ok = false;
        const qint64 kb = value.toLongLong(&ok);
        report.diskFreeKb = ok && kb >= 0 ? kb : -1;
    } else if (key == QLatin1String("gpu")) {
        report.gpus.append(value);
    } else if (key == QLatin1String("warning")) {
        report.warnings.append(value);
    } else if (key == QLatin1String("listen_port")) {
        report.listenPort = value.toInt();
    } else if (key == QLatin1String("connect")) {
        return parseConnect(value, report);
    } else if (key == QLatin1String("torch")) {
        const auto torch = parseTorch(value);
        if (torch)
            report.torch.append(*torch);
        return torch.has_value();
    } else if (key == QLatin1String("iface")) {
        const auto interface = parseInterface(value);
        if (interface)
            report.interfaces.append(*interface);
        return interface.has_value();
    } else if (!report.unknownKeys.contains(key)) {
        report.unknownKeys.append(key);
    }
    return true;
}

void applyLine(QByteArrayView bytes, ProbeReport& report) {
    const QString line = QString::fromUtf8(bytes);
    const qsizetype equals = line.indexOf(QLatin1Char('='));
    // Not key=value: stray output from something else on the node, such as a background job of the login shell.
    if (equals <= 0)
        return;
    const QString key = line.left(equals);
    const QString value = line.sliced(equals + 1);
    if (const auto field = stringFields().constFind(key); field != stringFields().cend()) {
        report.*(field.value()) = value;
        return;
    }
    if (!applySpecialKey(key, value, report))
        report.warnings.append(QStringLiteral("unreadable probe line: %1").arg(line));
}

QByteArrayView withoutCr(QByteArrayView line) {
    return line.endsWith('\r') ? line.chopped(1) : line;
}

// Where the lines after the begin marker start; -1 when there is none. The marker may follow noise that did
// not end its line; the probe assembles it at run time, so an echo of the script text never matches.
qsizetype findBody(QByteArrayView bytes, ProbeReport& report) {
    for (qsizetype at = bytes.indexOf(kBeginPrefix); at >= 0; at = bytes.indexOf(kBeginPrefix, at + 1)) {
        const qsizetype versionStart = at + kBeginPrefix.size();
        const qsizetype newline = bytes.indexOf('\n', versionStart);
        const QByteArrayView version =
            withoutCr(bytes.sliced(versionStart, (newline < 0 ? bytes.size() : newline) - versionStart)).trimmed();
        if (version == kVersion)
            return newline < 0 ? bytes.size() : newline + 1;
        report.warnings.append(QStringLiteral("probe output version \"%1\" is not supported (this build reads %2)")
                                   .arg(QString::fromUtf8(version), QString::fromLatin1(kVersion)));
    }
    return -1;
}

bool isLoopback(const QString& name) {
    return name == QLatin1String("lo");
}

// The interface on the rendezvous subnet: up ones first, then the longest prefix.
const NetInterface* interfaceForAddress(const QVector<NetInterface>& interfaces, const IpAddress& target) {
    const NetInterface* best = nullptr;
    for (const NetInterface& interface : interfaces) {
        const auto network = parseIp(interface.address);
        if (!network || !subnetContains(*network, interface.prefixLength, target))
            continue;
        if (!best || (interface.up && !best->up) ||
            (interface.up == best->up && interface.prefixLength > best->prefixLength))
            best = &interface;
    }
    return best;
}

const NetInterface* firstPhysicalUp(const QVector<NetInterface>& interfaces) {
    for (const NetInterface& interface : interfaces) {
        if (interface.up && !isLoopback(interface.name) && !isVirtualInterface(interface.name))
            return &interface;
    }
    return nullptr;
}

// NCCL_SOCKET_IFNAME: comma-separated name prefixes; "=" before the list means exact names, "^" excludes.
struct IfnameFilter {
    bool exclude = false;
    bool exact = false;
    QStringList names;

    [[nodiscard]] bool listed(const QString& name) const {
        for (const QString& entry : names) {
            if (exact ? name == entry : name.startsWith(entry))
                return true;
        }
        return false;
    }
    [[nodiscard]] bool selects(const QString& name) const { return listed(name) != exclude; }
};

IfnameFilter parseIfnameSetting(QString setting) {
    IfnameFilter filter;
    if (setting.startsWith(QLatin1Char('^'))) {
        filter.exclude = true;
        setting.remove(0, 1);
    }
    if (setting.startsWith(QLatin1Char('='))) {
        filter.exact = true;
        setting.remove(0, 1);
    }
    filter.names = setting.split(QLatin1Char(','), Qt::SkipEmptyParts);
    return filter;
}

void checkCurrentSetting(const QVector<NetInterface>& interfaces, const QString& setting, const QString& suggestion,
                         QStringList& warnings) {
    const IfnameFilter filter = parseIfnameSetting(setting.trimmed());
    bool badChoice = false;
    for (const QString& name : {QStringLiteral("lo"), QStringLiteral("docker0")}) {
        if (!filter.exclude && filter.listed(name)) {
            warnings.append(QStringLiteral("NCCL_SOCKET_IFNAME=%1 selects %2, which ranks on other nodes cannot reach")
                                .arg(setting, name));
            badChoice = true;
        }
    }
    bool selectsAny = false;
    for (const NetInterface& interface : interfaces)
        selectsAny = selectsAny || filter.selects(interface.name);
    if (!selectsAny) {
        warnings.append(QStringLiteral("NCCL_SOCKET_IFNAME=%1 selects none of this node's interfaces").arg(setting));
    } else if (!badChoice && !suggestion.isEmpty() && !filter.selects(suggestion)) {
        warnings.append(QStringLiteral("NCCL_SOCKET_IFNAME=%1 leaves out %2, the interface suggested for this node")
                            .arg(setting, suggestion));
    }
}

} // namespace

ProbeReport parseProbeOutput(QByteArrayView stdoutBytes) {
    ProbeReport report;
    qsizetype at = findBody(stdoutBytes, report);
    if (at < 0)
        return report;
    while (at < stdoutBytes.size()) {
        const qsizetype newline = stdoutBytes.indexOf('\n', at);
        const qsizetype end = newline < 0 ? stdoutBytes.size() : newline;
        const QByteArrayView line = withoutCr(stdoutBytes.sliced(at, end - at));
        at = end + 1;
        if (line.trimmed() == kEndMarker) {
            report.complete = true;
            break;
        }
        // A last line without its newline may be cut in the middle of its value: leave it out.
        if (newline >= 0)
            applyLine(line, report);
    }
    return report;
}

SocketIfnameAdvice adviseSocketIfname(const QVector<NetInterface>& interfaces, const QString& rendezvousAddress,
                                      const QString& currentSetting) {
    SocketIfnameAdvice advice;
    const auto target = parseIp(rendezvousAddress);
    const NetInterface* chosen = target ? interfaceForAddress(interfaces, *target) : nullptr;
    if (!chosen)
        chosen = firstPhysicalUp(interfaces);

    if (!chosen) {
        advice.warnings.append(
            QStringLiteral("no interface fits: none is on the subnet of %1, and none is up, non-loopback and "
                           "not a container or VM bridge")
                .arg(rendezvousAddress));
    } else {
        advice.suggestion = chosen->name;
        if (isLoopback(chosen->name)) {
            advice.warnings.append(
                QStringLiteral("%1 is the loopback interface: ranks on other nodes cannot connect through it")
                    .arg(chosen->name));
        } else if (isVirtualInterface(chosen->name)) {
            advice.warnings.append(
                QStringLiteral("%1 is a container or VM bridge: ranks on other nodes usually cannot reach it")
                    .arg(chosen->name));
        }
        if (!chosen->up)
            advice.warnings.append(QStringLiteral("%1 is down").arg(chosen->name));
    }
    if (!currentSetting.trimmed().isEmpty())
        checkCurrentSetting(interfaces, currentSetting, advice.suggestion, advice.warnings);
    return advice;
}

QJsonObject probeReportToJson(const ProbeReport& report) {
    QJsonArray torch;
    for (const TorchInstall& install : report.torch) {
        torch.append(QJsonObject{{QStringLiteral("cmake_dir"), install.cmakeDir},
                                 {QStringLiteral("source"), install.source},
                                 {QStringLiteral("version"), install.version},
                                 {QStringLiteral("has_config"), install.hasConfig}});
    }
    QJsonArray interfaces;
    for (const NetInterface& interface : report.interfaces) {
        interfaces.append(QJsonObject{{QStringLiteral("name"), interface.name},
                                      {QStringLiteral("address"), interface.address},
                                      {QStringLiteral("prefix_length"), interface.prefixLength},
                                      {QStringLiteral("up"), interface.up}});
    }
    QJsonObject json;
    for (auto it = stringFields().cbegin(); it != stringFields().cend(); ++it)
        json.insert(it.key(), report.*(it.value()));
    json.insert(QStringLiteral("complete"), report.complete);
    json.insert(QStringLiteral("workdir_exists"), report.workdirExists);
    json.insert(QStringLiteral("workdir_writable"), report.workdirWritable);
    json.insert(QStringLiteral("disk_free_kb"), report.diskFreeKb < 0 ? QJsonValue() : QJsonValue(report.diskFreeKb));
    json.insert(QStringLiteral("gpus"), QJsonArray::fromStringList(report.gpus));
    json.insert(QStringLiteral("torch"), torch);
    json.insert(QStringLiteral("interfaces"), interfaces);
    json.insert(QStringLiteral("listen_port"), report.listenPort);
    json.insert(QStringLiteral("connect_host"), report.connectHost);
    json.insert(QStringLiteral("connect_port"), report.connectPort);
    json.insert(QStringLiteral("connect_result"), report.connectResult);
    json.insert(QStringLiteral("warnings"), QJsonArray::fromStringList(report.warnings));
    json.insert(QStringLiteral("unknown_keys"), QJsonArray::fromStringList(report.unknownKeys));
    return json;
}

} // namespace rankscope
