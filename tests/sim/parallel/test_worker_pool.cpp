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

TEST_CASE("WorkerPool: a task index runs on the same thread from run to run while workers keep up",
          "[sim][parallel]") {
    // Chunks are static; the caller only takes over a chunk whose worker has not woken yet, so over
    // many back-to-back runs most indices stay on one thread. What must hold always: results are
    // per index, so the sum is exact.
    WorkerPool pool(2);
    std::vector<std::thread::id> seen(16);
    std::vector<std::int64_t> sum(16, 0);
    for (int rep = 0; rep < 200; ++rep)
        pool.run(16, [&](std::size_t i) {
            seen[i] = std::this_thread::get_id();
            sum[i] += static_cast<std::int64_t>(i);
        });
    for (std::size_t i = 0; i < 16; ++i) CHECK(sum[i] == 200 * static_cast<std::int64_t>(i));
    CHECK(seen[0] == std::this_thread::get_id());  // the caller's chunk is always its own
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
