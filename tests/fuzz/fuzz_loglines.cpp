// SPDX-License-Identifier: MIT
// LogLineScanner: the lines delivered (text, number, rank, keywords) must not depend on how the bytes were
// chunked, including the lines a sink asks for while it "wants every line"; the keywords it reports, and their
// positions, are exactly those in the text. The keyword search's SIMD methods must find what its portable one finds.
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
        const QList<QByteArray> keywords = this->keywords();
        quint64 expected = 0;
        for (qsizetype i = 0; i < keywords.size(); ++i) {
            if (containsBytes(line.text, keywords[i]))
                expected |= quint64(1) << i;
        }
        if (line.keywords != expected || (!m_open && expected == 0))
            std::abort();
        // Its positions: every occurrence, overlapping ones too, by position, then keyword.
        qsizetype next = 0;
        for (qsizetype at = 0; at < line.text.size(); ++at) {
            for (int k = 0; k < keywords.size(); ++k) {
                if (!line.text.sliced(at).startsWith(keywords[k]))
                    continue;
                if (next >= line.foundCount || line.found[next].at != at || line.found[next].keyword != k)
                    std::abort();
                ++next;
            }
        }
        if (next != line.foundCount)
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

// Every keyword-search method this CPU has must find what the portable one finds, line ends included.
QByteArray searched(QByteArrayView data, KeywordSearch::Method method) {
    // Some keywords made of the input's first bytes, so that the fuzzer can steer them.
    QList<QByteArray> keywords = {"NCCL", "NCCL version", "\x1b", "\n", "a"};
    for (qsizetype at = 0; at + 3 <= std::min<qsizetype>(data.size(), 12); at += 3)
        keywords.append(data.sliced(at, 3).toByteArray());
    std::vector<KeywordSearch::Hit> hits;
    std::vector<qsizetype> lineEnds;
    KeywordSearch(keywords, method).findAll(data, hits, &lineEnds);
    QByteArray out;
    for (const KeywordSearch::Hit& hit : hits)
        out += QByteArray::number(hit.keyword) + '@' + QByteArray::number(hit.start) + ' ';
    for (const qsizetype end : lineEnds)
        out += QByteArray::number(end) + ' ';
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    const QByteArrayView data = fuzz::inputView(bytes, size);
    const fuzz::Cuts cuts = fuzz::cutsFor(data);
    fuzz::requireSame(scan(data, nullptr), scan(data, &cuts), cuts, "LogLineScanner");
    const QByteArray portable = searched(data, KeywordSearch::Method::Portable);
    for (const KeywordSearch::Method method :
         {KeywordSearch::Method::Ssse3, KeywordSearch::Method::Avx2, KeywordSearch::Method::Avx512}) {
        if (!KeywordSearch::isAvailable(method))
            continue;
        const QByteArray other = searched(data, method);
        if (other != portable) {
            std::fprintf(stderr,
                         "KeywordSearch method %d differs from the portable one\n--- portable\n%s\n--- %d\n%s\n",
                         int(method), portable.left(4000).constData(), int(method), other.left(4000).constData());
            std::abort();
        }
    }
    (void)findBytes(data, data.first(std::min<qsizetype>(data.size(), cuts.hash % 8)), cuts.first);
    return 0;
}
