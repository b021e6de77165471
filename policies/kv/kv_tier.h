// KvTierIndex: which prefix blocks a lower tier (host memory, distributed KV store) holds, with a
// capacity in blocks, LRU replacement and a time-to-live per traffic class. Bookkeeping only: the
// bytes move as KvTransfer entries of a StepPlan.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

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
    /// Index of a node in `nodes_`; kNil ends a list.
    using Slot = std::uint32_t;
    static constexpr Slot kNil = ~Slot{0};
    /// One held block: a node of its class' LRU list (or of the free list, through `next`).
    struct Node {
        std::uint64_t hash = 0;
        double expiry_s = 0.0;
        Slot prev = kNil;
        Slot next = kNil;
        TrafficClass cls = TrafficClass::kChat;
    };
    /// A doubly linked list of nodes, threaded through `nodes_`.
    struct List {
        Slot head = kNil;
        Slot tail = kNil;
    };
    /// Moves node `s` to the back of its class list and restarts its TTL at `now_s` (a read).
    void refresh(Slot s, double now_s);
    void unlink(Slot s);
    void push_back(Slot s);
    /// Unlinks node `s`, drops its hash from the index (InternalError when absent: lists and index
    /// disagree) and puts the slot on the free list.
    void release(Slot s);
    void evict_one();

    std::int64_t capacity_blocks_;
    std::array<double, kNumTrafficClasses> ttl_s_;
    /// Slab of list nodes; freed slots are reused (free list through `Node::next`), so a warm index
    /// inserts, refreshes and evicts without allocating.
    std::vector<Node> nodes_;
    Slot free_ = kNil;
    /// Per class, nodes from least to most recently written/read (so expiry is non-decreasing).
    std::array<List, kNumTrafficClasses> lru_;
    /// Hash -> slot of its node.
    FlatHashMap64<Slot> entries_;
    std::int64_t num_expired_ = 0;
    std::int64_t num_evicted_ = 0;
};

}  // namespace deepinfer
