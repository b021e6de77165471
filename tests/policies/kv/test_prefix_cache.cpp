// PrefixCache and KvTierIndex: hash chains, fully-identical-prefix matching, tiers, TTL per class.
#include <catch2/catch.hpp>

#include "policies/common/rng.h"
#include "policies/kv/prefix_cache.h"
#include "tests/policies/scheduler/sched_test_util.h"

using namespace deepinfer;
using deepinfer::testing::tiny_kv;

namespace {
constexpr double kDay = 86400.0;

Request prompt_request(std::vector<std::int32_t> ids) {
    Request r;
    r.prompt_len_tokens = static_cast<std::int32_t>(ids.size());
    r.prompt_token_ids = std::move(ids);
    return r;
}

/// Computes `hashes` into HBM as one finished sequence would, then drops the references.
void compute_and_release(KvBlockPool& pool, PrefixCache& cache, const std::vector<std::uint64_t>& hashes,
                         TrafficClass cls, double now_s, std::vector<KvTransfer>& transfers) {
    std::vector<BlockId> blocks;
    pool.allocate(static_cast<std::int32_t>(hashes.size()), blocks);
    for (std::size_t i = 0; i < hashes.size(); ++i)
        cache.on_block_computed(blocks[i], hashes[i], RequestId(1), cls, now_s, transfers);
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) pool.release(*it);
}
}  // namespace

TEST_CASE("PrefixCache: hash chains cover full blocks only and diverge from the first differing block",
          "[policies][kv]") {
    std::vector<std::int32_t> ids(16 * 5 + 7);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int32_t>(i * 7 + 3);
    const auto a = PrefixCache::block_hashes(prompt_request(ids), 16);
    CHECK(a.size() == 5);
    auto ids2 = ids;
    ids2[16 * 2 + 5] += 1;  // block 2 differs
    const auto b = PrefixCache::block_hashes(prompt_request(ids2), 16);
    REQUIRE(b.size() == 5);
    CHECK(a[0] == b[0]);
    CHECK(a[1] == b[1]);
    for (std::size_t i = 2; i < 5; ++i) CHECK(a[i] != b[i]);
    // The same block content after a different prefix hashes differently (chain, not content).
    auto ids3 = ids;
    ids3[0] += 1;
    const auto c = PrefixCache::block_hashes(prompt_request(ids3), 16);
    for (std::size_t i = 0; i < 5; ++i) CHECK(a[i] != c[i]);
    // Given hashes win over token ids.
    Request r = prompt_request(ids);
    r.prompt_block_hashes = {1, 2, 3, 4, 5};
    CHECK(PrefixCache::block_hashes(r, 16) == r.prompt_block_hashes);
}

TEST_CASE("PrefixCache: hits only on fully identical prefixes (many seeds)", "[policies][kv]") {
    for (std::uint64_t seed = 0; seed < 100; ++seed) {
        Rng rng(seed);
        KvBlockPool pool(tiny_kv(64));
        PrefixCache cache({}, pool);
        const auto len = static_cast<std::size_t>(rng.uniform_int(1, 200));
        std::vector<std::int32_t> a(len);
        for (auto& t : a)
            t = static_cast<std::int32_t>(rng.below(4));  // tiny vocabulary: many near-collisions
        auto b = a;
        const auto common = static_cast<std::size_t>(rng.uniform_int(0, static_cast<std::int64_t>(len)));
        if (common < len) b[common] = a[common] + 1;
        std::vector<KvTransfer> tr;
        const auto ha = PrefixCache::block_hashes(prompt_request(a), 16);
        compute_and_release(pool, cache, ha, TrafficClass::kChat, 0.0, tr);
        const auto hb = PrefixCache::block_hashes(prompt_request(b), 16);
        const PrefixMatch m = cache.match(hb, 1 << 20, 0.0);
        REQUIRE(m.num_blocks == static_cast<std::int32_t>(common / 16));
        for (KvTier t : m.tiers) REQUIRE(t == KvTier::kHbm);
        REQUIRE(m.num_replay_tokens == 0);
    }
}

TEST_CASE("KvTierIndex: entries expire after the TTL of their traffic class", "[policies][kv]") {
    KvTierIndex store(100, {7 * kDay, 3 * kDay});
    REQUIRE(store.insert(1, TrafficClass::kChat, 0.0));
    REQUIRE(store.insert(2, TrafficClass::kAgent, 0.0));
    CHECK_FALSE(store.insert(1, TrafficClass::kChat, 0.0));  // already held
    CHECK(store.contains(1, 3 * kDay - 1));
    CHECK(store.contains(2, 3 * kDay - 1));
    CHECK(store.contains(1, 3 * kDay + 1));
    CHECK_FALSE(store.contains(2, 3 * kDay + 1));
    CHECK_FALSE(store.contains(1, 7 * kDay + 1));
    // A read refreshes the TTL.
    store.touch(1, 5 * kDay);
    CHECK(store.contains(1, 7 * kDay + 1));
    store.expire(3 * kDay + 1);
    CHECK(store.size() == 1);
    CHECK(store.num_expired() == 1);
}

TEST_CASE("KvTierIndex: over capacity the entry closest to expiry goes first", "[policies][kv]") {
    KvTierIndex store(2, {7 * kDay, 3 * kDay});
    store.insert(1, TrafficClass::kChat, 0.0);   // expires day 7
    store.insert(2, TrafficClass::kAgent, 1.0);  // expires day 3
    store.insert(3, TrafficClass::kChat, 2.0);
    CHECK(store.contains(1, 3.0));
    CHECK_FALSE(store.contains(2, 3.0));
    CHECK(store.contains(3, 3.0));
    CHECK(store.num_evicted() == 1);
}

TEST_CASE("KvTierIndex: LRU order per class, reads move an entry to the back, freed slots are reused",
          "[policies][kv]") {
    KvTierIndex store(3, {7 * kDay, 3 * kDay});
    store.insert(1, TrafficClass::kChat, 0.0);
    store.insert(2, TrafficClass::kChat, 1.0);
    store.insert(3, TrafficClass::kChat, 2.0);
    store.touch(1, 3.0);  // order now 2, 3, 1
    store.touch(9, 3.0);  // absent: no-op
    CHECK(store.size() == 3);
    store.insert(4, TrafficClass::kChat, 4.0);  // evicts 2
    CHECK_FALSE(store.contains(2, 4.0));
    store.insert(5, TrafficClass::kChat, 5.0);  // evicts 3
    CHECK_FALSE(store.contains(3, 5.0));
    store.touch(4, 6.0);                        // order now 1, 5, 4
    store.insert(6, TrafficClass::kChat, 7.0);  // evicts 1
    CHECK_FALSE(store.contains(1, 7.0));
    for (std::uint64_t h : {4, 5, 6}) CHECK(store.contains(h, 7.0));
    CHECK(store.num_evicted() == 3);
    CHECK(store.num_expired() == 0);
    // Everything expires; the slots are reused by later inserts.
    store.expire(7 * kDay + 7.0);
    CHECK(store.size() == 0);
    CHECK(store.num_expired() == 3);
    for (std::uint64_t h = 10; h < 13; ++h) CHECK(store.insert(h, TrafficClass::kAgent, 8 * kDay));
    store.insert(13, TrafficClass::kAgent, 8 * kDay + 1);  // evicts 10
    CHECK_FALSE(store.contains(10, 8 * kDay + 1));
    for (std::uint64_t h : {11, 12, 13}) CHECK(store.contains(h, 8 * kDay + 1));
    CHECK(store.size() == 3);
}

TEST_CASE("KvTierIndex: an upgraded block moves to the back of the longer-lived class", "[policies][kv]") {
    KvTierIndex store(3, {7 * kDay, 3 * kDay});
    store.insert(1, TrafficClass::kAgent, 0.0);              // expires day 3
    store.insert(2, TrafficClass::kChat, 1.0);               // expires day 7 + 1 s
    store.insert(3, TrafficClass::kAgent, 2.0);              // expires day 3 + 2 s
    CHECK_FALSE(store.insert(1, TrafficClass::kChat, 3.0));  // now chat, expires day 7 + 3 s
    CHECK(store.contains(1, 5 * kDay));
    CHECK(store.num_evicted() == 0);
    // Heads: chat 2 (day 7 + 1 s), agent 3 (day 3 + 2 s): agent 3 goes first, then chat 2, then 1.
    store.insert(4, TrafficClass::kChat, 4.0);
    CHECK_FALSE(store.contains(3, 4.0));
    store.insert(5, TrafficClass::kChat, 5.0);
    CHECK_FALSE(store.contains(2, 5.0));
    store.insert(6, TrafficClass::kChat, 6.0);
    CHECK_FALSE(store.contains(1, 6.0));
    CHECK(store.num_evicted() == 3);
}

TEST_CASE("KvTierIndex: random operations agree with a plain list model", "[policies][kv]") {
    // The model: per class a vector of (hash, expiry) from least to most recently used.
    struct Model {
        std::int64_t capacity = 0;
        std::array<double, kNumTrafficClasses> ttl{};
        std::array<std::vector<std::pair<std::uint64_t, double>>, kNumTrafficClasses> lists;
        std::int64_t expired = 0;
        std::int64_t evicted = 0;

        std::pair<int, std::size_t> find(std::uint64_t h) const {
            for (int c = 0; c < kNumTrafficClasses; ++c) {
                const auto& l = lists[static_cast<std::size_t>(c)];
                for (std::size_t i = 0; i < l.size(); ++i)
                    if (l[i].first == h) return {c, i};
            }
            return {-1, 0};
        }
        std::int64_t size() const {
            std::int64_t n = 0;
            for (const auto& l : lists) n += std::ssize(l);
            return n;
        }
        bool contains(std::uint64_t h, double now) const {
            const auto [c, i] = find(h);
            return c >= 0 && lists[static_cast<std::size_t>(c)][i].second > now;
        }
        void touch(std::uint64_t h, double now) {
            const auto [c, i] = find(h);
            if (c < 0) return;
            auto& l = lists[static_cast<std::size_t>(c)];
            l.erase(l.begin() + static_cast<std::ptrdiff_t>(i));
            l.emplace_back(h, now + ttl[static_cast<std::size_t>(c)]);
        }
        void expire(double now) {
            for (auto& l : lists)
                while (!l.empty() && l.front().second <= now) {
                    l.erase(l.begin());
                    ++expired;
                }
        }
        bool insert(std::uint64_t h, TrafficClass cls, double now) {
            if (capacity == 0) return false;
            expire(now);
            const auto [c, i] = find(h);
            const auto k = static_cast<std::size_t>(cls);
            if (c >= 0) {
                if (ttl[k] <= ttl[static_cast<std::size_t>(c)]) {
                    touch(h, now);
                    return false;
                }
                auto& l = lists[static_cast<std::size_t>(c)];
                l.erase(l.begin() + static_cast<std::ptrdiff_t>(i));
            }
            if (size() >= capacity) {
                int victim = -1;
                for (int v = 0; v < kNumTrafficClasses; ++v) {
                    const auto& l = lists[static_cast<std::size_t>(v)];
                    if (!l.empty() &&
                        (victim < 0 ||
                         l.front().second < lists[static_cast<std::size_t>(victim)].front().second))
                        victim = v;
                }
                auto& l = lists[static_cast<std::size_t>(victim)];
                l.erase(l.begin());
                ++evicted;
            }
            lists[k].emplace_back(h, now + ttl[k]);
            return c < 0;
        }
    };
    for (const std::int64_t capacity : {0, 1, 5, 24}) {
        const std::array<double, kNumTrafficClasses> ttl = {50.0, 20.0};
        KvTierIndex store(capacity, ttl);
        Model model;
        model.capacity = capacity;
        model.ttl = ttl;
        Rng rng(static_cast<std::uint64_t>(capacity) + 11);
        double now = 0;
        for (int step = 0; step < 4000; ++step) {
            now += rng.uniform_int(0, 3) == 0 ? rng.uniform(0, 10) : 0.0;
            const auto h = static_cast<std::uint64_t>(rng.uniform_int(0, 40));
            const auto cls = rng.uniform_int(0, 1) == 0 ? TrafficClass::kChat : TrafficClass::kAgent;
            switch (rng.uniform_int(0, 9)) {
                case 0:
                    store.touch(h, now);
                    model.touch(h, now);
                    break;
                case 1:
                    store.expire(now);
                    model.expire(now);
                    break;
                default:
                    REQUIRE(store.insert(h, cls, now) == model.insert(h, cls, now));
            }
            REQUIRE(store.size() == model.size());
            REQUIRE(store.num_expired() == model.expired);
            REQUIRE(store.num_evicted() == model.evicted);
            for (std::uint64_t k = 0; k <= 40; ++k) REQUIRE(store.contains(k, now) == model.contains(k, now));
        }
    }
}

TEST_CASE("PrefixCache: a store hit needs SWA bounded replay and a store read; an HBM hit needs neither",
          "[policies][kv]") {
    KvBlockPool pool(tiny_kv(4, 128));
    PrefixCacheConfig cfg;
    cfg.store.capacity_bytes = 1e9;
    PrefixCache cache(cfg, pool);
    const std::vector<std::uint64_t> h = {11, 12, 13};
    std::vector<KvTransfer> tr;
    compute_and_release(pool, cache, h, TrafficClass::kAgent, 0.0, tr);
    // Every computed block was written through to the store once.
    REQUIRE(tr.size() == 1);
    CHECK(tr[0].from == KvTier::kHbm);
    CHECK(tr[0].to == KvTier::kStore);
    CHECK(tr[0].num_tokens == 3 * 128);
    CHECK(tr[0].num_bytes == 3 * pool.bytes_per_block());
    // HBM hit.
    PrefixMatch m = cache.match(h, 3, 10.0);
    CHECK(m.num_blocks == 3);
    CHECK(m.num_unreferenced_hbm == 3);
    CHECK(m.num_replay_tokens == 0);
    // Evict everything from HBM by filling the pool.
    std::vector<BlockId> fill;
    pool.allocate(4, fill);
    for (BlockId b : fill) pool.release(b);
    m = cache.match(h, 3, 10.0);
    CHECK(m.num_blocks == 3);
    CHECK(m.num_store_blocks == 3);
    CHECK(m.num_replay_tokens == 140);
    // Acquire loads them into fresh HBM blocks and says so.
    std::vector<BlockId> table;
    tr.clear();
    cache.acquire(m, h, RequestId(5), TrafficClass::kAgent, 10.0, table, tr);
    CHECK(table.size() == 3);
    REQUIRE(tr.size() == 1);
    CHECK(tr[0].request == RequestId(5));
    CHECK(tr[0].from == KvTier::kStore);
    CHECK(tr[0].to == KvTier::kHbm);
    CHECK(tr[0].num_tokens == 384);
    CHECK(cache.transfer_time_s(tr[0]) == Approx(tr[0].num_bytes / cfg.store.read_bytes_per_s));
    CHECK(cache.match(h, 3, 10.0).tiers == std::vector<KvTier>(3, KvTier::kHbm));
    // A short prefix replays at most its own length.
    for (BlockId b : table) pool.release(b);
    fill.clear();
    pool.allocate(4, fill);
    for (BlockId b : fill) pool.release(b);
    CHECK(cache.match(h, 1, 10.0).num_replay_tokens == 128);
    // After the agent TTL (3 days from the last read) the store no longer serves it.
    CHECK(cache.match(h, 3, 10.0 + 3 * kDay + 1).num_blocks == 0);
    pool.check_invariants();
}

TEST_CASE("PrefixCache: blocks evicted from HBM move to the host tier and come back without replay",
          "[policies][kv]") {
    KvBlockPool pool(tiny_kv(2, 128));
    PrefixCacheConfig cfg;
    cfg.host.capacity_bytes = 10 * pool.bytes_per_block();
    PrefixCache cache(cfg, pool);
    std::vector<KvTransfer> tr;
    compute_and_release(pool, cache, {21, 22}, TrafficClass::kChat, 0.0, tr);
    CHECK(tr.empty());  // no store
    std::vector<BlockId> fill;
    pool.allocate(2, fill);
    cache.demote_evicted(RequestId(9), 1.0, tr);
    REQUIRE(tr.size() == 1);
    CHECK(tr[0].to == KvTier::kHost);
    CHECK(tr[0].num_tokens == 256);
    for (BlockId b : fill) pool.release(b);
    const PrefixMatch m = cache.match(std::vector<std::uint64_t>{21, 22}, 2, 2.0);
    CHECK(m.num_host_blocks == 2);
    CHECK(m.num_replay_tokens == 0);
}

TEST_CASE("KvTierIndex: a block written by both classes keeps the longer TTL and is written once",
          "[policies][kv]") {
    KvTierIndex store(10, {7 * kDay, 3 * kDay});
    CHECK(store.insert(1, TrafficClass::kAgent, 0.0));
    CHECK_FALSE(store.insert(1, TrafficClass::kChat, 0.0));  // upgraded, no second write
    CHECK(store.contains(1, 5 * kDay));
    CHECK_FALSE(store.insert(1, TrafficClass::kAgent, 0.0));  // stays chat
    CHECK(store.contains(1, 5 * kDay));
    CHECK(store.size() == 1);
}
