// SPDX-License-Identifier: MIT
#include "options.h"
#include "training.h"

#include <torch/cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <malloc.h>
#include <unistd.h>

namespace {

// glibc returns large freed blocks (activations, gradients) to the kernel with munmap and the heap top
// with trim, and every step then faults the same pages in again. Keeping them costs no more memory than
// the peak a step needs anyway. RANKSCOPE_MALLOC_TUNING=0 turns this off, for benchmarks.
void keepFreedMemory() {
    const char* tuning = std::getenv("RANKSCOPE_MALLOC_TUNING");
    if (tuning != nullptr && std::strcmp(tuning, "0") == 0)
        return;
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024); // glibc's largest allowed value on 64-bit
    mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
    mallopt(M_TOP_PAD, 64 * 1024 * 1024);
}

} // namespace

int main(int argc, char** argv) {
    using namespace rankscope::trainer;
    keepFreedMemory();
    TrainerOptions options;
    try {
        options = parseOptions(
            std::vector<std::string>(argv + 1, argv + argc), [](const char* n) { return std::getenv(n); },
            torch::cuda::is_available());
    } catch (const UsageError& e) {
        std::fprintf(stderr, "rankscope-trainer: %s\n", e.what());
        return kExitUsage;
    }
    if (options.help) {
        std::cout << helpText();
        return kExitOk;
    }
    int code = kExitOk;
    try {
        EventWriter events(expandRank(options.events, options.rank), options.rank);
        code = runTraining(options, events);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rankscope-trainer: rank %d: %s\n", options.rank, e.what());
        code = kExitUsage;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    // After a failure, peers may still hold this rank's connections open; tearing the process group down
    // could block on them. Everything is written and flushed, so leave at once.
    if (code != kExitOk)
        std::_Exit(code);
    return code;
}
