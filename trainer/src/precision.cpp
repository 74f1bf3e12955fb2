// SPDX-License-Identifier: MIT
#include "precision.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace rankscope::trainer {
namespace {

// LibTorch 2.4 replaced the CUDA-specific autocast setters with per-device ones.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool cudaAutocastEnabled() {
    return at::autocast::is_autocast_enabled(at::kCUDA);
}
void setCudaAutocast(bool enabled) {
    at::autocast::set_autocast_enabled(at::kCUDA, enabled);
}
c10::ScalarType cudaAutocastDtype() {
    return at::autocast::get_autocast_dtype(at::kCUDA);
}
void setCudaAutocastDtype(c10::ScalarType dtype) {
    at::autocast::set_autocast_dtype(at::kCUDA, dtype);
}
#else
bool cudaAutocastEnabled() {
    return at::autocast::is_enabled();
}
void setCudaAutocast(bool enabled) {
    at::autocast::set_enabled(enabled);
}
c10::ScalarType cudaAutocastDtype() {
    return at::autocast::get_autocast_gpu_dtype();
}
void setCudaAutocastDtype(c10::ScalarType dtype) {
    at::autocast::set_autocast_gpu_dtype(dtype);
}
#endif

} // namespace

AutocastScope::AutocastScope(bool enabled, c10::ScalarType dtype) : m_enabled(enabled) {
    if (!m_enabled)
        return;
    m_previousEnabled = cudaAutocastEnabled();
    m_previousDtype = cudaAutocastDtype();
    setCudaAutocast(true);
    setCudaAutocastDtype(dtype);
    at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
    if (!m_enabled)
        return;
    // Leaving the outermost autocast region frees the cast-weight cache, as torch.autocast's __exit__ does.
    if (at::autocast::decrement_nesting() == 0)
        at::autocast::clear_cache();
    setCudaAutocast(m_previousEnabled);
    setCudaAutocastDtype(m_previousDtype);
}

MixedPrecision::MixedPrecision(const std::string& mode) : m_mode(mode) {}

std::unique_ptr<AutocastScope> MixedPrecision::autocast() const {
    const auto dtype = m_mode == "fp16" ? c10::ScalarType::Half : c10::ScalarType::BFloat16;
    return std::make_unique<AutocastScope>(m_mode != "off", dtype);
}

void MixedPrecision::backward(const torch::Tensor& loss) {
    if (m_mode == "fp16")
        (loss.to(torch::kFloat) * m_scale).backward();
    else
        loss.backward();
}

void MixedPrecision::step(torch::optim::Optimizer& optimizer) {
    if (m_mode != "fp16") {
        optimizer.step();
        return;
    }
    std::vector<torch::Tensor> grads;
    for (const auto& group : optimizer.param_groups())
        for (const auto& p : group.params())
            if (p.grad().defined())
                grads.push_back(p.grad());
    if (grads.empty()) {
        optimizer.step();
        return;
    }
    auto foundInf = torch::zeros({1}, grads.front().options().dtype(torch::kFloat));
    auto invScale = torch::full({1}, 1.0 / m_scale, grads.front().options().dtype(torch::kFloat));
    at::_amp_foreach_non_finite_check_and_unscale_(grads, foundInf, invScale);
    if (foundInf.item<float>() != 0.0f) {
        m_scale /= 2;
        m_goodSteps = 0;
        return; // the next step zeroes the gradients
    }
    optimizer.step();
    if (++m_goodSteps == 2000) {
        m_scale *= 2;
        m_goodSteps = 0;
    }
}

void toChannelsLast(torch::nn::Module& module) {
    torch::NoGradGuard noGrad;
    // A 1x1 kernel has the same bytes in both layouts; converting it would only give its gradient
    // strides that differ from the Reducer's bucket view, which then copies instead of viewing.
    for (auto& p : module.parameters())
        if (p.dim() == 4 && p.size(2) * p.size(3) > 1)
            p.set_data(p.data().contiguous(torch::MemoryFormat::ChannelsLast));
    for (auto& b : module.buffers())
        if (b.dim() == 4)
            b.set_data(b.data().contiguous(torch::MemoryFormat::ChannelsLast));
}

} // namespace rankscope::trainer
