// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rankscope::trainer {

// A bad flag or environment value; the message names the flag or variable.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct TrainerOptions {
    // Distributed: flags win over the torchrun environment (RANK, WORLD_SIZE, ...).
    int rank = 0;
    int worldSize = 1;
    int localRank = 0;
    int localWorldSize = 1;
    std::string masterAddr = "127.0.0.1";
    int masterPort = 0;  // 0: pick a free port (world size 1 only)
    // torchrun's agent on node 0 already hosts the TCPStore at MASTER_ADDR:MASTER_PORT
    // (TORCHELASTIC_USE_AGENT_STORE=True): every rank is then a client, under the attempt's prefix.
    std::string agentStorePrefix; // "/worker/attempt_N"; empty: rank 0 hosts the store
    std::string backend; // gloo | nccl; empty until resolved
    std::string device;  // cpu | cuda; empty until resolved
    std::chrono::milliseconds timeout{std::chrono::minutes(30)};

    // Data and model.
    std::string dataset = "synthetic";
    std::string dataDir;
    int64_t syntheticSamples = 4096;
    std::string model = "resnet18";
    int epochs = 1;
    int64_t maxSteps = 0; // 0: no limit
    int64_t batchSize = 64;
    int64_t evalBatchSize = 256;
    bool eval = true;
    bool dropLast = false;
    double lr = 0.001;
    bool lrScaling = true;
    std::string optimizer = "adam";
    double momentum = 0.9;
    uint64_t seed = 2021;
    int threads = 0; // 0: LibTorch's default
    double bucketMb = 25.0;

    // Checkpoints.
    std::string checkpointDir;
    int64_t checkpointEverySteps = 0;
    int keepCheckpoints = 3;
    std::string resume; // "", "auto" or a path

    // GPU only.
    std::string amp = "off"; // off | bf16 | fp16
    bool channelsLast = false;

    // Output.
    std::string events = "stdout"; // "stdout", "none" or a path; "{rank}" in a path is replaced
    std::chrono::milliseconds heartbeatInterval{1000};
    int64_t logEverySteps = 50;
    int64_t replicaCheckEverySteps = 100; // 0: off
    std::string exportParams;             // write final parameters of every rank here ("{rank}" replaced)

    // Fault injection, for testing the debugger.
    int64_t failAtStep = -1;
    int failRank = -1;
    int64_t hangAtStep = -1;
    int hangRank = -1;
    int64_t leaveAtStep = -1; // the rank leaves the training loop before that step, as one whose inputs ran out
    int leaveRank = -1;
    int64_t lingerSeconds = 0; // a rank that ended well waits this long after its process group is gone, then exits
    int slowRank = -1;
    int64_t slowMs = 0;
    int64_t allocAtStep = -1; // the rank takes allocMiB more memory at that step and keeps it
    int allocRank = -1;
    int64_t allocMiB = 0;
    int64_t divergeAtStep = -1; // the rank changes its own parameters after that step: its replica diverges
    int divergeRank = -1;

    bool help = false;

    // The learning rate actually used: scaled by world size unless --no-lr-scaling.
    double effectiveLr() const { return lrScaling ? lr * worldSize : lr; }
    std::string initMethod() const { return "tcp://" + masterAddr + ":" + std::to_string(masterPort); }
};

using EnvironmentLookup = std::function<const char*(const char*)>;

// Parses flags (`--flag value` or `--flag=value`) over the torchrun environment. `cudaAvailable`
// decides the defaults of --device and --backend. Throws UsageError naming the flag.
TrainerOptions parseOptions(const std::vector<std::string>& args, const EnvironmentLookup& env, bool cudaAvailable);

std::string helpText();

// Every option as (flag name, value as text), for the start event's config object.
std::vector<std::pair<std::string, std::string>> describeOptions(const TrainerOptions& options);

// Replaces "{rank}" in a path template.
std::string expandRank(const std::string& pathTemplate, int rank);

} // namespace rankscope::trainer
