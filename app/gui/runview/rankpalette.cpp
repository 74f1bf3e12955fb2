// SPDX-License-Identifier: MIT
#include "rankpalette.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace rankscope::gui {

QColor rankColor(int rank, int rankCount) {
    static constexpr std::array<QRgb, 10> kTableau10 = {0x4e79a7, 0xf28e2b, 0xe15759, 0x76b7b2, 0x59a14f,
                                                        0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac};
    rank = std::max(rank, 0);
    if (rankCount <= int(kTableau10.size()))
        return QColor(kTableau10[size_t(rank) % kTableau10.size()]);
    static constexpr std::array<std::pair<int, int>, 3> kShades = {{{200, 215}, {130, 235}, {255, 160}}};
    const auto [saturation, value] = kShades[size_t(rank) % kShades.size()];
    // The golden angle keeps consecutive ranks far apart on the wheel, whatever the count.
    const int hue = int(std::fmod(rank * 137.508, 360.0));
    return QColor::fromHsv(hue, saturation, value);
}

} // namespace rankscope::gui
