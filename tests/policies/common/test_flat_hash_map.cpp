// FlatHashMap64: agrees with std::unordered_map under random insert/erase/find over many seeds.
#include <catch2/catch.hpp>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "policies/common/flat_hash_map.h"
#include "policies/common/rng.h"

using deepinfer::FlatHashMap64;
using deepinfer::Rng;

namespace {

/// Every entry of `ref` is found in `m` with the same value, and `m` holds nothing else.
void require_same(const FlatHashMap64<std::int64_t>& m,
                  const std::unordered_map<std::uint64_t, std::int64_t>& ref) {
    REQUIRE(m.size() == ref.size());
    for (const auto& [k, v] : ref) {
        const std::int64_t* got = m.find(k);
        REQUIRE(got != nullptr);
        REQUIRE(*got == v);
    }
    std::size_t visited = 0;
    m.for_each([&](std::uint64_t k, std::int64_t v) {
        ++visited;
        const auto it = ref.find(k);
        REQUIRE(it != ref.end());
        REQUIRE(it->second == v);
    });
    REQUIRE(visited == ref.size());
}

}  // namespace

TEST_CASE("FlatHashMap64: random insert/erase/find agree with std::unordered_map",
          "[policies][flat_hash_map]") {
    for (std::uint64_t seed = 0; seed < 200; ++seed) {
        Rng rng(seed);
        // Small key universes force collisions of keys, long probe runs and many backward shifts;
        // raw (unmixed) small integers and clustered keys exercise the mixing.
        const std::uint64_t universe = 8 + rng.next_u64() % 600;
        const bool raw_keys = seed % 2 == 0;
        std::vector<std::uint64_t> keys(universe);
        for (std::uint64_t i = 0; i < universe; ++i) keys[i] = raw_keys ? i * 1024 : rng.next_u64();
        FlatHashMap64<std::int64_t> m;
        std::unordered_map<std::uint64_t, std::int64_t> ref;
        for (int op = 0; op < 3000; ++op) {
            const std::uint64_t k = keys[rng.next_u64() % universe];
            const std::uint64_t kind = rng.next_u64() % 10;
            if (kind < 5) {
                const std::int64_t v = static_cast<std::int64_t>(rng.next_u64() % 1000000);
                const auto [p, inserted] = m.insert(k, v);
                const auto [it, ref_inserted] = ref.emplace(k, v);
                REQUIRE(inserted == ref_inserted);
                REQUIRE(*p == it->second);
            } else if (kind < 8) {
                REQUIRE(m.erase(k) == (ref.erase(k) == 1));
            } else {
                const std::int64_t* got = m.find(k);
                const auto it = ref.find(k);
                REQUIRE((got != nullptr) == (it != ref.end()));
                if (got != nullptr) REQUIRE(*got == it->second);
                REQUIRE(m.contains(k) == (it != ref.end()));
            }
            REQUIRE(m.size() == ref.size());
            REQUIRE(m.size() * 10 <= m.capacity() * 7);
        }
        require_same(m, ref);
    }
}

TEST_CASE("FlatHashMap64: values found through find can be updated in place", "[policies][flat_hash_map]") {
    FlatHashMap64<std::int64_t> m;
    REQUIRE(m.find(7) == nullptr);
    REQUIRE(!m.erase(7));
    REQUIRE(m.insert(7, 1).second);
    REQUIRE(!m.insert(7, 2).second);
    REQUIRE(*m.find(7) == 1);
    *m.find(7) = 5;
    REQUIRE(*m.find(7) == 5);
    REQUIRE(m.erase(7));
    REQUIRE(m.empty());
    REQUIRE(m.find(7) == nullptr);
}

TEST_CASE("FlatHashMap64: capacity stays a power of two and grows at 0.7 load", "[policies][flat_hash_map]") {
    FlatHashMap64<std::int64_t> m;
    REQUIRE(m.capacity() == 0);
    for (std::uint64_t k = 0; k < 10000; ++k) {
        m.insert(k, static_cast<std::int64_t>(k));
        const std::size_t cap = m.capacity();
        REQUIRE((cap & (cap - 1)) == 0);
        REQUIRE(m.size() * 10 <= cap * 7);
        // Never more than twice the room the load factor needs.
        REQUIRE(cap <= 2 * ((m.size() * 10 + 6) / 7) + 16);
    }
    // Erase all but every 97th key; the rest are still found (backward shifts kept runs intact).
    for (std::uint64_t k = 0; k < 10000; ++k)
        if (k % 97 != 0) REQUIRE(m.erase(k));
    for (std::uint64_t k = 0; k < 10000; ++k) REQUIRE(m.contains(k) == (k % 97 == 0));
    m.clear();
    REQUIRE(m.empty());
    REQUIRE(!m.contains(0));
}

TEST_CASE("FlatHashMap64: copies and moves are independent maps", "[policies][flat_hash_map]") {
    FlatHashMap64<std::int64_t> a;
    for (std::uint64_t k = 0; k < 100; ++k) a.insert(k, static_cast<std::int64_t>(k));
    FlatHashMap64<std::int64_t> b = a;
    b.erase(3);
    REQUIRE(a.contains(3));
    REQUIRE(!b.contains(3));
    FlatHashMap64<std::int64_t> c = std::move(b);
    REQUIRE(c.size() == 99);
    a = c;
    REQUIRE(!a.contains(3));
}
