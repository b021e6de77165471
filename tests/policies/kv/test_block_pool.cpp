// KvBlockPool: reference counts, LRU eviction of cached blocks, byte accounting with sequence
// states, and invariants under random operation sequences.
#include <catch2/catch.hpp>
#include <map>

#include "policies/common/check.h"
#include "policies/common/rng.h"
#include "policies/kv/block_pool.h"
#include "tests/policies/scheduler/sched_test_util.h"

using namespace deepinfer;
using deepinfer::testing::tiny_kv;

TEST_CASE("KvBlockPool: a block shared by two requests survives freeing one", "[policies][kv]") {
    KvBlockPool pool(tiny_kv(4));
    REQUIRE(pool.num_blocks_total() == 4);
    std::vector<BlockId> a;
    pool.allocate(1, a);
    pool.incref(a[0]);
    CHECK(pool.ref_count(a[0]) == 2);
    pool.release(a[0]);
    CHECK(pool.ref_count(a[0]) == 1);
    CHECK(pool.num_live_blocks() == 1);
    pool.release(a[0]);
    CHECK(pool.num_live_blocks() == 0);
    CHECK_THROWS_AS(pool.release(a[0]), InternalError);
    pool.check_invariants();
}

TEST_CASE("KvBlockPool: can_allocate is false when blocks run out and allocate then refuses",
          "[policies][kv]") {
    KvBlockPool pool(tiny_kv(3));
    std::vector<BlockId> b;
    CHECK(pool.can_allocate(3));
    CHECK_FALSE(pool.can_allocate(4));
    pool.allocate(2, b);
    CHECK(pool.can_allocate(1));
    CHECK_FALSE(pool.can_allocate(2));
    CHECK_THROWS_AS(pool.allocate(2, b), InternalError);
    CHECK(b.size() == 2);
}

TEST_CASE("KvBlockPool: unreferenced cached blocks are evicted least recently used first", "[policies][kv]") {
    KvBlockPool pool(tiny_kv(3));
    std::vector<BlockId> b;
    pool.allocate(3, b);
    for (int i = 0; i < 3; ++i) REQUIRE(pool.set_hash(b[static_cast<std::size_t>(i)], 100 + i));
    CHECK_FALSE(pool.set_hash(b[0], 555));  // already hashed
    pool.release(b[1]);
    pool.release(b[0]);
    pool.release(b[2]);
    CHECK(pool.num_cached_blocks() == 3);
    CHECK(pool.find_cached(101) == b[1]);
    // Reviving a cached block takes it off the LRU.
    pool.incref(b[0]);
    CHECK(pool.num_cached_blocks() == 2);
    std::vector<BlockId> fresh;
    REQUIRE(pool.can_allocate(2));
    pool.allocate(2, fresh);
    CHECK(pool.take_evicted_hashes() == std::vector<std::uint64_t>{101, 102});
    CHECK_FALSE(pool.find_cached(101).has_value());
    CHECK(pool.find_cached(100) == b[0]);
    pool.check_invariants();
}

TEST_CASE("KvBlockPool: sequence states take bytes from the same capacity", "[policies][kv]") {
    // Default V4 shape: one sequence state is worth ~13 blocks of 128 tokens.
    KvPoolConfig cfg;
    const double per_state_blocks = kv_fixed_bytes_per_seq(cfg.shape) / kv_bytes_per_block(cfg.shape, 128);
    cfg.capacity_bytes = 100 * kv_bytes_per_block(cfg.shape, 128);
    KvBlockPool pool(cfg);
    CHECK(pool.num_blocks_total() == 100);
    const auto with_one = static_cast<std::int32_t>(100 - std::ceil(per_state_blocks));
    CHECK(pool.max_blocks_per_seq() == with_one);
    CHECK(pool.can_allocate(with_one, 1));
    CHECK_FALSE(pool.can_allocate(with_one + 1, 1));
    // Adding a state evicts cached blocks to make room.
    std::vector<BlockId> b;
    pool.allocate(100, b);
    for (std::size_t i = 0; i < b.size(); ++i) pool.set_hash(b[i], i + 1);
    for (BlockId id : b) pool.release(id);
    CHECK(pool.num_cached_blocks() == 100);
    REQUIRE(pool.can_allocate(0, 1));
    pool.add_seq_state();
    CHECK(pool.num_cached_blocks() == with_one);
    CHECK(pool.used_bytes() <= pool.capacity_bytes());
    pool.check_invariants();
}

TEST_CASE("KvBlockPool: random operations never double free, leak or exceed capacity", "[policies][kv]") {
    for (std::uint64_t seed = 0; seed < 50; ++seed) {
        Rng rng(seed);
        KvBlockPool pool(tiny_kv(static_cast<std::int32_t>(rng.uniform_int(1, 40)), 16, 8));
        std::vector<BlockId> held;  // one entry per reference we hold
        std::int32_t states = 0;
        std::uint64_t next_hash = 1;
        for (int op = 0; op < 400; ++op) {
            const auto kind = rng.below(6);
            if (kind == 0) {
                const auto n = static_cast<std::int32_t>(rng.uniform_int(0, 5));
                if (pool.can_allocate(n)) pool.allocate(n, held);
            } else if (kind == 1 && !held.empty()) {
                const auto i = rng.below(held.size());
                pool.release(held[i]);
                held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
            } else if (kind == 2 && !held.empty()) {
                pool.set_hash(held[rng.below(held.size())], next_hash++);
            } else if (kind == 3 && next_hash > 1) {
                if (auto b = pool.find_cached(1 + rng.below(next_hash - 1))) {
                    pool.incref(*b);
                    held.push_back(*b);
                }
            } else if (kind == 4 && states < 8 && pool.can_allocate(0, 1)) {
                pool.add_seq_state();
                ++states;
            } else if (kind == 5 && states > 0) {
                pool.remove_seq_state();
                --states;
            }
            pool.check_invariants();
            REQUIRE(pool.used_bytes() <= pool.capacity_bytes());
            std::map<std::int32_t, std::int32_t> refs;
            for (BlockId b : held) ++refs[b.value()];
            for (const auto& [b, n] : refs) REQUIRE(pool.ref_count(BlockId(b)) == n);
            REQUIRE(pool.num_live_blocks() == static_cast<std::int32_t>(refs.size()));
        }
        for (BlockId b : held) pool.release(b);
        REQUIRE(pool.num_live_blocks() == 0);
        pool.check_invariants();
    }
}
