// SPDX-License-Identifier: MIT
// NcclLogParser: its facts must not depend on how the log was chunked.
#include "core/ncclparser.h"
#include "tests/fuzz/logsinkfuzz.h"

using namespace rankscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    return fuzz::checkLogSink<NcclLogParser>(bytes, size, "NcclLogParser", [](const NcclLogParser& parser) {
        LogInspection inspection;
        inspection.nccl = parser.facts();
        QByteArray out = inspectionToJson(inspection);
        for (const NcclWarning& warning : inspection.nccl.warnings)
            out += QByteArray::number(warning.line) + ' ' + warning.chain.join(QLatin1Char('|')).toUtf8() + '\n';
        out += inspection.nccl.orphanChains.join(QLatin1Char('|')).toUtf8();
        out += inspection.nccl.ibNoDevice ? "ib-no-device" : "";
        return out;
    });
}
