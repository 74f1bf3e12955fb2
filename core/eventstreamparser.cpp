// SPDX-License-Identifier: MIT
#include "core/eventstreamparser.h"

#include <rankscope/event_schema.h>

namespace rankscope {

namespace {

void appendLogLine(qint64 lineNumber, QByteArrayView bytes, ParsedBatch& batch) {
    batch.logLines.append({lineNumber, QString::fromUtf8(bytes)});
}

} // namespace

void ParsedBatch::append(const ParsedBatch& other) {
    events.append(other.events);
    logLines.append(other.logLines);
    errors.append(other.errors);
}

EventStreamParser::EventStreamParser(qsizetype maxLineBytes) : m_splitter(maxLineBytes) {}

ParsedBatch EventStreamParser::feed(QByteArrayView chunk) {
    ParsedBatch batch;
    handlePieces(m_splitter.feed(chunk), batch);
    return batch;
}

ParsedBatch EventStreamParser::finish() {
    ParsedBatch batch;
    handlePieces(m_splitter.finish(), batch);
    m_lineCount = 0;
    m_inOverlongLine = false;
    return batch;
}

void EventStreamParser::handlePieces(const QVector<LinePiece>& pieces, ParsedBatch& batch) {
    for (const LinePiece& piece : pieces) {
        const bool firstPiece = !m_inOverlongLine;
        if (firstPiece)
            ++m_lineCount;
        if (firstPiece && piece.endsLine)
            handleLine(piece.bytes, batch);
        else
            handleOverlongPiece(piece, firstPiece, batch);
        m_inOverlongLine = !piece.endsLine;
    }
}

void EventStreamParser::handleLine(const QByteArray& line, ParsedBatch& batch) const {
    if (!line.startsWith(schemaBytes(schema::kLinePrefix))) {
        appendLogLine(m_lineCount, line, batch);
        return;
    }
    TrainerEventResult result =
        decodeTrainerEvent(QByteArrayView(line).sliced(schemaBytes(schema::kLinePrefix).size()));
    if (result.ok()) {
        result.event->lineNumber = m_lineCount;
        batch.events.append(std::move(*result.event));
        return;
    }
    batch.errors.append({m_lineCount, result.error, line});
    appendLogLine(m_lineCount, line, batch);
}

// An event line over the cap cannot be decoded (its JSON is split); it is reported once and kept as log text.
void EventStreamParser::handleOverlongPiece(const LinePiece& piece, bool firstPiece, ParsedBatch& batch) const {
    if (firstPiece && piece.bytes.startsWith(schemaBytes(schema::kLinePrefix))) {
        const QString message =
            QStringLiteral("event line longer than %1 bytes; kept as log output").arg(m_splitter.maxLineBytes());
        batch.errors.append({m_lineCount, message, piece.bytes});
    }
    appendLogLine(m_lineCount, piece.bytes, batch);
}

} // namespace rankscope
