// SPDX-License-Identifier: MIT
#include "options.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace rankscope::trainer {
namespace {

int64_t toInteger(const std::string& flag, const std::string& text, int64_t min, int64_t max) {
    errno = 0;
    char* end = nullptr;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno == ERANGE)
        throw UsageError(flag + ": '" + text + "' is not an integer");
    if (value < min || value > max)
        throw UsageError(flag + ": " + text + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) +
                         "]");
    return value;
}

double toDouble(const std::string& flag, const std::string& text, double min) {
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0')
        throw UsageError(flag + ": '" + text + "' is not a number");
    if (!(value >= min))
        throw UsageError(flag + ": " + text + " must be at least " + std::to_string(min));
    return value;
}

std::string oneOf(const std::string& flag, const std::string& text, const std::set<std::string>& allowed) {
    if (allowed.count(text))
        return text;
    std::string list;
    for (const auto& value : allowed)
        list += (list.empty() ? "" : "|") + value;
    throw UsageError(flag + ": '" + text + "' is not one of " + list);
}

// Flags that mean something only together (a fault's step and rank): all given, or none.
void requireTogether(std::initializer_list<bool> given, const std::string& flags) {
    const auto count = std::count(given.begin(), given.end(), true);
    if (count != 0 && count != static_cast<std::ptrdiff_t>(given.size()))
        throw UsageError(flags + " go together");
}

// Splits tcp://HOST:PORT; IPv6 hosts in brackets.
std::pair<std::string, int> parseInitMethod(const std::string& text) {
    const std::string scheme = "tcp://";
    if (text.rfind(scheme, 0) != 0)
        throw UsageError("--init-method: '" + text + "' must look like tcp://HOST:PORT");
    const std::string rest = text.substr(scheme.size());
    const auto colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0)
        throw UsageError("--init-method: '" + text + "' has no port (tcp://HOST:PORT)");
    std::string host = rest.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    const int port = static_cast<int>(toInteger("--init-method port", rest.substr(colon + 1), 0, 65535));
    return {host, port};
}

// Flag value lookup that remembers which flags were given, so that flags can win over the environment.
class FlagReader {
public:
    explicit FlagReader(const std::vector<std::string>& args) {
        static const std::set<std::string> switches = {"--help",          "-h",          "--no-lr-scaling",
                                                       "--channels-last", "--drop-last", "--no-eval"};
        for (size_t i = 0; i < args.size(); ++i) {
            const std::string& arg = args[i];
            if (arg.rfind("-", 0) != 0)
                throw UsageError("unexpected argument '" + arg + "' (flags start with --; see --help)");
            const auto eq = arg.find('=');
            if (eq != std::string::npos) {
                m_values[arg.substr(0, eq)] = arg.substr(eq + 1);
            } else if (switches.count(arg)) {
                m_values[arg] = "1";
            } else if (i + 1 < args.size()) {
                m_values[arg] = args[++i];
            } else {
                throw UsageError(arg + ": missing value");
            }
        }
    }
    std::optional<std::string> take(const std::string& flag) {
        const auto it = m_values.find(flag);
        if (it == m_values.end())
            return std::nullopt;
        std::string value = it->second;
        m_values.erase(it);
        return value;
    }
    bool has(const std::string& flag) { return take(flag).has_value(); }
    void rejectUnknown() const {
        if (!m_values.empty())
            throw UsageError("unknown flag " + m_values.begin()->first + " (see --help)");
    }

private:
    std::map<std::string, std::string> m_values;
};

std::optional<std::string> envValue(const EnvironmentLookup& env, const char* name) {
    const char* value = env ? env(name) : nullptr;
    if (value == nullptr || *value == '\0')
        return std::nullopt;
    return std::string(value);
}

// A flag, else an environment variable, else nothing; the error names whichever was used.
std::optional<std::pair<std::string, std::string>> flagOrEnv(FlagReader& flags, const std::string& flag,
                                                             const EnvironmentLookup& env, const char* var) {
    if (auto value = flags.take(flag))
        return std::make_pair(flag, *value);
    if (auto value = envValue(env, var))
        return std::make_pair(std::string("environment variable ") + var, *value);
    return std::nullopt;
}

void readDistributed(FlagReader& flags, const EnvironmentLookup& env, TrainerOptions& o) {
    if (auto v = flagOrEnv(flags, "--world-size", env, "WORLD_SIZE"))
        o.worldSize = static_cast<int>(toInteger(v->first, v->second, 1, 1 << 20));
    if (auto v = flagOrEnv(flags, "--rank", env, "RANK"))
        o.rank = static_cast<int>(toInteger(v->first, v->second, 0, 1 << 20));
    if (o.rank >= o.worldSize)
        throw UsageError("--rank: rank " + std::to_string(o.rank) + " is not below world size " +
                         std::to_string(o.worldSize));
    o.localRank = o.rank;
    if (auto v = flagOrEnv(flags, "--local-rank", env, "LOCAL_RANK"))
        o.localRank = static_cast<int>(toInteger(v->first, v->second, 0, 1 << 20));
    o.localWorldSize = o.worldSize;
    if (auto v = flagOrEnv(flags, "--local-world-size", env, "LOCAL_WORLD_SIZE"))
        o.localWorldSize = static_cast<int>(toInteger(v->first, v->second, 1, 1 << 20));

    if (auto init = flags.take("--init-method")) {
        std::tie(o.masterAddr, o.masterPort) = parseInitMethod(*init);
    } else {
        if (auto addr = envValue(env, "MASTER_ADDR"))
            o.masterAddr = *addr;
        if (auto port = envValue(env, "MASTER_PORT"))
            o.masterPort = static_cast<int>(toInteger("environment variable MASTER_PORT", *port, 0, 65535));
        else if (o.worldSize > 1)
            throw UsageError("--init-method: world size " + std::to_string(o.worldSize) +
                             " needs a rendezvous address: pass --init-method tcp://HOST:PORT or set "
                             "MASTER_ADDR and MASTER_PORT");
        // As torch.distributed's env:// rendezvous does under torchrun (_create_c10d_store).
        if (envValue(env, "TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True")
            o.agentStorePrefix = "/worker/attempt_" + envValue(env, "TORCHELASTIC_RESTART_COUNT").value_or("0");
    }
    if (o.masterPort == 0 && o.worldSize > 1)
        throw UsageError("--init-method: port 0 only works for world size 1");
    if (auto t = flags.take("--timeout-s"))
        o.timeout = std::chrono::milliseconds(static_cast<int64_t>(1000 * toDouble("--timeout-s", *t, 0.1)));
}

void readTraining(FlagReader& flags, TrainerOptions& o) {
    if (auto v = flags.take("--dataset"))
        o.dataset = oneOf("--dataset", *v, {"synthetic", "fashion-mnist", "mnist", "cifar10"});
    if (auto v = flags.take("--data-dir"))
        o.dataDir = *v;
    if (auto v = flags.take("--synthetic-samples"))
        o.syntheticSamples = toInteger("--synthetic-samples", *v, 1, int64_t(1) << 32);
    if (auto v = flags.take("--model"))
        o.model = oneOf("--model", *v, {"resnet18", "cnn", "mlp"});
    if (auto v = flags.take("--epochs"))
        o.epochs = static_cast<int>(toInteger("--epochs", *v, 1, 1000000));
    if (auto v = flags.take("--max-steps"))
        o.maxSteps = toInteger("--max-steps", *v, 0, int64_t(1) << 40);
    if (auto v = flags.take("--batch-size"))
        o.batchSize = toInteger("--batch-size", *v, 1, 1 << 20);
    if (auto v = flags.take("--eval-batch-size"))
        o.evalBatchSize = toInteger("--eval-batch-size", *v, 1, 1 << 20);
    o.eval = !flags.has("--no-eval");
    o.dropLast = flags.has("--drop-last");
    if (auto v = flags.take("--lr"))
        o.lr = toDouble("--lr", *v, 0.0);
    o.lrScaling = !flags.has("--no-lr-scaling");
    if (auto v = flags.take("--optimizer"))
        o.optimizer = oneOf("--optimizer", *v, {"adam", "sgd"});
    if (auto v = flags.take("--momentum"))
        o.momentum = toDouble("--momentum", *v, 0.0);
    if (auto v = flags.take("--seed"))
        o.seed = static_cast<uint64_t>(toInteger("--seed", *v, 0, INT64_MAX));
    if (auto v = flags.take("--threads"))
        o.threads = static_cast<int>(toInteger("--threads", *v, 0, 4096));
    if (auto v = flags.take("--bucket-mb"))
        o.bucketMb = toDouble("--bucket-mb", *v, 0.001);
}

void readOutputAndFaults(FlagReader& flags, TrainerOptions& o) {
    if (auto v = flags.take("--checkpoint-dir"))
        o.checkpointDir = *v;
    if (auto v = flags.take("--checkpoint-every-steps"))
        o.checkpointEverySteps = toInteger("--checkpoint-every-steps", *v, 0, int64_t(1) << 40);
    if (auto v = flags.take("--keep-checkpoints"))
        o.keepCheckpoints = static_cast<int>(toInteger("--keep-checkpoints", *v, 1, 100000));
    if (auto v = flags.take("--resume"))
        o.resume = *v;
    if (!o.resume.empty() && o.resume == "auto" && o.checkpointDir.empty())
        throw UsageError("--resume auto: needs --checkpoint-dir to look in");
    if (auto v = flags.take("--amp"))
        o.amp = oneOf("--amp", *v, {"off", "bf16", "fp16"});
    o.channelsLast = flags.has("--channels-last");
    if (auto v = flags.take("--events"))
        o.events = *v;
    if (auto v = flags.take("--heartbeat-s"))
        o.heartbeatInterval =
            std::chrono::milliseconds(static_cast<int64_t>(1000 * toDouble("--heartbeat-s", *v, 0.01)));
    if (auto v = flags.take("--log-every"))
        o.logEverySteps = toInteger("--log-every", *v, 0, int64_t(1) << 40);
    if (auto v = flags.take("--replica-check-every"))
        o.replicaCheckEverySteps = toInteger("--replica-check-every", *v, 0, int64_t(1) << 40);
    if (auto v = flags.take("--export-params"))
        o.exportParams = *v;
    if (auto v = flags.take("--fail-at-step"))
        o.failAtStep = toInteger("--fail-at-step", *v, 1, int64_t(1) << 40);
    if (auto v = flags.take("--fail-rank"))
        o.failRank = static_cast<int>(toInteger("--fail-rank", *v, 0, o.worldSize - 1));
    if (auto v = flags.take("--hang-at-step"))
        o.hangAtStep = toInteger("--hang-at-step", *v, 1, int64_t(1) << 40);
    if (auto v = flags.take("--hang-rank"))
        o.hangRank = static_cast<int>(toInteger("--hang-rank", *v, 0, o.worldSize - 1));
    if (auto v = flags.take("--leave-at-step"))
        o.leaveAtStep = toInteger("--leave-at-step", *v, 1, int64_t(1) << 40);
    if (auto v = flags.take("--leave-rank"))
        o.leaveRank = static_cast<int>(toInteger("--leave-rank", *v, 0, o.worldSize - 1));
    if (auto v = flags.take("--linger-s"))
        o.lingerSeconds = toInteger("--linger-s", *v, 0, 3600);
    if (auto v = flags.take("--slow-rank"))
        o.slowRank = static_cast<int>(toInteger("--slow-rank", *v, 0, o.worldSize - 1));
    if (auto v = flags.take("--slow-ms"))
        o.slowMs = toInteger("--slow-ms", *v, 0, 3600 * 1000);
    if (auto v = flags.take("--alloc-at-step"))
        o.allocAtStep = toInteger("--alloc-at-step", *v, 1, int64_t(1) << 40);
    if (auto v = flags.take("--alloc-rank"))
        o.allocRank = static_cast<int>(toInteger("--alloc-rank", *v, 0, o.worldSize - 1));
    if (auto v = flags.take("--alloc-mb"))
        o.allocMiB = toInteger("--alloc-mb", *v, 1, int64_t(1) << 30);
    if (auto v = flags.take("--diverge-at-step"))
        o.divergeAtStep = toInteger("--diverge-at-step", *v, 1, int64_t(1) << 40);
    if (auto v = flags.take("--diverge-rank"))
        o.divergeRank = static_cast<int>(toInteger("--diverge-rank", *v, 0, o.worldSize - 1));
    requireTogether({o.failAtStep > 0, o.failRank >= 0}, "--fail-at-step and --fail-rank");
    requireTogether({o.hangAtStep > 0, o.hangRank >= 0}, "--hang-at-step and --hang-rank");
    requireTogether({o.leaveAtStep > 0, o.leaveRank >= 0}, "--leave-at-step and --leave-rank");
    requireTogether({o.slowRank >= 0, o.slowMs > 0}, "--slow-rank and --slow-ms");
    requireTogether({o.allocAtStep > 0, o.allocRank >= 0, o.allocMiB > 0}, "--alloc-at-step, --alloc-rank and --alloc-mb");
    requireTogether({o.divergeAtStep > 0, o.divergeRank >= 0}, "--diverge-at-step and --diverge-rank");
}

void resolveDevice(FlagReader& flags, bool cudaAvailable, TrainerOptions& o) {
    o.device = oneOf("--device", flags.take("--device").value_or(cudaAvailable ? "cuda" : "cpu"), {"cpu", "cuda"});
    if (o.device == "cuda" && !cudaAvailable)
        throw UsageError("--device cuda: CUDA is not available in this build of LibTorch or on this machine");
    o.backend =
        oneOf("--backend", flags.take("--backend").value_or(o.device == "cuda" ? "nccl" : "gloo"), {"gloo", "nccl"});
    if (o.backend == "nccl" && o.device != "cuda")
        throw UsageError("--backend nccl: needs --device cuda (use gloo on CPU)");
    if (o.amp != "off" && o.device != "cuda")
        throw UsageError("--amp " + o.amp + ": mixed precision needs --device cuda");
}

} // namespace

TrainerOptions parseOptions(const std::vector<std::string>& args, const EnvironmentLookup& env, bool cudaAvailable) {
    FlagReader flags(args);
    TrainerOptions o;
    if (flags.has("--help") || flags.has("-h")) {
        o.help = true;
        return o;
    }
    readDistributed(flags, env, o);
    readTraining(flags, o);
    readOutputAndFaults(flags, o);
    resolveDevice(flags, cudaAvailable, o);
    flags.rejectUnknown();
    return o;
}

std::vector<std::pair<std::string, std::string>> describeOptions(const TrainerOptions& o) {
    auto num = [](auto v) {
        std::ostringstream s;
        s << v;
        return s.str();
    };
    return {{"rank", num(o.rank)},
            {"world-size", num(o.worldSize)},
            {"local-rank", num(o.localRank)},
            {"local-world-size", num(o.localWorldSize)},
            {"init-method", o.initMethod()},
            {"backend", o.backend},
            {"device", o.device},
            {"timeout-s", num(o.timeout.count() / 1000.0)},
            {"dataset", o.dataset},
            {"data-dir", o.dataDir},
            {"synthetic-samples", num(o.syntheticSamples)},
            {"model", o.model},
            {"epochs", num(o.epochs)},
            {"max-steps", num(o.maxSteps)},
            {"batch-size", num(o.batchSize)},
            {"eval-batch-size", num(o.evalBatchSize)},
            {"eval", o.eval ? "true" : "false"},
            {"drop-last", o.dropLast ? "true" : "false"},
            {"lr", num(o.lr)},
            {"effective-lr", num(o.effectiveLr())},
            {"lr-scaling", o.lrScaling ? "true" : "false"},
            {"optimizer", o.optimizer},
            {"seed", num(o.seed)},
            {"threads", num(o.threads)},
            {"bucket-mb", num(o.bucketMb)},
            {"checkpoint-dir", o.checkpointDir},
            {"checkpoint-every-steps", num(o.checkpointEverySteps)},
            {"keep-checkpoints", num(o.keepCheckpoints)},
            {"resume", o.resume},
            {"amp", o.amp},
            {"channels-last", o.channelsLast ? "true" : "false"},
            {"events", o.events},
            {"replica-check-every", num(o.replicaCheckEverySteps)}};
}

std::string expandRank(const std::string& pathTemplate, int rank) {
    std::string out = pathTemplate;
    const std::string token = "{rank}";
    for (auto pos = out.find(token); pos != std::string::npos; pos = out.find(token))
        out.replace(pos, token.size(), std::to_string(rank));
    return out;
}

std::string helpText() {
    return R"(rankscope-trainer: data-parallel training on PyTorch's c10d (Gloo on CPU, NCCL on CUDA)

Usage: rankscope-trainer [flags]

Distributed (flags win over the torchrun environment RANK, WORLD_SIZE, LOCAL_RANK,
LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT):
  --rank R                  this process's rank (default 0)
  --world-size W            number of ranks (default 1)
  --local-rank L            rank on this node (default: the rank)
  --local-world-size N      ranks on this node (default: the world size)
  --init-method tcp://HOST:PORT   rendezvous; rank 0 hosts the TCPStore there
  --backend gloo|nccl       default nccl with CUDA, else gloo
  --device cpu|cuda         default cuda when available
  --timeout-s S             rendezvous and collective timeout (default 1800)

Data and model:
  --dataset synthetic|fashion-mnist|mnist|cifar10   (default synthetic)
  --data-dir DIR            default for fashion-mnist: /usr/share/datasets/fashion-mnist
  --synthetic-samples N     training samples of the synthetic set (default 4096)
  --model resnet18|cnn|mlp  resnet18: CIFAR ResNet18; cnn: small net for 28x28; mlp: no BatchNorm
  --epochs N                (default 1)
  --max-steps N             stop after N optimizer steps in all (0: no limit)
  --batch-size B            per rank (default 64)
  --eval-batch-size B       per rank, validation (default 256)
  --no-eval                 skip validation at the end of each epoch
  --drop-last               drop the tail of the data that does not fill a batch on every rank
  --lr LR                   base learning rate (default 0.001), multiplied by the world size
  --no-lr-scaling           use --lr as it is
  --optimizer adam|sgd      (default adam; sgd uses --momentum, default 0.9)
  --seed S                  (default 2021)
  --threads T               intra-op threads (default: LibTorch's choice)
  --bucket-mb MB            gradient bucket size for the all-reduce (default 25)

Checkpoints (rank 0 writes, atomically, every epoch and at the end):
  --checkpoint-dir DIR
  --checkpoint-every-steps N   also every N steps
  --keep-checkpoints K      keep the newest K (default 3)
  --resume auto|PATH        auto: newest valid checkpoint in --checkpoint-dir, if any

Precision and layout:
  --amp off|bf16|fp16       autocast mixed precision (fp16 with dynamic loss scaling)
  --channels-last           NHWC memory format (also accepted on CPU, where oneDNN uses it natively)

Output:
  --events stdout|none|PATH   event lines ("@rankscope {json}"); {rank} in PATH is replaced
  --heartbeat-s S           heartbeat interval (default 1)
  --log-every N             human-readable progress on stderr every N steps (default 50, 0: off)
  --replica-check-every N   compare a parameter checksum across ranks every N steps (default 100, 0: off)
  --export-params PATH      write every rank's final parameters; {rank} in PATH is replaced

Fault injection (for testing RankScope's debugger):
  --fail-at-step N --fail-rank R    rank R exits with an error at step N
  --hang-at-step N --hang-rank R    rank R stops taking part at step N; the others block
  --leave-at-step N --leave-rank R  rank R leaves the training loop before step N and ends well (exit 0), as a
                                    rank whose inputs ran out first does; the others block in their next collective
  --linger-s S                      a rank that ended well waits S s after its end event and its process
                                    group's shutdown before it exits, as one whose clean-up is slow (a stop
                                    meanwhile still exits 0)
  --slow-rank R --slow-ms M         rank R sleeps M ms in every step
  --alloc-at-step N --alloc-rank R --alloc-mb M
                                    rank R takes M MiB more memory at step N (every page written) and keeps
                                    it: under a memory limit, the kernel's OOM killer ends it
  --diverge-at-step N --diverge-rank R
                                    rank R changes its own parameters after step N: the next replica check
                                    (--replica-check-every) finds its replica apart from the others

Exit status: 0 done, 1 training error, 2 usage error, 3 data error, 4 rendezvous error, 128+N stopped by
signal N before its end event (a stop after it keeps the status that end stands for).
)";
}

} // namespace rankscope::trainer
