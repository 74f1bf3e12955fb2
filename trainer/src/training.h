// SPDX-License-Identifier: MIT
#pragma once

#include "event_writer.h"
#include "options.h"

namespace rankscope::trainer {

// Exit statuses of rankscope-trainer.
enum ExitCode : int {
    kExitOk = 0,
    kExitTrainingError = 1,
    kExitUsage = 2,
    kExitDataError = 3,
    kExitRendezvousError = 4,
};

// Runs one rank of a data-parallel training job: rendezvous, data, model, the loop with validation,
// checkpoints and heartbeats. Every failure becomes a fatal error event, an end event and an exit code.
int runTraining(const TrainerOptions& options, EventWriter& events);

} // namespace rankscope::trainer
