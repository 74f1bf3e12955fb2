// SPDX-License-Identifier: MIT
#include "models.h"

#include <stdexcept>

namespace rankscope::trainer {
namespace nn = torch::nn;
namespace {

nn::Conv2dOptions conv3x3(int64_t in, int64_t out, int64_t stride) {
    return nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false);
}

struct BasicBlockImpl : nn::Module {
    BasicBlockImpl(int64_t in, int64_t out, int64_t stride) {
        body = register_module("body", nn::Sequential(nn::Conv2d(conv3x3(in, out, stride)), nn::BatchNorm2d(out),
                                                      nn::ReLU(nn::ReLUOptions(true)), nn::Conv2d(conv3x3(out, out, 1)),
                                                      nn::BatchNorm2d(out)));
        shortcut = register_module("shortcut", nn::Sequential());
        if (stride != 1 || in != out) {
            shortcut->push_back(nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)));
            shortcut->push_back(nn::BatchNorm2d(out));
        }
    }
    torch::Tensor forward(const torch::Tensor& x) {
        auto residual = shortcut->size() == 0 ? x : shortcut->forward(x);
        return torch::relu(body->forward(x) + residual);
    }
    nn::Sequential body{nullptr};
    nn::Sequential shortcut{nullptr};
};
TORCH_MODULE(BasicBlock);

} // namespace

ResNet18CifarImpl::ResNet18CifarImpl(int64_t inChannels, int64_t classes) {
    stem = register_module("stem", nn::Sequential(nn::Conv2d(conv3x3(inChannels, 64, 1)), nn::BatchNorm2d(64),
                                                  nn::ReLU(nn::ReLUOptions(true))));
    layers = register_module("layers", nn::Sequential());
    int64_t in = 64;
    for (const auto& [out, stride] : {std::pair<int64_t, int64_t>{64, 1}, {128, 2}, {256, 2}, {512, 2}}) {
        layers->push_back(BasicBlock(in, out, stride));
        layers->push_back(BasicBlock(out, out, 1));
        in = out;
    }
    head = register_module("head", nn::Linear(512, classes));
}

torch::Tensor ResNet18CifarImpl::forward(torch::Tensor x) {
    x = layers->forward(stem->forward(x));
    return head->forward(torch::flatten(torch::adaptive_avg_pool2d(x, {1, 1}), 1));
}

SmallCnnImpl::SmallCnnImpl(int64_t inChannels, int64_t size, int64_t classes) {
    features = register_module("features", nn::Sequential());
    auto convBnRelu = [this](int64_t in, int64_t out) {
        features->push_back(nn::Conv2d(nn::Conv2dOptions(in, out, 3).padding(1).bias(false)));
        features->push_back(nn::BatchNorm2d(out));
        features->push_back(nn::ReLU(nn::ReLUOptions(true)));
    };
    convBnRelu(inChannels, 32);
    convBnRelu(32, 32);
    features->push_back(nn::MaxPool2d(2));
    convBnRelu(32, 64);
    convBnRelu(64, 64);
    features->push_back(nn::MaxPool2d(2));
    const int64_t side = size / 4;
    classifier = register_module("classifier", nn::Sequential(nn::Flatten(), nn::Linear(64 * side * side, 256),
                                                              nn::ReLU(nn::ReLUOptions(true)), nn::Dropout(0.3),
                                                              nn::Linear(256, classes)));
}

torch::Tensor SmallCnnImpl::forward(torch::Tensor x) {
    return classifier->forward(features->forward(x));
}

MlpImpl::MlpImpl(int64_t inputs, int64_t classes) {
    body = register_module("body",
                           nn::Sequential(nn::Flatten(), nn::Linear(inputs, 64), nn::Tanh(), nn::Linear(64, classes)));
}

torch::Tensor MlpImpl::forward(torch::Tensor x) {
    return body->forward(x);
}

Model makeModel(const std::string& name, int64_t channels, int64_t size, int64_t classes) {
    if (name == "resnet18") {
        ResNet18Cifar m(channels, classes);
        return {m.ptr(), [m](const torch::Tensor& x) mutable { return m->forward(x); }};
    }
    if (name == "cnn") {
        if (size % 4 != 0)
            throw std::invalid_argument("--model cnn: input size " + std::to_string(size) + " is not a multiple of 4");
        SmallCnn m(channels, size, classes);
        return {m.ptr(), [m](const torch::Tensor& x) mutable { return m->forward(x); }};
    }
    if (name == "mlp") {
        Mlp m(channels * size * size, classes);
        return {m.ptr(), [m](const torch::Tensor& x) mutable { return m->forward(x); }};
    }
    throw std::invalid_argument("--model: unknown model '" + name + "'");
}

} // namespace rankscope::trainer
