// SPDX-License-Identifier: MIT
// DDP correctness on real processes and Gloo: 2 ranks with batch b end where 1 rank with the
// concatenated batch 2b ends, and the two ranks' replicas stay bitwise equal.
#include "models.h"
#include "trainer_process.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

using namespace rankscope;

namespace {

constexpr int kSteps = 6;
constexpr int kBatch = 8; // per rank in the 2-rank run

std::map<std::string, torch::Tensor> loadParams(const std::string& path) {
    auto model = trainer::makeModel("mlp", 3, 32, 10);
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    model.module->load(archive);
    std::map<std::string, torch::Tensor> params;
    for (const auto& item : model.module->named_parameters())
        params[item.key()] = item.value().detach().clone();
    return params;
}

std::vector<std::string> trainingArgs(const std::string& optimizer, int batch, const std::string& exportPath) {
    // Exactly kSteps batches of 2*kBatch samples: no padding, the same samples per step in both runs.
    return {"--model",
            "mlp",
            "--optimizer",
            optimizer,
            "--lr",
            optimizer == "sgd" ? "0.05" : "0.001",
            "--no-lr-scaling",
            "--no-eval",
            "--batch-size",
            std::to_string(batch),
            "--synthetic-samples",
            std::to_string(2 * kBatch * kSteps),
            "--max-steps",
            std::to_string(kSteps),
            "--replica-check-every",
            "2",
            "--export-params",
            exportPath,
            "--events",
            "stdout"};
}

class DdpEquivalence : public ::testing::TestWithParam<std::string> {};

TEST_P(DdpEquivalence, TwoRanksMatchOneRankWithDoubleBatch) {
    const std::string optimizer = GetParam();
    const std::string dir = test::makeTempDir("ddp");

    const int port = test::freePort();
    auto two = test::runRanks(2, [&](int rank) {
        auto args = test::distributedArgs(rank, 2, port);
        const auto extra = trainingArgs(optimizer, kBatch, dir + "/two-{rank}.pt");
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    });
    ASSERT_EQ(two[0].exitCode, 0) << two[0].err;
    ASSERT_EQ(two[1].exitCode, 0) << two[1].err;

    const int port1 = test::freePort();
    auto one = test::runRanks(1, [&](int rank) {
        auto args = test::distributedArgs(rank, 1, port1);
        const auto extra = trainingArgs(optimizer, 2 * kBatch, dir + "/one.pt");
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    });
    ASSERT_EQ(one[0].exitCode, 0) << one[0].err;

    const auto rank0 = loadParams(dir + "/two-0.pt");
    const auto rank1 = loadParams(dir + "/two-1.pt");
    const auto single = loadParams(dir + "/one.pt");
    ASSERT_EQ(rank0.size(), single.size());
    for (const auto& [name, p] : rank0) {
        EXPECT_TRUE(torch::equal(p, rank1.at(name))) << name << ": replicas differ";
        const double diff = (p - single.at(name)).abs().max().item<double>();
        EXPECT_LE(diff, 1e-5) << name << ": 2 ranks vs 1 rank differ by " << diff;
    }
    // The replica check ran (every 2 steps) and found nothing to report.
    EXPECT_EQ(two[0].out.find("replica_divergence"), std::string::npos);
    std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, DdpEquivalence, ::testing::Values("sgd", "adam"));

// Different seeds give the ranks different initial weights; the broadcast from rank 0 at start must make
// them equal before the first step, or the replicas would stay apart forever.
TEST(DdpTraining, ReplicasStartFromRankZeroParameters) {
    const std::string dir = test::makeTempDir("ddp-seeds");
    const int port = test::freePort();
    auto runs = test::runRanks(2, [&](int rank) {
        auto args = test::distributedArgs(rank, 2, port);
        for (const auto& a : {"--model", "mlp", "--no-eval", "--batch-size", "8", "--synthetic-samples", "64",
                              "--max-steps", "3", "--events", "stdout"})
            args.push_back(a);
        args.insert(args.end(), {"--seed", std::to_string(100 + rank), "--export-params", dir + "/seed-{rank}.pt"});
        return args;
    });
    ASSERT_EQ(runs[0].exitCode, 0) << runs[0].err;
    ASSERT_EQ(runs[1].exitCode, 0) << runs[1].err;
    const auto rank0 = loadParams(dir + "/seed-0.pt");
    const auto rank1 = loadParams(dir + "/seed-1.pt");
    for (const auto& [name, p] : rank0)
        EXPECT_TRUE(torch::equal(p, rank1.at(name))) << name << ": replicas differ";
    std::filesystem::remove_all(dir);
}

TEST(DdpTraining, ParametersMoveAndLossFalls) {
    const std::string dir = test::makeTempDir("ddp-moves");
    const int port = test::freePort();
    auto runs = test::runRanks(2, [&](int rank) {
        auto args = test::distributedArgs(rank, 2, port);
        for (const auto& a : {"--model", "mlp", "--optimizer", "sgd", "--lr", "0.05", "--no-eval", "--batch-size", "8",
                              "--synthetic-samples", "16", "--epochs", "30", "--events", "stdout"})
            args.push_back(a);
        return args;
    });
    ASSERT_EQ(runs[0].exitCode, 0) << runs[0].err;
    // 30 epochs over the same 16 samples: the loss must fall well below chance (ln 10 = 2.30).
    const auto events = test::eventLines(runs[0].out);
    std::vector<double> losses;
    for (const auto& e : events) {
        const auto at = e.find("\"loss\":");
        if (e.find("\"type\":\"step\"") != std::string::npos && at != std::string::npos)
            losses.push_back(std::stod(e.substr(at + 7)));
    }
    ASSERT_EQ(losses.size(), 30u);
    EXPECT_GT(losses.front(), 1.5);
    EXPECT_LT(losses.back(), 0.5 * losses.front());
    std::filesystem::remove_all(dir);
}

} // namespace
