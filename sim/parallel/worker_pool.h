// WorkerPool: runs independent tasks on a fixed set of threads, the caller's thread included.
// Used where the simulator's work splits into parts that share nothing mutable (the DP ranks of a
// decode instance). Each task writes only its own slot, so results do not depend on which thread
// ran which task, nor on how many threads there are.
// NOTE: tasks must not call SimGrid: its actors run on the caller's thread only.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace deepinfer::sim {

class WorkerPool {
public:
    /// `num_threads` >= 1 (the caller's thread counts as one; 1 runs every task inline).
    explicit WorkerPool(std::int32_t num_threads);
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    std::int32_t num_threads() const { return static_cast<std::int32_t>(workers_.size()) + 1; }

    /// Calls task(i) for every i in [0, n) and returns once all have returned. Thread t runs the
    /// t-th of num_threads() contiguous chunks, so a task index stays on one thread from run to run
    /// (what a task allocates is freed where it was allocated, which glibc's malloc needs to stay
    /// fast); the caller takes over the chunk of a worker that has not woken up yet. When tasks
    /// throw, the exception of the lowest i is rethrown after every task has finished. Not
    /// reentrant: a task must not call run().
    void run(std::size_t n, const std::function<void(std::size_t)>& task);

    /// The thread count a run uses by default: the hardware's, capped at 4 (the parallel share of a
    /// simulation is about half, so more threads gain little), at least 1.
    static std::int32_t default_threads();

private:
    enum ChunkState : std::int32_t { kOpen = 0, kClaimed = 1, kDone = 2 };
    void worker_loop(std::size_t chunk);
    void run_chunk(std::size_t chunk);

    std::vector<std::thread> workers_;
    std::mutex mu_;
    std::condition_variable wake_;
    /// Bumped (under mu_) for every run(); workers spin on it briefly, then sleep on wake_.
    std::atomic<std::uint64_t> generation_{0};
    // Written by run() under mu_; a worker claims its chunk under mu_, so it never sees the fields
    // of one run with the chunk of another.
    bool stop_ = false;
    const std::function<void(std::size_t)>* task_ = nullptr;
    std::size_t num_tasks_ = 0;
    std::unique_ptr<std::atomic<std::int32_t>[]> chunks_;  // ChunkState per thread
    std::vector<std::exception_ptr> errors_;
};

}  // namespace deepinfer::sim
