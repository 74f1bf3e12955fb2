// SPDX-License-Identifier: MIT
#include "core/hostfile.h"

#include <QHash>
#include <QRegularExpression>
#include <QString>
#include <QStringList>

#include <optional>

namespace rankscope {

namespace {

const QLatin1String kSlotsPrefix{"slots="};

bool isDecimal(QStringView text) {
    if (text.isEmpty())
        return false;
    for (const QChar c : text) {
        if (c < QLatin1Char('0') || c > QLatin1Char('9'))
            return false;
    }
    return true;
}

// The N of "slots=N", or nothing when it is not an integer 1..kMaxProcsPerNode.
std::optional<int> parseSlots(QStringView value) {
    if (!isDecimal(value))
        return std::nullopt;
    const int count = value.toInt(); // 0 where it overflows an int
    if (count < 1 || count > kMaxProcsPerNode)
        return std::nullopt;
    return count;
}

QString hostProblem(const QString& host) {
    // ssh would read a leading '-' as an option.
    if (host.startsWith(QLatin1Char('-')))
        return QStringLiteral("host \"%1\" must not start with '-'").arg(host);
    if (host.startsWith(kSlotsPrefix))
        return QStringLiteral("missing host before \"%1\"").arg(host);
    return {};
}

} // namespace

QString hostfileLinePath(int line) {
    return QStringLiteral("hostfile:%1").arg(line);
}

HostfileResult parseHostfile(QByteArrayView text) {
    HostfileResult result;
    QHash<QString, int> lineOfHost;
    static const QRegularExpression whitespace(QStringLiteral("\\s+"));
    const QStringList lines = QString::fromUtf8(text).split(QLatin1Char('\n'));
    for (qsizetype index = 0; index < lines.size(); ++index) {
        const int lineNumber = static_cast<int>(index + 1);
        const QString path = hostfileLinePath(lineNumber);
        QString line = lines[index];
        if (const qsizetype hash = line.indexOf(QLatin1Char('#')); hash >= 0)
            line.truncate(hash);
        const QStringList tokens = line.split(whitespace, Qt::SkipEmptyParts);
        if (tokens.isEmpty())
            continue;

        bool good = true;
        const auto report = [&](const QString& message) {
            result.issues.append({path, message});
            good = false;
        };
        NodeSpec node;
        node.host = tokens.first();
        node.name = node.host;
        if (const QString problem = hostProblem(node.host); !problem.isEmpty())
            report(problem);

        bool slotsSeen = false;
        for (qsizetype t = 1; t < tokens.size(); ++t) {
            const QString& token = tokens[t];
            if (!token.startsWith(kSlotsPrefix)) {
                report(QStringLiteral("unknown token \"%1\" (expected slots=N)").arg(token));
                continue;
            }
            if (slotsSeen) {
                report(QStringLiteral("slots given twice"));
                continue;
            }
            slotsSeen = true;
            const QStringView value = QStringView(token).sliced(kSlotsPrefix.size());
            if (const auto count = parseSlots(value)) {
                node.gpus = *count;
                node.procs = *count;
            } else {
                report(QStringLiteral("bad slots \"%1\" (must be an integer 1-%2)").arg(value).arg(kMaxProcsPerNode));
            }
        }

        if (const auto it = lineOfHost.constFind(node.host); it != lineOfHost.cend()) {
            report(QStringLiteral("duplicate host \"%1\" (also line %2)").arg(node.host).arg(*it));
        } else if (good) {
            lineOfHost.insert(node.host, lineNumber);
        }
        if (good) {
            result.nodes.append(node);
            result.lines.append(lineNumber);
        }
    }
    return result;
}

} // namespace rankscope
