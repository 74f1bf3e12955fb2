// SPDX-License-Identifier: MIT
#include "sampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/types.h>

#include <numeric>
#include <stdexcept>
#include <string>

namespace rankscope::trainer {

namespace {

void checkArguments(int64_t datasetSize, int64_t numReplicas, int64_t rank) {
    if (datasetSize < 0) {
        throw std::invalid_argument("DistributedSampler: datasetSize must be >= 0, got " + std::to_string(datasetSize));
    }
    if (numReplicas <= 0) {
        throw std::invalid_argument("DistributedSampler: numReplicas must be >= 1, got " + std::to_string(numReplicas));
    }
    if (rank < 0 || rank >= numReplicas) {
        throw std::invalid_argument("DistributedSampler: rank " + std::to_string(rank) +
                                    " is out of range, it must be in [0, " + std::to_string(numReplicas - 1) + "]");
    }
}

// Python computes ceil((N - R) / R) in floating point when dropping the tail; for N % R != 0 that is
// floor(N / R), and 0 when N < R.
int64_t samplesPerRank(int64_t datasetSize, int64_t numReplicas, bool dropLast) {
    if (dropLast && datasetSize % numReplicas != 0) {
        return datasetSize / numReplicas;
    }
    return (datasetSize + numReplicas - 1) / numReplicas;
}

} // namespace

DistributedSampler::DistributedSampler(int64_t datasetSize, int64_t numReplicas, int64_t rank, bool shuffle,
                                       uint64_t seed, bool dropLast)
    : m_datasetSize(datasetSize), m_numReplicas(numReplicas), m_rank(rank), m_shuffle(shuffle), m_seed(seed),
      m_dropLast(dropLast), m_numSamples(0) {
    checkArguments(datasetSize, numReplicas, rank);
    m_numSamples = samplesPerRank(datasetSize, numReplicas, dropLast);
}

std::vector<int64_t> DistributedSampler::epochOrder() const {
    std::vector<int64_t> order(static_cast<size_t>(m_datasetSize));
    if (!m_shuffle) {
        std::iota(order.begin(), order.end(), int64_t{0});
        return order;
    }
    // Same engine and seeding as Python's torch.Generator().manual_seed(seed + epoch); unsigned wrap-around
    // matches how manual_seed stores a negative sum.
    auto generator = at::detail::createCPUGenerator(m_seed + static_cast<uint64_t>(m_epoch));
    const torch::Tensor perm = torch::randperm(m_datasetSize, generator, torch::kLong);
    std::copy_n(perm.data_ptr<int64_t>(), m_datasetSize, order.begin());
    return order;
}

std::vector<int64_t> DistributedSampler::indices() const {
    const std::vector<int64_t> order = epochOrder();
    const int64_t total = totalSize();
    std::vector<int64_t> mine;
    mine.reserve(static_cast<size_t>(m_numSamples));
    // Position i of Python's padded list is order[i % N] (padding repeats the list from its start, as
    // often as needed); with dropLast, total <= N and the modulo is a no-op.
    for (int64_t i = m_rank; i < total; i += m_numReplicas) {
        mine.push_back(order[static_cast<size_t>(i % m_datasetSize)]);
    }
    return mine;
}

} // namespace rankscope::trainer
