// WorkerPool implementation: a generation counter hands out runs; workers spin shortly before
// sleeping, because runs come in quick succession (a few per simulated step).
#include "sim/parallel/worker_pool.h"

#include <algorithm>

#include "policies/common/check.h"

namespace deepinfer::sim {
namespace {

/// Polls of the generation counter before a worker sleeps (some tens of microseconds).
constexpr std::int32_t kSpinPolls = 20000;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

}  // namespace

WorkerPool::WorkerPool(std::int32_t num_threads) {
    DI_CHECK(num_threads >= 1, "a worker pool needs at least one thread, got " << num_threads);
    const auto n = static_cast<std::size_t>(num_threads);
    chunks_ = std::make_unique<std::atomic<std::int32_t>[]>(n);
    for (std::size_t t = 0; t < n; ++t) chunks_[t].store(kDone, std::memory_order_relaxed);
    workers_.reserve(n - 1);
    for (std::size_t t = 1; t < n; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

WorkerPool::~WorkerPool() {
    {
        const std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
        generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
}

std::int32_t WorkerPool::default_threads() {
    const unsigned hw = std::thread::hardware_concurrency();
    return static_cast<std::int32_t>(std::clamp(hw, 1U, 4U));
}

void WorkerPool::run_chunk(std::size_t chunk) {
    const auto threads = static_cast<std::size_t>(num_threads());
    const std::size_t begin = num_tasks_ * chunk / threads;
    const std::size_t end = num_tasks_ * (chunk + 1) / threads;
    for (std::size_t i = begin; i < end; ++i) {
        try {
            (*task_)(i);
        } catch (...) {
            errors_[i] = std::current_exception();
        }
    }
    chunks_[chunk].store(kDone, std::memory_order_release);
}

void WorkerPool::run(std::size_t n, const std::function<void(std::size_t)>& task) {
    if (workers_.empty() || n <= 1) {
        for (std::size_t i = 0; i < n; ++i) task(i);
        return;
    }
    const auto threads = static_cast<std::size_t>(num_threads());
    {
        const std::lock_guard<std::mutex> lock(mu_);
        errors_.assign(n, nullptr);
        task_ = &task;
        num_tasks_ = n;
        for (std::size_t t = 0; t < threads; ++t) chunks_[t].store(kOpen, std::memory_order_relaxed);
        generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    chunks_[0].store(kClaimed, std::memory_order_relaxed);
    run_chunk(0);
    // Chunks whose worker has not claimed them yet (it is asleep or busy waking up) run here.
    for (std::size_t t = 1; t < threads; ++t) {
        std::int32_t open = kOpen;
        if (chunks_[t].compare_exchange_strong(open, kClaimed, std::memory_order_acq_rel)) run_chunk(t);
    }
    for (std::size_t t = 1; t < threads; ++t)
        while (chunks_[t].load(std::memory_order_acquire) != kDone) cpu_relax();
    for (const std::exception_ptr& e : errors_)
        if (e) std::rethrow_exception(e);
}

void WorkerPool::worker_loop(std::size_t chunk) {
    std::uint64_t seen = 0;
    for (;;) {
        std::int32_t polls = 0;
        while (generation_.load(std::memory_order_acquire) == seen && polls < kSpinPolls) {
            cpu_relax();
            ++polls;
        }
        bool claimed = false;
        {
            std::unique_lock<std::mutex> lock(mu_);
            wake_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
            seen = generation_.load(std::memory_order_relaxed);
            if (stop_) return;
            std::int32_t open = kOpen;
            claimed = chunks_[chunk].compare_exchange_strong(open, kClaimed, std::memory_order_acq_rel);
        }
        if (claimed) run_chunk(chunk);
    }
}

}  // namespace deepinfer::sim
