// SPDX-License-Identifier: MIT
// classifyLogLine and withoutProcessPrefix on one decoded line (no chunking: they take whole lines).
#include "core/logclassify.h"
#include "tests/fuzz/fuzzcommon.h"

#include <QString>

using namespace rankscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    const QString text = QString::fromUtf8(fuzz::inputView(bytes, size));
    const LogLineTraits traits = classifyLogLine(text);
    if (static_cast<int>(traits.severity) >= kLogSeverityCount)
        std::abort();
    fuzz::touch(logSeverityName(traits.severity).toUtf8());
    const QStringView rest = withoutProcessPrefix(text);
    if (!rest.isEmpty() &&
        (rest.data() < text.constData() || rest.data() + rest.size() > text.constData() + text.size()))
        std::abort();
    fuzz::touch(rest.toUtf8());
    return 0;
}
