// SPDX-License-Identifier: MIT
//
// Compatibility declaration, used only when the LibTorch at hand does not ship this header
// (Debian's libtorch-dev 1.13 ships c10d/reducer.hpp, which includes it, but not the header itself).
// c10d::Reducer holds a shared_ptr to a distributed-autograd context and checks the callback type;
// it never needs the full class unless distributed autograd (RPC) is used, which this trainer does not.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>

namespace torch::distributed::autograd {

class DistAutogradContext {
public:
    using GradCallback = std::function<bool(at::Tensor&)>;
};

using ContextPtr = std::shared_ptr<DistAutogradContext>;

} // namespace torch::distributed::autograd
