// SPDX-License-Identifier: MIT
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace rankscope::trainer {

class CheckpointError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The archive is whole but belongs to another model or optimizer. Loading may have stopped half-way, so
// unlike an unreadable checkpoint this one cannot be skipped for an older one: the run must stop.
class CheckpointMismatch : public CheckpointError {
public:
    using CheckpointError::CheckpointError;
};

// Where training stands: enough, with the model and optimizer, to continue exactly.
struct TrainingState {
    int64_t epoch = 0;       // 0-based epoch in progress
    int64_t stepInEpoch = 0; // batches of that epoch already done
    int64_t globalStep = 0;  // optimizer steps done in all
    int64_t seed = 0;        // sampler seed; its permutation per epoch follows from seed + epoch
    torch::Tensor rngState;  // default CPU generator (dropout)
};

// Everything needed to continue, as the bytes of one LibTorch archive.
std::string serializeCheckpoint(torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                                const TrainingState& state);

// Reads the archive completely before touching the model, so that a corrupt checkpoint leaves the
// model and optimizer as they were. Throws CheckpointError naming `source`.
TrainingState deserializeCheckpoint(const std::string& bytes, const std::string& source, torch::nn::Module& model,
                                    torch::optim::Optimizer& optimizer);

struct SavedCheckpoint {
    std::string path;
    int64_t bytes = 0;
    double ms = 0;
};

// A directory of checkpoints named by global step, written atomically (temporary file, fsync, rename,
// fsync of the directory) and pruned to the newest `keep`.
class CheckpointDirectory {
public:
    CheckpointDirectory(std::string dir, int keep);

    SavedCheckpoint save(const std::string& bytes, int64_t globalStep);
    std::vector<std::string> listNewestFirst() const;

    static std::string readFile(const std::string& path); // throws CheckpointError

private:
    std::string m_dir;
    int m_keep;
};

} // namespace rankscope::trainer
