// SPDX-License-Identifier: MIT
// How ranks are launched and told where they are: the torchrun environment, per-rank event files, and
// the exit statuses a launcher or RankScope's engine acts on.
#include "trainer_process.h"

#include <gtest/gtest.h>

#include <csignal>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace rankscope;
namespace fs = std::filesystem;

namespace {

std::string readFile(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string startEvent(const std::string& events) {
    for (const auto& e : test::eventLines(events))
        if (e.find("\"type\":\"start\"") != std::string::npos)
            return e;
    return {};
}

// What torchrun --nproc-per-node 2 --no-python sets: no rank or rendezvous flags at all.
test::RunOptions torchrunEnvironment(int port) {
    test::RunOptions options;
    options.timeout = std::chrono::seconds(120);
    options.envForRank = [port](int rank) {
        return test::Environment{
            "RANK=" + std::to_string(rank), "LOCAL_RANK=" + std::to_string(rank),  "WORLD_SIZE=2", "LOCAL_WORLD_SIZE=2",
            "MASTER_ADDR=127.0.0.1",        "MASTER_PORT=" + std::to_string(port), "GROUP_RANK=0"};
    };
    return options;
}

TEST(Launch, TorchrunEnvironmentAloneIsEnough) {
    const std::string dir = test::makeTempDir("torchrun");
    const int port = test::freePort();
    auto r = test::runRanks(
        2,
        [&](int) {
            return std::vector<std::string>{
                "--model",   "mlp", "--synthetic-samples", "64", "--batch-size", "8",
                "--threads", "1",   "--log-every",         "0",  "--events",     dir + "/rank{rank}.events"};
        },
        torchrunEnvironment(port));
    for (int rank = 0; rank < 2; ++rank) {
        ASSERT_EQ(r[rank].exitCode, 0) << r[rank].err;
        const std::string start = startEvent(readFile(dir + "/rank" + std::to_string(rank) + ".events"));
        EXPECT_NE(start.find("\"rank\":" + std::to_string(rank) + ","), std::string::npos) << start;
        EXPECT_NE(start.find("\"world_size\":2,"), std::string::npos) << start;
        EXPECT_NE(start.find("\"local_rank\":" + std::to_string(rank) + ","), std::string::npos) << start;
        EXPECT_NE(start.find("tcp://127.0.0.1:" + std::to_string(port)), std::string::npos) << start;
    }
    fs::remove_all(dir);
}

TEST(Launch, MissingDatasetExitsWithDataErrorNamingTheFile) {
    const std::string dir = test::makeTempDir("nodata");
    auto r = test::runRanks(1, [&](int) {
        return std::vector<std::string>{"--dataset", "mnist",  "--data-dir", dir,
                                        "--events",  "stdout", "--model",    "cnn"};
    });
    EXPECT_EQ(r[0].exitCode, 3) << r[0].err;
    EXPECT_NE(r[0].err.find(dir + "/train-images-idx3-ubyte"), std::string::npos) << r[0].err;
    EXPECT_NE(r[0].out.find("\"kind\":\"data\""), std::string::npos) << r[0].out;
    fs::remove_all(dir);
}

TEST(Launch, UsageErrorExitsTwoBeforeAnythingStarts) {
    auto r = test::runRanks(1, [&](int) { return std::vector<std::string>{"--batch-size", "zero"}; });
    EXPECT_EQ(r[0].exitCode, 2);
    EXPECT_NE(r[0].err.find("--batch-size: 'zero' is not an integer"), std::string::npos) << r[0].err;
    EXPECT_TRUE(r[0].out.empty()) << "no events for a command line that never ran";
}

// Two ranks of the MLP on synthetic data with `flags`, rank 0 sent `signal` `after` its start event.
std::vector<test::RankResult> runTwoSignalled(int signal, std::chrono::milliseconds after,
                                              const std::vector<std::string>& flags) {
    const int port = test::freePort();
    test::RunOptions options;
    options.timeout = std::chrono::seconds(60);
    options.signalRank = 0;
    options.signal = signal;
    options.signalAfter = after;
    options.signalAfterOutput = "\"type\":\"start\"";
    return test::runRanks(
        2,
        [&](int rank) {
            auto args = test::distributedArgs(rank, 2, port);
            args.insert(args.end(), {"--model", "mlp", "--synthetic-samples", "4096", "--batch-size", "8", "--events",
                                     "stdout", "--no-eval"});
            args.insert(args.end(), flags.begin(), flags.end());
            return args;
        },
        options);
}

// A rank outlives SIGPIPE: when its peer dies, its write to the peer's socket fails and the collective reports it
// (exit 1 with a "collective" error), instead of the rank ending by the signal without a word.
TEST(Launch, SigpipeDoesNotEndARank) {
    const auto r = runTwoSignalled(SIGPIPE, std::chrono::milliseconds(300), {"--max-steps", "2000"});
    EXPECT_EQ(r[0].exitCode, 0) << r[0].err;
    EXPECT_EQ(r[1].exitCode, 0) << r[1].err;
    const auto events = test::eventLines(r[0].out);
    ASSERT_FALSE(events.empty());
    EXPECT_NE(events.back().find("\"status\":\"ok\""), std::string::npos) << events.back();
}

// A rank told to stop says so, with the step and phase, even while its peer keeps it waiting.
TEST(Launch, SigtermIsReportedAsTerminationWithEndEvent) {
    const auto r = runTwoSignalled(SIGTERM, std::chrono::milliseconds(1000), {"--epochs", "1000", "--timeout-s", "3"});
    EXPECT_EQ(r[0].exitCode, 128 + SIGTERM) << r[0].err;
    const auto events = test::eventLines(r[0].out);
    ASSERT_GE(events.size(), 2u);
    EXPECT_NE(events[events.size() - 2].find("\"kind\":\"terminated\""), std::string::npos)
        << events[events.size() - 2];
    EXPECT_NE(events[events.size() - 2].find("SIGTERM received at step "), std::string::npos);
    EXPECT_NE(r[0].err.find("stopping: SIGTERM received at step "), std::string::npos) << r[0].err;
    EXPECT_NE(events.back().find("\"type\":\"end\""), std::string::npos) << events.back();
    EXPECT_NE(events.back().find("\"status\":\"error\""), std::string::npos);
    // The peer loses rank 0 in a collective and reports that, instead of hanging.
    EXPECT_EQ(r[1].exitCode, 1) << r[1].err;
    EXPECT_NE(r[1].out.find("\"kind\":\"collective\""), std::string::npos);
}

// A rank stopped after its end event said `ok`, while it frees what it held (--linger-s holds it there), exits 0 at
// once and says no second end: a run's teardown after a peer's failure must not turn a good end into a stop.
TEST(Launch, AStopAfterAGoodEndKeepsItsStatus) {
    for (const int signal : {SIGTERM, SIGINT}) {
        const int port = test::freePort();
        test::RunOptions options;
        options.timeout = std::chrono::seconds(60); // the linger is 120 s: a rank that outlives the stop is killed
        options.signalRank = 0;
        options.signal = signal;
        options.signalAfterOutput = "\"type\":\"end\"";
        const auto r = test::runRanks(
            1,
            [&](int rank) {
                auto args = test::distributedArgs(rank, 1, port);
                args.insert(args.end(), {"--model", "mlp", "--synthetic-samples", "256", "--batch-size", "32",
                                         "--max-steps", "3", "--events", "stdout", "--no-eval", "--linger-s", "120"});
                return args;
            },
            options);
        EXPECT_EQ(r[0].exitCode, 0) << "signal " << signal << ": " << r[0].err;
        const auto events = test::eventLines(r[0].out);
        ASSERT_FALSE(events.empty());
        EXPECT_NE(events.back().find("\"type\":\"end\""), std::string::npos) << events.back();
        EXPECT_NE(events.back().find("\"status\":\"ok\""), std::string::npos) << events.back();
        EXPECT_EQ(r[0].out.find("\"kind\":\"terminated\""), std::string::npos) << r[0].out;
        EXPECT_EQ(r[0].err.find("stopping: "), std::string::npos) << r[0].err;
        EXPECT_NE(r[0].err.find("done: 3 steps in "), std::string::npos) << r[0].err; // said with its end
    }
}

// --linger-s holds only a rank that ended well: a failed one exits at once, and its peers' teardown with it.
TEST(Launch, AFailedRankDoesNotLinger) {
    const int port = test::freePort();
    const auto r = test::runRanks(
        1,
        [&](int rank) {
            auto args = test::distributedArgs(rank, 1, port);
            args.insert(args.end(),
                        {"--model", "mlp", "--synthetic-samples", "256", "--batch-size", "32", "--events", "stdout",
                         "--no-eval", "--fail-at-step", "2", "--fail-rank", "0", "--linger-s", "120"});
            return args;
        },
        std::chrono::seconds(60));
    EXPECT_EQ(r[0].exitCode, 1) << r[0].err; // -1: killed after 60 s, lingering
}

} // namespace
