// SPDX-License-Identifier: MIT
#pragma once

#include "distributed.h"

#include <torch/torch.h>

#include <atomic>
#include <memory>

namespace c10d {
class Reducer;
}

namespace rankscope::trainer {

struct DataParallelOptions {
    double bucketMb = 25.0;
    bool broadcastBuffers = true; // keep BatchNorm running statistics equal to rank 0's, as Python DDP
    // Gradients are views into the all-reduce buckets: no copy into the bucket before the all-reduce and
    // none back after it (Python DDP's gradient_as_bucket_view=True).
    bool gradientAsBucketView = true;
};

// Python's DistributedDataParallel for a C++ module, on c10d's own Reducer: gradients are averaged in
// size-bounded buckets whose all-reduce overlaps the rest of the backward pass; buckets are rebuilt in
// gradient-arrival order after the first iteration. Parameters and buffers start equal to rank 0's.
class DataParallel {
public:
    DataParallel(std::shared_ptr<torch::nn::Module> module, Communicator& comm, DataParallelOptions options = {});
    ~DataParallel();

    // Call before a training forward pass (rebuilds buckets once, broadcasts buffers).
    void prepareForward();
    // Call between the forward pass and loss.backward().
    void prepareBackward();
    // Broadcast every parameter and buffer from rank 0 (construction does it; resume does it again).
    void syncModuleStates();

    // Wall-clock nanoseconds (steady clock) when the last parameter gradient of the latest backward was
    // computed: after that, the backward pass only waits for the all-reduce.
    int64_t lastGradientNs() const { return m_lastGradientNs.load(); }

private:
    void broadcastTensors(const std::vector<at::Tensor>& tensors, const char* what);

    std::shared_ptr<torch::nn::Module> m_module;
    Communicator& m_comm;
    DataParallelOptions m_options;
    std::unique_ptr<c10d::Reducer> m_reducer;
    std::atomic<int64_t> m_lastGradientNs{0};
};

int64_t steadyNowNs();

} // namespace rankscope::trainer
