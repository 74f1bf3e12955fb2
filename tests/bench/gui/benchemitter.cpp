// SPDX-License-Identifier: MIT
// rankscope_bench_emitter: a stand-in for one rank of rankscope-trainer that writes a known amount of output at
// a known rate, for the desktop app's pipeline benchmark. The engine starts it exactly as it starts the trainer
// (the trainer's flags, `--events PATH`, RANK in the environment); it ignores every flag but --events.
//
// Per rank it writes RANKSCOPE_BENCH_TOTAL_LINES lines at RANKSCOPE_BENCH_LINES_PER_SEC: every
// RANKSCOPE_BENCH_EVENT_EVERY-th line is a schema 1.0 step event (to the events file, `time` = now, `step`
// 1, 2, ...), the others are log lines on stdout. Plus one start and one end event, which are not counted.
// Output is flushed every pacing slice (1 ms), so readers see it as it is written. Exits 0.
// Plain C++17: no Qt, so that a node runs it with nothing but libstdc++.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <unistd.h>

namespace {

long long envNumber(const char* name, long long fallback) {
    const char* text = std::getenv(name);
    if (!text || !*text)
        return fallback;
    char* end = nullptr;
    const long long value = std::strtoll(text, &end, 10);
    return end && *end == '\0' && value >= 0 ? value : fallback;
}

double unixNow() {
    using namespace std::chrono;
    return double(duration_cast<microseconds>(system_clock::now().time_since_epoch()).count()) / 1e6;
}

struct Config {
    int rank = 0;
    long long totalLines = 300000;
    long long linesPerSec = 5000;
    long long eventEvery = 10; // 1 in 10 lines is a step event
    std::string eventsPath;
};

Config parse(int argc, char** argv) {
    Config config;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--events") == 0)
            config.eventsPath = argv[i + 1];
    config.rank = int(envNumber("RANK", 0));
    config.totalLines = envNumber("RANKSCOPE_BENCH_TOTAL_LINES", config.totalLines);
    config.linesPerSec = std::max(1LL, envNumber("RANKSCOPE_BENCH_LINES_PER_SEC", config.linesPerSec));
    config.eventEvery = std::max(1LL, envNumber("RANKSCOPE_BENCH_EVENT_EVERY", config.eventEvery));
    return config;
}

// The line a rank writes between steps, about 100 bytes: a plausible log line with changing numbers.
int writeLogLine(std::FILE* out, const Config& config, long long line, long long step) {
    return std::fprintf(out,
                        "[rank %d] iter %lld step %lld: data loader queue 8/8, grad norm %.4f, tokens %lld, "
                        "lr 0.001000\n",
                        config.rank, line, step, 1.0 + double(line % 997) / 1000.0, line * 512);
}

void writeStep(std::FILE* events, const Config& config, long long step) {
    const double loss = 2.5 / (1.0 + double(step) / 1000.0) + double((step * 7919) % 101) / 1000.0;
    std::fprintf(events,
                 "@rankscope {\"v\":\"1.0\",\"type\":\"step\",\"rank\":%d,\"time\":%.6f,\"epoch\":%lld,"
                 "\"step\":%lld,\"loss\":%.5f,\"lr\":0.001,\"images_per_sec\":%.1f,\"step_ms\":2.0,\"data_ms\":0.2,"
                 "\"forward_ms\":0.6,\"backward_ms\":0.8,\"comm_wait_ms\":0.2,\"optimizer_ms\":0.2}\n",
                 config.rank, unixNow(), step / 1000 + 1, step, loss, 4000.0 + double(step % 50));
}

} // namespace

int main(int argc, char** argv) {
    const Config config = parse(argc, argv);
    std::FILE* events = config.eventsPath.empty() ? stdout : std::fopen(config.eventsPath.c_str(), "a");
    if (!events) {
        std::fprintf(stderr, "rankscope_bench_emitter: cannot open %s\n", config.eventsPath.c_str());
        return 2;
    }
    const long long steps = config.totalLines / config.eventEvery;
    std::fprintf(events,
                 "@rankscope {\"v\":\"1.0\",\"type\":\"start\",\"rank\":%d,\"time\":%.6f,\"world_size\":%lld,"
                 "\"local_rank\":%lld,\"host\":\"bench\",\"pid\":%d,\"backend\":\"gloo\",\"device\":\"cpu\","
                 "\"torch_version\":\"none\",\"total_steps\":%lld,\"config\":{\"bench\":true}}\n",
                 config.rank, unixNow(), envNumber("WORLD_SIZE", 1), envNumber("LOCAL_RANK", 0), int(::getpid()),
                 steps);
    std::fflush(events);

    using Clock = std::chrono::steady_clock;
    const Clock::time_point start = Clock::now();
    long long written = 0;
    long long step = 0;
    while (written < config.totalLines) {
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        const long long due = std::min(config.totalLines, (long long)(elapsed * double(config.linesPerSec)) + 1);
        bool wroteEvent = false;
        for (; written < due; ++written) {
            if ((written + 1) % config.eventEvery == 0) {
                writeStep(events, config, ++step);
                wroteEvent = true;
            } else {
                writeLogLine(stdout, config, written + 1, step);
            }
        }
        std::fflush(stdout);
        if (wroteEvent)
            std::fflush(events);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    std::fprintf(events,
                 "@rankscope {\"v\":\"1.0\",\"type\":\"end\",\"rank\":%d,\"time\":%.6f,\"status\":\"ok\","
                 "\"steps\":%lld,\"images_per_sec\":4000.0,\"wall_s\":%.3f,\"param_checksum\":0.0}\n",
                 config.rank, unixNow(), step, wall);
    std::fflush(events);
    if (events != stdout)
        std::fclose(events);
    return 0;
}
