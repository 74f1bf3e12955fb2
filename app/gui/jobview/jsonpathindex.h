// SPDX-License-Identifier: MIT
#pragma once

#include <QHash>
#include <QString>

namespace rankscope::gui {

// Where each value of a JSON text starts, by the JSON path parseJob's issues use ("nodes[1].port",
// "trainer.epochs", "env.OMP_NUM_THREADS"): an object member maps to the offset of its key, an array element
// to the offset of its value. A text that is not valid JSON is indexed as far as it can be read.
[[nodiscard]] QHash<QString, int> indexJsonPaths(const QString& text);

// The offset of path in text: the path itself, else its nearest indexed parent ("nodes[1].port" falls back to
// "nodes[1]", then "nodes"); 0 when none is found. "hostfile:7" looks up "hostfile".
[[nodiscard]] int jsonPathOffset(const QString& text, const QString& path);

} // namespace rankscope::gui
