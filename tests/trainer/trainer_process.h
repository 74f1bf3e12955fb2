// SPDX-License-Identifier: MIT
// Runs the real rankscope-trainer binary, one process per rank on 127.0.0.1, as the tests' ranks.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace rankscope::test {

struct RankResult {
    int exitCode = -1; // -1: killed after the timeout
    std::string out;   // stdout (event lines when --events stdout)
    std::string err;   // stderr (human-readable progress and errors)
};

// A port that was free a moment ago, for a rendezvous on 127.0.0.1.
int freePort();

// A fresh temporary directory, removed by the caller (or left for inspection when a test fails).
std::string makeTempDir(const std::string& tag);

using Environment = std::vector<std::string>; // "NAME=value" entries added to this process's environment

struct RunOptions {
    std::chrono::seconds timeout{300};          // a rank still running then is killed (exit code -1)
    std::function<Environment(int)> envForRank; // extra environment per rank, when set
    int signalRank = -1;                        // send `signal` to this rank `signalAfter` after the start
    int signal = 15;
    std::chrono::milliseconds signalAfter{0};
    // When set, `signalAfter` counts from when the rank's stdout first holds this text (its start event: a trainer
    // installs its signal handling before it, while loading LibTorch can take seconds on a busy machine).
    std::string signalAfterOutput;
};

// Starts `worldSize` trainers with argsForRank(rank) and waits for all of them, so a test never hangs.
std::vector<RankResult> runRanks(int worldSize, const std::function<std::vector<std::string>(int)>& argsForRank,
                                 const RunOptions& options = {});
inline std::vector<RankResult> runRanks(int worldSize, const std::function<std::vector<std::string>(int)>& argsForRank,
                                        std::chrono::seconds timeout) {
    RunOptions options;
    options.timeout = timeout;
    return runRanks(worldSize, argsForRank, options);
}

// Common flags for a distributed run of `worldSize` ranks on a fresh port.
std::vector<std::string> distributedArgs(int rank, int worldSize, int port);

// The event lines of a run's output, without the prefix, in order.
std::vector<std::string> eventLines(const std::string& output);

std::string trainerBinary();

} // namespace rankscope::test
