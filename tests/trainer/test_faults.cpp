// SPDX-License-Identifier: MIT
// Fault injection and failure reporting, on real processes: what the debugger will diagnose.
#include "trainer_process.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>

using namespace rankscope;

namespace {

std::vector<test::RankResult> runTwo(std::vector<std::string> extra,
                                     std::chrono::seconds timeout = std::chrono::seconds(120),
                                     const char* model = "mlp") {
    const int port = test::freePort();
    return test::runRanks(
        2,
        [&](int rank) {
            auto args = test::distributedArgs(rank, 2, port);
            for (const auto& a : {"--model", model, "--batch-size", "8", "--synthetic-samples", "256", "--no-eval",
                                  "--events", "stdout", "--heartbeat-s", "0.2"})
                args.push_back(a);
            args.insert(args.end(), extra.begin(), extra.end());
            return args;
        },
        timeout);
}

bool hasEvent(const test::RankResult& r, const std::string& fragment) {
    for (const auto& e : test::eventLines(r.out))
        if (e.find(fragment) != std::string::npos)
            return true;
    return false;
}

TEST(Faults, InjectedFailureExitsWithErrorEventAndPeerReportsCollectiveFailure) {
    auto r = runTwo({"--fail-at-step", "3", "--fail-rank", "1"});
    EXPECT_EQ(r[1].exitCode, 1) << r[1].err;
    EXPECT_TRUE(hasEvent(r[1], "\"kind\":\"injected\"")) << r[1].out;
    EXPECT_TRUE(hasEvent(r[1], "\"status\":\"error\""));
    EXPECT_NE(r[1].err.find("injected failure at step 3"), std::string::npos) << r[1].err;
    // Rank 0 loses its peer inside a collective and says so, instead of hanging.
    EXPECT_EQ(r[0].exitCode, 1) << r[0].err;
    EXPECT_TRUE(hasEvent(r[0], "\"kind\":\"collective\"")) << r[0].out;
}

TEST(Faults, HungRankKeepsBeatingAtTheSameStepWhilePeerTimesOut) {
    auto r = runTwo({"--hang-at-step", "2", "--hang-rank", "1", "--timeout-s", "4"}, std::chrono::seconds(12));
    EXPECT_EQ(r[1].exitCode, -1) << "the hung rank never exits by itself";
    EXPECT_EQ(r[0].exitCode, 1) << r[0].err;
    EXPECT_TRUE(hasEvent(r[0], "\"kind\":\"collective\"")) << r[0].out;
    // While hung, rank 1 reports step 1 (the last finished) in the forward phase, beat after beat.
    const std::regex stuck("\"type\":\"heartbeat\".*\"phase\":\"forward\",\"step\":1,");
    int beats = 0;
    for (const auto& e : test::eventLines(r[1].out))
        beats += std::regex_search(e, stuck) ? 1 : 0;
    EXPECT_GE(beats, 5) << r[1].out;
}

// A rank that leaves the loop early (as one whose inputs ran out first) ends well, and says where it left; its peer,
// in the collective the rank never enters, learns of it from Gloo when the rank's process is gone (NCCL's peers wait
// on: RankScope names the rank that ended from its heartbeats and exit).
TEST(Faults, RankThatLeavesTheLoopEndsWellAndItsPeerIsLeftInACollective) {
    auto r = runTwo({"--leave-at-step", "3", "--leave-rank", "1", "--timeout-s", "20"}, std::chrono::seconds(60));
    EXPECT_EQ(r[1].exitCode, 0) << r[1].err;
    EXPECT_NE(r[1].err.find("left the training loop before step 3 (--leave-at-step)"), std::string::npos) << r[1].err;
    EXPECT_TRUE(hasEvent(r[1], "\"type\":\"end\",\"rank\":1")) << r[1].out;
    EXPECT_TRUE(hasEvent(r[1], "\"status\":\"ok\",\"steps\":2,")) << r[1].out;
    EXPECT_FALSE(hasEvent(r[1], "\"type\":\"error\"")) << r[1].out;
    EXPECT_EQ(r[0].exitCode, 1) << r[0].err;
    EXPECT_TRUE(hasEvent(r[0], "\"kind\":\"collective\"")) << r[0].out;
    // Without the flag's partner: a usage error naming both.
    auto alone = runTwo({"--leave-at-step", "3"}, std::chrono::seconds(30));
    EXPECT_EQ(alone[0].exitCode, 2);
    EXPECT_NE(alone[0].err.find("--leave-at-step and --leave-rank"), std::string::npos) << alone[0].err;
}

TEST(Faults, SlowRankIsSlower) {
    auto r = runTwo({"--slow-rank", "1", "--slow-ms", "150", "--max-steps", "6"});
    ASSERT_EQ(r[0].exitCode, 0) << r[0].err;
    ASSERT_EQ(r[1].exitCode, 0) << r[1].err;
    // The slow rank's forward phase holds the sleep; the fast rank waits for it in the all-reduce.
    const std::regex forward("\"forward_ms\":([0-9.]+)");
    double slowForward = 0;
    for (const auto& e : test::eventLines(r[1].out)) {
        std::smatch m;
        if (std::regex_search(e, m, forward))
            slowForward = std::max(slowForward, std::stod(m[1]));
    }
    EXPECT_GE(slowForward, 150.0);
}

// Each step event's value of `field`, in order.
std::vector<double> stepValues(const test::RankResult& r, const std::string& field) {
    const std::regex value("\"" + field + "\":([0-9.]+)");
    std::vector<double> values;
    for (const auto& e : test::eventLines(r.out)) {
        std::smatch m;
        if (e.find("\"type\":\"step\"") != std::string::npos && std::regex_search(e, m, value))
            values.push_back(std::stod(m[1]));
    }
    return values;
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values.empty() ? 0.0 : values[values.size() / 2];
}

// On a model with buffers (the CNN's BatchNorm) DDP broadcasts them before each forward pass: that is where the
// fast rank waits for the slow one. It is communication, not compute, or the straggler diagnosis (compute =
// step - comm wait) sees two equally slow ranks.
TEST(Faults, PeersOfASlowRankWaitInCommunicationAlsoBeforeTheForwardPass) {
    auto r = runTwo({"--slow-rank", "1", "--slow-ms", "150", "--max-steps", "6"}, std::chrono::seconds(120), "cnn");
    ASSERT_EQ(r[0].exitCode, 0) << r[0].err;
    ASSERT_EQ(r[1].exitCode, 0) << r[1].err;
    const std::vector<double> fastWait = stepValues(r[0], "comm_wait_ms");
    const std::vector<double> fastForward = stepValues(r[0], "forward_ms");
    ASSERT_EQ(fastWait.size(), 6u) << r[0].out;
    EXPECT_GE(median(fastWait), 100.0) << r[0].out;
    EXPECT_LT(median(fastForward), 100.0) << r[0].out;
    EXPECT_GE(median(stepValues(r[1], "forward_ms")), 150.0) << r[1].out;
    // The parts still add up to the step.
    const std::vector<double> step = stepValues(r[0], "step_ms");
    const std::vector<double> data = stepValues(r[0], "data_ms");
    const std::vector<double> backward = stepValues(r[0], "backward_ms");
    const std::vector<double> optimizer = stepValues(r[0], "optimizer_ms");
    for (size_t i = 0; i < step.size(); ++i)
        EXPECT_NEAR(data[i] + fastForward[i] + backward[i] + fastWait[i] + optimizer[i], step[i], 0.01) << i;
}

TEST(Faults, InjectedAllocationIsTakenOnceAndKept) {
    // Without a memory limit the rank simply holds the memory and trains on; under one, the OOM killer ends it
    // (tests/remote/tst_kernellog_e2e).
    auto r = runTwo({"--alloc-at-step", "3", "--alloc-rank", "1", "--alloc-mb", "96", "--max-steps", "6"});
    ASSERT_EQ(r[0].exitCode, 0) << r[0].err;
    ASSERT_EQ(r[1].exitCode, 0) << r[1].err;
    EXPECT_NE(r[1].err.find("injected allocation of 96 MiB at step 3"), std::string::npos) << r[1].err;
    EXPECT_EQ(r[0].err.find("injected allocation"), std::string::npos) << r[0].err;
}

TEST(Faults, DivergedReplicaIsFoundByTheNextReplicaCheckOnEveryRank) {
    auto r =
        runTwo({"--diverge-at-step", "3", "--diverge-rank", "1", "--replica-check-every", "4", "--max-steps", "8"});
    ASSERT_EQ(r[0].exitCode, 0) << r[0].err;
    ASSERT_EQ(r[1].exitCode, 0) << r[1].err;
    EXPECT_NE(r[1].err.find("injected divergence after step 3"), std::string::npos) << r[1].err;
    EXPECT_EQ(r[0].err.find("injected divergence"), std::string::npos) << r[0].err;
    // Each rank says so at steps 4 and 8, with the step and its own checksum (schema 1.1): the two differ.
    const std::regex said(R"re("v":"1\.1".*"kind":"replica_divergence".*"step":(\d+),"checksum":(-?[0-9.e+-]+))re");
    std::string checksums[2];
    for (int rank = 0; rank < 2; ++rank) {
        std::vector<std::string> steps;
        for (const auto& e : test::eventLines(r[rank].out)) {
            std::smatch m;
            if (std::regex_search(e, m, said)) {
                steps.push_back(m[1]);
                if (m[1] == "4")
                    checksums[rank] = m[2];
            }
        }
        EXPECT_EQ(steps, (std::vector<std::string>{"4", "8"})) << r[rank].out;
    }
    EXPECT_FALSE(checksums[0].empty());
    EXPECT_NE(checksums[0], checksums[1]);
    // Without the flag's partner: a usage error naming both.
    auto alone = runTwo({"--diverge-at-step", "3"}, std::chrono::seconds(30));
    EXPECT_EQ(alone[0].exitCode, 2);
    EXPECT_NE(alone[0].err.find("--diverge-at-step and --diverge-rank"), std::string::npos) << alone[0].err;
}

TEST(Faults, FirstNonFiniteLossIsReportedOnce) {
    // Weights of 1e37 give logits beyond float range: the loss turns infinite or NaN within a few steps.
    auto r = runTwo({"--lr", "1e37", "--optimizer", "sgd", "--max-steps", "12"});
    ASSERT_EQ(r[0].exitCode, 0) << r[0].err;
    int reports = 0;
    for (const auto& e : test::eventLines(r[0].out))
        reports += e.find("\"kind\":\"non_finite_loss\"") != std::string::npos ? 1 : 0;
    EXPECT_EQ(reports, 1) << r[0].out;
    EXPECT_TRUE(hasEvent(r[0], "\"fatal\":false"));
}

TEST(Faults, RendezvousFailureNamesTheAddress) {
    const int port = test::freePort();
    // Rank 1 alone: nobody hosts the store.
    auto r = test::runRanks(1, [&](int) {
        auto args = test::distributedArgs(1, 2, port);
        args.insert(args.end(), {"--timeout-s", "2", "--events", "stdout", "--model", "mlp"});
        return args;
    });
    EXPECT_EQ(r[0].exitCode, 4) << r[0].err;
    EXPECT_NE(r[0].err.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << r[0].err;
    EXPECT_TRUE(hasEvent(r[0], "\"kind\":\"rendezvous\""));
}

} // namespace
