// SPDX-License-Identifier: MIT
#include "texttable.h"

#include <algorithm>

namespace rankscope::cli {

QString formatTable(const QVector<QStringList>& rows, const QVector<Align>& aligns) {
    QVector<qsizetype> widths(aligns.size(), 0);
    for (const QStringList& row : rows) {
        for (qsizetype column = 0; column < aligns.size(); ++column)
            widths[column] = std::max(widths[column], row.value(column).size());
    }
    QString text;
    for (const QStringList& row : rows) {
        QStringList cells;
        for (qsizetype column = 0; column < aligns.size(); ++column) {
            const QString cell = row.value(column);
            cells.append(aligns[column] == Align::Left ? cell.leftJustified(widths[column])
                                                       : cell.rightJustified(widths[column]));
        }
        QString line = QStringLiteral("  ") + cells.join(QStringLiteral("  "));
        while (line.endsWith(QLatin1Char(' ')))
            line.chop(1); // a left-aligned last column pads to no purpose
        text += line + QLatin1Char('\n');
    }
    return text;
}

} // namespace rankscope::cli
