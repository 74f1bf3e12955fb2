// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QList>

#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace rankscope {

namespace detail {

// Printable bytes from rare to common in the recorded training logs of tests/data; other bytes count as rarest.
inline constexpr char kRareToCommon[] =
    R"r(!$&?QYZ\^`~KJX;j%qH#'V<*W+>SMGBRAU)x(|TzD@E{}PFOLIy[]wgbfNC/uv=4h6k_7893d5m.2lpnioc,1r-0sat:e" )r";

// 0 for the rarest bytes, then higher the more common a byte is.
constexpr qsizetype commonness(char c) {
    for (qsizetype i = 0; i + 1 < qsizetype(sizeof kRareToCommon); ++i) {
        if (kRareToCommon[i] == c)
            return i + 1;
    }
    return 0;
}

constexpr qsizetype rarestByteOffset(const char* bytes, qsizetype size) {
    qsizetype best = 0;
    for (qsizetype i = 1; i < size; ++i) {
        if (commonness(bytes[i]) < commonness(bytes[best]))
            best = i;
    }
    return best;
}

} // namespace detail

// A needle known when compiling, with its rarest byte found then: a search for it stops only where that byte is,
// where a search led by its first byte stops at every space or common letter. Declare one as
// `constexpr Needle kName{"text"}`.
class Needle final {
public:
    template <qsizetype N>
    constexpr explicit Needle(const char (&text)[N])
        : m_bytes(text, N - 1), m_rare(detail::rarestByteOffset(text, N - 1)) {}

    [[nodiscard]] constexpr QByteArrayView bytes() const { return m_bytes; }
    [[nodiscard]] constexpr qsizetype size() const { return m_bytes.size(); }
    [[nodiscard]] constexpr qsizetype rareOffset() const { return m_rare; }

private:
    QByteArrayView m_bytes;
    qsizetype m_rare;
};

// memmem: QByteArrayView::indexOf's search is several times slower on the short needles the parsers use.
[[nodiscard]] qsizetype findBytes(QByteArrayView haystack, QByteArrayView needle, qsizetype from = 0);
[[nodiscard]] qsizetype findBytes(QByteArrayView haystack, const Needle& needle, qsizetype from = 0);
[[nodiscard]] inline bool containsBytes(QByteArrayView haystack, QByteArrayView needle) {
    return findBytes(haystack, needle) >= 0;
}
[[nodiscard]] inline bool containsBytes(QByteArrayView haystack, const Needle& needle) {
    return findBytes(haystack, needle) >= 0;
}

// `text` starts with the literal `prefix`, compared inline: QByteArrayView::startsWith measures a literal at run
// time (it looks for a NUL in it) and compares out of line, which costs more than the comparison on a log line.
template <qsizetype N> [[nodiscard]] inline bool startsWithLiteral(QByteArrayView text, const char (&prefix)[N]) {
    return text.size() >= N - 1 && std::memcmp(text.data(), prefix, N - 1) == 0;
}

// The number that `digits` spell, all of them decimal digits (1 to 18 of them), or -1. The log parsers' reading of a
// pid, a rank, a line number or a count that stands alone.
[[nodiscard]] inline qint64 decimalValue(QByteArrayView digits) {
    if (digits.isEmpty() || digits.size() > 18)
        return -1;
    qint64 value = 0;
    for (const char c : digits) {
        if (c < '0' || c > '9')
            return -1;
        value = value * 10 + (c - '0');
    }
    return value;
}

// Where the byte `c` first is in `text` from `from` on, or -1: QByteArrayView::indexOf(char) runs Qt's search for a
// byte string, out of line.
[[nodiscard]] inline qsizetype indexOfByte(QByteArrayView text, char c, qsizetype from = 0) {
    if (from >= text.size())
        return -1;
    const void* at = std::memchr(text.data() + from, c, static_cast<size_t>(text.size() - from));
    return at ? static_cast<const char*>(at) - text.data() : -1;
}

// a == b, without QByteArrayView's out-of-line comparison.
[[nodiscard]] inline bool sameBytes(QByteArrayView a, QByteArrayView b) {
    return a.size() == b.size() && (a.isEmpty() || std::memcmp(a.data(), b.data(), static_cast<size_t>(a.size())) == 0);
}

// A hash of short byte strings (host names, ids) for tables looked up once per log record. Qt's qHash of a
// QByteArray is SipHash where Qt was built without AES (Debian's build): on a host name it cost more than reading
// the rest of the record. This multiplies one or two words per 8 bytes. `seed` is the table's (QHash passes the
// process's random seed), so that a log cannot be written to make its names collide.
[[nodiscard]] inline quint64 hashBytes(std::string_view bytes, quint64 seed) {
    const auto mix = [](quint64 a, quint64 b) {
        const unsigned __int128 product = static_cast<unsigned __int128>(a) * b;
        return static_cast<quint64>(product) ^ static_cast<quint64>(product >> 64);
    };
    const auto word = [](const char* at) {
        quint64 value;
        std::memcpy(&value, at, sizeof value);
        return value;
    };
    constexpr quint64 kOdd1 = 0x9e3779b97f4a7c15ULL;
    constexpr quint64 kOdd2 = 0xd6e8feb86659fd93ULL;
    const char* const data = bytes.data();
    const size_t size = bytes.size();
    quint64 h = seed ^ (size * kOdd1);
    if (size >= 8) {
        for (size_t at = 0; at + 8 < size; at += 8)
            h = mix(h ^ word(data + at), kOdd2);
        h = mix(h ^ word(data + size - 8), kOdd1); // the last 8 bytes, overlapping the word before
    } else if (size >= 4) {
        quint32 first;
        quint32 last;
        std::memcpy(&first, data, 4);
        std::memcpy(&last, data + size - 4, 4);
        h = mix(h ^ ((quint64(first) << 32) | last), kOdd2);
    } else if (size > 0) {
        const quint64 value = (quint64(static_cast<unsigned char>(data[0])) << 16) |
                              (quint64(static_cast<unsigned char>(data[size / 2])) << 8) |
                              static_cast<unsigned char>(data[size - 1]);
        h = mix(h ^ value, kOdd2);
    }
    return mix(h, kOdd1);
}

// A QHash key of bytes that hashes with hashBytes. A view is looked up without copying its bytes: viewAsKey().
struct HashedBytes {
    QByteArray bytes;
    friend bool operator==(const HashedBytes& a, const HashedBytes& b) { return sameBytes(a.bytes, b.bytes); }
    friend size_t qHash(const HashedBytes& key, size_t seed) {
        return static_cast<size_t>(
            hashBytes(std::string_view(key.bytes.constData(), static_cast<size_t>(key.bytes.size())), seed));
    }
};
[[nodiscard]] inline HashedBytes viewAsKey(QByteArrayView bytes) {
    return {QByteArray::fromRawData(bytes.data(), bytes.size())};
}

// Reads text from `at` on, one expected piece after another: a line printed in a known form, read without a search.
struct TextCursor {
    QByteArrayView text;
    qsizetype at;

    // The literal at `at`, then `at` after it.
    template <qsizetype N> bool skip(const char (&literal)[N]) {
        if (!startsWithLiteral(text.sliced(at), literal))
            return false;
        at += N - 1;
        return true;
    }
    // 1 to 18 digits at `at`, then `at` after them.
    bool number(qint64& value) {
        const qsizetype start = at;
        qint64 result = 0;
        for (; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at) {
            if (at - start == 18)
                return false;
            result = result * 10 + (text[at] - '0');
        }
        value = result;
        return at > start;
    }
};

// Every occurrence of a fixed set of keywords (at most 64, none empty) in a buffer.
// On x86-64 with SSSE3, AVX2 or AVX-512 one pass finds them all: a "Teddy" filter (from Hyperscan, as in Rust's
// aho-corasick) looks up each byte's two nibbles in small tables, 16, 32 or 64 positions per step, to find where a
// 3-byte fingerprint of some keyword starts; only there are keywords compared. A keyword's fingerprint is its
// rarest bytes by a table of byte rarity, until a searched text holds them often (see findAll). Elsewhere (the
// portable method) each keyword that holds no other one is searched with memchr on its rarest byte, and the others
// only where the one they hold was found.
class KeywordSearch final {
public:
    static constexpr int kMaxKeywords = 64;

    struct Hit {
        qsizetype start; // where the keyword starts in the searched text
        int keyword;     // its index in the list given to the constructor
        friend bool operator==(const Hit& a, const Hit& b) { return a.start == b.start && a.keyword == b.keyword; }
    };

    enum class Method { Portable, Ssse3, Avx2, Avx512 };  // Avx512: AVX-512F and BW
    [[nodiscard]] static bool isAvailable(Method method); // on this CPU
    [[nodiscard]] static Method fastestMethod();

    // An unavailable method falls back to the portable one. The tables are those of a search built before for the
    // same keywords and method, where one is still kept (the last few lists are): every parser of every rank builds
    // one, and building it took longer than inspecting a log of a few kilobytes. Each search tunes its own.
    explicit KeywordSearch(QList<QByteArray> keywords, Method method = fastestMethod());
    ~KeywordSearch();
    KeywordSearch(const KeywordSearch&) = delete;
    KeywordSearch& operator=(const KeywordSearch&) = delete;

    [[nodiscard]] const QList<QByteArray>& keywords() const { return m_keywords; }
    [[nodiscard]] Method method() const { return m_method; }

    // Appends every occurrence in `text` (overlapping ones too) to `hits`, sorted by start, then by keyword. With
    // `lineEnds`, also appends the position of every '\n' in `text` to it, in order: the same pass finds them.
    // The vector methods learn from the texts they search (of kTuningText bytes or more): a keyword whose
    // fingerprint is common in them gets another one. What is found does not change, only how fast.
    void findAll(QByteArrayView text, std::vector<Hit>& hits, std::vector<qsizetype>* lineEnds = nullptr);
    // Bit i set: keyword i occurs in `text`.
    [[nodiscard]] quint64 maskOf(QByteArrayView text);
    // Where the vector methods' fingerprint of keyword `keyword` starts in it now; -1 for the portable method.
    [[nodiscard]] qsizetype fingerprintOffset(int keyword) const;

    static constexpr qsizetype kTuningText = 64 * 1024;
    // A bucket's fingerprints move when more than one place in this many bytes fails.
    static constexpr qsizetype kTolerableFailureGap = 512;
    static constexpr int kMaxTunings = 4; // looks at a search's failed places, each maybe moving fingerprints

    struct Teddy; // the tables of the one-pass method, in keywordsearch.cpp

private:
    struct Covered {
        int keyword;
        qsizetype offset; // where the covering keyword starts in it
    };

    struct Build {}; // tag: build the tables from the keywords, whatever was kept
    KeywordSearch(QList<QByteArray> keywords, Method method, Build);
    void copyTablesOf(const KeywordSearch& built); // before any tuning: as it was built

    void findAllPortable(QByteArrayView text, std::vector<Hit>& hits) const;
    void tuneFingerprints(QByteArrayView text); // after a search of `text`
    static void findLineEnds(QByteArrayView text, std::vector<qsizetype>& lineEnds);

    QList<QByteArray> m_keywords;
    Method m_method = Method::Portable;
    std::unique_ptr<Teddy> m_teddy;
    QList<qsizetype> m_fingerprints; // per keyword: where its fingerprint starts (vector methods only)
    int m_tunings = 0; // looks so far
    QList<int> m_searched;             // the keywords that hold no other one
    QList<qsizetype> m_rareOffsets;    // per keyword searched: where its rarest byte is
    QList<QList<Covered>> m_coveredBy; // per keyword searched: the keywords that hold it
};

} // namespace rankscope
