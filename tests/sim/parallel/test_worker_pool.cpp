// WorkerPool: every task runs once per run, on any thread count, and errors come back in index order.
#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sim/parallel/worker_pool.h"

using deepinfer::sim::WorkerPool;

TEST_CASE("WorkerPool: every task runs exactly once per run, for any thread and task count",
          "[sim][parallel]") {
    for (const std::int32_t threads : {1, 2, 3, 5}) {
        WorkerPool pool(threads);
        CHECK(pool.num_threads() == threads);
        for (const std::size_t n :
             {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{64}}) {
            std::vector<std::int32_t> runs(n, 0);
            for (int rep = 0; rep < 50; ++rep) pool.run(n, [&](std::size_t i) { ++runs[i]; });
            INFO("threads " << threads << ", tasks " << n);
            for (const std::int32_t r : runs) CHECK(r == 50);
        }
    }
}

TEST_CASE("WorkerPool: tasks run on the pool's threads, mostly on their range's owner", "[sim][parallel]") {
    // Each thread owns a range and takes from the others' backs only once its own is done, so over
    // many back-to-back runs most indices stay on one thread. What must hold always: every task ran
    // once per run on one of the pool's threads, and results are per index, so the sums are exact.
    WorkerPool pool(2);
    const std::thread::id caller = std::this_thread::get_id();
    std::vector<std::int64_t> sum(16, 0);
    std::vector<std::int32_t> on_caller(16, 0);
    for (int rep = 0; rep < 200; ++rep)
        pool.run(16, [&](std::size_t i) {
            on_caller[i] += std::this_thread::get_id() == caller ? 1 : 0;
            sum[i] += static_cast<std::int64_t>(i);
        });
    std::int32_t total_on_caller = 0;
    for (std::size_t i = 0; i < 16; ++i) {
        CHECK(sum[i] == 200 * static_cast<std::int64_t>(i));
        total_on_caller += on_caller[i];
    }
    // The caller runs its own range's 8 tasks at least whenever the worker is slower than it.
    CHECK(total_on_caller > 0);
    CHECK(total_on_caller <= 16 * 200);
}

TEST_CASE("WorkerPool: the lowest failing task's exception is rethrown after all tasks ran",
          "[sim][parallel]") {
    WorkerPool pool(3);
    std::vector<std::int32_t> ran(30, 0);
    try {
        pool.run(30, [&](std::size_t i) {
            ran[i] = 1;
            if (i == 25 || i == 12) throw std::runtime_error("task " + std::to_string(i));
        });
        FAIL("no exception");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) == "task 12");
    }
    for (const std::int32_t r : ran) CHECK(r == 1);
    // The pool is usable afterwards.
    std::vector<std::int32_t> again(30, 0);
    pool.run(30, [&](std::size_t i) { again[i] = 1; });
    for (const std::int32_t r : again) CHECK(r == 1);
}

TEST_CASE("WorkerPool: an asynchronous batch runs every task once while the caller works on",
          "[sim][parallel]") {
    for (const std::int32_t threads : {1, 2, 3, 5}) {
        WorkerPool pool(threads);
        std::vector<std::int32_t> runs(64, 0);
        std::int64_t caller_work = 0;
        for (int rep = 0; rep < 50; ++rep) {
            pool.start_async(runs.size(), [&](std::size_t i) { ++runs[i]; });
            CHECK(pool.async_pending());
            for (int k = 0; k < 1000; ++k) caller_work += k;  // the caller's own work meanwhile
            pool.wait_async();
            CHECK_FALSE(pool.async_pending());
        }
        INFO("threads " << threads);
        for (const std::int32_t r : runs) CHECK(r == 50);
        CHECK(caller_work == 50 * 499500);
    }
}

TEST_CASE(
    "WorkerPool: run() and start_async() first finish the batch in flight; its error waits for "
    "wait_async()",
    "[sim][parallel]") {
    WorkerPool pool(3);
    std::vector<std::int32_t> first(40, 0);
    pool.start_async(first.size(), [&](std::size_t i) {
        first[i] = 1;
        if (i == 31 || i == 17) throw std::runtime_error("async " + std::to_string(i));
    });
    std::vector<std::int32_t> second(40, 0);
    pool.run(second.size(), [&](std::size_t i) { second[i] = 1; });  // joins the batch, no throw
    for (const std::int32_t r : first) CHECK(r == 1);
    for (const std::int32_t r : second) CHECK(r == 1);
    CHECK_FALSE(pool.async_pending());
    try {
        pool.wait_async();
        FAIL("no exception");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) == "async 17");
    }
    pool.wait_async();  // nothing left: a no-op
    // A second batch started while one is in flight runs after it.
    std::vector<std::int32_t> order(10, 0);
    pool.start_async(10, [&](std::size_t i) { order[i] += 1; });
    pool.start_async(10, [&](std::size_t i) { order[i] *= 10; });
    pool.wait_async();
    for (const std::int32_t r : order) CHECK(r == 10);
}
