// SPDX-License-Identifier: MIT
// What keeping arrival times costs the run store: RunStore::appendStream of pieces of one rank's stream (200 B by
// default, a few log lines, as the engine appends at most every 20 ms poll), without an arrival time and with one
// (rankR.err.arrivals gets a line per piece). Rounds alternate between the two, each into a fresh run; medians.
// Run it on one core (`tests/bench/run store` uses taskset -c 0).
//
//   rankscope_store_bench [--pieces 20000] [--bytes 200] [--rounds 7]
#include "core/runstore.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QTemporaryDir>

#include <algorithm>
#include <cstdio>
#include <vector>

using namespace rankscope;

namespace {

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Microseconds per appended piece, or a negative number when an append fails.
double timeAppends(RunStore& store, int pieces, const QByteArray& piece, bool withArrival) {
    RunRecord record;
    record.id = store.newRunId();
    if (!store.save(record))
        return -1;
    QElapsedTimer timer;
    timer.start();
    qint64 offset = 0;
    for (int i = 0; i < pieces; ++i) {
        const double arrivedAt = withArrival ? 1.8e9 + i * 0.02 : 0.0;
        if (!store.appendStream(record.id, 0, RankStream::Err, offset, piece, nullptr, nullptr, arrivedAt))
            return -1;
        offset += piece.size();
    }
    return timer.nsecsElapsed() / 1e3 / pieces;
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    const auto option = [&](const char* name, int fallback) {
        const qsizetype at = args.indexOf(QLatin1String(name));
        return at > 0 && at + 1 < args.size() ? args[at + 1].toInt() : fallback;
    };
    const int pieces = std::max(1, option("--pieces", 20000));
    const int bytes = std::max(1, option("--bytes", 200));
    const int rounds = std::max(1, option("--rounds", 7));
    QTemporaryDir dir;
    if (!dir.isValid()) {
        std::fprintf(stderr, "rankscope_store_bench: no temporary directory\n");
        return 1;
    }
    RunStore store(dir.path());
    QByteArray piece(bytes, 'x');
    piece[bytes - 1] = '\n';
    std::vector<double> plain, timed;
    for (int round = 0; round < rounds; ++round) {
        plain.push_back(timeAppends(store, pieces, piece, false));
        timed.push_back(timeAppends(store, pieces, piece, true));
        if (plain.back() < 0 || timed.back() < 0) {
            std::fprintf(stderr, "rankscope_store_bench: an append failed in round %d\n", round + 1);
            return 1;
        }
    }
    const double without = median(plain);
    const double with = median(timed);
    std::printf("%d appends of %d B per round, %d interleaved rounds, medians\n\n", pieces, bytes, rounds);
    std::printf("| appendStream | us per piece | x without |\n|---|---|---|\n");
    std::printf("| without an arrival time (baseline) | %.2f | 1.00 |\n", without);
    std::printf("| with its arrival time kept | %.2f | %.2f |\n", with, with / without);
    std::printf("\nAt one append per rank stream per 20 ms poll, the arrivals cost %.1f us per second per stream.\n",
                (with - without) * 50);
    return 0;
}
