// SPDX-License-Identifier: MIT
#include "trainer_process.h"

#include <rankscope/event_schema.h>

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <netinet/in.h>
#include <optional>
#include <spawn.h>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace rankscope::test {

std::string trainerBinary() {
    return RANKSCOPE_TRAINER_BIN;
}

int freePort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
        throw std::runtime_error("cannot find a free port");
    ::close(fd);
    return ntohs(addr.sin_port);
}

std::string makeTempDir(const std::string& tag) {
    std::string pattern = "/tmp/rankscope-" + tag + "-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
        throw std::runtime_error("mkdtemp failed");
    return pattern;
}

namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

pid_t spawn(const std::vector<std::string>& args, Environment extraEnv, const std::string& outPath,
            const std::string& errPath) {
    std::vector<std::string> argv{trainerBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv)
        cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (char** e = environ; *e != nullptr; ++e)
        extraEnv.emplace_back(*e);
    std::vector<char*> cenv;
    for (auto& e : extraEnv)
        cenv.push_back(e.data());
    cenv.push_back(nullptr);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), cenv.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
        throw std::runtime_error("cannot start " + argv[0]);
    return pid;
}

} // namespace

std::vector<RankResult> runRanks(int worldSize, const std::function<std::vector<std::string>(int)>& argsForRank,
                                 const RunOptions& options) {
    const std::string dir = makeTempDir("ranks");
    std::vector<pid_t> pids;
    for (int r = 0; r < worldSize; ++r)
        pids.push_back(spawn(argsForRank(r), options.envForRank ? options.envForRank(r) : Environment{},
                             dir + "/out" + std::to_string(r), dir + "/err" + std::to_string(r)));
    std::vector<RankResult> results(worldSize);
    const auto started = std::chrono::steady_clock::now();
    const auto deadline = started + options.timeout;
    bool signalled = options.signalRank < 0;
    std::optional<std::chrono::steady_clock::time_point> armed;
    if (options.signalAfterOutput.empty())
        armed = started;
    int running = worldSize;
    while (running > 0) {
        if (!signalled && !armed &&
            slurp(dir + "/out" + std::to_string(options.signalRank)).find(options.signalAfterOutput) !=
                std::string::npos)
            armed = std::chrono::steady_clock::now();
        if (!signalled && armed && std::chrono::steady_clock::now() - *armed >= options.signalAfter) {
            if (pids[options.signalRank] > 0)
                ::kill(pids[options.signalRank], options.signal);
            signalled = true;
        }
        for (int r = 0; r < worldSize; ++r) {
            if (pids[r] < 0)
                continue;
            int status = 0;
            if (::waitpid(pids[r], &status, WNOHANG) == pids[r]) {
                results[r].exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                pids[r] = -1;
                --running;
            }
        }
        if (running > 0 && std::chrono::steady_clock::now() > deadline) {
            for (int r = 0; r < worldSize; ++r) {
                if (pids[r] > 0) {
                    ::kill(pids[r], SIGKILL);
                    ::waitpid(pids[r], nullptr, 0);
                    results[r].exitCode = -1;
                    pids[r] = -1;
                }
            }
            running = 0;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (int r = 0; r < worldSize; ++r) {
        results[r].out = slurp(dir + "/out" + std::to_string(r));
        results[r].err = slurp(dir + "/err" + std::to_string(r));
        ::unlink((dir + "/out" + std::to_string(r)).c_str());
        ::unlink((dir + "/err" + std::to_string(r)).c_str());
    }
    ::rmdir(dir.c_str());
    return results;
}

std::vector<std::string> distributedArgs(int rank, int worldSize, int port) {
    return {"--rank",        std::to_string(rank),
            "--world-size",  std::to_string(worldSize),
            "--init-method", "tcp://127.0.0.1:" + std::to_string(port),
            "--threads",     "1",
            "--timeout-s",   "60",
            "--log-every",   "0"};
}

std::vector<std::string> eventLines(const std::string& output) {
    std::vector<std::string> lines;
    std::istringstream in(output);
    const std::string prefix(schema::kLinePrefix);
    for (std::string line; std::getline(in, line);)
        if (line.rfind(prefix, 0) == 0)
            lines.push_back(line.substr(prefix.size()));
    return lines;
}

} // namespace rankscope::test
