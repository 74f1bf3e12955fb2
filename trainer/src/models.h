// SPDX-License-Identifier: MIT
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

namespace rankscope::trainer {

// The CIFAR variant of ResNet18 used by the reference DDP script: 3x3 stem without max-pool,
// BasicBlock [2, 2, 2, 2] with 64-128-256-512 channels, global average pool, linear head.
struct ResNet18CifarImpl : torch::nn::Module {
    ResNet18CifarImpl(int64_t inChannels, int64_t classes);
    torch::Tensor forward(torch::Tensor x);

    torch::nn::Sequential stem{nullptr};
    torch::nn::Sequential layers{nullptr};
    torch::nn::Linear head{nullptr};
};
TORCH_MODULE(ResNet18Cifar);

// A small convolutional network for 28x28 inputs (MNIST, Fashion-MNIST): two conv-BN-ReLU pairs per
// stage, two stages with max-pool, dropout, two linear layers. Reaches ~0.92+ on Fashion-MNIST.
struct SmallCnnImpl : torch::nn::Module {
    SmallCnnImpl(int64_t inChannels, int64_t size, int64_t classes);
    torch::Tensor forward(torch::Tensor x);

    torch::nn::Sequential features{nullptr};
    torch::nn::Sequential classifier{nullptr};
};
TORCH_MODULE(SmallCnn);

// A BatchNorm- and dropout-free perceptron: its result does not depend on how a batch is split across
// ranks, which is what the DDP equivalence test needs.
struct MlpImpl : torch::nn::Module {
    MlpImpl(int64_t inputs, int64_t classes);
    torch::Tensor forward(torch::Tensor x);

    torch::nn::Sequential body{nullptr};
};
TORCH_MODULE(Mlp);

// A model by its --model name, as a module whose forward maps images to logits.
struct Model {
    std::shared_ptr<torch::nn::Module> module;
    std::function<torch::Tensor(const torch::Tensor&)> forward;
};

Model makeModel(const std::string& name, int64_t channels, int64_t size, int64_t classes);

} // namespace rankscope::trainer
