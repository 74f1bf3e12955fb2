// SPDX-License-Identifier: MIT
// WatchdogLogParser: timeouts and errors must not depend on how the log was chunked.
#include "core/watchdogparser.h"
#include "tests/fuzz/logsinkfuzz.h"

using namespace rankscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    return fuzz::checkLogSink<WatchdogLogParser>(bytes, size, "WatchdogLogParser", [](const WatchdogLogParser& parser) {
        LogInspection inspection;
        inspection.timeouts = parser.timeouts();
        inspection.errors = parser.errors();
        return inspectionToJson(inspection);
    });
}
