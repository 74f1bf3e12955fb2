// SPDX-License-Identifier: MIT
// ElasticLogParser: the failure table's rows must not depend on how the log was chunked.
#include "core/elasticparser.h"
#include "tests/fuzz/logsinkfuzz.h"

using namespace rankscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    return fuzz::checkLogSink<ElasticLogParser>(bytes, size, "ElasticLogParser", [](const ElasticLogParser& parser) {
        LogInspection inspection;
        inspection.failures = parser.failures();
        return inspectionToJson(inspection);
    });
}
