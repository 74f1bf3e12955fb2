// SPDX-License-Identifier: MIT
#include "ddp.h"

#include "torch_compat.h"

#include <chrono>
#include <map>

namespace rankscope::trainer {

int64_t steadyNowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

DataParallel::DataParallel(std::shared_ptr<torch::nn::Module> module, Communicator& comm, DataParallelOptions options)
    : m_module(std::move(module)), m_comm(comm), m_options(options) {
    syncModuleStates();
    std::vector<at::Tensor> params;
    for (auto& p : m_module->parameters()) {
        if (!p.requires_grad())
            continue;
        params.push_back(p);
        p.register_hook([this](const at::Tensor&) { m_lastGradientNs.store(steadyNowNs()); });
    }
    compat::ReducerOptions reducerOptions;
    reducerOptions.bucketBytesCap = static_cast<int64_t>(m_options.bucketMb * 1024 * 1024);
    reducerOptions.gradientAsBucketView = m_options.gradientAsBucketView;
    m_reducer = compat::makeReducer(params, m_comm.processGroup(), reducerOptions);
}

DataParallel::~DataParallel() = default;

void DataParallel::broadcastTensors(const std::vector<at::Tensor>& tensors, const char* what) {
    if (m_comm.worldSize() == 1 || tensors.empty())
        return;
    // One broadcast per dtype over a flattened copy, as Python's _broadcast_coalesced does.
    std::map<c10::ScalarType, std::vector<at::Tensor>> byType;
    for (const auto& t : tensors)
        byType[t.scalar_type()].push_back(t);
    torch::NoGradGuard noGrad;
    for (auto& [type, group] : byType) {
        std::vector<at::Tensor> flat;
        flat.reserve(group.size());
        for (const auto& t : group)
            flat.push_back(t.detach().reshape(-1));
        at::Tensor buffer = torch::cat(flat);
        m_comm.broadcast(buffer, 0, what);
        int64_t offset = 0;
        for (auto& t : group) {
            const int64_t n = t.numel();
            t.detach().copy_(buffer.narrow(0, offset, n).view_as(t));
            offset += n;
        }
    }
}

void DataParallel::syncModuleStates() {
    std::vector<at::Tensor> states;
    for (const auto& p : m_module->parameters())
        states.push_back(p);
    for (const auto& b : m_module->buffers())
        states.push_back(b);
    broadcastTensors(states, "broadcast of parameters and buffers from rank 0");
}

void DataParallel::prepareForward() {
    // After the first backward, buckets are rebuilt in gradient-arrival order; rank 0's order is
    // broadcast, so this is a collective like any other.
    if (m_reducer->should_rebuild_buckets())
        m_comm.runCounted("rebuild of gradient buckets", [this] { m_reducer->rebuild_buckets(); });
    m_reducer->prepare_for_forward();
    if (m_options.broadcastBuffers)
        broadcastTensors(m_module->buffers(), "broadcast of buffers from rank 0");
}

void DataParallel::prepareBackward() {
    // No unused-parameter search: every parameter of these models takes part in every step.
    m_reducer->prepare_for_backward({});
}

} // namespace rankscope::trainer
