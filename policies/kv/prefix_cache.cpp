// PrefixCache implementation.
#include "policies/kv/prefix_cache.h"

#include <cmath>
#include <limits>

#include "policies/common/check.h"
#include "policies/common/rng.h"

namespace deepinfer {

namespace {
constexpr std::uint64_t kChainRoot = 0x6a09e667f3bcc908ULL;

std::int64_t capacity_blocks(const KvTierConfig& t, double bytes_per_block) {
    return static_cast<std::int64_t>(std::floor(t.capacity_bytes / bytes_per_block));
}
constexpr double kNever = std::numeric_limits<double>::infinity();
}  // namespace

PrefixCache::PrefixCache(PrefixCacheConfig config, KvBlockPool& pool, KvTierIndex* shared_store)
    : config_(config),
      pool_(pool),
      host_(config.enabled ? capacity_blocks(config.host, pool.bytes_per_block()) : 0, {kNever, kNever}),
      own_store_(config.enabled && shared_store == nullptr
                     ? capacity_blocks(config.store, pool.bytes_per_block())
                     : 0,
                 config.store_ttl_s),
      store_(shared_store != nullptr ? shared_store : &own_store_) {
    DI_CHECK(config_.swa_replay_tokens >= 0, "swa_replay_tokens=" << config_.swa_replay_tokens);
}

std::vector<std::uint64_t> PrefixCache::block_hashes(const Request& r, std::int32_t block_tokens) {
    if (!r.prompt_block_hashes.empty()) return r.prompt_block_hashes;
    std::vector<std::uint64_t> out;
    const std::size_t n = r.prompt_token_ids.size() / static_cast<std::size_t>(block_tokens);
    out.reserve(n);
    std::uint64_t h = kChainRoot;
    for (std::size_t b = 0; b < n; ++b) {
        h = mix64(h ^ 0x9e3779b97f4a7c15ULL);
        for (std::size_t t = b * block_tokens; t < (b + 1) * block_tokens; ++t)
            h = mix64(h + static_cast<std::uint32_t>(r.prompt_token_ids[t]));
        out.push_back(h);
    }
    return out;
}

PrefixMatch PrefixCache::match(std::span<const std::uint64_t> hashes, std::int32_t max_blocks,
                               double now_s) const {
    PrefixMatch m;
    if (!config_.enabled) return m;
    const std::size_t limit = std::min(hashes.size(), static_cast<std::size_t>(std::max(max_blocks, 0)));
    for (std::size_t i = 0; i < limit; ++i) {
        const std::uint64_t h = hashes[i];
        if (auto b = pool_.find_cached(h)) {
            m.tiers.push_back(KvTier::kHbm);
            m.num_unreferenced_hbm += pool_.ref_count(*b) == 0 ? 1 : 0;
        } else if (host_.contains(h, now_s)) {
            m.tiers.push_back(KvTier::kHost);
            ++m.num_host_blocks;
        } else if (store_->contains(h, now_s)) {
            m.tiers.push_back(KvTier::kStore);
            ++m.num_store_blocks;
        } else {
            break;
        }
    }
    m.num_blocks = static_cast<std::int32_t>(m.tiers.size());
    if (m.num_blocks > 0) {
        const KvTier last = m.tiers.back();
        const bool has_swa = (last == KvTier::kHbm && config_.hbm_keeps_swa_state) ||
                             (last == KvTier::kHost && config_.host_keeps_swa_state);
        if (!has_swa)
            m.num_replay_tokens = std::min(config_.swa_replay_tokens, m.num_blocks * pool_.block_tokens());
    }
    return m;
}

void PrefixCache::add_transfer(std::vector<KvTransfer>& out, RequestId r, KvTier from, KvTier to,
                               std::int32_t num_blocks) const {
    if (num_blocks <= 0) return;
    if (!out.empty() && out.back().request == r && out.back().from == from && out.back().to == to) {
        out.back().num_tokens += num_blocks * pool_.block_tokens();
        out.back().num_bytes += num_blocks * pool_.bytes_per_block();
        return;
    }
    out.push_back(KvTransfer{.request = r,
                             .from = from,
                             .to = to,
                             .num_tokens = num_blocks * pool_.block_tokens(),
                             .num_bytes = num_blocks * pool_.bytes_per_block()});
}

void PrefixCache::acquire(const PrefixMatch& m, std::span<const std::uint64_t> hashes, RequestId request,
                          TrafficClass cls, double now_s, std::vector<BlockId>& table,
                          std::vector<KvTransfer>& transfers) {
    DI_CHECK(pool_.can_allocate(m.num_pool_blocks()), "acquire without pool room");
    // NOTE: reference the HBM hits before allocating anything: an allocation may evict an
    // unreferenced cached block, and it must not be one this match is about to reuse.
    const std::size_t base = table.size();
    table.resize(base + static_cast<std::size_t>(m.num_blocks), BlockId(-1));
    for (std::int32_t i = 0; i < m.num_blocks; ++i) {
        if (m.tiers[static_cast<std::size_t>(i)] != KvTier::kHbm) continue;
        const auto b = pool_.find_cached(hashes[static_cast<std::size_t>(i)]);
        DI_CHECK(b.has_value(), "HBM hit vanished between match and acquire");
        pool_.incref(*b);
        table[base + static_cast<std::size_t>(i)] = *b;
    }
    std::int32_t from_host = 0;
    std::int32_t from_store = 0;
    std::vector<BlockId> fresh;
    for (std::int32_t i = 0; i < m.num_blocks; ++i) {
        const std::uint64_t h = hashes[static_cast<std::size_t>(i)];
        const KvTier tier = m.tiers[static_cast<std::size_t>(i)];
        if (tier == KvTier::kHbm) continue;
        fresh.clear();
        pool_.allocate(1, fresh);
        pool_.set_hash(fresh[0], h);
        table[base + static_cast<std::size_t>(i)] = fresh[0];
        if (tier == KvTier::kHost) {
            host_.touch(h, now_s);
            ++from_host;
        } else {
            store_->insert(h, cls, now_s);  // a read refreshes the TTL (and may upgrade the class)
            ++from_store;
        }
    }
    add_transfer(transfers, request, KvTier::kHost, KvTier::kHbm, from_host);
    add_transfer(transfers, request, KvTier::kStore, KvTier::kHbm, from_store);
    demote_evicted(request, now_s, transfers);
}

void PrefixCache::on_block_computed(BlockId b, std::uint64_t h, RequestId request, TrafficClass cls,
                                    double now_s, std::vector<KvTransfer>& transfers) {
    if (!config_.enabled) return;
    pool_.set_hash(b, h);  // false when another block already holds this content: keep that one
    if (config_.write_to_store && store_->insert(h, cls, now_s))
        add_transfer(transfers, request, KvTier::kHbm, KvTier::kStore, 1);
}

void PrefixCache::demote_evicted(RequestId cause, double now_s, std::vector<KvTransfer>& transfers) {
    const std::vector<std::uint64_t> evicted = pool_.take_evicted_hashes();
    if (!host_.enabled()) return;
    std::int32_t n = 0;
    for (std::uint64_t h : evicted) n += host_.insert(h, TrafficClass::kChat, now_s) ? 1 : 0;
    add_transfer(transfers, cause, KvTier::kHbm, KvTier::kHost, n);
}

double PrefixCache::transfer_time_s(const KvTransfer& t) const {
    auto tier_cfg = [&](KvTier k) -> const KvTierConfig* {
        if (k == KvTier::kHost) return &config_.host;
        if (k == KvTier::kStore) return &config_.store;
        return nullptr;
    };
    if (const KvTierConfig* src = tier_cfg(t.from); src != nullptr && t.to == KvTier::kHbm)
        return t.num_bytes / src->read_bytes_per_s;
    if (const KvTierConfig* dst = tier_cfg(t.to); dst != nullptr) return t.num_bytes / dst->write_bytes_per_s;
    return 0.0;
}

}  // namespace deepinfer
