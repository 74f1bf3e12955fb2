// SPDX-License-Identifier: MIT
#include "checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unistd.h>

namespace rankscope::trainer {
namespace fs = std::filesystem;
namespace {

const char* const kPrefix = "ckpt-step-";
const char* const kSuffix = ".pt";

void writeScalar(torch::serialize::OutputArchive& archive, const std::string& key, int64_t value) {
    archive.write(key, torch::tensor(value, torch::kInt64));
}

int64_t readScalar(torch::serialize::InputArchive& archive, const std::string& key) {
    torch::Tensor t;
    archive.read(key, t);
    return t.item<int64_t>();
}

// Step number from "ckpt-step-00000123.pt", or -1 for other names.
int64_t stepOf(const std::string& name) {
    const std::string prefix = kPrefix;
    const std::string suffix = kSuffix;
    if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
        return -1;
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit))
        return -1;
    return std::stoll(digits);
}

void writeAll(int fd, const std::string& bytes, const std::string& path) {
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            throw CheckpointError("writing checkpoint " + path + " failed: " + std::strerror(errno));
        done += static_cast<size_t>(n);
    }
}

void syncDirectory(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

} // namespace

std::string serializeCheckpoint(torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                                const TrainingState& state) {
    torch::serialize::OutputArchive archive;
    torch::serialize::OutputArchive modelArchive;
    model.save(modelArchive);
    archive.write("model", modelArchive);
    torch::serialize::OutputArchive optimizerArchive;
    optimizer.save(optimizerArchive);
    archive.write("optimizer", optimizerArchive);
    writeScalar(archive, "epoch", state.epoch);
    writeScalar(archive, "step_in_epoch", state.stepInEpoch);
    writeScalar(archive, "global_step", state.globalStep);
    writeScalar(archive, "seed", state.seed);
    archive.write("rng_state", state.rngState);
    std::ostringstream out;
    archive.save_to(out);
    return out.str();
}

TrainingState deserializeCheckpoint(const std::string& bytes, const std::string& source, torch::nn::Module& model,
                                    torch::optim::Optimizer& optimizer) {
    torch::serialize::InputArchive archive;
    TrainingState state;
    torch::serialize::InputArchive modelArchive;
    torch::serialize::InputArchive optimizerArchive;
    try {
        // load_from reads and checks every record of the zip archive; only then is anything applied.
        archive.load_from(bytes.data(), bytes.size());
        archive.read("model", modelArchive);
        archive.read("optimizer", optimizerArchive);
        state.epoch = readScalar(archive, "epoch");
        state.stepInEpoch = readScalar(archive, "step_in_epoch");
        state.globalStep = readScalar(archive, "global_step");
        state.seed = readScalar(archive, "seed");
        archive.read("rng_state", state.rngState);
    } catch (const std::exception& e) {
        std::string what = e.what();
        throw CheckpointError("checkpoint " + source +
                              " is unreadable (truncated or corrupt): " + what.substr(0, what.find('\n')));
    }
    try {
        model.load(modelArchive);
        optimizer.load(optimizerArchive);
    } catch (const std::exception& e) {
        std::string what = e.what();
        throw CheckpointMismatch("checkpoint " + source +
                                 " does not match this model or optimizer: " + what.substr(0, what.find('\n')));
    }
    return state;
}

CheckpointDirectory::CheckpointDirectory(std::string dir, int keep) : m_dir(std::move(dir)), m_keep(keep) {}

SavedCheckpoint CheckpointDirectory::save(const std::string& bytes, int64_t globalStep) {
    const auto start = std::chrono::steady_clock::now();
    std::error_code ec;
    fs::create_directories(m_dir, ec);
    if (ec)
        throw CheckpointError("--checkpoint-dir: cannot create " + m_dir + ": " + ec.message());
    char name[64];
    std::snprintf(name, sizeof name, "%s%010lld%s", kPrefix, static_cast<long long>(globalStep), kSuffix);
    const std::string finalPath = (fs::path(m_dir) / name).string();
    std::string tmpPath = (fs::path(m_dir) / ".ckpt-XXXXXX.tmp").string();
    const int fd = ::mkstemps(tmpPath.data(), 4);
    if (fd < 0)
        throw CheckpointError("cannot create a temporary file in " + m_dir + ": " + std::strerror(errno));
    try {
        writeAll(fd, bytes, tmpPath);
        if (::fsync(fd) != 0)
            throw CheckpointError("fsync of " + tmpPath + " failed: " + std::strerror(errno));
    } catch (...) {
        ::close(fd);
        ::unlink(tmpPath.c_str());
        throw;
    }
    ::close(fd);
    if (std::rename(tmpPath.c_str(), finalPath.c_str()) != 0) {
        const std::string reason = std::strerror(errno);
        ::unlink(tmpPath.c_str());
        throw CheckpointError("cannot rename " + tmpPath + " to " + finalPath + ": " + reason);
    }
    syncDirectory(m_dir);
    const auto all = listNewestFirst();
    for (size_t i = static_cast<size_t>(m_keep); i < all.size(); ++i)
        fs::remove(all[i], ec);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return {finalPath, static_cast<int64_t>(bytes.size()), ms};
}

std::vector<std::string> CheckpointDirectory::listNewestFirst() const {
    std::vector<std::pair<int64_t, std::string>> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(m_dir, ec)) {
        const int64_t step = stepOf(entry.path().filename().string());
        if (step >= 0 && entry.is_regular_file())
            found.emplace_back(step, entry.path().string());
    }
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<std::string> paths;
    for (auto& [step, path] : found)
        paths.push_back(std::move(path));
    return paths;
}

std::string CheckpointDirectory::readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw CheckpointError("--resume: cannot open checkpoint " + path + ": " + std::strerror(errno));
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

} // namespace rankscope::trainer
