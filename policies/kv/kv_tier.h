// KvTierIndex: which prefix blocks a lower tier (host memory, distributed KV store) holds, with a
// capacity in blocks, LRU replacement and a time-to-live per traffic class. Bookkeeping only: the
// bytes move as KvTransfer entries of a StepPlan.
#pragma once

#include <array>
#include <cstdint>
#include <list>

#include "policies/common/flat_hash_map.h"
#include "policies/request.h"

namespace deepinfer {

/// Capacity and bandwidth of one tier.
struct KvTierConfig {
    /// Bytes the tier may hold (0 = the tier is off).
    double capacity_bytes = 0.0;
    /// Bandwidth into HBM when a hit is served from this tier (bytes/s).
    double read_bytes_per_s = 25e9;
    /// Bandwidth from HBM into this tier (bytes/s).
    double write_bytes_per_s = 25e9;
};

/// Blocks held by a tier, keyed by content hash. Each entry belongs to a traffic class and expires
/// `ttl_s[class]` seconds after its last write or read. Expired entries are dropped lazily and never
/// reported as present. Over capacity, the entry closest to expiry goes first (LRU within a class).
class KvTierIndex {
public:
    /// `ttl_s` indexed by TrafficClass; use a huge value for "never expires".
    KvTierIndex(std::int64_t capacity_blocks, std::array<double, kNumTrafficClasses> ttl_s);

    std::int64_t capacity_blocks() const { return capacity_blocks_; }
    bool enabled() const { return capacity_blocks_ > 0; }
    /// True when `h` is held and not expired at `now_s`.
    bool contains(std::uint64_t h, double now_s) const;
    /// Refreshes the TTL of a held entry (a read). No-op when absent.
    void touch(std::uint64_t h, double now_s);
    /// Writes `h` (or refreshes it; a held block moves to the longer-lived class). Returns true when
    /// the block was not held before (bytes move).
    bool insert(std::uint64_t h, TrafficClass c, double now_s);
    /// Drops every entry expired at `now_s`.
    void expire(double now_s);

    std::int64_t size() const { return static_cast<std::int64_t>(entries_.size()); }
    std::int64_t num_expired() const { return num_expired_; }
    std::int64_t num_evicted() const { return num_evicted_; }

private:
    struct Entry {
        TrafficClass cls = TrafficClass::kChat;
        double expiry_s = 0.0;
        std::list<std::uint64_t>::iterator pos;
    };
    /// The entry held under `h` (InternalError when absent: lists and index disagree).
    const Entry& at(std::uint64_t h) const;
    void erase(std::uint64_t h);
    void evict_one();

    std::int64_t capacity_blocks_;
    std::array<double, kNumTrafficClasses> ttl_s_;
    /// Per class, hashes from least to most recently written/read (so expiry is non-decreasing).
    std::array<std::list<std::uint64_t>, kNumTrafficClasses> lru_;
    FlatHashMap64<Entry> entries_;
    std::int64_t num_expired_ = 0;
    std::int64_t num_evicted_ = 0;
};

}  // namespace deepinfer
