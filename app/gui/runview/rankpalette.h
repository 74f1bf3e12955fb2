// SPDX-License-Identifier: MIT
#pragma once

#include <QColor>

namespace rankscope::gui {

// The line colour of a rank in a run of rankCount ranks. Up to 10 ranks: a fixed qualitative palette
// (Tableau 10). Beyond: hues spaced by the golden angle (consecutive ranks far apart on the wheel), cycling
// through three saturation/value shades, so that ranks 7 and 8 of 64 are still told apart.
[[nodiscard]] QColor rankColor(int rank, int rankCount);

} // namespace rankscope::gui
