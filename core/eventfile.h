// SPDX-License-Identifier: MIT
#pragma once

#include "core/eventstreamparser.h"

#include <QString>

#include <functional>
#include <optional>

namespace rankscope {

// Reads a recorded stream (an events file, or a rank's whole output) through EventStreamParser in chunks,
// as a live stream arrives, handing each parsed batch to `onBatch`: a large file is never held whole.
// Returns an error that names the file, or nothing.
std::optional<QString> readEventFile(const QString& path, const std::function<void(const ParsedBatch&)>& onBatch);

} // namespace rankscope
