// SPDX-License-Identifier: MIT
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

namespace rankscope::trainer {

// Scope in which CUDA autocast runs ops in the chosen reduced precision; restores the previous state.
class AutocastScope {
public:
    AutocastScope(bool enabled, c10::ScalarType dtype);
    ~AutocastScope();
    AutocastScope(const AutocastScope&) = delete;
    AutocastScope& operator=(const AutocastScope&) = delete;

private:
    bool m_enabled;
    bool m_previousEnabled = false;
    c10::ScalarType m_previousDtype = c10::ScalarType::Half;
};

// --amp off|bf16|fp16. bf16 needs no loss scaling; fp16 uses dynamic loss scaling like torch.amp's
// GradScaler: scale the loss, skip the step and halve the scale on inf/NaN gradients, grow it after
// 2000 good steps. Gradients are already all-reduced when checked, so every rank takes the same decision.
class MixedPrecision {
public:
    explicit MixedPrecision(const std::string& mode);

    std::unique_ptr<AutocastScope> autocast() const;
    void backward(const torch::Tensor& loss);
    void step(torch::optim::Optimizer& optimizer);

private:
    std::string m_mode;
    double m_scale = 65536.0;
    int m_goodSteps = 0;
};

// Converts every 4-d parameter and buffer to NHWC, as `model.to(memory_format=torch.channels_last)`.
void toChannelsLast(torch::nn::Module& module);

} // namespace rankscope::trainer
