// SPDX-License-Identifier: MIT
//
// DistributedSampler: shard properties on a table of shapes, and bit-exact agreement with PyTorch's own
// DistributedSampler as recorded in tests/data/sampler_reference.txt (see tests/data/README.md).
#include "sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#ifndef RANKSCOPE_TEST_DATA_DIR
#error "RANKSCOPE_TEST_DATA_DIR must name tests/data"
#endif

namespace rankscope::trainer {
namespace {

std::vector<std::vector<int64_t>> allShards(int64_t n, int64_t replicas, bool shuffle, uint64_t seed, bool dropLast,
                                            int64_t epoch) {
    std::vector<std::vector<int64_t>> shards;
    for (int64_t rank = 0; rank < replicas; ++rank) {
        DistributedSampler sampler(n, replicas, rank, shuffle, seed, dropLast);
        sampler.setEpoch(epoch);
        shards.push_back(sampler.indices());
    }
    return shards;
}

// ---- properties over a table of shapes -------------------------------------------------------------------

struct Shape {
    int64_t n;
    int64_t replicas;
    bool shuffle;
    bool dropLast;
};

void PrintTo(const Shape& s, std::ostream* out) {
    *out << "N=" << s.n << " R=" << s.replicas << " shuffle=" << s.shuffle << " dropLast=" << s.dropLast;
}

std::string shapeName(const testing::TestParamInfo<Shape>& info) {
    const Shape& s = info.param;
    return "N" + std::to_string(s.n) + "_R" + std::to_string(s.replicas) + (s.shuffle ? "_shuffle" : "_ordered") +
           (s.dropLast ? "_dropLast" : "_pad");
}

class SamplerShapeTest : public testing::TestWithParam<Shape> {};

TEST_P(SamplerShapeTest, SizesFollowPythonFormula) {
    const Shape s = GetParam();
    const DistributedSampler sampler(s.n, s.replicas, 0, s.shuffle, 0, s.dropLast);
    const int64_t expected =
        (s.dropLast && s.n % s.replicas != 0) ? s.n / s.replicas : (s.n + s.replicas - 1) / s.replicas;
    EXPECT_EQ(sampler.numSamples(), expected);
    EXPECT_EQ(sampler.totalSize(), expected * s.replicas);
    for (const auto& shard : allShards(s.n, s.replicas, s.shuffle, 0, s.dropLast, 0)) {
        EXPECT_EQ(static_cast<int64_t>(shard.size()), expected);
    }
}

TEST_P(SamplerShapeTest, ShardsAreDisjointAndCover) {
    const Shape s = GetParam();
    std::vector<int64_t> seen(static_cast<size_t>(s.n), 0);
    for (const auto& shard : allShards(s.n, s.replicas, s.shuffle, 2021, s.dropLast, 3)) {
        for (const int64_t index : shard) {
            ASSERT_GE(index, 0);
            ASSERT_LT(index, s.n);
            ++seen[static_cast<size_t>(index)];
        }
    }
    const int64_t total = DistributedSampler(s.n, s.replicas, 0, s.shuffle, 2021, s.dropLast).totalSize();
    if (s.dropLast) {
        // Truncation only: no index twice, exactly totalSize distinct ones.
        EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), total);
        EXPECT_EQ(std::count_if(seen.begin(), seen.end(), [](int64_t k) { return k > 1; }), 0);
        return;
    }
    // Every index at least once; padding repeats indices, spread as evenly as Python's wrap-around does.
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 0), 0);
    if (s.n > 0) {
        EXPECT_LE(*std::max_element(seen.begin(), seen.end()), (total + s.n - 1) / s.n);
    }
}

TEST_P(SamplerShapeTest, SameSeedAndEpochGiveSameShardOnEveryRank) {
    const Shape s = GetParam();
    // Two independent sets of sampler objects stand in for two processes.
    EXPECT_EQ(allShards(s.n, s.replicas, s.shuffle, 7, s.dropLast, 2),
              allShards(s.n, s.replicas, s.shuffle, 7, s.dropLast, 2));
}

INSTANTIATE_TEST_SUITE_P(Shapes, SamplerShapeTest,
                         testing::Values(Shape{10, 3, true, false}, Shape{10, 3, true, true},
                                         Shape{10, 3, false, false}, Shape{10, 3, false, true},
                                         Shape{100, 4, true, false}, Shape{100, 4, true, true},
                                         Shape{2, 3, true, false}, Shape{2, 3, true, true}, Shape{1, 4, true, false},
                                         Shape{0, 2, true, false}, Shape{60000, 8, true, false},
                                         Shape{60001, 8, true, true}),
                         shapeName);

// ---- epochs and seeds ------------------------------------------------------------------------------------

TEST(SamplerTest, ReshufflesEachEpoch) {
    DistributedSampler sampler(1000, 4, 1, true, 2021);
    EXPECT_EQ(sampler.epoch(), 0);
    const std::vector<int64_t> first = sampler.indices();
    sampler.setEpoch(1);
    EXPECT_EQ(sampler.epoch(), 1);
    EXPECT_NE(sampler.indices(), first);
    sampler.setEpoch(0);
    EXPECT_EQ(sampler.indices(), first);
}

TEST(SamplerTest, DifferentSeedsDiffer) {
    EXPECT_NE(DistributedSampler(1000, 4, 0, true, 0).indices(), DistributedSampler(1000, 4, 0, true, 1).indices());
}

TEST(SamplerTest, WithoutShuffleRanksInterleave) {
    DistributedSampler sampler(10, 3, 1, false);
    sampler.setEpoch(5);
    EXPECT_EQ(sampler.indices(), (std::vector<int64_t>{1, 4, 7, 0})); // padded with the list's start
    EXPECT_EQ(DistributedSampler(10, 3, 0, false).indices(), (std::vector<int64_t>{0, 3, 6, 9}));
    EXPECT_EQ(DistributedSampler(10, 3, 2, false).indices(), (std::vector<int64_t>{2, 5, 8, 1}));
}

TEST(SamplerTest, EpochOrderIsAPermutation) {
    DistributedSampler sampler(257, 2, 0, true, 99);
    sampler.setEpoch(4);
    std::vector<int64_t> order = sampler.epochOrder();
    std::sort(order.begin(), order.end());
    for (size_t i = 0; i < order.size(); ++i) {
        ASSERT_EQ(order[i], static_cast<int64_t>(i));
    }
}

// ---- invalid arguments -----------------------------------------------------------------------------------

struct BadArguments {
    int64_t n;
    int64_t replicas;
    int64_t rank;
    std::string parameter;
};

void PrintTo(const BadArguments& a, std::ostream* out) {
    *out << "N=" << a.n << " R=" << a.replicas << " rank=" << a.rank;
}

class SamplerArgumentTest : public testing::TestWithParam<BadArguments> {};

TEST_P(SamplerArgumentTest, ThrowsNamingTheParameter) {
    const BadArguments a = GetParam();
    try {
        DistributedSampler(a.n, a.replicas, a.rank);
        FAIL() << "no exception";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find(a.parameter), std::string::npos) << error.what();
    }
}

INSTANTIATE_TEST_SUITE_P(Invalid, SamplerArgumentTest,
                         testing::Values(BadArguments{10, 3, 3, "rank"}, BadArguments{10, 3, -1, "rank"},
                                         BadArguments{10, 0, 0, "numReplicas"}, BadArguments{10, -2, 0, "numReplicas"},
                                         BadArguments{-1, 2, 0, "datasetSize"}));

// ---- bit-exact agreement with PyTorch ---------------------------------------------------------------------

struct ReferenceRow {
    int64_t n = 0;
    int64_t replicas = 0;
    int64_t rank = 0;
    bool shuffle = false;
    uint64_t seed = 0;
    int64_t epoch = 0;
    bool dropLast = false;
    std::vector<int64_t> indices;
};

const char* const kReferencePath = RANKSCOPE_TEST_DATA_DIR "/sampler_reference.txt";

struct Reference {
    std::vector<ReferenceRow> rows;
    std::vector<std::string> malformedLines;
};

// Line format: `N R rank shuffle seed epoch dropLast : i0 i1 ...`; '#' starts a comment line. Parsing runs
// while tests are registered, outside any test, so problems are kept for ReferenceFileIsWellFormed.
Reference loadReference() {
    Reference reference;
    std::ifstream in(kReferencePath);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') {
            continue;
        }
        std::istringstream fields(line);
        ReferenceRow row;
        char colon = 0;
        fields >> row.n >> row.replicas >> row.rank >> row.shuffle >> row.seed >> row.epoch >> row.dropLast >> colon;
        if (!fields || colon != ':') {
            reference.malformedLines.push_back(line);
            continue;
        }
        for (int64_t index = 0; fields >> index;) {
            row.indices.push_back(index);
        }
        reference.rows.push_back(row);
    }
    return reference;
}

const Reference& reference() {
    static const Reference loaded = loadReference();
    return loaded;
}

std::string describe(const ReferenceRow& r) {
    return "N" + std::to_string(r.n) + "_R" + std::to_string(r.replicas) + "_rank" + std::to_string(r.rank) +
           (r.shuffle ? "_shuffle" : "_ordered") + "_seed" + std::to_string(r.seed) + "_epoch" +
           std::to_string(r.epoch) + (r.dropLast ? "_dropLast" : "_pad");
}

void PrintTo(const ReferenceRow& r, std::ostream* out) {
    *out << describe(r);
}

std::string rowName(const testing::TestParamInfo<ReferenceRow>& info) {
    return describe(info.param);
}

TEST(SamplerReferenceTest, ReferenceFileIsWellFormed) {
    EXPECT_GE(reference().rows.size(), 100u) << "expected the recorded rows in " << kReferencePath;
    for (const std::string& line : reference().malformedLines) {
        ADD_FAILURE() << kReferencePath << ": malformed line: " << line;
    }
}

class SamplerReferenceRowTest : public testing::TestWithParam<ReferenceRow> {};

TEST_P(SamplerReferenceRowTest, MatchesPyTorch) {
    const ReferenceRow& r = GetParam();
    DistributedSampler sampler(r.n, r.replicas, r.rank, r.shuffle, r.seed, r.dropLast);
    sampler.setEpoch(r.epoch);
    EXPECT_EQ(sampler.numSamples(), static_cast<int64_t>(r.indices.size()));
    EXPECT_EQ(sampler.indices(), r.indices);
}

INSTANTIATE_TEST_SUITE_P(Recorded, SamplerReferenceRowTest, testing::ValuesIn(reference().rows), rowName);

} // namespace
} // namespace rankscope::trainer
