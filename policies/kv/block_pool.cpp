// KvBlockPool implementation: free list (LIFO), intrusive LRU list of cached blocks, hash index.
#include "policies/kv/block_pool.h"

#include <cmath>

#include "policies/common/check.h"

namespace deepinfer {

KvBlockPool::KvBlockPool(KvPoolConfig config)
    : config_(config),
      bytes_per_block_(kv_bytes_per_block(config.shape, config.block_tokens)),
      fixed_bytes_per_seq_(kv_fixed_bytes_per_seq(config.shape)) {
    DI_CHECK(config_.block_tokens > 0, "block_tokens=" << config_.block_tokens);
    DI_CHECK(bytes_per_block_ > 0.0 && config_.capacity_bytes >= 0.0,
             "bytes_per_block=" << bytes_per_block_ << " capacity=" << config_.capacity_bytes);
    const double n = std::floor(config_.capacity_bytes / bytes_per_block_);
    DI_CHECK(n < 2e9, "too many blocks: " << n);
    blocks_.resize(static_cast<std::size_t>(n));
    free_.reserve(blocks_.size());
    // LIFO free list: block 0 is handed out first.
    for (std::int32_t i = static_cast<std::int32_t>(blocks_.size()) - 1; i >= 0; --i) free_.push_back(i);
}

std::int32_t KvBlockPool::block_capacity(std::int32_t num_seq_states) const {
    const double room = config_.capacity_bytes - num_seq_states * fixed_bytes_per_seq_;
    if (room < 0.0) return -1;
    const double n = std::floor(room / bytes_per_block_);
    return n >= static_cast<double>(blocks_.size()) ? num_blocks_total() : static_cast<std::int32_t>(n);
}

std::int32_t KvBlockPool::num_allocatable_blocks(std::int32_t extra_seq_states) const {
    const std::int32_t n = block_capacity(num_seq_states_ + extra_seq_states) - num_live_;
    return n > 0 ? n : 0;
}

double KvBlockPool::used_bytes() const {
    return (num_live_ + num_cached_) * bytes_per_block_ + num_seq_states_ * fixed_bytes_per_seq_;
}

bool KvBlockPool::can_allocate(std::int32_t num_blocks, std::int32_t num_seq_states) const {
    if (num_blocks < 0 || num_seq_states < 0) return false;
    return static_cast<std::int64_t>(num_live_) + num_blocks <=
           block_capacity(num_seq_states_ + num_seq_states);
}

void KvBlockPool::allocate(std::int32_t num_blocks, std::vector<BlockId>& out) {
    DI_CHECK(can_allocate(num_blocks), "allocate(" << num_blocks << ") without room: live " << num_live_
                                                   << ", capacity " << block_capacity(num_seq_states_));
    const std::int32_t cap = block_capacity(num_seq_states_);
    for (std::int32_t k = 0; k < num_blocks; ++k) {
        if (num_live_ + num_cached_ >= cap || free_.empty()) evict_lru();
        const std::int32_t i = free_.back();
        free_.pop_back();
        blocks_[static_cast<std::size_t>(i)].ref = 1;
        ++num_live_;
        out.push_back(BlockId(i));
    }
}

void KvBlockPool::add_seq_state() {
    DI_CHECK(can_allocate(0, 1), "add_seq_state without room");
    ++num_seq_states_;
    const std::int32_t cap = block_capacity(num_seq_states_);
    while (num_live_ + num_cached_ > cap) evict_lru();
}

void KvBlockPool::remove_seq_state() {
    DI_CHECK(num_seq_states_ > 0, "remove_seq_state with none held");
    --num_seq_states_;
}

void KvBlockPool::check_id(BlockId b) const {
    DI_CHECK(b.value() >= 0 && b.value() < num_blocks_total(), "block id " << b << " out of range");
}

void KvBlockPool::incref(BlockId b) {
    check_id(b);
    Block& blk = blocks_[static_cast<std::size_t>(b.value())];
    if (blk.ref == 0) {
        DI_CHECK(blk.has_hash, "incref of free block " << b);
        lru_remove(b.value());
        --num_cached_;
        ++num_live_;
    }
    ++blk.ref;
}

void KvBlockPool::release(BlockId b) {
    check_id(b);
    Block& blk = blocks_[static_cast<std::size_t>(b.value())];
    DI_CHECK(blk.ref > 0, "double free of block " << b);
    if (--blk.ref > 0) return;
    --num_live_;
    if (blk.has_hash) {
        lru_push_back(b.value());
        ++num_cached_;
    } else {
        free_.push_back(b.value());
    }
}

std::int32_t KvBlockPool::ref_count(BlockId b) const {
    check_id(b);
    return blocks_[static_cast<std::size_t>(b.value())].ref;
}

std::optional<BlockId> KvBlockPool::find_cached(std::uint64_t h) const {
    const std::int32_t* i = by_hash_.find(h);
    if (i == nullptr) return std::nullopt;
    return BlockId(*i);
}

bool KvBlockPool::set_hash(BlockId b, std::uint64_t h) {
    check_id(b);
    Block& blk = blocks_[static_cast<std::size_t>(b.value())];
    DI_CHECK(blk.ref > 0, "set_hash on unreferenced block " << b);
    if (blk.has_hash || by_hash_.contains(h)) return false;
    blk.has_hash = true;
    blk.hash = h;
    by_hash_.insert(h, b.value());
    return true;
}

std::vector<std::uint64_t> KvBlockPool::take_evicted_hashes() {
    std::vector<std::uint64_t> out;
    out.swap(evicted_);
    return out;
}

std::int64_t KvBlockPool::max_seqs_that_fit(std::int64_t context_tokens) const {
    const std::int64_t blocks = (context_tokens + config_.block_tokens - 1) / config_.block_tokens;
    const double per_seq = fixed_bytes_per_seq_ + static_cast<double>(blocks) * bytes_per_block_;
    if (per_seq <= 0.0) return 0;
    return static_cast<std::int64_t>(std::floor(config_.capacity_bytes / per_seq));
}

void KvBlockPool::lru_push_back(std::int32_t i) {
    Block& blk = blocks_[static_cast<std::size_t>(i)];
    blk.lru_prev = lru_tail_;
    blk.lru_next = -1;
    if (lru_tail_ >= 0)
        blocks_[static_cast<std::size_t>(lru_tail_)].lru_next = i;
    else
        lru_head_ = i;
    lru_tail_ = i;
}

void KvBlockPool::lru_remove(std::int32_t i) {
    Block& blk = blocks_[static_cast<std::size_t>(i)];
    if (blk.lru_prev >= 0)
        blocks_[static_cast<std::size_t>(blk.lru_prev)].lru_next = blk.lru_next;
    else
        lru_head_ = blk.lru_next;
    if (blk.lru_next >= 0)
        blocks_[static_cast<std::size_t>(blk.lru_next)].lru_prev = blk.lru_prev;
    else
        lru_tail_ = blk.lru_prev;
    blk.lru_prev = blk.lru_next = -1;
}

void KvBlockPool::evict_lru() {
    DI_CHECK(lru_head_ >= 0, "no cached block to evict");
    const std::int32_t i = lru_head_;
    lru_remove(i);
    Block& blk = blocks_[static_cast<std::size_t>(i)];
    by_hash_.erase(blk.hash);
    evicted_.push_back(blk.hash);
    blk.has_hash = false;
    blk.hash = 0;
    --num_cached_;
    ++num_evictions_;
    free_.push_back(i);
}

void KvBlockPool::check_invariants() const {
    std::int32_t live = 0, cached = 0, hashed = 0;
    for (const Block& b : blocks_) {
        DI_CHECK(b.ref >= 0, "negative ref count");
        live += b.ref > 0 ? 1 : 0;
        cached += (b.ref == 0 && b.has_hash) ? 1 : 0;
        hashed += b.has_hash ? 1 : 0;
    }
    DI_CHECK(live == num_live_ && cached == num_cached_,
             "live " << live << "/" << num_live_ << " cached " << cached << "/" << num_cached_);
    std::int32_t in_lru = 0;
    for (std::int32_t i = lru_head_; i >= 0; i = blocks_[static_cast<std::size_t>(i)].lru_next) {
        const Block& b = blocks_[static_cast<std::size_t>(i)];
        DI_CHECK(b.ref == 0 && b.has_hash, "LRU holds a live or unhashed block " << i);
        DI_CHECK(++in_lru <= cached, "LRU list longer than the cached count (cycle?)");
    }
    DI_CHECK(in_lru == cached, "LRU has " << in_lru << " blocks, cached " << cached);
    std::vector<char> seen(blocks_.size(), 0);
    for (std::int32_t i : free_) {
        const Block& b = blocks_[static_cast<std::size_t>(i)];
        DI_CHECK(b.ref == 0 && !b.has_hash, "free list holds a used block " << i);
        DI_CHECK(!seen[static_cast<std::size_t>(i)], "block " << i << " twice on the free list");
        seen[static_cast<std::size_t>(i)] = 1;
    }
    DI_CHECK(live + cached + static_cast<std::int32_t>(free_.size()) == num_blocks_total(), "blocks leaked");
    DI_CHECK(static_cast<std::int32_t>(by_hash_.size()) == hashed, "hash index size " << by_hash_.size());
    by_hash_.for_each([&](std::uint64_t h, std::int32_t i) {
        DI_CHECK(blocks_[static_cast<std::size_t>(i)].hash == h, "stale index");
    });
    DI_CHECK(live + cached <= block_capacity(num_seq_states_) || live + cached == 0, "over capacity");
}

}  // namespace deepinfer
