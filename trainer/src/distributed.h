// SPDX-License-Identifier: MIT
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>

namespace rankscope::trainer {

// The store or the process group did not come up; the message names the address and the rank.
class RendezvousError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A collective failed: a peer died, the network broke, or the timeout passed.
class CollectiveError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Numbers the collectives this rank starts and finishes, for heartbeats: a rank stuck in a collective
// shows started > finished with the same numbers for as long as it is stuck.
struct CollectiveCounter {
    std::atomic<int64_t> started{0};
    std::atomic<int64_t> finished{0};
    int64_t begin() { return ++started; }
    void end(int64_t number) { finished.store(number); }
};

struct CommunicatorOptions {
    int rank = 0;
    int worldSize = 1;
    std::string host = "127.0.0.1";
    int port = 0;
    std::string agentStorePrefix; // non-empty: a launcher's agent hosts the store; every rank is a client
    std::string backend = "gloo";
    std::chrono::milliseconds timeout{std::chrono::minutes(30)};
    int cudaDevice = 0;
};

// Rendezvous through c10d::TCPStore (rank 0 hosts it) and one process group (Gloo or NCCL).
// All collectives are PyTorch's; this class only waits on them, counts them and names failures.
class Communicator {
public:
    // `counter` numbers this rank's collectives; it must outlive the communicator.
    Communicator(const CommunicatorOptions& options, CollectiveCounter& counter); // throws RendezvousError

    int rank() const { return m_options.rank; }
    int worldSize() const { return m_options.worldSize; }
    const std::string& backend() const { return m_options.backend; }
    const c10::intrusive_ptr<c10d::ProcessGroup>& processGroup() const { return m_processGroup; }
    CollectiveCounter& counter() { return m_counter; }

    // Blocking, counted collectives. `what` names the operation in errors.
    void allReduce(at::Tensor& tensor, c10d::ReduceOp op, const char* what);
    void broadcast(at::Tensor& tensor, int root, const char* what);

    // Runs `body`, which blocks in collectives c10d starts by itself (the Reducer's bucket rebuild),
    // as one counted collective whose failure becomes a CollectiveError naming `what`.
    void runCounted(const char* what, const std::function<void()>& body);

private:
    template <typename Launch> void run(const char* what, Launch&& launch);
    [[noreturn]] void fail(const char* what, int64_t number, const std::exception& e) const;

    CommunicatorOptions m_options;
    c10::intrusive_ptr<c10d::Store> m_store;
    c10::intrusive_ptr<c10d::ProcessGroup> m_processGroup;
    CollectiveCounter& m_counter;
};

} // namespace rankscope::trainer
