// SPDX-License-Identifier: MIT
#include "core/keywordsearch.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

namespace rankscope {

namespace {

// Printable bytes from rare to common in the recorded training logs of tests/data; other bytes count as rarest.
constexpr QByteArrayView kRareToCommon =
    R"r(!$&?QYZ\^`~KJX;j%qH#'V<*W+>SMGBRAU)x(|TzD@E{}PFOLIy[]wgbfNC/uv=4h6k_7893d5m.2lpnioc,1r-0sat:e" )r";

qsizetype rarestByteIn(QByteArrayView needle) {
    qsizetype best = 0;
    qsizetype bestRank = std::numeric_limits<qsizetype>::max();
    for (qsizetype i = 0; i < needle.size(); ++i) {
        const qsizetype rank = kRareToCommon.indexOf(needle[i]) + 1; // 0: not printable, rarest
        if (rank < bestRank) {
            best = i;
            bestRank = rank;
        }
    }
    return best;
}

// On a long text: memchr for the needle's rarest byte (at `rareOffset` in it) skips log text several times faster
// than memmem, and each candidate start is compared once, leftmost first.
qsizetype findByRareByte(QByteArrayView haystack, QByteArrayView needle, qsizetype from, qsizetype rareOffset) {
    const char* const begin = haystack.data();
    const char* const end = begin + haystack.size();
    const char rare = needle[rareOffset];
    const char* candidate = begin + from + rareOffset;
    const char* const last = end - needle.size() + rareOffset; // the last place the rare byte can be
    while (candidate <= last) {
        candidate = static_cast<const char*>(std::memchr(candidate, rare, static_cast<size_t>(last - candidate + 1)));
        if (!candidate)
            return -1;
        const char* const start = candidate - rareOffset;
        // The ends first, inline: most candidates fail there, and a memcmp call costs more than the check.
        if (start[0] == needle.front() && start[needle.size() - 1] == needle.back() &&
            std::memcmp(start, needle.data(), static_cast<size_t>(needle.size())) == 0)
            return start - begin;
        ++candidate;
    }
    return -1;
}

// On a line the rare-byte setup costs more than it saves.
qsizetype findByFirstByte(QByteArrayView haystack, QByteArrayView needle, qsizetype from) {
    const char* const begin = haystack.data();
    const char* at = begin + from;
    const char* const end = begin + haystack.size();
    const char first = needle.front();
    const size_t rest = static_cast<size_t>(needle.size() - 1);
    while (end - at >= needle.size()) {
        at = static_cast<const char*>(std::memchr(at, first, static_cast<size_t>(end - at) - rest));
        if (!at)
            return -1;
        if (at[rest] == needle.back() && std::memcmp(at + 1, needle.data() + 1, rest) == 0)
            return at - begin;
        ++at;
    }
    return -1;
}

constexpr qsizetype kLongText = 512;

} // namespace

qsizetype findBytes(QByteArrayView haystack, QByteArrayView needle, qsizetype from) {
    if (from < 0 || from > haystack.size())
        return -1;
    if (needle.isEmpty())
        return from;
    if (haystack.size() - from < needle.size())
        return -1;
    if (haystack.size() - from > kLongText)
        return findByRareByte(haystack, needle, from, rarestByteIn(needle));
    return findByFirstByte(haystack, needle, from);
}

KeywordSearch::KeywordSearch(QList<QByteArray> keywords) : m_keywords(std::move(keywords)) {
    Q_ASSERT(m_keywords.size() <= kMaxKeywords);
    const qsizetype count = std::min<qsizetype>(m_keywords.size(), kMaxKeywords);
    // The keyword `inner` is held by `outer` when outer contains it; of equal ones the first is the inner one.
    const auto inside = [this](qsizetype inner, qsizetype outer) {
        const QByteArray& a = m_keywords[inner];
        const QByteArray& b = m_keywords[outer];
        return inner != outer && !a.isEmpty() && b.contains(a) && (a.size() < b.size() || inner < outer);
    };
    for (qsizetype k = 0; k < count; ++k) {
        bool holdsAnother = false;
        for (qsizetype other = 0; other < count && !holdsAnother; ++other)
            holdsAnother = inside(other, k);
        if (!holdsAnother && !m_keywords[k].isEmpty()) {
            m_searched.append(static_cast<int>(k));
            m_rareOffsets.append(rarestByteIn(m_keywords[k]));
        }
    }
    m_coveredBy.resize(m_searched.size());
    for (qsizetype k = 0; k < count; ++k) {
        if (m_keywords[k].isEmpty() || m_searched.contains(k))
            continue;
        // The smallest keyword it holds holds no other one, so it is searched.
        qsizetype best = -1;
        for (qsizetype s = 0; s < m_searched.size(); ++s) {
            if (inside(m_searched[s], k) &&
                (best < 0 || m_keywords[m_searched[s]].size() < m_keywords[m_searched[best]].size()))
                best = s;
        }
        Q_ASSERT(best >= 0);
        m_coveredBy[best].append({static_cast<int>(k), m_keywords[k].indexOf(m_keywords[m_searched[best]])});
    }
}

void KeywordSearch::findAll(QByteArrayView text, std::vector<Hit>& hits) const {
    const size_t first = hits.size();
    const bool longText = text.size() > kLongText;
    for (qsizetype s = 0; s < m_searched.size(); ++s) {
        const int keyword = m_searched[s];
        const QByteArrayView needle = m_keywords[keyword];
        const auto next = [&](qsizetype from) {
            if (text.size() - from < needle.size())
                return qsizetype(-1);
            return longText && text.size() - from > kLongText ? findByRareByte(text, needle, from, m_rareOffsets[s])
                                                              : findByFirstByte(text, needle, from);
        };
        for (qsizetype at = next(0); at >= 0; at = next(at + 1)) {
            hits.push_back({at, keyword});
            for (const Covered& covered : m_coveredBy[s]) {
                const QByteArrayView longer = m_keywords[covered.keyword];
                const qsizetype start = at - covered.offset;
                if (start >= 0 && start + longer.size() <= text.size() && text.sliced(start, longer.size()) == longer)
                    hits.push_back({start, covered.keyword});
            }
        }
    }
    const auto before = [](const Hit& a, const Hit& b) {
        return a.start != b.start ? a.start < b.start : a.keyword < b.keyword;
    };
    const auto begin = hits.begin() + static_cast<std::ptrdiff_t>(first);
    if (!std::is_sorted(begin, hits.end(), before))
        std::sort(begin, hits.end(), before);
}

quint64 KeywordSearch::maskOf(QByteArrayView text) const {
    std::vector<Hit> hits;
    findAll(text, hits);
    quint64 mask = 0;
    for (const Hit& hit : hits)
        mask |= quint64(1) << hit.keyword;
    return mask;
}

} // namespace rankscope
