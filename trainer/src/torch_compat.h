// SPDX-License-Identifier: MIT
//
// The few places where LibTorch's C++ API differs between 1.13 (Debian) and 2.x (pip wheels on GPU
// nodes). Everything version-dependent lives here, detected at compile time, so that the rest of the
// trainer is written once.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#include <torch/version.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace rankscope::trainer::compat {

// c10 error texts carry a C++ backtrace after the first line; events and logs want the sentence.
std::string firstLine(const std::string& text);

void configureStoreOptions(c10d::TCPStoreOptions& options);

// `ifname` (GLOO_SOCKET_IFNAME) wins; else `hostname` when set; else Gloo's default device.
c10::intrusive_ptr<c10d::ProcessGroup> makeGlooGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                     std::chrono::milliseconds timeout, const std::string& ifname,
                                                     const std::string& hostname);

// Throws when this build has no NCCL.
c10::intrusive_ptr<c10d::ProcessGroup> makeNcclGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                     std::chrono::milliseconds timeout, int cudaDevice);

struct ReducerOptions {
    int64_t bucketBytesCap = 25 * 1024 * 1024;
    int64_t firstBucketBytesCap = 1024 * 1024;
    bool gradientAsBucketView = true;
};

// Buckets by size as Python DDP does (compute_bucket_assignment_by_size in reverse parameter order),
// then a c10d::Reducer over them.
std::unique_ptr<c10d::Reducer> makeReducer(const std::vector<at::Tensor>& params,
                                           const c10::intrusive_ptr<c10d::ProcessGroup>& group,
                                           const ReducerOptions& options);

} // namespace rankscope::trainer::compat
