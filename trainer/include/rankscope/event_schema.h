// SPDX-License-Identifier: MIT
//
// The trainer event protocol: the one definition shared by rankscope-trainer (which writes events)
// and core/ (which reads them). Plain C++17, no Qt and no LibTorch, so that both sides can include it.
//
// Wire format: one event per line, the line prefix kLinePrefix followed by one JSON object.
// The prefix makes events separable from everything else a rank prints (NCCL's INFO lines, Gloo
// warnings, Python tracebacks from a launcher) without guessing. The same format is used whether
// events go to stdout (`--events stdout`) or to a file (`--events PATH`), so one parser reads both.
//
// Versioning: every event carries "v": "MAJOR.MINOR". A reader accepts any minor of the major it
// knows (minor versions only add fields) and rejects other majors.
#pragma once

#include <string_view>

namespace rankscope::schema {

inline constexpr int kVersionMajor = 1;
inline constexpr int kVersionMinor = 1;
inline constexpr std::string_view kVersion = "1.1"; // 1.1: replica_divergence errors carry step and checksum

// Every event line starts with this, then a JSON object, then '\n'.
inline constexpr std::string_view kLinePrefix = "@rankscope ";

// What the trainer prints for people on stderr, beside the events: one line per message, "[rank R] TEXT". An
// error's TEXT is "error: " and the message of its error event, so that a log of stderr alone still names the
// error and its rank (rankscope-cli inspect reads it).
namespace stderr_line {
inline constexpr std::string_view kRankOpen = "[rank ";
inline constexpr std::string_view kRankClose = "] ";
inline constexpr std::string_view kError = "error: ";
} // namespace stderr_line

// Fields every event carries.
namespace field {
inline constexpr std::string_view kVersion = "v";
inline constexpr std::string_view kType = "type";
inline constexpr std::string_view kRank = "rank";
inline constexpr std::string_view kTime = "time"; // Unix seconds, millisecond precision
} // namespace field

namespace type {
inline constexpr std::string_view kStart = "start";
inline constexpr std::string_view kStep = "step";
inline constexpr std::string_view kEval = "eval";
inline constexpr std::string_view kCheckpoint = "checkpoint";
inline constexpr std::string_view kHeartbeat = "heartbeat";
inline constexpr std::string_view kEnd = "end";
inline constexpr std::string_view kError = "error";
} // namespace type

// start: once per rank, after the process group is up.
namespace start {
inline constexpr std::string_view kWorldSize = "world_size";
inline constexpr std::string_view kLocalRank = "local_rank";
inline constexpr std::string_view kLocalWorldSize = "local_world_size";
inline constexpr std::string_view kHost = "host";
inline constexpr std::string_view kPid = "pid";
inline constexpr std::string_view kBackend = "backend";
inline constexpr std::string_view kDevice = "device";
inline constexpr std::string_view kTorchVersion = "torch_version";
inline constexpr std::string_view kStepsPerEpoch = "steps_per_epoch";
inline constexpr std::string_view kTotalSteps = "total_steps";
inline constexpr std::string_view kConfig = "config"; // object: every trainer option, by flag name
} // namespace start

// step: after every optimizer step. `epoch` and `step` are 1-based; `step` counts globally.
namespace step {
inline constexpr std::string_view kEpoch = "epoch";
inline constexpr std::string_view kStep = "step";
inline constexpr std::string_view kLoss = "loss";
inline constexpr std::string_view kLr = "lr";
inline constexpr std::string_view kImagesPerSec = "images_per_sec";
inline constexpr std::string_view kStepMs = "step_ms";
inline constexpr std::string_view kDataMs = "data_ms";
inline constexpr std::string_view kForwardMs = "forward_ms";
inline constexpr std::string_view kBackwardMs = "backward_ms";
inline constexpr std::string_view kCommWaitMs = "comm_wait_ms";
inline constexpr std::string_view kOptimizerMs = "optimizer_ms";
} // namespace step

// eval: after every epoch's validation, identical on every rank (all-reduced).
namespace eval {
inline constexpr std::string_view kEpoch = "epoch";
inline constexpr std::string_view kValLoss = "val_loss";
inline constexpr std::string_view kValAccuracy = "val_accuracy";
inline constexpr std::string_view kSamples = "samples";
} // namespace eval

// checkpoint: rank 0, after a checkpoint file is durably in place.
namespace checkpoint {
inline constexpr std::string_view kPath = "path";
inline constexpr std::string_view kEpoch = "epoch";
inline constexpr std::string_view kStep = "step";
inline constexpr std::string_view kBytes = "bytes";
inline constexpr std::string_view kMs = "ms";
} // namespace checkpoint

// heartbeat: about once a second from a separate thread, whatever the training loop is doing.
// A rank stuck in a collective keeps sending heartbeats with the same step and collective numbers.
namespace heartbeat {
inline constexpr std::string_view kPhase = "phase";
inline constexpr std::string_view kStep = "step";
inline constexpr std::string_view kCollectiveStarted = "collective_started";   // number of the last one started
inline constexpr std::string_view kCollectiveFinished = "collective_finished"; // number of the last one finished
} // namespace heartbeat

// Values of heartbeat.phase.
namespace phase {
inline constexpr std::string_view kInit = "init";
inline constexpr std::string_view kRendezvous = "rendezvous";
inline constexpr std::string_view kData = "data";
inline constexpr std::string_view kForward = "forward";
inline constexpr std::string_view kBackward = "backward";
inline constexpr std::string_view kOptimizer = "optimizer";
inline constexpr std::string_view kEval = "eval";
inline constexpr std::string_view kCheckpoint = "checkpoint";
inline constexpr std::string_view kReplicaCheck = "replica_check";
inline constexpr std::string_view kDone = "done";

// A heartbeat's step counts the steps done. In these phases the rank is inside the next one: the step its step
// event will carry, and the one to name when saying where it is (a hang, a stop).
constexpr bool isInsideAStep(std::string_view phase) {
    return phase == kData || phase == kForward || phase == kBackward || phase == kOptimizer;
}
} // namespace phase

// end: last event of a rank that exits on its own.
namespace end {
inline constexpr std::string_view kStatus = "status"; // "ok" or "error"
inline constexpr std::string_view kSteps = "steps";
inline constexpr std::string_view kImagesPerSec = "images_per_sec";
inline constexpr std::string_view kWallS = "wall_s";
inline constexpr std::string_view kParamChecksum = "param_checksum"; // sum of all parameters, as double
} // namespace end

namespace status {
inline constexpr std::string_view kOk = "ok";
inline constexpr std::string_view kError = "error";
} // namespace status

// error: something went wrong. fatal=false means the rank carries on (a corrupt checkpoint skipped).
namespace error {
inline constexpr std::string_view kKind = "kind";
inline constexpr std::string_view kMessage = "message";
inline constexpr std::string_view kFatal = "fatal";
// Of a replica_divergence (1.1 and later): the step checked and this rank's parameter checksum, which tell the
// replica that differs from the others apart.
inline constexpr std::string_view kStep = "step";
inline constexpr std::string_view kChecksum = "checksum";
} // namespace error

// Values of error.kind.
namespace error_kind {
inline constexpr std::string_view kUsage = "usage";           // bad flag or environment
inline constexpr std::string_view kData = "data";             // dataset missing or malformed
inline constexpr std::string_view kRendezvous = "rendezvous"; // store or process group did not come up
inline constexpr std::string_view kCollective = "collective"; // a collective failed or timed out
inline constexpr std::string_view kCheckpoint = "checkpoint"; // checkpoint unreadable or unwritable
inline constexpr std::string_view kReplicaDivergence = "replica_divergence";
inline constexpr std::string_view kInjected = "injected";             // --fail-at-step
inline constexpr std::string_view kTerminated = "terminated";         // SIGTERM or SIGINT
inline constexpr std::string_view kNonFiniteLoss = "non_finite_loss"; // first NaN or infinite loss
inline constexpr std::string_view kInternal = "internal";
} // namespace error_kind

} // namespace rankscope::schema
