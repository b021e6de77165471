// PrefixCache: reuse of KV blocks across requests by content hash chain, over three tiers: HBM
// (the block pool's hash index, LRU eviction), host memory and a distributed KV store (capacity,
// bandwidth, TTL per traffic class). The store never holds sliding-window state, so a prefix
// resumed from it needs SWA bounded replay; the match says how many tokens to recompute.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "policies/kv/block_pool.h"
#include "policies/kv/kv_tier.h"
#include "policies/request.h"
#include "policies/step_plan.h"

namespace deepinfer {

struct PrefixCacheConfig {
    /// Off: no hashing, no reuse, no tier traffic.
    bool enabled = true;
    /// Host-memory tier: blocks evicted from HBM are copied here (capacity 0 = no host tier).
    KvTierConfig host;
    /// Distributed KV store tier (capacity 0 = no store).
    KvTierConfig store;
    /// Store time-to-live per traffic class, indexed by TrafficClass (chat 7 days, agent 3 days).
    std::array<double, kNumTrafficClasses> store_ttl_s = {7.0 * 86400.0, 3.0 * 86400.0};
    /// Write every computed full prompt block through to the store.
    bool write_to_store = true;
    /// Tokens recomputed to rebuild the sliding-window state after a hit that lacks it (SWA bounded
    /// replay): the 128-token window plus room for speculative backtracking.
    std::int32_t swa_replay_tokens = 140;
    /// Whether a prefix resumed from HBM / host memory has its sliding-window resume state. The
    /// store never has it. NOTE: the resume state's bytes (~5.5 MiB per resume point for V4-Flash)
    /// are not charged to the tiers that are assumed to keep it.
    bool hbm_keeps_swa_state = true;
    bool host_keeps_swa_state = true;
};

/// Reads one tier: {"capacity_gib": 0, "read_gb_per_s": 25, "write_gb_per_s": 25}, all optional.
KvTierConfig kv_tier_config_from_json(const JsonReader& r);
/// Reads a PrefixCacheConfig: {"enabled", "host": {tier}, "store": {tier}, "store_ttl_s": {"chat": s,
/// "agent": s}, "write_to_store", "swa_replay_tokens", "hbm_keeps_swa_state", "host_keeps_swa_state"},
/// all optional; an unknown traffic class in store_ttl_s is an error naming it.
PrefixCacheConfig prefix_cache_config_from_json(const JsonReader& r);

/// The longest cached prefix of a request, block by block from the first token.
struct PrefixMatch {
    /// Matched full blocks; block i lives in tiers[i] (the fastest tier holding it).
    std::int32_t num_blocks = 0;
    std::vector<KvTier> tiers;
    /// HBM hits whose block is unreferenced (cached): taking them uses allocatable pool room.
    std::int32_t num_unreferenced_hbm = 0;
    std::int32_t num_host_blocks = 0;
    std::int32_t num_store_blocks = 0;
    /// Tokens to recompute before the prefix end to rebuild the sliding window (0 = none).
    std::int32_t num_replay_tokens = 0;

    /// Blocks the pool must provide to take this match (loads into HBM + revived cached blocks).
    std::int32_t num_pool_blocks() const { return num_host_blocks + num_store_blocks + num_unreferenced_hbm; }
};

class PrefixCache {
public:
    /// The pool must outlive the cache. `shared_store`, when given, replaces this cache's own store
    /// index (a distributed store shared by several instances; config.store still gives its
    /// bandwidth) and must outlive it.
    PrefixCache(PrefixCacheConfig config, KvBlockPool& pool, KvTierIndex* shared_store = nullptr);

    const PrefixCacheConfig& config() const { return config_; }
    bool enabled() const { return config_.enabled; }

    /// Hash chain of the request's full prompt blocks: `prompt_block_hashes` when given, else
    /// h_i = H(h_{i-1}, token ids of block i). Empty when neither ids nor hashes are given.
    static std::vector<std::uint64_t> block_hashes(const Request& r, std::int32_t block_tokens);

    /// Longest prefix of `hashes` (at most `max_blocks` blocks) held by any tier at `now_s`.
    PrefixMatch match(std::span<const std::uint64_t> hashes, std::int32_t max_blocks, double now_s) const;
    /// Takes `m` for a sequence: references HBM hits, allocates HBM blocks for host/store hits
    /// (the caller checked pool.can_allocate(m.num_pool_blocks())), appends the block ids to
    /// `table` and the tier reads to `transfers`.
    void acquire(const PrefixMatch& m, std::span<const std::uint64_t> hashes, RequestId request,
                 TrafficClass cls, double now_s, std::vector<BlockId>& table,
                 std::vector<KvTransfer>& transfers);
    /// A sequence finished computing full prompt block `b` with hash `h`: index it in HBM and write
    /// it through to the store.
    void on_block_computed(BlockId b, std::uint64_t h, RequestId request, TrafficClass cls, double now_s,
                           std::vector<KvTransfer>& transfers);
    /// Copies blocks the pool evicted since the last call to the host tier (`cause`: the request
    /// whose allocation evicted them).
    void demote_evicted(RequestId cause, double now_s, std::vector<KvTransfer>& transfers);

    /// Drops tier entries whose time-to-live ran out at `now_s` (lookups ignore them anyway).
    void expire(double now_s) {
        host_.expire(now_s);
        store_->expire(now_s);
    }

    /// Seconds a transfer takes at the configured bandwidth of the tier it reads or writes.
    double transfer_time_s(const KvTransfer& t) const;

    const KvTierIndex& host() const { return host_; }
    const KvTierIndex& store() const { return *store_; }

private:
    void add_transfer(std::vector<KvTransfer>& out, RequestId r, KvTier from, KvTier to,
                      std::int32_t num_blocks) const;

    PrefixCacheConfig config_;
    KvBlockPool& pool_;
    KvTierIndex host_;
    KvTierIndex own_store_;
    KvTierIndex* store_;
};

}  // namespace deepinfer
