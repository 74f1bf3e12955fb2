// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QList>

#include <vector>

namespace rankscope {

// memmem: QByteArrayView::indexOf's search is several times slower on the short needles the parsers use.
[[nodiscard]] qsizetype findBytes(QByteArrayView haystack, QByteArrayView needle, qsizetype from = 0);
[[nodiscard]] inline bool containsBytes(QByteArrayView haystack, QByteArrayView needle) {
    return findBytes(haystack, needle) >= 0;
}

// Every occurrence of a fixed set of keywords (at most 64, none empty) in a buffer. A keyword that holds another
// one is looked for only where that one was found, so each byte of the buffer is searched once per keyword that
// holds no other.
class KeywordSearch final {
public:
    static constexpr int kMaxKeywords = 64;

    struct Hit {
        qsizetype start; // where the keyword starts in the searched text
        int keyword;     // its index in the list given to the constructor
        friend bool operator==(const Hit& a, const Hit& b) { return a.start == b.start && a.keyword == b.keyword; }
    };

    explicit KeywordSearch(QList<QByteArray> keywords);

    [[nodiscard]] const QList<QByteArray>& keywords() const { return m_keywords; }

    // Appends every occurrence in `text` (overlapping ones too) to `hits`, sorted by start, then by keyword.
    void findAll(QByteArrayView text, std::vector<Hit>& hits) const;
    // Bit i set: keyword i occurs in `text`.
    [[nodiscard]] quint64 maskOf(QByteArrayView text) const;

private:
    struct Covered {
        int keyword;
        qsizetype offset; // where the covering keyword starts in it
    };

    QList<QByteArray> m_keywords;
    QList<int> m_searched;             // the keywords that hold no other one
    QList<qsizetype> m_rareOffsets;    // per keyword searched: where its rarest byte is
    QList<QList<Covered>> m_coveredBy; // per keyword searched: the keywords that hold it
};

} // namespace rankscope
