// SPDX-License-Identifier: MIT
#pragma once

#include <QString>
#include <QStringList>
#include <QVector>

namespace rankscope::cli {

enum class Align { Left, Right };

// A table for a terminal: the first row is the header, each column as wide as its widest cell, columns separated by
// two spaces, each line indented by two. A row with fewer cells leaves the rest empty.
[[nodiscard]] QString formatTable(const QVector<QStringList>& rows, const QVector<Align>& aligns);

} // namespace rankscope::cli
