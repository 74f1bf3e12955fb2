// SPDX-License-Identifier: MIT
// Helpers shared by the libFuzzer targets: where to split an input, and the check that chunked feeding gives
// the same result as whole feeding.
#pragma once

#include <QByteArray>
#include <QByteArrayView>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace rankscope::fuzz {

inline QByteArrayView inputView(const uint8_t* data, size_t size) {
    return QByteArrayView(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
}

// Two cut points 0 <= first <= second <= size, chosen by the data itself (a hash of it) so that seeds keep
// their meaning and libFuzzer still explores every split.
struct Cuts {
    qsizetype first = 0;
    qsizetype second = 0;
    quint64 hash = 0;
};

inline Cuts cutsFor(QByteArrayView data) {
    quint64 hash = 1469598103934665603ULL; // FNV-1a
    for (const char c : data) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 1099511628211ULL;
    }
    const auto size = static_cast<quint64>(data.size());
    Cuts cuts;
    cuts.hash = hash;
    cuts.first = static_cast<qsizetype>(hash % (size + 1));
    cuts.second = cuts.first + static_cast<qsizetype>((hash >> 32) % (size - cuts.first + 1));
    return cuts;
}

// Calls feed(piece) with the data in three pieces at the data-chosen cuts (pieces may be empty).
template <typename Feed> void feedInPieces(QByteArrayView data, const Cuts& cuts, Feed&& feed) {
    feed(data.first(cuts.first));
    feed(data.sliced(cuts.first, cuts.second - cuts.first));
    feed(data.sliced(cuts.second));
}

// A parser that promises chunk independence broke it: print both results and abort, which libFuzzer reports
// as a crash with its reproducer.
inline void requireSame(const QByteArray& whole, const QByteArray& chunked, const Cuts& cuts, const char* what) {
    if (whole == chunked)
        return;
    std::fprintf(stderr,
                 "%s: chunked feeding (cuts at %lld and %lld) differs from whole feeding\n--- whole\n%s\n"
                 "--- chunked\n%s\n",
                 what, static_cast<long long>(cuts.first), static_cast<long long>(cuts.second),
                 whole.left(4000).constData(), chunked.left(4000).constData());
    std::abort();
}

// Reads every byte of a view, so that ASan checks that it points into live memory.
inline unsigned touch(QByteArrayView view) {
    unsigned sum = 0;
    for (const char c : view)
        sum += static_cast<unsigned char>(c);
    return sum;
}

} // namespace rankscope::fuzz
