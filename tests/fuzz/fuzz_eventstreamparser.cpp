// SPDX-License-Identifier: MIT
// EventStreamParser: events, log lines and decode errors must not depend on how the stream was chunked.
#include "core/eventstreamparser.h"
#include "tests/fuzz/fuzzcommon.h"

#include <QJsonDocument>

using namespace rankscope;

namespace {

QByteArray describe(const ParsedBatch& batch) {
    QByteArray out;
    for (const TrainerEvent& event : batch.events) {
        out += "E" + QByteArray::number(event.lineNumber) + ' ' + event.typeName.toUtf8() + ' ' +
               QByteArray::number(event.rank) + ' ' + QByteArray::number(event.time, 'g', 17) + ' ' +
               QByteArray::number(event.versionMajor) + '.' + QByteArray::number(event.versionMinor) + ' ' +
               QJsonDocument(event.fields).toJson(QJsonDocument::Compact) + '\n';
        fuzz::touch(event.string("status").toUtf8());
        (void)event.number("loss");
        (void)event.integer("step");
        (void)event.boolean("ok", false);
        (void)event.object("config");
    }
    for (const OutputLine& line : batch.logLines)
        out += "L" + QByteArray::number(line.lineNumber) + ' ' + line.text.toUtf8() + '\n';
    for (const DecodeError& error : batch.errors)
        out += "X" + QByteArray::number(error.lineNumber) + ' ' + error.message.toUtf8() + ' ' + error.rawLine + '\n';
    return out;
}

QByteArray parse(QByteArrayView data, const fuzz::Cuts* cuts) {
    EventStreamParser parser(512); // small, so that overlong lines are common
    ParsedBatch all;
    if (cuts)
        fuzz::feedInPieces(data, *cuts, [&](QByteArrayView piece) { all.append(parser.feed(piece)); });
    else
        all.append(parser.feed(data));
    all.append(parser.finish());
    return describe(all) + "lines " + QByteArray::number(parser.lineCount());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    const QByteArrayView data = fuzz::inputView(bytes, size);
    const fuzz::Cuts cuts = fuzz::cutsFor(data);
    fuzz::requireSame(parse(data, nullptr), parse(data, &cuts), cuts, "EventStreamParser");
    return 0;
}
