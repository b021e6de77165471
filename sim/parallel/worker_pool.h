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

    /// Calls task(i) for every i in [0, n) and returns once all have returned. Thread t owns the
    /// t-th of num_threads() contiguous ranges and runs it front to back; a thread done with its own
    /// range takes tasks from the back of the others'. So a task index stays on its thread from run
    /// to run unless that thread falls behind (what a task allocates is mostly freed where it was
    /// allocated, which glibc's malloc needs to stay fast). When tasks throw, the exception of the
    /// lowest i is rethrown after every task has finished. Not reentrant: a task must not call run().
    void run(std::size_t n, const std::function<void(std::size_t)>& task);

    /// Starts task(i) for every i in [0, n) on the worker threads and returns at once, so that the
    /// caller can do other work meanwhile (work the tasks do not touch). Worker t owns the t-th of
    /// num_threads() − 1 ranges. wait_async() helps with the tasks not started yet, returns once
    /// every task has run and rethrows the lowest failing task's exception. run() and start_async()
    /// first wait for a batch in flight; its exception then waits for the next wait_async(),
    /// whoever calls it. With one thread the tasks run here, at once.
    void start_async(std::size_t n, std::function<void(std::size_t)> task);
    void wait_async();
    bool async_pending() const { return async_pending_; }

    /// The thread count a run uses by default: the hardware's, capped at 4 (the parallel share of a
    /// simulation is about half, so more threads gain little), at least 1.
    static std::int32_t default_threads();

private:
    void worker_loop(std::size_t self);
    /// Runs the tasks of range `self`, then those left at the back of the other ranges.
    void work(std::size_t self);
    void run_task(std::size_t i);
    /// Hands out [0, n) in ranges to the threads from `first` on (0: the caller's too) and wakes the
    /// workers. Waits first until no worker is still inside the previous batch.
    void publish(std::size_t n, std::size_t first, const std::function<void(std::size_t)>* task);
    /// Helps with the tasks left, waits for every task and worker of the batch; returns the lowest
    /// task's error.
    std::exception_ptr finish();
    /// Waits for the batch in flight (if any) and keeps its error for wait_async().
    void join_async();

    std::vector<std::thread> workers_;
    std::mutex mu_;
    std::condition_variable wake_;
    /// Bumped (under mu_) for every batch; workers spin on it briefly, then sleep on wake_.
    std::atomic<std::uint64_t> generation_{0};
    bool stop_ = false;
    // The batch: written by publish() under mu_ while no worker is inside a batch (active_ == 0); a
    // worker enters under mu_, so it never mixes the task of one batch with the ranges of another.
    const std::function<void(std::size_t)>* task_ = nullptr;
    std::size_t num_tasks_ = 0;
    /// Per thread: its range's next and end task, packed (next << 32 | end). The owner takes from
    /// the front, others from the back, each by compare-and-swap.
    std::unique_ptr<std::atomic<std::uint64_t>[]> ranges_;
    std::atomic<std::size_t> num_done_{0};
    std::atomic<std::int32_t> active_{0};  // workers inside the batch
    std::vector<std::exception_ptr> errors_;
    // The batch of start_async(): its task (owned), whether it is in flight, its error once joined.
    std::function<void(std::size_t)> async_task_;
    bool async_pending_ = false;
    std::exception_ptr async_error_;
};

}  // namespace deepinfer::sim
