// SPDX-License-Identifier: MIT
// stripLogPrefix and cleanTerminalArtifacts on one line (they take whole lines): the views they return must
// lie inside the line or the scratch buffer.
#include "core/logprefix.h"
#include "tests/fuzz/fuzzcommon.h"

using namespace rankscope;

namespace {

bool inside(QByteArrayView part, QByteArrayView whole) {
    return part.isEmpty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    const QByteArrayView line = fuzz::inputView(bytes, size);
    const StrippedLine stripped = stripLogPrefix(line);
    if (!inside(stripped.text, line))
        std::abort();
    fuzz::touch(stripped.text);
    QByteArray scratch;
    const QByteArrayView cleaned = cleanTerminalArtifacts(line, scratch);
    if (!inside(cleaned, line) && !inside(cleaned, scratch))
        std::abort();
    const StrippedLine both = stripLogPrefix(cleaned);
    if (!inside(both.text, cleaned))
        std::abort();
    fuzz::touch(both.text);
    return 0;
}
