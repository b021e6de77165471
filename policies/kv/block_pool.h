// KvBlockPool: HBM pages of compressed KV (128-token blocks), reference counted, with the HBM tier
// of the prefix cache (content-hash index + LRU of unreferenced cached blocks) and byte accounting
// that also charges every sequence's bounded state (sliding windows, compressor buffers).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "policies/common/flat_hash_map.h"
#include "policies/common/ids.h"
#include "policies/common/json_reader.h"
#include "policies/kv/kv_model_shape.h"

namespace deepinfer {

struct KvPoolConfig {
    /// HBM bytes given to the KV cache (compressed pages + per-sequence state).
    double capacity_bytes = 64.0 * 1024 * 1024 * 1024;
    /// Tokens per block (page). V4 compressed windows never straddle a 128-aligned boundary.
    std::int32_t block_tokens = 128;
    KvModelShape shape;
};

/// Reads a KvPoolConfig: {"capacity_gib": 64, "block_tokens": 128, "model": {KvModelShape}}, all
/// optional.
KvPoolConfig kv_pool_config_from_json(const JsonReader& r);

/// A pool of `num_blocks_total()` block ids. Blocks are live (ref > 0), cached (ref 0, content hash
/// indexed, evictable in LRU order) or free. Memory: live + cached blocks + sequence states never
/// exceed the capacity; cached blocks are evicted on demand. Running out is a return value
/// (`can_allocate` false), never an exception; calling `allocate` without checking is a bug.
class KvBlockPool {
public:
    explicit KvBlockPool(KvPoolConfig config);

    std::int32_t block_tokens() const { return config_.block_tokens; }
    double bytes_per_block() const { return bytes_per_block_; }
    double fixed_bytes_per_seq() const { return fixed_bytes_per_seq_; }
    double capacity_bytes() const { return config_.capacity_bytes; }
    const KvPoolConfig& config() const { return config_; }

    /// Block ids are 0 .. num_blocks_total()-1 (capacity / bytes_per_block).
    std::int32_t num_blocks_total() const { return static_cast<std::int32_t>(blocks_.size()); }
    std::int32_t num_live_blocks() const { return num_live_; }
    std::int32_t num_cached_blocks() const { return num_cached_; }
    std::int32_t num_seq_states() const { return num_seq_states_; }
    /// Blocks a caller could allocate now (cached ones evicted) with `extra_seq_states` more states.
    std::int32_t num_allocatable_blocks(std::int32_t extra_seq_states = 0) const;
    /// Bytes held by live blocks, cached blocks and sequence states.
    double used_bytes() const;

    /// True when `num_blocks` blocks and `num_seq_states` sequence states fit together now.
    bool can_allocate(std::int32_t num_blocks, std::int32_t num_seq_states = 0) const;
    /// Appends `num_blocks` fresh blocks (ref 1, no hash) to `out`, evicting cached blocks in LRU
    /// order when needed. Requires can_allocate(num_blocks).
    void allocate(std::int32_t num_blocks, std::vector<BlockId>& out);
    /// Takes one sequence state (requires can_allocate(0, 1)); evicts cached blocks to make room.
    void add_seq_state();
    void remove_seq_state();

    /// Adds a reference (a cached block with ref 0 becomes live again).
    void incref(BlockId b);
    /// Drops a reference. At zero a hashed block stays cached (most recently used end of the LRU);
    /// an unhashed block is freed. Double free is an InternalError.
    void release(BlockId b);
    std::int32_t ref_count(BlockId b) const;

    /// The cached or live block holding content hash `h`, if any.
    std::optional<BlockId> find_cached(std::uint64_t h) const;
    /// Indexes live block `b` under `h`. Returns false (and changes nothing) when `h` is already
    /// indexed (another block holds the same content) or `b` already has a hash.
    bool set_hash(BlockId b, std::uint64_t h);
    /// Hashes of cached blocks evicted since the last call (oldest first).
    std::vector<std::uint64_t> take_evicted_hashes();
    std::int64_t num_evictions() const { return num_evictions_; }

    /// Most sequences of `context_tokens` tokens each that fit in an empty pool.
    std::int64_t max_seqs_that_fit(std::int64_t context_tokens) const;
    /// Most blocks one sequence alone can hold (capacity minus one sequence state).
    std::int32_t max_blocks_per_seq() const { return block_capacity(1); }

    /// Recounts every list and index; throws InternalError on any inconsistency (tests use it).
    void check_invariants() const;

private:
    struct Block {
        std::int32_t ref = 0;
        bool has_hash = false;
        std::uint64_t hash = 0;
        std::int32_t lru_prev = -1;
        std::int32_t lru_next = -1;
    };
    /// Blocks that fit next to `num_seq_states` sequence states.
    std::int32_t block_capacity(std::int32_t num_seq_states) const;
    void lru_push_back(std::int32_t i);
    void lru_remove(std::int32_t i);
    void evict_lru();
    void check_id(BlockId b) const;

    KvPoolConfig config_;
    double bytes_per_block_;
    double fixed_bytes_per_seq_;
    std::vector<Block> blocks_;
    std::vector<std::int32_t> free_;
    std::int32_t lru_head_ = -1;
    std::int32_t lru_tail_ = -1;
    std::int32_t num_live_ = 0;
    std::int32_t num_cached_ = 0;
    std::int32_t num_seq_states_ = 0;
    std::int64_t num_evictions_ = 0;
    /// Content hash -> block index (every hashed block, live or cached).
    FlatHashMap64<std::int32_t> by_hash_;
    std::vector<std::uint64_t> evicted_;
};

}  // namespace deepinfer
