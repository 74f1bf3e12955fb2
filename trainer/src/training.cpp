// SPDX-License-Identifier: MIT
#include "training.h"

#include "checkpoint.h"
#include "datasets.h"
#include "ddp.h"
#include "heartbeat.h"
#include "models.h"
#include "precision.h"
#include "sampler.h"
#include "termination.h"
#include "torch_compat.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>
#include <unistd.h>

namespace rankscope::trainer {
namespace {

namespace phase = schema::phase;
using Clock = std::chrono::steady_clock;

// A failure injected on purpose (--fail-at-step).
class InjectedFailure : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// --leave-at-step: the rank leaves its training loop, as one whose inputs ran out before its peers' do, and ends
// well. No exception type of the standard's, so that no handler of errors takes it for one.
struct LeftTheLoop {
    int64_t beforeStep = 0;
};

// Milliseconds, rounded to the microsecond: finer digits are noise and only lengthen every event.
double msBetween(Clock::time_point a, Clock::time_point b) {
    return std::round(std::chrono::duration<double, std::milli>(b - a).count() * 1000.0) / 1000.0;
}

// The Reducer's all-reduce runs inside autograd, so its failures surface from backward() as plain
// c10::Errors; these are the words Gloo, NCCL and the socket layer use for a broken or timed-out peer.
bool looksLikeCommunicationFailure(const std::string& what) {
    for (const char* word : {"gloo", "Gloo", "NCCL", "nccl", "Connection", "connection", "Timed out", "timed out",
                             "peer", "Socket", "socket"})
        if (what.find(word) != std::string::npos)
            return true;
    return false;
}

std::string hostName() {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    return name;
}

std::string torchVersion() {
    return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
           std::to_string(TORCH_VERSION_PATCH);
}

torch::Tensor cpuRngState() {
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    return generator.get_state();
}

void setCpuRngState(const torch::Tensor& state) {
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(state);
}

// Zeroes gradients in place. LibTorch 1.13's Optimizer::zero_grad() detaches them first, which views
// into the Reducer's buckets refuse; zeroing in place also keeps them views, so nothing is reallocated.
void zeroGradients(torch::optim::Optimizer& optimizer) {
    torch::NoGradGuard noGrad;
    for (auto& group : optimizer.param_groups())
        for (auto& p : group.params())
            if (p.mutable_grad().defined())
                p.mutable_grad().zero_();
}

std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const TrainerOptions& o, std::vector<torch::Tensor> params) {
    if (o.optimizer == "sgd")
        return std::make_unique<torch::optim::SGD>(std::move(params),
                                                   torch::optim::SGDOptions(o.effectiveLr()).momentum(o.momentum));
    return std::make_unique<torch::optim::Adam>(std::move(params), torch::optim::AdamOptions(o.effectiveLr()));
}

class Trainer {
public:
    Trainer(const TrainerOptions& options, EventWriter& events)
        : m_o(options), m_events(events), m_heartbeat(events, m_progress, m_collectives, options.heartbeatInterval) {}

    int run();
    // Called from the signal thread: the rank reports why it stops, whatever the loop is blocked in, and returns the
    // status the process exits with. A rank that had said its end keeps the status that end stands for: only its
    // clean-up is cut short.
    int terminated(int signal);

private:
    void setUp();
    void resume();
    void emitStart();
    void trainEpoch();
    // Never inlined: it is where README's gdb session breaks to read m_state.globalStep on a rank under gdbserver.
    [[gnu::noinline]] void trainStep(const std::vector<int64_t>& batchIndices);
    void evaluate();
    double replicaCheck(); // returns this rank's checksum
    void injectDivergence();
    void checkpoint();
    void exportParameters();
    double parameterChecksum();
    void injectFaults();
    void log(const std::string& text) const;
    int fail(std::string_view kind, const std::string& message, int exitCode);
    // The rank's last line on stderr and its error (each where given) and its end event, said once and together:
    // the training thread and the signal thread may both come to it, and a rank whose end is said already says
    // nothing more (no "stopping:" line beside an end that says it finished). Returns the exit status of the end
    // said: `exitStatus`, or that of one said before.
    int end(std::string_view status, double checksum, int exitStatus, const JsonObject* error = nullptr,
            const std::string& lastLine = {});
    void emitEnd(std::string_view status, double checksum);
    bool stepLimitReached() const { return m_o.maxSteps > 0 && m_state.globalStep >= m_o.maxSteps; }

    const TrainerOptions& m_o;
    EventWriter& m_events;
    const Clock::time_point m_started = Clock::now();
    Progress m_progress;
    CollectiveCounter m_collectives; // outlives the heartbeat thread that reads it
    Heartbeat m_heartbeat;
    std::unique_ptr<Communicator> m_comm;
    DatasetSplit m_data;
    Model m_model;
    torch::Device m_device{torch::kCPU};
    std::unique_ptr<DataParallel> m_ddp;
    std::unique_ptr<torch::optim::Optimizer> m_optimizer;
    std::unique_ptr<MixedPrecision> m_precision;
    std::unique_ptr<DistributedSampler> m_sampler;
    TrainingState m_state;
    int64_t m_stepsPerEpoch = 0;
    int64_t m_lastCheckpointStep = -1;
    int64_t m_lastReplicaCheckStep = -1; // the step of the last replica check, and this rank's checksum then
    double m_lastReplicaChecksum = 0.0;
    double m_lastLoss = std::nan("");
    bool m_reportedNonFiniteLoss = false;
    Clock::time_point m_stepStart;
    double m_busyImages = 0;
    double m_busySeconds = 0;
    std::vector<std::unique_ptr<char[]>> m_ballast; // --alloc-at-step
    std::mutex m_endMutex;
    std::optional<int> m_exitStatus; // the exit status the end event said stands for, once said
};

void Trainer::log(const std::string& text) const {
    std::string line(schema::stderr_line::kRankOpen);
    line.append(std::to_string(m_o.rank)).append(schema::stderr_line::kRankClose).append(text).push_back('\n');
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
}

void Trainer::setUp() {
    if (m_o.threads > 0)
        torch::set_num_threads(m_o.threads);
    torch::manual_seed(m_o.seed);

    m_progress.setPhase(phase::kRendezvous);
    CommunicatorOptions co;
    co.rank = m_o.rank;
    co.worldSize = m_o.worldSize;
    co.host = m_o.masterAddr;
    co.port = m_o.masterPort;
    co.agentStorePrefix = m_o.agentStorePrefix;
    co.backend = m_o.backend;
    co.timeout = m_o.timeout;
    // A launcher that gives each rank its own CUDA_VISIBLE_DEVICES leaves one visible device: the local
    // rank is then an index into the node's GPUs, not into what this process sees.
    const int visibleDevices = m_o.device == "cuda" ? static_cast<int>(torch::cuda::device_count()) : 0;
    const int cudaDevice = visibleDevices > 0 ? m_o.localRank % visibleDevices : 0;
    co.cudaDevice = cudaDevice;
    m_comm = std::make_unique<Communicator>(co, m_collectives);

    m_progress.setPhase(phase::kData);
    DataOptions dataOptions;
    dataOptions.name = m_o.dataset;
    dataOptions.dir = m_o.dataDir;
    dataOptions.syntheticTrainSamples = m_o.syntheticSamples;
    dataOptions.syntheticTestSamples = std::max<int64_t>(m_o.syntheticSamples / 4, 1);
    dataOptions.seed = m_o.seed;
    m_data = loadDataset(dataOptions);

    if (m_o.device == "cuda")
        m_device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(cudaDevice));
    const auto& images = m_data.train.images;
    m_model = makeModel(m_o.model, images.size(1), images.size(2), m_data.train.classes);
    m_model.module->to(m_device);
    if (m_o.channelsLast)
        toChannelsLast(*m_model.module);
    m_optimizer = makeOptimizer(m_o, m_model.module->parameters());
    m_precision = std::make_unique<MixedPrecision>(m_o.amp);

    m_sampler = std::make_unique<DistributedSampler>(m_data.train.images.size(0), m_o.worldSize, m_o.rank, true,
                                                     m_o.seed, m_o.dropLast);
    const int64_t perRank = m_sampler->numSamples();
    m_stepsPerEpoch = m_o.dropLast ? perRank / m_o.batchSize : (perRank + m_o.batchSize - 1) / m_o.batchSize;
    if (m_stepsPerEpoch == 0)
        throw UsageError("--batch-size: " + std::to_string(m_o.batchSize) + " is larger than the " +
                         std::to_string(perRank) + " samples each rank gets per epoch");
    m_state.seed = static_cast<int64_t>(m_o.seed);
}

// Rank 0 picks the checkpoint and sends its bytes to every rank over the process group, so that nodes
// without a shared file system resume from the same state.
void Trainer::resume() {
    if (m_o.resume.empty())
        return;
    m_progress.setPhase(phase::kCheckpoint);
    std::string bytes;
    std::string source;
    if (m_o.rank == 0) {
        std::vector<std::string> candidates;
        if (m_o.resume == "auto")
            candidates = CheckpointDirectory(m_o.checkpointDir, m_o.keepCheckpoints).listNewestFirst();
        else
            candidates = {m_o.resume};
        for (const auto& path : candidates) {
            try {
                bytes = CheckpointDirectory::readFile(path);
                m_state = deserializeCheckpoint(bytes, path, *m_model.module, *m_optimizer);
                source = path;
                break;
            } catch (const CheckpointMismatch&) {
                throw; // another model's checkpoint: half-loaded, nothing older can be trusted to fit
            } catch (const CheckpointError& e) {
                if (m_o.resume != "auto")
                    throw;
                bytes.clear();
                JsonObject fields;
                fields.add(schema::error::kKind, schema::error_kind::kCheckpoint)
                    .add(schema::error::kMessage, std::string(e.what()) + "; trying an older one")
                    .add(schema::error::kFatal, false);
                m_events.emit(schema::type::kError, fields);
                log(std::string("warning: ") + e.what() + "; trying an older one");
            }
        }
    }
    auto size = torch::tensor(static_cast<int64_t>(bytes.size()), torch::kInt64).reshape({1}).to(m_device);
    m_comm->broadcast(size, 0, "broadcast of the checkpoint size");
    const int64_t n = size.item<int64_t>();
    if (n == 0) {
        if (m_o.rank == 0)
            log("--resume auto: no valid checkpoint in " + m_o.checkpointDir + "; starting from scratch");
        return;
    }
    auto blob = torch::empty({n}, torch::kUInt8);
    if (m_o.rank == 0)
        std::memcpy(blob.data_ptr(), bytes.data(), static_cast<size_t>(n));
    if (m_device.is_cuda()) {
        auto onDevice = blob.to(m_device);
        m_comm->broadcast(onDevice, 0, "broadcast of the checkpoint");
        blob = onDevice.cpu();
    } else {
        m_comm->broadcast(blob, 0, "broadcast of the checkpoint");
    }
    if (m_o.rank != 0) { // rank 0 applied it while choosing it
        bytes.assign(static_cast<const char*>(blob.data_ptr()), static_cast<size_t>(n));
        m_state = deserializeCheckpoint(bytes, "received from rank 0", *m_model.module, *m_optimizer);
    }
    setCpuRngState(m_state.rngState);
    m_lastCheckpointStep = m_state.globalStep;
    if (m_o.rank == 0)
        log("resumed from " + source + " at epoch " + std::to_string(m_state.epoch + 1) + ", step " +
            std::to_string(m_state.globalStep));
}

void Trainer::emitStart() {
    JsonObject config;
    for (const auto& [key, value] : describeOptions(m_o))
        config.add(key, value);
    int64_t total = m_stepsPerEpoch * m_o.epochs;
    if (m_o.maxSteps > 0)
        total = std::min(total, m_o.maxSteps);
    JsonObject fields;
    fields.add(schema::start::kWorldSize, m_o.worldSize)
        .add(schema::start::kLocalRank, m_o.localRank)
        .add(schema::start::kLocalWorldSize, m_o.localWorldSize)
        .add(schema::start::kHost, hostName())
        .add(schema::start::kPid, static_cast<int64_t>(::getpid()))
        .add(schema::start::kBackend, m_o.backend)
        .add(schema::start::kDevice, m_device.str())
        .add(schema::start::kTorchVersion, torchVersion())
        .add(schema::start::kStepsPerEpoch, m_stepsPerEpoch)
        .add(schema::start::kTotalSteps, total)
        .add(schema::start::kConfig, config);
    m_events.emit(schema::type::kStart, fields);
}

void Trainer::injectFaults() {
    const int64_t step = m_state.globalStep + 1;
    if (m_o.failRank == m_o.rank && step == m_o.failAtStep)
        throw InjectedFailure("injected failure at step " + std::to_string(step) + " (--fail-at-step)");
    if (m_o.leaveRank == m_o.rank && step == m_o.leaveAtStep)
        throw LeftTheLoop{step};
    if (m_o.hangRank == m_o.rank && step == m_o.hangAtStep) {
        m_progress.setPhase(phase::kForward);
        log("injected hang at step " + std::to_string(step) + " (--hang-at-step): not taking part any more");
        for (;;)
            std::this_thread::sleep_for(std::chrono::hours(1));
    }
    if (m_o.slowRank == m_o.rank)
        std::this_thread::sleep_for(std::chrono::milliseconds(m_o.slowMs));
    if (m_o.allocRank == m_o.rank && step == m_o.allocAtStep) {
        log("injected allocation of " + std::to_string(m_o.allocMiB) + " MiB at step " + std::to_string(step) +
            " (--alloc-at-step)");
        // Written page by page so that it is resident: an allocation that is never touched costs no memory.
        constexpr size_t kChunk = size_t(64) << 20;
        for (size_t left = size_t(m_o.allocMiB) << 20; left > 0;) {
            const size_t size = std::min(left, kChunk);
            volatile char* block = m_ballast.emplace_back(new char[size]).get();
            for (size_t at = 0; at < size; at += 4096)
                block[at] = 1;
            left -= size;
        }
    }
}

// What a faulty GPU's wrong update, or a rank that skipped one, leaves: this replica's parameters differ from the
// others', and DDP's averaged gradients never bring them back together.
void Trainer::injectDivergence() {
    torch::NoGradGuard noGrad;
    for (auto& p : m_model.module->parameters()) {
        p.view({-1}).narrow(0, 0, 1).add_(1e-3); // one value, as a flipped bit would change
        break;
    }
    log("injected divergence after step " + std::to_string(m_state.globalStep + 1) +
        " (--diverge-at-step): this rank's parameters changed, and only its");
}

void Trainer::trainStep(const std::vector<int64_t>& batchIndices) {
    const auto t0 = m_stepStart;
    m_progress.setPhase(phase::kData);
    const auto index = torch::from_blob(const_cast<int64_t*>(batchIndices.data()),
                                        {static_cast<int64_t>(batchIndices.size())}, torch::kInt64);
    auto x = m_data.train.images.index_select(0, index).to(m_device, /*non_blocking=*/true);
    auto y = m_data.train.labels.index_select(0, index).to(m_device, /*non_blocking=*/true);
    if (m_o.channelsLast)
        x = x.contiguous(torch::MemoryFormat::ChannelsLast);
    const auto tData = Clock::now();

    m_progress.setPhase(phase::kForward);
    injectFaults();
    // DDP's collectives before the forward pass (the buffers' broadcast, a bucket rebuild) are where a rank waits
    // for a slower one on models with buffers (BatchNorm): communication, not compute.
    const auto tPrepare = Clock::now();
    m_ddp->prepareForward();
    const double prepareMs = msBetween(tPrepare, Clock::now());
    torch::Tensor loss;
    {
        auto autocast = m_precision->autocast();
        loss = torch::nn::functional::cross_entropy(m_model.forward(x), y);
    }
    const auto tForward = Clock::now();

    m_progress.setPhase(phase::kBackward);
    zeroGradients(*m_optimizer);
    m_ddp->prepareBackward();
    // The Reducer's bucketed all-reduce runs inside backward(); it counts as one collective per step.
    const int64_t collective = m_comm->counter().begin();
    try {
        m_precision->backward(loss);
    } catch (const std::exception& e) {
        const std::string what = compat::firstLine(e.what());
        if (m_o.worldSize > 1 && looksLikeCommunicationFailure(what))
            throw CollectiveError("gradient all-reduce in backward (collective #" + std::to_string(collective) +
                                  ") failed on rank " + std::to_string(m_o.rank) + ": " + what);
        throw;
    }
    m_comm->counter().end(collective);
    const auto tBackward = Clock::now();

    m_progress.setPhase(phase::kOptimizer);
    m_precision->step(*m_optimizer);
    if (m_o.divergeRank == m_o.rank && m_state.globalStep + 1 == m_o.divergeAtStep)
        injectDivergence();
    m_lastLoss = loss.item<double>(); // waits for the device on CUDA
    const auto tEnd = Clock::now();
    if (!std::isfinite(m_lastLoss) && !m_reportedNonFiniteLoss) {
        m_reportedNonFiniteLoss = true; // the first one is what matters; every step event carries the rest
        const std::string message = "loss is " + std::string(std::isnan(m_lastLoss) ? "NaN" : "infinite") +
                                    " at step " + std::to_string(m_state.globalStep + 1) + " (epoch " +
                                    std::to_string(m_state.epoch + 1) + ")";
        JsonObject fields;
        fields.add(schema::error::kKind, schema::error_kind::kNonFiniteLoss)
            .add(schema::error::kMessage, message)
            .add(schema::error::kFatal, false);
        m_events.emit(schema::type::kError, fields);
        log("warning: " + message);
    }

    ++m_state.globalStep;
    ++m_state.stepInEpoch;
    m_progress.setStep(m_state.globalStep);
    const double stepMs = msBetween(t0, tEnd);
    const int64_t lastGradNs = m_ddp->lastGradientNs();
    const double backwardEndNs =
        static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(tBackward.time_since_epoch()).count());
    const double backwardWaitMs = std::round(std::clamp((backwardEndNs - static_cast<double>(lastGradNs)) / 1e6, 0.0,
                                                        msBetween(tForward, tBackward)) *
                                             1000.0) /
                                  1000.0;
    const double forwardWaitMs = std::round(prepareMs * 1000.0) / 1000.0;
    const double images = static_cast<double>(batchIndices.size());
    m_busyImages += images;
    m_busySeconds += stepMs / 1000.0;

    JsonObject fields;
    fields.add(schema::step::kEpoch, m_state.epoch + 1)
        .add(schema::step::kStep, m_state.globalStep)
        .add(schema::step::kLoss, m_lastLoss)
        .add(schema::step::kLr, m_o.effectiveLr())
        .add(schema::step::kImagesPerSec, images / (stepMs / 1000.0))
        .add(schema::step::kStepMs, stepMs)
        .add(schema::step::kDataMs, msBetween(t0, tData))
        .add(schema::step::kForwardMs, std::round((msBetween(tData, tForward) - forwardWaitMs) * 1000.0) / 1000.0)
        .add(schema::step::kBackwardMs, std::round((msBetween(tForward, tBackward) - backwardWaitMs) * 1000.0) / 1000.0)
        .add(schema::step::kCommWaitMs, forwardWaitMs + backwardWaitMs)
        .add(schema::step::kOptimizerMs, msBetween(tBackward, tEnd));
    m_events.emit(schema::type::kStep, fields);
    if (m_o.logEverySteps > 0 && (m_state.globalStep % m_o.logEverySteps == 0 || m_state.stepInEpoch == 1)) {
        char line[256];
        std::snprintf(line, sizeof line, "epoch %lld/%d step %lld/%lld loss %.4f %.0f img/s",
                      static_cast<long long>(m_state.epoch + 1), m_o.epochs,
                      static_cast<long long>(m_state.stepInEpoch), static_cast<long long>(m_stepsPerEpoch), m_lastLoss,
                      images / (stepMs / 1000.0));
        log(line);
    }
    m_stepStart = Clock::now();
}

void Trainer::trainEpoch() {
    m_model.module->train();
    m_sampler->setEpoch(m_state.epoch);
    const std::vector<int64_t> indices = m_sampler->indices();
    m_stepStart = Clock::now();
    for (int64_t b = m_state.stepInEpoch; b < m_stepsPerEpoch && !stepLimitReached(); ++b) {
        const auto begin = indices.begin() + b * m_o.batchSize;
        const auto end = indices.begin() + std::min<int64_t>((b + 1) * m_o.batchSize, indices.size());
        trainStep(std::vector<int64_t>(begin, end));
        if (m_o.replicaCheckEverySteps > 0 && m_state.globalStep % m_o.replicaCheckEverySteps == 0)
            replicaCheck();
        if (m_o.checkpointEverySteps > 0 && m_state.globalStep % m_o.checkpointEverySteps == 0)
            checkpoint();
    }
}

// Validation sharded across ranks without padding (rank r takes r, r+W, ...), sums all-reduced, so
// every sample counts exactly once whatever the world size.
void Trainer::evaluate() {
    m_progress.setPhase(phase::kEval);
    torch::NoGradGuard noGrad;
    m_model.module->eval();
    const auto& test = m_data.test;
    const auto shard = torch::arange(m_o.rank, test.images.size(0), m_o.worldSize, torch::kInt64);
    double lossSum = 0, correct = 0;
    for (int64_t begin = 0; begin < shard.size(0); begin += m_o.evalBatchSize) {
        const auto index = shard.narrow(0, begin, std::min<int64_t>(m_o.evalBatchSize, shard.size(0) - begin));
        auto x = test.images.index_select(0, index).to(m_device);
        auto y = test.labels.index_select(0, index).to(m_device);
        if (m_o.channelsLast)
            x = x.contiguous(torch::MemoryFormat::ChannelsLast);
        auto autocast = m_precision->autocast();
        const auto logits = m_model.forward(x).to(torch::kFloat);
        lossSum += torch::nn::functional::cross_entropy(
                       logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                       .item<double>();
        correct += logits.argmax(1).eq(y).sum().item<double>();
    }
    auto totals = torch::tensor({lossSum, correct, static_cast<double>(shard.size(0))}, torch::kFloat64);
    if (m_device.is_cuda())
        totals = totals.to(m_device);
    m_comm->allReduce(totals, c10d::ReduceOp::SUM, "all-reduce of validation sums");
    totals = totals.cpu();
    const double samples = totals[2].item<double>();
    const double valLoss = totals[0].item<double>() / samples;
    const double accuracy = totals[1].item<double>() / samples;
    JsonObject fields;
    fields.add(schema::eval::kEpoch, m_state.epoch + 1)
        .add(schema::eval::kValLoss, valLoss)
        .add(schema::eval::kValAccuracy, accuracy)
        .add(schema::eval::kSamples, static_cast<int64_t>(samples));
    m_events.emit(schema::type::kEval, fields);
    if (m_o.rank == 0) {
        char line[160];
        std::snprintf(line, sizeof line, "epoch %lld/%d validation: loss %.4f accuracy %.4f (%lld samples)",
                      static_cast<long long>(m_state.epoch + 1), m_o.epochs, valLoss, accuracy,
                      static_cast<long long>(samples));
        log(line);
    }
    m_model.module->train();
}

double Trainer::parameterChecksum() {
    torch::NoGradGuard noGrad;
    double sum = 0;
    for (const auto& p : m_model.module->parameters())
        sum += p.to(torch::kFloat64).sum().item<double>();
    return sum;
}

// Replicas must stay bitwise equal; the checksum's max and -min over ranks in one all-reduce tell.
double Trainer::replicaCheck() {
    m_progress.setPhase(phase::kReplicaCheck);
    const double checksum = parameterChecksum();
    m_lastReplicaCheckStep = m_state.globalStep;
    m_lastReplicaChecksum = checksum;
    auto range = torch::tensor({checksum, -checksum}, torch::kFloat64);
    if (m_device.is_cuda())
        range = range.to(m_device);
    m_comm->allReduce(range, c10d::ReduceOp::MAX, "all-reduce of the replica checksum");
    range = range.cpu();
    const double high = range[0].item<double>();
    const double low = -range[1].item<double>();
    if (high != low) {
        char message[256];
        std::snprintf(message, sizeof message,
                      "parameters differ across ranks at step %lld: checksums range from %.17g to %.17g "
                      "(this rank: %.17g)",
                      static_cast<long long>(m_state.globalStep), low, high, checksum);
        JsonObject fields;
        fields.add(schema::error::kKind, schema::error_kind::kReplicaDivergence)
            .add(schema::error::kMessage, message)
            .add(schema::error::kFatal, false)
            .add(schema::error::kStep, m_state.globalStep)
            .add(schema::error::kChecksum, checksum);
        m_events.emit(schema::type::kError, fields);
        log(std::string(schema::stderr_line::kError) + message);
    }
    return checksum;
}

void Trainer::checkpoint() {
    if (m_o.checkpointDir.empty() || m_lastCheckpointStep == m_state.globalStep)
        return;
    m_lastCheckpointStep = m_state.globalStep;
    if (m_o.rank != 0)
        return;
    m_progress.setPhase(phase::kCheckpoint);
    m_state.rngState = cpuRngState();
    TrainingState state = m_state;
    if (state.stepInEpoch >= m_stepsPerEpoch) { // a finished epoch resumes at the next one
        ++state.epoch;
        state.stepInEpoch = 0;
    }
    const auto bytes = serializeCheckpoint(*m_model.module, *m_optimizer, state);
    const auto saved = CheckpointDirectory(m_o.checkpointDir, m_o.keepCheckpoints).save(bytes, state.globalStep);
    JsonObject fields;
    fields.add(schema::checkpoint::kPath, saved.path)
        .add(schema::checkpoint::kEpoch, state.epoch + (state.stepInEpoch == 0 ? 0 : 1))
        .add(schema::checkpoint::kStep, state.globalStep)
        .add(schema::checkpoint::kBytes, saved.bytes)
        .add(schema::checkpoint::kMs, saved.ms);
    m_events.emit(schema::type::kCheckpoint, fields);
}

void Trainer::exportParameters() {
    if (m_o.exportParams.empty())
        return;
    torch::serialize::OutputArchive archive;
    m_model.module->save(archive);
    archive.save_to(expandRank(m_o.exportParams, m_o.rank));
}

int Trainer::fail(std::string_view kind, const std::string& message, int exitCode) {
    m_heartbeat.stop();
    JsonObject error;
    error.add(schema::error::kKind, kind).add(schema::error::kMessage, message).add(schema::error::kFatal, true);
    return end(schema::status::kError, std::nan(""), exitCode, &error,
               std::string(schema::stderr_line::kError) + message);
}

int Trainer::end(std::string_view status, double checksum, int exitStatus, const JsonObject* error,
                 const std::string& lastLine) {
    std::lock_guard<std::mutex> lock(m_endMutex);
    if (m_exitStatus)
        return *m_exitStatus;
    if (!lastLine.empty())
        log(lastLine);
    if (error != nullptr)
        m_events.emit(schema::type::kError, *error);
    emitEnd(status, checksum);
    m_exitStatus = exitStatus;
    return exitStatus;
}

void Trainer::emitEnd(std::string_view status, double checksum) {
    JsonObject end;
    end.add(schema::end::kStatus, status)
        .add(schema::end::kSteps, m_state.globalStep)
        .add(schema::end::kImagesPerSec, m_busySeconds > 0 ? m_busyImages / m_busySeconds : 0.0)
        .add(schema::end::kWallS, std::chrono::duration<double>(Clock::now() - m_started).count())
        .add(schema::end::kParamChecksum, checksum);
    m_events.emit(schema::type::kEnd, end);
}

int Trainer::terminated(int signal) {
    const std::string current(m_progress.phase());
    m_heartbeat.stop();
    // The step it is in, as RankScope's hang diagnosis names it (event_schema.h).
    const int64_t step = m_progress.step() + (phase::isInsideAStep(current) ? 1 : 0);
    const std::string message = std::string(signal == SIGINT ? "SIGINT" : "SIGTERM") + " received at step " +
                                std::to_string(step) + " in phase " + current;
    JsonObject error;
    error.add(schema::error::kKind, schema::error_kind::kTerminated)
        .add(schema::error::kMessage, message)
        .add(schema::error::kFatal, true);
    return end(schema::status::kError, std::nan(""), 128 + signal, &error, "stopping: " + message);
}

int Trainer::run() {
    double finalChecksum = 0;
    try {
        setUp();
        // A checkpoint replaces the parameters' storage, so it is loaded before the Reducer takes
        // hold of them: a Reducer built over the old tensors stops averaging the new ones.
        resume();
        DataParallelOptions ddpOptions;
        ddpOptions.bucketMb = m_o.bucketMb;
        m_ddp = std::make_unique<DataParallel>(m_model.module, *m_comm, ddpOptions);
        emitStart();
        while (m_state.epoch < m_o.epochs && !stepLimitReached()) {
            trainEpoch();
            if (m_state.stepInEpoch < m_stepsPerEpoch)
                break; // stopped by --max-steps inside the epoch
            if (m_o.eval)
                evaluate();
            checkpoint();
            ++m_state.epoch;
            m_state.stepInEpoch = 0;
        }
        checkpoint();
        // The final replica check and the end event report the same checksum: compute it once. A run that ends on
        // a step just checked is not checked again (every rank ends on the same step, so none waits for the others).
        if (m_o.replicaCheckEverySteps <= 0)
            finalChecksum = parameterChecksum();
        else if (m_lastReplicaCheckStep == m_state.globalStep)
            finalChecksum = m_lastReplicaChecksum;
        else
            finalChecksum = replicaCheck();
        exportParameters();
    } catch (const LeftTheLoop& left) {
        log("left the training loop before step " + std::to_string(left.beforeStep) +
            " (--leave-at-step): the other ranks wait for it in their next collective");
        finalChecksum = parameterChecksum();
    } catch (const UsageError& e) {
        return fail(schema::error_kind::kUsage, e.what(), kExitUsage);
    } catch (const DataError& e) {
        return fail(schema::error_kind::kData, e.what(), kExitDataError);
    } catch (const RendezvousError& e) {
        return fail(schema::error_kind::kRendezvous, e.what(), kExitRendezvousError);
    } catch (const CollectiveError& e) {
        return fail(schema::error_kind::kCollective, e.what(), kExitTrainingError);
    } catch (const CheckpointError& e) {
        return fail(schema::error_kind::kCheckpoint, e.what(), kExitTrainingError);
    } catch (const InjectedFailure& e) {
        return fail(schema::error_kind::kInjected, e.what(), kExitTrainingError);
    } catch (const std::exception& e) {
        const std::string what = e.what();
        return fail(schema::error_kind::kInternal, what.substr(0, what.find('\n')), kExitTrainingError);
    }
    m_progress.setPhase(phase::kDone);
    m_heartbeat.stop();
    const double wall = std::chrono::duration<double>(Clock::now() - m_started).count();
    return end(schema::status::kOk, finalChecksum, kExitOk, nullptr,
               m_o.rank == 0
                   ? "done: " + std::to_string(m_state.globalStep) + " steps in " + std::to_string(wall) + " s"
                   : std::string());
}

} // namespace

int runTraining(const TrainerOptions& options, EventWriter& events) {
    // The signal thread outlives this function, so what it reaches is static.
    // The mutex keeps the Trainer alive while the signal thread reports through it.
    static std::mutex currentMutex;
    static Trainer* current = nullptr;
    static std::optional<int> ended; // the exit status of the Trainer's end, once it is going or gone
    static std::once_flag installed;
    std::call_once(installed, [] {
        handleTerminationSignals([](int signal) {
            std::lock_guard<std::mutex> lock(currentMutex);
            if (current != nullptr)
                return current->terminated(signal);
            // A stop while the rank frees what it held (its process group's shutdown, its memory) or lingers keeps
            // the status its end said: the teardown after a peer's failure must not turn a good end into a stop.
            return ended.value_or(128 + signal);
        });
    });
    int code = 0;
    {
        Trainer trainer(options, events);
        {
            std::lock_guard<std::mutex> lock(currentMutex);
            current = &trainer;
        }
        code = trainer.run();
        std::lock_guard<std::mutex> lock(currentMutex);
        current = nullptr;
        ended = code;
    }
    if (code == kExitOk && options.lingerSeconds > 0)
        std::this_thread::sleep_for(std::chrono::seconds(options.lingerSeconds));
    return code;
}

} // namespace rankscope::trainer
