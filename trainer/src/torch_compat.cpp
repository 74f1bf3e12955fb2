// SPDX-License-Identifier: MIT
#include "torch_compat.h"

#ifdef USE_C10D_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef USE_C10D_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <algorithm>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>

namespace rankscope::trainer::compat {
namespace {

using Params = std::vector<at::Tensor>;
using BucketIndices = std::vector<std::vector<size_t>>;
using SizeLimits = std::vector<size_t>;
using Group = c10::intrusive_ptr<c10d::ProcessGroup>;
using Sparse = std::vector<bool>;
using Names = std::unordered_map<size_t, std::string>;

// Names that exist only in some LibTorch versions are reached through templates, so that the branch for
// another version is never instantiated.
template <typename T> struct Dependent {
    using ProcessGroup = c10d::ProcessGroup;
    using Backend = c10d::Backend; // declared from 1.13 (Backend.hpp), used only from 2.0
};

template <typename T, typename = void> struct HasUseLibUV : std::false_type {};
template <typename T> struct HasUseLibUV<T, std::void_t<decltype(std::declval<T&>().useLibUV)>> : std::true_type {};

template <typename Options> void disableLibUV(Options& options) {
    if constexpr (HasUseLibUV<Options>::value)
        options.useLibUV = false;
}

// From 2.0, Gloo and NCCL are c10d::Backends that a ProcessGroup dispatches to by device type; 2.0 to 2.4
// build the group from Options naming the backend, 2.5 and later set the default backend type instead.
template <typename BackendT>
Group wrapBackend(const c10::intrusive_ptr<BackendT>& backend, const c10::intrusive_ptr<c10d::Store>& store, int rank,
                  int size, const char* name, std::chrono::milliseconds timeout,
                  std::initializer_list<c10::DeviceType> devices) {
    using PG = typename Dependent<BackendT>::ProcessGroup;
    const auto type = std::string(name) == "gloo" ? PG::BackendType::GLOO : PG::BackendType::NCCL;
#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 5
    auto group = c10::make_intrusive<PG>(store, rank, size, c10::make_intrusive<typename PG::Options>(name, timeout));
#else
    (void)timeout;
    auto group = c10::make_intrusive<PG>(store, rank, size);
    group->setDefaultBackend(type);
#endif
    // setBackend takes an optional<intrusive_ptr<Backend>>: two conversions away from intrusive_ptr<Gloo>.
    const c10::intrusive_ptr<typename Dependent<BackendT>::Backend> base = backend;
    for (const auto device : devices)
        group->setBackend(device, type, base);
    return group;
}

// In 1.13 the Gloo and NCCL classes are ProcessGroups themselves.
template <typename BackendT>
Group asProcessGroup(const c10::intrusive_ptr<BackendT>& backend, const c10::intrusive_ptr<c10d::Store>& store,
                     int rank, int size, const char* name, std::chrono::milliseconds timeout,
                     std::initializer_list<c10::DeviceType> devices) {
    if constexpr (std::is_base_of_v<c10d::ProcessGroup, BackendT>) {
        (void)store, (void)rank, (void)size, (void)name, (void)timeout, (void)devices;
        return backend;
    } else {
        return wrapBackend(backend, store, rank, size, name, timeout, devices);
    }
}

// A template, so that only the branch matching this LibTorch's Reducer constructor is instantiated.
template <typename R = c10d::Reducer>
std::unique_ptr<R> constructReducer(const Params& params, const BucketIndices& indices, const SizeLimits& limits,
                                    const Group& group, const ReducerOptions& o) {
    const Sparse sparse(params.size(), false);
    const Names names;
    const bool findUnused = false; // every parameter of these models takes part in every step
    const bool gradientAsBucketView = o.gradientAsBucketView;
    const int64_t cap = o.bucketBytesCap;
    const int64_t firstCap = o.firstBucketBytesCap;
    if constexpr (std::is_constructible_v<R, Params, BucketIndices, SizeLimits, Group, Sparse, int64_t, bool, bool,
                                          Names, int64_t>) { // 1.13 to 2.7
        return std::make_unique<R>(params, indices, limits, group, sparse, cap, findUnused, gradientAsBucketView, names,
                                   firstCap);
    } else if constexpr (std::is_constructible_v<R, Params, BucketIndices, Group, Sparse, int64_t, bool, bool, Names,
                                                 int64_t, bool, bool, std::vector<int64_t>>) { // 2026 and later
        return std::make_unique<R>(params, indices, group, sparse, cap, findUnused, gradientAsBucketView, names,
                                   firstCap, /*skip_all_reduce_unused_params=*/false, /*use_python_reducer=*/false,
                                   /*bucket_bytes_cap_list=*/std::vector<int64_t>{});
    } else if constexpr (std::is_constructible_v<R, Params, BucketIndices, Group, Sparse, int64_t, bool, bool, Names,
                                                 int64_t, bool, bool>) { // 2.8 and later
        return std::make_unique<R>(params, indices, group, sparse, cap, findUnused, gradientAsBucketView, names,
                                   firstCap, /*skip_all_reduce_unused_params=*/false, /*use_python_reducer=*/false);
    } else {
        static_assert(sizeof(R) == 0, "unknown c10d::Reducer constructor: teach torch_compat this LibTorch version");
    }
}

} // namespace

std::string firstLine(const std::string& text) {
    const auto end = text.find('\n');
    return end == std::string::npos ? text : text.substr(0, end);
}

void configureStoreOptions(c10d::TCPStoreOptions& options) {
    // The libuv store (2.4+ default) exists only where the wheel was built with libuv; the classic
    // server works everywhere and is plenty for a few hundred ranks.
    disableLibUV(options);
}

Group makeGlooGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout,
                    const std::string& ifname, const std::string& hostname) {
#ifdef USE_C10D_GLOO
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    if (!ifname.empty())
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    else if (!hostname.empty())
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(hostname));
    else
        options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    // Each backend gets its own key space in the store, as Python's _new_process_group_helper does.
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>("gloo/", store);
    auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, size, options);
    return asProcessGroup(gloo, store, rank, size, "gloo", timeout, {c10::DeviceType::CPU, c10::DeviceType::CUDA});
#else
    (void)store, (void)rank, (void)size, (void)timeout, (void)ifname, (void)hostname;
    throw std::runtime_error("this rankscope-trainer was built without Gloo (its LibTorch ships no Gloo headers)");
#endif
}

Group makeNcclGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout,
                    int cudaDevice) {
#ifdef USE_C10D_NCCL
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(cudaDevice)); // before NCCL picks a device
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>("nccl/", store);
    auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, rank, size, options);
    return asProcessGroup(nccl, store, rank, size, "nccl", timeout, {c10::DeviceType::CUDA});
#else
    (void)store, (void)rank, (void)size, (void)timeout, (void)cudaDevice;
    throw std::runtime_error("--backend nccl: this rankscope-trainer was built without NCCL (LibTorch without CUDA)");
#endif
}

std::unique_ptr<c10d::Reducer> makeReducer(const Params& params, const Group& group, const ReducerOptions& o) {
    const Sparse sparse(params.size(), false);
    auto [indices, limits] = c10d::compute_bucket_assignment_by_size(
        params, {static_cast<size_t>(o.firstBucketBytesCap), static_cast<size_t>(o.bucketBytesCap)}, sparse);
    // Gradients arrive roughly in reverse definition order; so do the buckets, as in Python DDP.
    std::reverse(indices.begin(), indices.end());
    std::reverse(limits.begin(), limits.end());
    return constructReducer(params, indices, limits, group, o);
}

} // namespace rankscope::trainer::compat
