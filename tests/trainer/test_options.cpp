// SPDX-License-Identifier: MIT
#include "options.h"

#include <gtest/gtest.h>

#include <map>

using namespace rankscope::trainer;

namespace {

struct Env {
    std::map<std::string, std::string> vars;
    EnvironmentLookup lookup() const {
        return [this](const char* name) -> const char* {
            const auto it = vars.find(name);
            return it == vars.end() ? nullptr : it->second.c_str();
        };
    }
};

TrainerOptions parse(std::vector<std::string> args, const Env& env = {}, bool cuda = false) {
    return parseOptions(args, env.lookup(), cuda);
}

std::string usageError(std::vector<std::string> args, const Env& env = {}, bool cuda = false) {
    try {
        parse(std::move(args), env, cuda);
    } catch (const UsageError& e) {
        return e.what();
    }
    return "<no error>";
}

TEST(Options, SeedStyleFlags) {
    const auto o = parse({"--rank", "1", "--world-size", "4", "--init-method", "tcp://10.1.2.3:29500"});
    EXPECT_EQ(o.rank, 1);
    EXPECT_EQ(o.worldSize, 4);
    EXPECT_EQ(o.masterAddr, "10.1.2.3");
    EXPECT_EQ(o.masterPort, 29500);
    EXPECT_EQ(o.localRank, 1);
    EXPECT_EQ(o.backend, "gloo");
    EXPECT_EQ(o.device, "cpu");
}

TEST(Options, TorchrunEnvironment) {
    Env env{{{"RANK", "5"},
             {"WORLD_SIZE", "8"},
             {"LOCAL_RANK", "1"},
             {"LOCAL_WORLD_SIZE", "4"},
             {"MASTER_ADDR", "node0"},
             {"MASTER_PORT", "29400"}}};
    const auto o = parse({}, env);
    EXPECT_EQ(o.rank, 5);
    EXPECT_EQ(o.worldSize, 8);
    EXPECT_EQ(o.localRank, 1);
    EXPECT_EQ(o.localWorldSize, 4);
    EXPECT_EQ(o.initMethod(), "tcp://node0:29400");
}

// Under torchrun, its agent hosts the store: every rank joins as a client under the attempt's prefix.
TEST(Options, TorchrunAgentStore) {
    Env env{{{"RANK", "0"},
             {"WORLD_SIZE", "2"},
             {"MASTER_ADDR", "node0"},
             {"MASTER_PORT", "29400"},
             {"TORCHELASTIC_USE_AGENT_STORE", "True"},
             {"TORCHELASTIC_RESTART_COUNT", "2"}}};
    EXPECT_EQ(parse({}, env).agentStorePrefix, "/worker/attempt_2");
    Env plain{{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29400"}}};
    EXPECT_EQ(parse({}, plain).agentStorePrefix, "");
    // An explicit rendezvous is the user's: rank 0 hosts it, whatever the environment says.
    EXPECT_EQ(parse({"--init-method", "tcp://h:1"}, env).agentStorePrefix, "");
}

TEST(Options, FlagsWinOverEnvironment) {
    Env env{{{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29400"}}};
    const auto o = parse({"--rank", "2", "--init-method=tcp://[::1]:1234"}, env);
    EXPECT_EQ(o.rank, 2);
    EXPECT_EQ(o.worldSize, 8);
    EXPECT_EQ(o.masterAddr, "::1");
    EXPECT_EQ(o.masterPort, 1234);
}

TEST(Options, DefaultsFollowCuda) {
    const auto gpu = parse({}, {}, true);
    EXPECT_EQ(gpu.device, "cuda");
    EXPECT_EQ(gpu.backend, "nccl");
    const auto cpu = parse({"--device", "cpu"}, {}, true);
    EXPECT_EQ(cpu.backend, "gloo");
}

TEST(Options, LearningRateScaling) {
    EXPECT_DOUBLE_EQ(
        parse({"--world-size", "4", "--rank", "0", "--init-method", "tcp://h:1", "--lr", "0.01"}).effectiveLr(), 0.04);
    EXPECT_DOUBLE_EQ(
        parse({"--world-size", "4", "--rank", "0", "--init-method", "tcp://h:1", "--lr", "0.01", "--no-lr-scaling"})
            .effectiveLr(),
        0.01);
}

TEST(Options, ErrorsNameTheFlagOrVariable) {
    EXPECT_NE(usageError({"--rank", "4", "--world-size", "4", "--init-method", "tcp://h:1"}).find("--rank"),
              std::string::npos);
    EXPECT_NE(usageError({"--batch-size", "abc"}).find("--batch-size: 'abc' is not an integer"), std::string::npos);
    EXPECT_NE(usageError({"--model", "vgg"}).find("--model: 'vgg' is not one of"), std::string::npos);
    EXPECT_NE(usageError({"--init-method", "udp://h:1"}).find("--init-method"), std::string::npos);
    EXPECT_NE(usageError({"--world-size", "2", "--rank", "0"}).find("MASTER_ADDR"), std::string::npos);
    EXPECT_NE(usageError({}, Env{{{"WORLD_SIZE", "x"}}}).find("environment variable WORLD_SIZE"), std::string::npos);
    EXPECT_NE(usageError({"--backend", "nccl"}).find("--backend nccl"), std::string::npos);
    EXPECT_NE(usageError({"--device", "cuda"}).find("--device cuda"), std::string::npos);
    EXPECT_NE(usageError({"--amp", "bf16"}).find("--amp bf16"), std::string::npos);
    EXPECT_NE(usageError({"--fail-at-step", "3"}).find("--fail-rank"), std::string::npos);
    EXPECT_NE(usageError({"--alloc-at-step", "3", "--alloc-rank", "0"}).find("--alloc-mb"), std::string::npos);
    EXPECT_NE(usageError({"--hang-rank", "0"}).find("--hang-at-step and --hang-rank go together"), std::string::npos);
    EXPECT_NE(usageError({"--slow-ms", "50"}).find("--slow-rank and --slow-ms go together"), std::string::npos);
    EXPECT_NE(usageError({"--alloc-mb", "8"}).find("--alloc-at-step, --alloc-rank and --alloc-mb"), std::string::npos);
    EXPECT_NE(usageError({"--linger-s", "-1"}).find("--linger-s"), std::string::npos);
    EXPECT_NE(usageError({"--linger-s", "3601"}).find("--linger-s"), std::string::npos);
    EXPECT_EQ(parse({"--linger-s", "5"}).lingerSeconds, 5);
    EXPECT_NE(usageError({"--bogus", "1"}).find("unknown flag --bogus"), std::string::npos);
    EXPECT_NE(usageError({"--epochs"}).find("--epochs: missing value"), std::string::npos);
    EXPECT_NE(usageError({"--resume", "auto"}).find("--checkpoint-dir"), std::string::npos);
}

TEST(Options, RankTemplate) {
    EXPECT_EQ(expandRank("/runs/{rank}/events-{rank}.jsonl", 3), "/runs/3/events-3.jsonl");
}

} // namespace
