// SPDX-License-Identifier: MIT
// TracebackLogParser: the errors must not depend on how the log was chunked.
#include "core/tracebackparser.h"
#include "tests/fuzz/logsinkfuzz.h"

using namespace rankscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    return fuzz::checkLogSink<TracebackLogParser>(bytes, size, "TracebackLogParser",
                                                  [](const TracebackLogParser& parser) {
                                                      LogInspection inspection;
                                                      inspection.errors = parser.errors();
                                                      return inspectionToJson(inspection);
                                                  });
}
