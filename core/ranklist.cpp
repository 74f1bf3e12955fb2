// SPDX-License-Identifier: MIT
#include "core/ranklist.h"

#include <algorithm>

namespace rankscope {

QString formatRankList(QVector<int> ranks) {
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    QStringList parts;
    for (qsizetype i = 0; i < ranks.size();) {
        qsizetype j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
            ++j;
        parts.append(j == i ? QString::number(ranks[i]) : QStringLiteral("%1-%2").arg(ranks[i]).arg(ranks[j]));
        i = j + 1;
    }
    return parts.join(u',');
}

std::optional<QSet<int>> parseRankList(const QString& text, QString* error) {
    QSet<int> ranks;
    const auto fail = [error](const QString& part) -> std::optional<QSet<int>> {
        if (error)
            *error = QStringLiteral("\"%1\" is not a rank or a range of ranks such as 0-3").arg(part);
        return std::nullopt;
    };
    for (const QString& rawPart : text.split(u',', Qt::SkipEmptyParts)) {
        const QString part = rawPart.trimmed();
        if (part.isEmpty())
            continue;
        const QStringList bounds = part.split(u'-');
        bool okFirst = false;
        bool okLast = false;
        const int first = bounds.value(0).trimmed().toInt(&okFirst);
        const int last = bounds.size() == 2 ? bounds[1].trimmed().toInt(&okLast) : first;
        if (bounds.size() > 2 || !okFirst || (bounds.size() == 2 && !okLast) || first < 0 || last < first ||
            last - first > 100000)
            return fail(part);
        for (int rank = first; rank <= last; ++rank)
            ranks.insert(rank);
    }
    return ranks;
}

} // namespace rankscope
