// SPDX-License-Identifier: MIT
#include "distributed.h"

#include "torch_compat.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace rankscope::trainer {
namespace {

bool isLoopback(const std::string& host) {
    return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

// The local address whose route leads to the master: the address the other ranks can reach this one at.
// Gloo's default resolves the host name instead, and on many machines (Debian's /etc/hosts among them)
// that is a loopback address, which peers on other nodes then try to connect to. A UDP connect sends
// nothing; it only asks the kernel for the route.
std::string localAddressTowards(const std::string& host, int port) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo* found = nullptr;
    if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || found == nullptr)
        return {};
    std::string address;
    const int fd = socket(found->ai_family, SOCK_DGRAM, 0);
    sockaddr_storage local{};
    socklen_t length = sizeof local;
    char text[INET6_ADDRSTRLEN] = {};
    if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
        const void* raw = local.ss_family == AF_INET6
                              ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
                              : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
        if (inet_ntop(local.ss_family, raw, text, sizeof text) != nullptr)
            address = text;
    }
    if (fd >= 0)
        close(fd);
    freeaddrinfo(found);
    return address;
}

// Waits until something accepts connections on host:port, trying every 20 ms. LibTorch's TCPStore client
// sleeps a whole second after a refused connect; a rank that starts before rank 0's store is listening
// (a coin toss, both load LibTorch for about as long) would lose that second at every launch.
void waitForListener(const std::string& host, int port, std::chrono::milliseconds timeout) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        addrinfo* found = nullptr;
        if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) == 0 && found != nullptr) {
            const int fd = socket(found->ai_family, SOCK_STREAM, 0);
            const bool up = fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0;
            if (fd >= 0)
                close(fd);
            freeaddrinfo(found);
            if (up)
                return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // Past the deadline the TCPStore itself reports the failure, with its own message.
}

c10::intrusive_ptr<c10d::Store> connectStore(const CommunicatorOptions& o) {
    const bool hostsStore = o.rank == 0 && o.agentStorePrefix.empty();
    if (!hostsStore)
        waitForListener(o.host, o.port, std::chrono::duration_cast<std::chrono::milliseconds>(o.timeout));
    c10d::TCPStoreOptions storeOptions;
    storeOptions.port = static_cast<std::uint16_t>(o.port);
    storeOptions.isServer = hostsStore;
    storeOptions.numWorkers = static_cast<std::size_t>(o.worldSize);
    storeOptions.waitWorkers = true;
    storeOptions.timeout = o.timeout;
    compat::configureStoreOptions(storeOptions);
    c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::TCPStore>(o.host, storeOptions);
    if (!o.agentStorePrefix.empty())
        store = c10::make_intrusive<c10d::PrefixStore>(o.agentStorePrefix, store);
    // Namespaced as Python's init_process_group does, so that other users of the store cannot collide.
    return c10::make_intrusive<c10d::PrefixStore>("rankscope", store);
}

std::string glooInterface() {
    const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
    return ifname != nullptr ? std::string(ifname) : std::string();
}

} // namespace

Communicator::Communicator(const CommunicatorOptions& options, CollectiveCounter& counter)
    : m_options(options), m_counter(counter) {
    const std::string where = "rendezvous at " + options.host + ":" + std::to_string(options.port) + " (rank " +
                              std::to_string(options.rank) + " of " + std::to_string(options.worldSize) + ")";
    try {
        m_store = connectStore(options);
    } catch (const std::exception& e) {
        throw RendezvousError(where + ": the TCPStore did not come up: " + compat::firstLine(e.what()));
    }
    try {
        if (options.backend == "gloo") {
            const std::string ifname = glooInterface();
            const std::string hostname =
                isLoopback(options.host) ? options.host : localAddressTowards(options.host, options.port);
            m_processGroup =
                compat::makeGlooGroup(m_store, options.rank, options.worldSize, options.timeout, ifname, hostname);
        } else {
            m_processGroup =
                compat::makeNcclGroup(m_store, options.rank, options.worldSize, options.timeout, options.cudaDevice);
        }
    } catch (const std::exception& e) {
        throw RendezvousError(where + ": the " + options.backend +
                              " process group did not come up: " + compat::firstLine(e.what()));
    }
}

void Communicator::fail(const char* what, int64_t number, const std::exception& e) const {
    throw CollectiveError(std::string(what) + " (collective #" + std::to_string(number) + ") failed on rank " +
                          std::to_string(m_options.rank) + ": " + compat::firstLine(e.what()));
}

template <typename Launch> void Communicator::run(const char* what, Launch&& launch) {
    const int64_t number = m_counter.begin();
    try {
        auto work = launch();
        work->wait(m_options.timeout);
    } catch (const std::exception& e) {
        fail(what, number, e);
    }
    m_counter.end(number);
}

void Communicator::runCounted(const char* what, const std::function<void()>& body) {
    const int64_t number = m_counter.begin();
    try {
        body();
    } catch (const std::exception& e) {
        fail(what, number, e);
    }
    m_counter.end(number);
}

void Communicator::allReduce(at::Tensor& tensor, c10d::ReduceOp op, const char* what) {
    std::vector<at::Tensor> tensors{tensor};
    c10d::AllreduceOptions opts;
    opts.reduceOp = op;
    run(what, [&] { return m_processGroup->allreduce(tensors, opts); });
}

void Communicator::broadcast(at::Tensor& tensor, int root, const char* what) {
    std::vector<at::Tensor> tensors{tensor};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    run(what, [&] { return m_processGroup->broadcast(tensors, opts); });
}

} // namespace rankscope::trainer
