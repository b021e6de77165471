// WorkerPool implementation: a generation counter hands out runs; workers spin shortly before
// sleeping, because runs come in quick succession (a few per simulated step).
#include "sim/parallel/worker_pool.h"

#include <algorithm>
#include <utility>

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

constexpr std::uint64_t pack(std::uint64_t next, std::uint64_t end) { return next << 32 | end; }
constexpr std::uint64_t next_of(std::uint64_t range) { return range >> 32; }
constexpr std::uint64_t end_of(std::uint64_t range) { return range & 0xFFFFFFFFU; }

/// Takes the first task of a range: its index, or -1 when the range is empty.
std::int64_t take_front(std::atomic<std::uint64_t>& range) {
    std::uint64_t v = range.load(std::memory_order_acquire);
    while (next_of(v) < end_of(v))
        if (range.compare_exchange_weak(v, pack(next_of(v) + 1, end_of(v)), std::memory_order_acq_rel))
            return static_cast<std::int64_t>(next_of(v));
    return -1;
}

/// Takes the last task of a range: its index, or -1 when the range is empty.
std::int64_t take_back(std::atomic<std::uint64_t>& range) {
    std::uint64_t v = range.load(std::memory_order_acquire);
    while (next_of(v) < end_of(v))
        if (range.compare_exchange_weak(v, pack(next_of(v), end_of(v) - 1), std::memory_order_acq_rel))
            return static_cast<std::int64_t>(end_of(v) - 1);
    return -1;
}

}  // namespace

WorkerPool::WorkerPool(std::int32_t num_threads) {
    DI_CHECK(num_threads >= 1, "a worker pool needs at least one thread, got " << num_threads);
    const auto n = static_cast<std::size_t>(num_threads);
    ranges_ = std::make_unique<std::atomic<std::uint64_t>[]>(n);
    for (std::size_t t = 0; t < n; ++t) ranges_[t].store(0, std::memory_order_relaxed);
    workers_.reserve(n - 1);
    for (std::size_t t = 1; t < n; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

WorkerPool::~WorkerPool() {
    join_async();
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

void WorkerPool::run_task(std::size_t i) {
    try {
        (*task_)(i);
    } catch (...) {
        errors_[i] = std::current_exception();
    }
    num_done_.fetch_add(1, std::memory_order_release);
}

void WorkerPool::work(std::size_t self) {
    const auto threads = static_cast<std::size_t>(num_threads());
    for (std::int64_t i; (i = take_front(ranges_[self])) >= 0;) run_task(static_cast<std::size_t>(i));
    for (std::size_t k = 1; k < threads; ++k) {
        std::atomic<std::uint64_t>& other = ranges_[(self + k) % threads];
        for (std::int64_t i; (i = take_back(other)) >= 0;) run_task(static_cast<std::size_t>(i));
    }
}

void WorkerPool::publish(std::size_t n, std::size_t first, const std::function<void(std::size_t)>* task) {
    DI_CHECK(n < (std::size_t{1} << 32), "too many tasks for one batch: " << n);
    const auto threads = static_cast<std::size_t>(num_threads());
    {
        std::unique_lock<std::mutex> lock(mu_);
        // A worker that woke late for the previous batch may still be looking at its (empty) ranges.
        while (active_.load(std::memory_order_acquire) != 0) {
            lock.unlock();
            cpu_relax();
            lock.lock();
        }
        task_ = task;
        num_tasks_ = n;
        errors_.assign(n, nullptr);
        num_done_.store(0, std::memory_order_relaxed);
        for (std::size_t t = 0; t < threads; ++t) {
            const std::size_t begin = t < first ? 0 : n * (t - first) / (threads - first);
            const std::size_t end = t < first ? 0 : n * (t + 1 - first) / (threads - first);
            ranges_[t].store(pack(begin, end), std::memory_order_relaxed);
        }
        generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
}

std::exception_ptr WorkerPool::finish() {
    work(0);
    while (num_done_.load(std::memory_order_acquire) != num_tasks_) cpu_relax();
    for (const std::exception_ptr& e : errors_)
        if (e) return e;
    return nullptr;
}

void WorkerPool::run(std::size_t n, const std::function<void(std::size_t)>& task) {
    join_async();
    if (workers_.empty() || n <= 1) {
        for (std::size_t i = 0; i < n; ++i) task(i);
        return;
    }
    publish(n, 0, &task);
    if (const std::exception_ptr e = finish()) std::rethrow_exception(e);
}

void WorkerPool::start_async(std::size_t n, std::function<void(std::size_t)> task) {
    join_async();
    async_task_ = std::move(task);
    async_pending_ = true;
    if (workers_.empty()) {
        for (std::size_t i = 0; i < n; ++i) {
            try {
                async_task_(i);
            } catch (...) {
                if (!async_error_) async_error_ = std::current_exception();
            }
        }
        return;
    }
    publish(n, 1, &async_task_);
}

void WorkerPool::join_async() {
    if (!async_pending_) return;
    if (!workers_.empty()) {
        const std::exception_ptr e = finish();
        if (!async_error_) async_error_ = e;
    }
    async_pending_ = false;
}

void WorkerPool::wait_async() {
    join_async();
    if (std::exception_ptr e = std::exchange(async_error_, nullptr)) std::rethrow_exception(e);
}

void WorkerPool::worker_loop(std::size_t self) {
    std::uint64_t seen = 0;
    for (;;) {
        std::int32_t polls = 0;
        while (generation_.load(std::memory_order_acquire) == seen && polls < kSpinPolls) {
            cpu_relax();
            ++polls;
        }
        {
            std::unique_lock<std::mutex> lock(mu_);
            wake_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
            seen = generation_.load(std::memory_order_relaxed);
            if (stop_) return;
            active_.fetch_add(1, std::memory_order_relaxed);
        }
        work(self);
        active_.fetch_sub(1, std::memory_order_release);
    }
}

}  // namespace deepinfer::sim
