// SPDX-License-Identifier: MIT
// Checkpoints: a run stopped at step k and resumed reaches exactly the parameters of an uninterrupted
// run; truncated checkpoints are detected, reported, and skipped for the previous valid one.
#include "checkpoint.h"
#include "models.h"
#include "trainer_process.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

using namespace rankscope;
namespace fs = std::filesystem;

namespace {

// cnn has BatchNorm buffers and dropout (so RNG state matters); 4 steps per epoch on 2 ranks.
std::vector<std::string> runArgs(int rank, int port, const std::string& ckptDir, int maxSteps) {
    auto args = test::distributedArgs(rank, 2, port);
    for (const auto& a : {"--model", "cnn", "--batch-size", "16", "--synthetic-samples", "128", "--epochs", "3",
                          "--events", "stdout", "--checkpoint-every-steps", "2", "--replica-check-every", "1"})
        args.push_back(a);
    for (const auto& a :
         {std::string("--checkpoint-dir"), ckptDir, std::string("--max-steps"), std::to_string(maxSteps)})
        args.push_back(a);
    return args;
}

std::vector<test::RankResult> run(const std::string& ckptDir, int maxSteps, std::vector<std::string> extra = {}) {
    const int port = test::freePort();
    return test::runRanks(2, [&](int rank) {
        auto args = runArgs(rank, port, ckptDir, maxSteps);
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    });
}

std::map<std::string, torch::Tensor> modelState(const std::string& checkpointPath) {
    auto model = trainer::makeModel("cnn", 3, 32, 10);
    torch::optim::Adam optimizer(model.module->parameters());
    const auto bytes = trainer::CheckpointDirectory::readFile(checkpointPath);
    trainer::deserializeCheckpoint(bytes, checkpointPath, *model.module, optimizer);
    std::map<std::string, torch::Tensor> state;
    for (const auto& item : model.module->named_parameters())
        state[item.key()] = item.value().detach().clone();
    for (const auto& item : model.module->named_buffers())
        state["buffer:" + item.key()] = item.value().detach().clone();
    return state;
}

void expectIdentical(const std::string& a, const std::string& b) {
    const auto x = modelState(a);
    const auto y = modelState(b);
    ASSERT_EQ(x.size(), y.size());
    for (const auto& [name, t] : x)
        EXPECT_TRUE(torch::equal(t, y.at(name))) << name << " differs between " << a << " and " << b;
}

std::string stepFile(const std::string& dir, int step) {
    char name[64];
    std::snprintf(name, sizeof name, "ckpt-step-%010d.pt", step);
    return (fs::path(dir) / name).string();
}

class ResumeExactness : public ::testing::TestWithParam<int> {};

// Stop at step k (mid-epoch or on an epoch boundary), resume, and compare at step 10 (third epoch).
TEST_P(ResumeExactness, ResumedRunEqualsUninterruptedRun) {
    const int stopAt = GetParam();
    const std::string base = test::makeTempDir("resume");
    const std::string straight = base + "/straight", resumed = base + "/resumed";

    auto a = run(straight, 10);
    ASSERT_EQ(a[0].exitCode, 0) << a[0].err;
    auto b = run(resumed, stopAt);
    ASSERT_EQ(b[0].exitCode, 0) << b[0].err;
    ASSERT_TRUE(fs::exists(stepFile(resumed, stopAt))) << "a run stopped by --max-steps leaves a checkpoint";
    auto c = run(resumed, 10, {"--resume", "auto"});
    ASSERT_EQ(c[0].exitCode, 0) << c[0].err;
    EXPECT_NE(c[0].err.find("resumed from"), std::string::npos) << c[0].err;
    // The replicas stay equal after a resume (a Reducer built before the load once let them drift).
    EXPECT_EQ(c[0].out.find("replica_divergence"), std::string::npos) << c[0].out;

    expectIdentical(stepFile(straight, 10), stepFile(resumed, 10));
    fs::remove_all(base);
}

INSTANTIATE_TEST_SUITE_P(StopPoints, ResumeExactness, ::testing::Values(3, 4));

TEST(Checkpoint, TruncatedCheckpointIsDetected) {
    auto model = trainer::makeModel("mlp", 1, 8, 10);
    torch::optim::SGD optimizer(model.module->parameters(), torch::optim::SGDOptions(0.1));
    trainer::TrainingState state;
    state.rngState = torch::zeros({8}, torch::kUInt8);
    const std::string bytes = trainer::serializeCheckpoint(*model.module, optimizer, state);
    for (const double keep : {0.0, 0.5, 0.9, 0.999}) {
        const std::string cut = bytes.substr(0, static_cast<size_t>(bytes.size() * keep));
        try {
            trainer::deserializeCheckpoint(cut, "cut.pt", *model.module, optimizer);
            ADD_FAILURE() << "a checkpoint cut to " << keep << " of its size was accepted";
        } catch (const trainer::CheckpointError& e) {
            EXPECT_NE(std::string(e.what()).find("cut.pt"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("truncated or corrupt"), std::string::npos) << e.what();
        }
    }
    EXPECT_NO_THROW(trainer::deserializeCheckpoint(bytes, "whole.pt", *model.module, optimizer));
}

TEST(Checkpoint, ResumeAutoSkipsTruncatedNewestCheckpoint) {
    const std::string dir = test::makeTempDir("truncated");
    auto first = run(dir, 4);
    ASSERT_EQ(first[0].exitCode, 0) << first[0].err;
    const std::string newest = stepFile(dir, 4);
    ASSERT_TRUE(fs::exists(newest));
    fs::resize_file(newest, fs::file_size(newest) / 2);

    auto resumed = run(dir, 6, {"--resume", "auto"});
    ASSERT_EQ(resumed[0].exitCode, 0) << resumed[0].err;
    EXPECT_NE(resumed[0].err.find(newest), std::string::npos) << "the corrupt file is named:\n" << resumed[0].err;
    EXPECT_NE(resumed[0].err.find("resumed from " + stepFile(dir, 2)), std::string::npos) << resumed[0].err;
    EXPECT_NE(resumed[0].out.find("\"kind\":\"checkpoint\""), std::string::npos) << "reported as an error event";
    EXPECT_NE(resumed[0].out.find("\"fatal\":false"), std::string::npos);
    fs::remove_all(dir);
}

// Another model's checkpoint is whole but does not fit: loading it may have stopped half-way, so falling
// back to an older one (or to a fresh start) would train a half-loaded model. It must stop the run.
TEST(Checkpoint, ResumeAutoStopsOnAnotherModelsCheckpoint) {
    const std::string dir = test::makeTempDir("mismatch");
    auto first = run(dir, 2); // cnn
    ASSERT_EQ(first[0].exitCode, 0) << first[0].err;
    auto other = run(dir, 4, {"--resume", "auto", "--model", "mlp"}); // the last flag wins
    EXPECT_EQ(other[0].exitCode, 1) << other[0].err;
    EXPECT_NE(other[0].err.find("does not match this model"), std::string::npos) << other[0].err;
    EXPECT_EQ(other[0].err.find("starting from scratch"), std::string::npos) << other[0].err;
    EXPECT_EQ(other[0].err.find("trying an older one"), std::string::npos) << other[0].err;
    fs::remove_all(dir);
}

TEST(Checkpoint, ExplicitTruncatedCheckpointFailsWithItsName) {
    const std::string dir = test::makeTempDir("explicit");
    const std::string path = dir + "/broken.pt";
    std::ofstream(path) << "not a zip archive";
    auto r = run(dir + "/out", 2, {"--resume", path});
    EXPECT_EQ(r[0].exitCode, 1);
    EXPECT_NE(r[0].err.find(path), std::string::npos) << r[0].err;
    fs::remove_all(dir);
}

TEST(Checkpoint, KeepsOnlyNewestAndLeavesNoTemporaryFiles) {
    const std::string dir = test::makeTempDir("keep");
    auto r = run(dir, 10, {"--keep-checkpoints", "2"});
    ASSERT_EQ(r[0].exitCode, 0) << r[0].err;
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir))
        names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"ckpt-step-0000000008.pt", "ckpt-step-0000000010.pt"}));
    fs::remove_all(dir);
}

} // namespace
