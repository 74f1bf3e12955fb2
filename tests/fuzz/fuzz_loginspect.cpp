// SPDX-License-Identifier: MIT
// LogInspector (every log parser behind one scanner): the inspection must not depend on how the file was chunked.
#include "core/loginspect.h"
#include "tests/fuzz/fuzzcommon.h"

using namespace rankscope;

namespace {

QByteArray inspect(QByteArrayView data, const fuzz::Cuts* cuts) {
    LogInspector inspector;
    inspector.beginFile(QStringLiteral("fuzz.log"));
    if (cuts)
        fuzz::feedInPieces(data, *cuts, [&](QByteArrayView piece) { inspector.feed(piece); });
    else
        inspector.feed(data);
    inspector.endFile();
    const LogInspection inspection = inspector.result();
    return inspectionToJson(inspection) + QByteArray::number(inspection.bytes) + ' ' +
           QByteArray::number(inspection.lines);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    const QByteArrayView data = fuzz::inputView(bytes, size);
    const fuzz::Cuts cuts = fuzz::cutsFor(data);
    fuzz::requireSame(inspect(data, nullptr), inspect(data, &cuts), cuts, "LogInspector");
    return 0;
}
