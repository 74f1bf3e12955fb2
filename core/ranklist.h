// SPDX-License-Identifier: MIT
#pragma once

#include <QSet>
#include <QString>
#include <QVector>

#include <optional>

namespace rankscope {

// Rank sets as people write them, in every front end and finding.
// "0-3,5,7" for {0,1,2,3,5,7}; duplicates and order do not matter.
[[nodiscard]] QString formatRankList(QVector<int> ranks);
// The inverse: "0-3, 7" -> {0,1,2,3,7}; blanks are ignored, an empty text is the empty set.
// std::nullopt for anything else ("3-1", "x", "-2"); `error` then names the bad part.
[[nodiscard]] std::optional<QSet<int>> parseRankList(const QString& text, QString* error = nullptr);

} // namespace rankscope
