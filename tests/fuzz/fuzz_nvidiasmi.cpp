// SPDX-License-Identifier: MIT
// NvidiaSmiParser (table and CSV output, with or without a header): the samples must not depend on chunking.
#include "core/nvidiasmi.h"
#include "tests/fuzz/fuzzcommon.h"

using namespace rankscope;

namespace {

QByteArray number(double value) {
    return GpuSample::has(value) ? QByteArray::number(value, 'g', 17) : QByteArray("-");
}

void append(QByteArray& out, const QVector<GpuSample>& samples) {
    for (const GpuSample& s : samples) {
        out += QByteArray::number(s.index) + ' ' + number(s.time) + ' ' + number(s.utilizationPercent) + ' ' +
               number(s.memoryUsedMiB) + ' ' + number(s.memoryTotalMiB) + ' ' + number(s.powerWatts) + ' ' +
               number(s.temperatureC) + ' ' + number(s.powerLimitWatts) + ' ' + s.name.toUtf8() + ' ' +
               s.busId.toUtf8() + '\n';
    }
}

QByteArray parse(QByteArrayView data, bool headerless, const fuzz::Cuts* cuts) {
    NvidiaSmiParser parser(headerless ? nvidiaSmiQueryFields() : QStringList());
    QByteArray out;
    if (cuts)
        fuzz::feedInPieces(data, *cuts, [&](QByteArrayView piece) { append(out, parser.feed(piece)); });
    else
        append(out, parser.feed(data));
    append(out, parser.finish());
    return out + "skipped " + QByteArray::number(parser.skippedLines());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    const QByteArrayView data = fuzz::inputView(bytes, size);
    const fuzz::Cuts cuts = fuzz::cutsFor(data);
    const bool headerless = (cuts.hash >> 60) == 0xF; // now and then the headerless CSV of the telemetry query
    fuzz::requireSame(parse(data, headerless, nullptr), parse(data, headerless, &cuts), cuts, "NvidiaSmiParser");
    return 0;
}
