// SPDX-License-Identifier: MIT
//
// DistributedSampler: which dataset indices each rank visits in an epoch. It reproduces Python's
// torch.utils.data.distributed.DistributedSampler exactly, including the shuffle (torch::randperm on a
// CPU generator seeded with seed + epoch), so a C++ run and a Python reference run see the same
// shards in the same order. tests/data/sampler_reference.txt pins that agreement.
#pragma once

#include <cstdint>
#include <vector>

namespace rankscope::trainer {

class DistributedSampler final {
public:
    // Throws std::invalid_argument naming the parameter when datasetSize < 0, numReplicas <= 0 or
    // rank is outside [0, numReplicas). A dataset smaller than numReplicas is allowed, as in Python:
    // without dropLast ranks repeat samples, with dropLast they get none.
    DistributedSampler(int64_t datasetSize, int64_t numReplicas, int64_t rank, bool shuffle = true, uint64_t seed = 0,
                       bool dropLast = false);

    // Every rank must call this with the same value before each epoch, or all epochs share one order.
    void setEpoch(int64_t epoch) { m_epoch = epoch; }
    int64_t epoch() const { return m_epoch; }

    // This rank's indices for the current epoch, numSamples() of them.
    std::vector<int64_t> indices() const;
    // The global order of the current epoch before padding or truncation: a permutation of 0..N-1.
    std::vector<int64_t> epochOrder() const;

    int64_t numSamples() const { return m_numSamples; } // per rank
    int64_t totalSize() const { return m_numSamples * m_numReplicas; }
    int64_t datasetSize() const { return m_datasetSize; }
    int64_t numReplicas() const { return m_numReplicas; }
    int64_t rank() const { return m_rank; }
    bool shuffle() const { return m_shuffle; }
    uint64_t seed() const { return m_seed; }
    bool dropLast() const { return m_dropLast; }

private:
    int64_t m_datasetSize;
    int64_t m_numReplicas;
    int64_t m_rank;
    bool m_shuffle;
    uint64_t m_seed;
    bool m_dropLast;
    int64_t m_numSamples;
    int64_t m_epoch = 0;
};

} // namespace rankscope::trainer
