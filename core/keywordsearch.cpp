// SPDX-License-Identifier: MIT
#include "core/keywordsearch.h"

#include <QtAlgorithms>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <mutex>
#include <utility>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RANKSCOPE_TEDDY 1
#include <immintrin.h>
#endif

namespace rankscope {

namespace {

qsizetype rarestByteIn(QByteArrayView needle) {
    return detail::rarestByteOffset(needle.data(), needle.size());
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

// Teddy: 8 buckets of fingerprints. Bit b of lo[j][n] is set when a fingerprint of bucket b has a byte with low
// nibble n at position j (hi[j]: high nibble); a position where every table agrees on some bucket is a candidate
// start of a fingerprint of that bucket. A fingerprint shorter than 3 bytes takes any byte after its end.
struct KeywordSearch::Teddy {
    static constexpr int kBuckets = 8;
    static constexpr int kWidth = 3;
    struct Check {
        int keyword;
        qsizetype offset;            // where the fingerprint starts in the keyword
        const char* bytes = nullptr; // the keyword's, held by KeywordSearch::m_keywords
        qsizetype size = 0;
    };
    // Each 16-byte table four times, for the 128-bit lanes of AVX2 (the first two) and AVX-512.
    alignas(64) std::array<std::array<quint8, 64>, kWidth> lo{};
    alignas(64) std::array<std::array<quint8, 64>, kWidth> hi{};
    std::array<std::vector<Check>, kBuckets> checks;
    // Per bucket, the places its tables let through in the text being searched, less the keywords found there. A
    // place can hold several keywords of its bucket: a bucket with more hits than places failed at none.
    std::array<qint64, kBuckets> failures{};
};

namespace {

using Teddy = KeywordSearch::Teddy;
using Hit = KeywordSearch::Hit;

// The rarity score of the `width` bytes of `keyword` at `offset`: the higher, the fewer places a search stops.
qsizetype windowScore(const QByteArray& keyword, qsizetype offset, qsizetype width) {
    const auto rarity = [](char c) { return qsizetype(sizeof detail::kRareToCommon) - detail::commonness(c); };
    qsizetype score = 0;
    for (qsizetype j = 0; j < width; ++j)
        score += rarity(keyword[offset + j]);
    return score;
}

qsizetype fingerprintWidth(const QByteArray& keyword) { return std::min<qsizetype>(Teddy::kWidth, keyword.size()); }

// Where the 1 to 3 bytes of a keyword made of its rarest bytes start: its fingerprint until the text shows better.
qsizetype rarestWindow(const QByteArray& keyword) {
    const qsizetype width = fingerprintWidth(keyword);
    qsizetype best = 0;
    for (qsizetype offset = 1; offset + width <= keyword.size(); ++offset) {
        if (windowScore(keyword, offset, width) > windowScore(keyword, best, width))
            best = offset;
    }
    return best;
}

// The nibbles a bucket accepts at each position, as 16-bit sets.
struct BucketShape {
    std::array<quint16, Teddy::kWidth> lo{};
    std::array<quint16, Teddy::kWidth> hi{};
    QList<qsizetype> groups;

    void add(const QByteArray& fingerprint) {
        for (qsizetype j = 0; j < Teddy::kWidth; ++j) {
            if (j < fingerprint.size()) {
                lo[j] |= quint16(1) << (quint8(fingerprint[j]) & 15);
                hi[j] |= quint16(1) << (quint8(fingerprint[j]) >> 4);
            } else {
                lo[j] = hi[j] = 0xffff;
            }
        }
    }
    // How many byte triples it lets through: each is a candidate that must be compared.
    [[nodiscard]] double triples() const {
        double count = 1;
        for (int j = 0; j < Teddy::kWidth; ++j)
            count *= qPopulationCount(lo[j]) * qPopulationCount(hi[j]);
        return count;
    }
    [[nodiscard]] BucketShape merged(const BucketShape& other) const {
        BucketShape out = *this;
        for (int j = 0; j < Teddy::kWidth; ++j) {
            out.lo[j] |= other.lo[j];
            out.hi[j] |= other.hi[j];
        }
        out.groups += other.groups;
        return out;
    }
};

// `offsets`: where each keyword's fingerprint starts (unused for an empty one).
std::unique_ptr<Teddy> buildTeddy(const QList<QByteArray>& keywords, const QList<qsizetype>& offsets) {
    // Keywords with the same fingerprint share a group; groups are merged into 8 buckets, each time the two that
    // together let through the fewest byte triples more than apart.
    QList<QByteArray> fingerprints;
    QList<QList<Teddy::Check>> groups;
    for (qsizetype k = 0; k < std::min<qsizetype>(keywords.size(), KeywordSearch::kMaxKeywords); ++k) {
        if (keywords[k].isEmpty())
            continue;
        const QByteArray print = keywords[k].sliced(offsets[k], fingerprintWidth(keywords[k]));
        qsizetype group = fingerprints.indexOf(print);
        if (group < 0) {
            group = fingerprints.size();
            fingerprints.append(print);
            groups.append(QList<Teddy::Check>());
        }
        groups[group].append({static_cast<int>(k), offsets[k]});
    }
    QList<BucketShape> buckets;
    for (qsizetype g = 0; g < groups.size(); ++g) {
        BucketShape shape;
        shape.add(fingerprints[g]);
        shape.groups = {g};
        buckets.append(shape);
    }
    while (buckets.size() > Teddy::kBuckets) {
        qsizetype bestA = 0;
        qsizetype bestB = 1;
        double bestCost = std::numeric_limits<double>::max();
        for (qsizetype a = 0; a < buckets.size(); ++a) {
            for (qsizetype b = a + 1; b < buckets.size(); ++b) {
                const double cost =
                    buckets[a].merged(buckets[b]).triples() - buckets[a].triples() - buckets[b].triples();
                if (cost < bestCost) {
                    bestA = a;
                    bestB = b;
                    bestCost = cost;
                }
            }
        }
        buckets[bestA] = buckets[bestA].merged(buckets[bestB]);
        buckets.removeAt(bestB);
    }
    auto teddy = std::make_unique<Teddy>();
    for (qsizetype b = 0; b < buckets.size(); ++b) {
        const quint8 bit = quint8(1) << b;
        for (int j = 0; j < Teddy::kWidth; ++j) {
            for (int nibble = 0; nibble < 64; ++nibble) {
                if (buckets[b].lo[j] & (1 << (nibble % 16)))
                    teddy->lo[j][nibble] |= bit;
                if (buckets[b].hi[j] & (1 << (nibble % 16)))
                    teddy->hi[j][nibble] |= bit;
            }
        }
        for (const qsizetype g : std::as_const(buckets[b].groups))
            teddy->checks[b].insert(teddy->checks[b].end(), groups[g].cbegin(), groups[g].cend());
        for (Teddy::Check& check : teddy->checks[b]) {
            check.bytes = keywords[check.keyword].constData();
            check.size = keywords[check.keyword].size();
        }
    }
    return teddy;
}

// Compares the keywords of `buckets` whose fingerprint would start at `at`. Hits come in the order of their
// fingerprints; one that starts before the hits already found moves back among the few it passed.
inline void checkCandidate(Teddy& teddy, QByteArrayView text, qsizetype at, unsigned buckets,
                           std::vector<Hit>& hits, size_t first) {
    while (buckets != 0) {
        const int bucket = qCountTrailingZeroBits(buckets);
        buckets &= buckets - 1;
        qint64& failures = teddy.failures[static_cast<size_t>(bucket)];
        ++failures;
        for (const Teddy::Check& check : teddy.checks[bucket]) {
            const qsizetype start = at - check.offset;
            const qsizetype size = check.size;
            // The last and first bytes first, inline: a memcmp call costs more than most candidates that fail.
            if (start < 0 || start + size > text.size() || text[start + size - 1] != check.bytes[size - 1] ||
                text[start] != check.bytes[0] ||
                std::memcmp(text.data() + start, check.bytes, static_cast<size_t>(size)) != 0)
                continue;
            --failures;
            // Field by field: a hit built on the stack and copied is read back before its stores land.
            size_t i = hits.size();
            hits.emplace_back();
            for (; i > first &&
                   (hits[i - 1].start > start || (hits[i - 1].start == start && hits[i - 1].keyword > check.keyword));
                 --i)
                hits[i] = hits[i - 1];
            hits[i].start = start;
            hits[i].keyword = check.keyword;
        }
    }
}

// The positions from `from` on that a vector step does not cover, one at a time. A byte past the end matches
// any table: the comparison then rejects keywords that would not fit.
void teddyTail(Teddy& teddy, QByteArrayView text, qsizetype from, std::vector<Hit>& hits, size_t first,
               std::vector<qsizetype>* lineEnds) {
    for (qsizetype at = from; at < text.size(); ++at) {
        if (lineEnds && text[at] == '\n')
            lineEnds->push_back(at);
        unsigned buckets = 0xff;
        for (qsizetype j = 0; j < Teddy::kWidth && at + j < text.size(); ++j) {
            const quint8 c = static_cast<quint8>(text[at + j]);
            buckets &= teddy.lo[j][c & 15] & teddy.hi[j][c >> 4];
        }
        if (buckets != 0)
            checkCandidate(teddy, text, at, buckets, hits, first);
    }
}

#ifdef RANKSCOPE_TEDDY

// Vector steps that found candidates: where each step starts, which of its positions are candidates and the
// buckets of each position.
template <int kStep> struct CandidateBatch {
    static constexpr int kSize = 32;
    alignas(64) quint8 buckets[kSize][kStep];
    qsizetype starts[kSize];
    quint64 candidates[kSize];
    int count = 0;

    // Where to store the step's buckets.
    quint8* add(qsizetype start, quint64 positions) {
        starts[count] = start;
        candidates[count] = positions;
        return buckets[count++];
    }
    [[nodiscard]] bool isFull() const { return count == kSize; }
    __attribute__((noinline)) void check(Teddy& teddy, QByteArrayView text, std::vector<Hit>& hits, size_t first) {
        for (int step = 0; step < count; ++step) {
            for (quint64 positions = candidates[step]; positions != 0; positions &= positions - 1) {
                const int i = qCountTrailingZeroBits(positions);
                checkCandidate(teddy, text, starts[step] + i, buckets[step][i], hits, first);
            }
        }
        count = 0;
    }
};

// Line ends come from the first of the three loads.
template <bool kLineEnds>
__attribute__((target("avx2"))) void teddyAvx2(Teddy& teddy, QByteArrayView text, std::vector<Hit>& hits,
                                               std::vector<qsizetype>* lineEnds) {
    const size_t first = hits.size();
    const char* const data = text.data();
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const __m256i newline = _mm256_set1_epi8('\n');
    __m256i lo[Teddy::kWidth];
    __m256i hi[Teddy::kWidth];
    for (int j = 0; j < Teddy::kWidth; ++j) {
        lo[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(teddy.lo[j].data()));
        hi[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(teddy.hi[j].data()));
    }
    CandidateBatch<32> batch;
    qsizetype at = 0;
    for (; at + 32 + Teddy::kWidth - 1 <= text.size(); at += 32) {
        __m256i found = _mm256_set1_epi8(-1);
#pragma GCC unroll 3
        for (int j = 0; j < Teddy::kWidth; ++j) {
            const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + at + j));
            if (kLineEnds && j == 0) {
                for (unsigned ends = static_cast<unsigned>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(bytes, newline)));
                     ends != 0; ends &= ends - 1)
                    lineEnds->push_back(at + qCountTrailingZeroBits(ends));
            }
            const __m256i low = _mm256_and_si256(bytes, nibble);
            const __m256i high = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), nibble);
            found = _mm256_and_si256(
                found, _mm256_and_si256(_mm256_shuffle_epi8(lo[j], low), _mm256_shuffle_epi8(hi[j], high)));
        }
        const unsigned candidates =
            ~static_cast<unsigned>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(found, _mm256_setzero_si256())));
        if (candidates == 0)
            continue;
        _mm256_store_si256(reinterpret_cast<__m256i*>(batch.add(at, candidates)), found);
        if (batch.isFull())
            batch.check(teddy, text, hits, first);
    }
    batch.check(teddy, text, hits, first);
    teddyTail(teddy, text, at, hits, first, lineEnds);
}

// As teddyAvx2, 64 positions per step.
template <bool kLineEnds>
__attribute__((target("avx512f,avx512bw"))) void teddyAvx512(Teddy& teddy, QByteArrayView text,
                                                             std::vector<Hit>& hits, std::vector<qsizetype>* lineEnds) {
    const size_t first = hits.size();
    const char* const data = text.data();
    const __m512i nibble = _mm512_set1_epi8(0x0f);
    const __m512i newline = _mm512_set1_epi8('\n');
    __m512i lo[Teddy::kWidth];
    __m512i hi[Teddy::kWidth];
    for (int j = 0; j < Teddy::kWidth; ++j) {
        lo[j] = _mm512_load_si512(teddy.lo[j].data());
        hi[j] = _mm512_load_si512(teddy.hi[j].data());
    }
    // Steps with candidates are kept and compared in batches: a call in the loop would make every step reload the
    // tables, which no register keeps across a call.
    CandidateBatch<64> batch;
    qsizetype at = 0;
    for (; at + 64 + Teddy::kWidth - 1 <= text.size(); at += 64) {
        __m512i found = _mm512_set1_epi8(-1);
#pragma GCC unroll 3
        for (int j = 0; j < Teddy::kWidth; ++j) {
            const __m512i bytes = _mm512_loadu_si512(data + at + j);
            if (kLineEnds && j == 0) {
                for (quint64 ends = _mm512_cmpeq_epi8_mask(bytes, newline); ends != 0; ends &= ends - 1)
                    lineEnds->push_back(at + qCountTrailingZeroBits(ends));
            }
            const __m512i low = _mm512_and_si512(bytes, nibble);
            const __m512i high = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), nibble);
            found = _mm512_and_si512(
                found, _mm512_and_si512(_mm512_shuffle_epi8(lo[j], low), _mm512_shuffle_epi8(hi[j], high)));
        }
        const quint64 candidates = _mm512_test_epi8_mask(found, found);
        if (candidates == 0)
            continue;
        _mm512_store_si512(batch.add(at, candidates), found);
        if (batch.isFull())
            batch.check(teddy, text, hits, first);
    }
    batch.check(teddy, text, hits, first);
    teddyTail(teddy, text, at, hits, first, lineEnds);
}

template <bool kLineEnds>
__attribute__((target("ssse3"))) void teddySsse3(Teddy& teddy, QByteArrayView text, std::vector<Hit>& hits,
                                                 std::vector<qsizetype>* lineEnds) {
    const size_t first = hits.size();
    const char* const data = text.data();
    const __m128i nibble = _mm_set1_epi8(0x0f);
    const __m128i newline = _mm_set1_epi8('\n');
    __m128i lo[Teddy::kWidth];
    __m128i hi[Teddy::kWidth];
    for (int j = 0; j < Teddy::kWidth; ++j) {
        lo[j] = _mm_load_si128(reinterpret_cast<const __m128i*>(teddy.lo[j].data()));
        hi[j] = _mm_load_si128(reinterpret_cast<const __m128i*>(teddy.hi[j].data()));
    }
    CandidateBatch<16> batch;
    qsizetype at = 0;
    for (; at + 16 + Teddy::kWidth - 1 <= text.size(); at += 16) {
        __m128i found = _mm_set1_epi8(-1);
#pragma GCC unroll 3
        for (int j = 0; j < Teddy::kWidth; ++j) {
            const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + at + j));
            if (kLineEnds && j == 0) {
                for (unsigned ends = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, newline)));
                     ends != 0; ends &= ends - 1)
                    lineEnds->push_back(at + qCountTrailingZeroBits(ends));
            }
            const __m128i low = _mm_and_si128(bytes, nibble);
            const __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble);
            found = _mm_and_si128(found, _mm_and_si128(_mm_shuffle_epi8(lo[j], low), _mm_shuffle_epi8(hi[j], high)));
        }
        const unsigned candidates =
            ~static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(found, _mm_setzero_si128()))) & 0xffff;
        if (candidates == 0)
            continue;
        _mm_store_si128(reinterpret_cast<__m128i*>(batch.add(at, candidates)), found);
        if (batch.isFull())
            batch.check(teddy, text, hits, first);
    }
    batch.check(teddy, text, hits, first);
    teddyTail(teddy, text, at, hits, first, lineEnds);
}

#endif

} // namespace

bool KeywordSearch::isAvailable(Method method) {
    switch (method) {
    case Method::Portable:
        return true;
#ifdef RANKSCOPE_TEDDY
    case Method::Ssse3:
        return __builtin_cpu_supports("ssse3");
    case Method::Avx2:
        return __builtin_cpu_supports("avx2");
    case Method::Avx512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#else
    case Method::Ssse3:
    case Method::Avx2:
    case Method::Avx512:
        return false;
#endif
    }
    return false;
}

KeywordSearch::Method KeywordSearch::fastestMethod() {
    static const Method fastest = isAvailable(Method::Avx512)  ? Method::Avx512
                                  : isAvailable(Method::Avx2)  ? Method::Avx2
                                  : isAvailable(Method::Ssse3) ? Method::Ssse3
                                                               : Method::Portable;
    return fastest;
}

qsizetype findBytes(QByteArrayView haystack, const Needle& needle, qsizetype from) {
    if (from < 0 || from > haystack.size())
        return -1;
    if (needle.size() == 0)
        return from;
    if (haystack.size() - from < needle.size())
        return -1;
    return findByRareByte(haystack, needle.bytes(), from, needle.rareOffset());
}

namespace {

// The searches built last, untuned, the last used first; a new one for the same keywords and method copies its tables.
constexpr size_t kKeptSearches = 16;
struct KeptSearches {
    std::mutex mutex;
    std::vector<std::shared_ptr<const KeywordSearch>> searches;
};
KeptSearches& keptSearches() {
    static KeptSearches kept; // built on first use: a search may be built while other statics are
    return kept;
}

KeywordSearch::Method availableOrPortable(KeywordSearch::Method method) {
    return KeywordSearch::isAvailable(method) ? method : KeywordSearch::Method::Portable;
}

} // namespace

KeywordSearch::KeywordSearch(QList<QByteArray> keywords, Method method) {
    const Method used = availableOrPortable(method);
    KeptSearches& kept = keptSearches();
    std::shared_ptr<const KeywordSearch> built;
    {
        const std::lock_guard lock(kept.mutex);
        const auto found = std::find_if(kept.searches.begin(), kept.searches.end(), [&](const auto& search) {
            return search->m_method == used && search->m_keywords == keywords;
        });
        if (found != kept.searches.end()) {
            built = *found;
            std::rotate(kept.searches.begin(), found, found + 1);
        }
    }
    if (!built) {
        built.reset(new KeywordSearch(std::move(keywords), used, Build{}));
        const std::lock_guard lock(kept.mutex);
        kept.searches.insert(kept.searches.begin(), built);
        if (kept.searches.size() > kKeptSearches)
            kept.searches.pop_back();
    }
    copyTablesOf(*built);
}

void KeywordSearch::copyTablesOf(const KeywordSearch& built) {
    m_keywords = built.m_keywords; // their bytes shared: the checks' pointers are theirs
    m_method = built.m_method;
    if (built.m_teddy) {
        m_teddy = std::make_unique<Teddy>(*built.m_teddy);
        for (std::vector<Teddy::Check>& checks : m_teddy->checks) {
            for (Teddy::Check& check : checks)
                check.bytes = std::as_const(m_keywords)[check.keyword].constData();
        }
    }
    m_fingerprints = built.m_fingerprints;
    m_tunings = 0;
    m_searched = built.m_searched;
    m_rareOffsets = built.m_rareOffsets;
    m_coveredBy = built.m_coveredBy;
}

KeywordSearch::KeywordSearch(QList<QByteArray> keywords, Method method, Build) : m_keywords(std::move(keywords)) {
    Q_ASSERT(m_keywords.size() <= kMaxKeywords);
    if (method != Method::Portable && isAvailable(method)) {
        for (const QByteArray& keyword : std::as_const(m_keywords))
            m_fingerprints.append(keyword.isEmpty() ? 0 : rarestWindow(keyword));
        m_teddy = buildTeddy(m_keywords, m_fingerprints);
        m_method = method;
    }
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

KeywordSearch::~KeywordSearch() = default;

void KeywordSearch::findAll(QByteArrayView text, std::vector<Hit>& hits, std::vector<qsizetype>* lineEnds) {
#ifdef RANKSCOPE_TEDDY
    if (m_teddy) {
        m_teddy->failures.fill(0);
        // Each with and without the line ends: a loop that finds them in every step branches only where one is.
        const auto search = lineEnds ? (m_method == Method::Avx512 ? teddyAvx512<true>
                                        : m_method == Method::Avx2 ? teddyAvx2<true>
                                                                   : teddySsse3<true>)
                                     : (m_method == Method::Avx512 ? teddyAvx512<false>
                                        : m_method == Method::Avx2 ? teddyAvx2<false>
                                                                   : teddySsse3<false>);
        search(*m_teddy, text, hits, lineEnds);
        if (text.size() >= kTuningText && m_tunings < kMaxTunings)
            tuneFingerprints(text);
        return;
    }
#endif
    findAllPortable(text, hits);
    if (lineEnds)
        findLineEnds(text, *lineEnds);
}

namespace {

// How often each of a set of 3-byte windows occurs in a text (overlapping ones too), counted in one pass over it:
// the tuning weighs every place of every keyword of a failing bucket, which a search per place made as many passes.
class WindowCounts {
public:
    void add(QByteArrayView window) { m_windows.push_back(key(window.data())); }
    void count(QByteArrayView text) {
        int bits = 6;
        while ((size_t(1) << bits) < 4 * m_windows.size())
            ++bits;
        const size_t size = size_t(1) << bits;
        m_mask = size - 1;
        m_shift = 32 - bits;
        m_slots.assign(size, Slot{});
        for (const quint32 window : m_windows)
            find(window).key = window;
        for (qsizetype at = 0; at + 3 <= text.size(); ++at) {
            Slot& slot = find(key(text.data() + at));
            if (slot.key != kEmpty)
                ++slot.count;
        }
    }
    [[nodiscard]] qint64 of(QByteArrayView window) { return find(key(window.data())).count; }

private:
    static constexpr quint32 kEmpty = 0xffffffff; // no 3 bytes make it
    struct Slot {
        quint32 key = kEmpty;
        qint64 count = 0;
    };
    static quint32 key(const char* bytes) {
        return quint32(quint8(bytes[0])) << 16 | quint32(quint8(bytes[1])) << 8 | quint8(bytes[2]);
    }
    // The window's slot, or the empty one where it would be.
    Slot& find(quint32 window) {
        size_t at = (window * 0x9e3779b1u) >> m_shift; // the product's high bits: its low ones mix little
        while (m_slots[at].key != window && m_slots[at].key != kEmpty)
            at = (at + 1) & m_mask;
        return m_slots[at];
    }
    std::vector<quint32> m_windows;
    std::vector<Slot> m_slots;
    size_t m_mask = 0;
    int m_shift = 32;
};

} // namespace

// A bucket whose places mostly fail wastes the search's time: its keywords' fingerprints are common in this text
// ("ugh", the rarest bytes of "atchdog caught", is in every "throughput"). Each of them moves to the place in its
// keyword whose bytes the text holds least often, and the tables are built again; at most kMaxTunings looks. Where
// a keyword is found makes no difference to what is found, only to how fast.
void KeywordSearch::tuneFingerprints(QByteArrayView text) {
    Teddy& teddy = *m_teddy;
    const std::array<qint64, Teddy::kBuckets>& failed = teddy.failures;
    // The places are counted in the text's first kTuningText bytes: enough to rank them, and a fraction of a chunk.
    const QByteArrayView sample = text.first(std::min(text.size(), kTuningText));
    std::vector<int> keywords; // of the failing buckets, those with more than one place to choose from
    for (int bucket = 0; bucket < Teddy::kBuckets; ++bucket) {
        if (failed[static_cast<size_t>(bucket)] * kTolerableFailureGap <= text.size())
            continue;
        for (const Teddy::Check& check : teddy.checks[static_cast<size_t>(bucket)]) {
            if (m_keywords[check.keyword].size() > Teddy::kWidth)
                keywords.push_back(check.keyword);
        }
    }
    // Each look counts, also one that moved nothing (a bucket can fail where no fingerprint is better): a text
    // that no place suits costs a few looks, not one per chunk.
    m_tunings +=
        std::any_of(failed.begin(), failed.end(), [&text](qint64 f) { return f * kTolerableFailureGap > text.size(); });
    if (keywords.empty())
        return;
    WindowCounts counts;
    for (const int keyword : keywords) {
        const QByteArray& bytes = m_keywords[keyword];
        for (qsizetype offset = 0; offset + Teddy::kWidth <= bytes.size(); ++offset)
            counts.add(QByteArrayView(bytes).sliced(offset, Teddy::kWidth));
    }
    counts.count(sample);
    bool moved = false;
    for (const int keyword : keywords) {
        const QByteArray& bytes = m_keywords[keyword];
        // The places by rarity: of those the text holds equally often, the rarest.
        QList<qsizetype> offsets;
        for (qsizetype offset = 0; offset + Teddy::kWidth <= bytes.size(); ++offset)
            offsets.append(offset);
        std::stable_sort(offsets.begin(), offsets.end(), [&](qsizetype a, qsizetype b) {
            return windowScore(bytes, a, Teddy::kWidth) > windowScore(bytes, b, Teddy::kWidth);
        });
        qsizetype best = offsets.front();
        qint64 bestCount = counts.of(QByteArrayView(bytes).sliced(best, Teddy::kWidth));
        for (const qsizetype offset : std::as_const(offsets)) {
            const qint64 count = counts.of(QByteArrayView(bytes).sliced(offset, Teddy::kWidth));
            if (count < bestCount) {
                best = offset;
                bestCount = count;
            }
        }
        moved = moved || best != m_fingerprints[keyword];
        m_fingerprints[keyword] = best;
    }
    if (moved)
        m_teddy = buildTeddy(m_keywords, m_fingerprints);
}

qsizetype KeywordSearch::fingerprintOffset(int keyword) const {
    return m_teddy && keyword >= 0 && keyword < m_fingerprints.size() ? m_fingerprints[keyword] : -1;
}

void KeywordSearch::findLineEnds(QByteArrayView text, std::vector<qsizetype>& lineEnds) {
    const char* const begin = text.data();
    const char* const end = begin + text.size();
    for (const char* at = begin; at < end; ++at) {
        at = static_cast<const char*>(std::memchr(at, '\n', static_cast<size_t>(end - at)));
        if (!at)
            break;
        lineEnds.push_back(at - begin);
    }
}

void KeywordSearch::findAllPortable(QByteArrayView text, std::vector<Hit>& hits) const {
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

quint64 KeywordSearch::maskOf(QByteArrayView text) {
    std::vector<Hit> hits;
    findAll(text, hits);
    quint64 mask = 0;
    for (const Hit& hit : hits)
        mask |= quint64(1) << hit.keyword;
    return mask;
}

} // namespace rankscope
