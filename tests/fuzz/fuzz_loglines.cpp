// SPDX-License-Identifier: MIT
// LogLineScanner: the lines delivered (text, number, rank, keywords) must not depend on how the bytes were
// chunked, including the lines a sink asks for while it "wants every line"; the keywords it reports are exactly
// those in the text.
#include "core/loglines.h"
#include "tests/fuzz/fuzzcommon.h"

using namespace rankscope;

namespace {

// Wants every line between a line holding "BEGIN" and one holding "END", like the table parsers.
class RecordingSink final : public LogLineSink {
public:
    [[nodiscard]] QList<QByteArray> keywords() const override { return {"NCCL", "BEGIN", "Error", "\r", "NCCL E"}; }
    [[nodiscard]] bool wantsEveryLine() const override { return m_open; }
    void takeLine(const LogLine& line) override {
        quint64 expected = 0;
        for (qsizetype i = 0; i < keywords().size(); ++i) {
            if (containsBytes(line.text, keywords()[i]))
                expected |= quint64(1) << i;
        }
        if (line.keywords != expected || (!m_open && expected == 0))
            std::abort();
        m_out += QByteArray::number(line.number) + ' ' + QByteArray::number(line.rank) + ' ' +
                 QByteArray::number(line.keywords) + ' ' + line.text.toByteArray() + '\n';
        if (containsBytes(line.text, "BEGIN"))
            m_open = true;
        else if (containsBytes(line.text, "END"))
            m_open = false;
    }
    void endOfStream() override {
        m_out += "end\n";
        m_open = false;
    }
    [[nodiscard]] QByteArray out() const { return m_out; }

private:
    bool m_open = false;
    QByteArray m_out;
};

QByteArray scan(QByteArrayView data, const fuzz::Cuts* cuts) {
    RecordingSink sink;
    LogLineScanner scanner({&sink}, 40); // a short line cap, so it is hit often
    if (cuts)
        fuzz::feedInPieces(data, *cuts, [&](QByteArrayView piece) { scanner.feed(piece); });
    else
        scanner.feed(data);
    const qint64 lines = scanner.lineCount();
    scanner.finish();
    return sink.out() + QByteArray::number(lines);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    const QByteArrayView data = fuzz::inputView(bytes, size);
    const fuzz::Cuts cuts = fuzz::cutsFor(data);
    fuzz::requireSame(scan(data, nullptr), scan(data, &cuts), cuts, "LogLineScanner");
    (void)findBytes(data, data.first(std::min<qsizetype>(data.size(), cuts.hash % 8)), cuts.first);
    return 0;
}
