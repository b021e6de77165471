// KvTierIndex implementation: per-class LRU lists (expiry is monotone inside a class) beside a flat
// hash index; only the lists are ever walked, so order never depends on the index.
#include "policies/kv/kv_tier.h"

#include "policies/common/check.h"

namespace deepinfer {

KvTierIndex::KvTierIndex(std::int64_t capacity_blocks, std::array<double, kNumTrafficClasses> ttl_s)
    : capacity_blocks_(capacity_blocks), ttl_s_(ttl_s) {
    DI_CHECK(capacity_blocks_ >= 0, "capacity_blocks=" << capacity_blocks_);
    for (double t : ttl_s_) DI_CHECK(t > 0.0, "ttl " << t);
}

bool KvTierIndex::contains(std::uint64_t h, double now_s) const {
    const Entry* e = entries_.find(h);
    return e != nullptr && e->expiry_s > now_s;
}

void KvTierIndex::touch(std::uint64_t h, double now_s) {
    Entry* const found = entries_.find(h);
    if (found == nullptr) return;
    Entry& e = *found;
    auto& list = lru_[static_cast<std::size_t>(e.cls)];
    list.splice(list.end(), list, e.pos);
    e.expiry_s = now_s + ttl_s_[static_cast<std::size_t>(e.cls)];
}

bool KvTierIndex::insert(std::uint64_t h, TrafficClass c, double now_s) {
    if (!enabled()) return false;
    expire(now_s);
    const Entry* const found = entries_.find(h);
    const bool held = found != nullptr;
    if (held) {
        // A block shared by both classes keeps the longer-lived class (no bytes move).
        if (ttl_s_[static_cast<std::size_t>(c)] <= ttl_s_[static_cast<std::size_t>(found->cls)]) {
            touch(h, now_s);
            return false;
        }
        erase(h);
    }
    if (size() >= capacity_blocks_) evict_one();
    auto& list = lru_[static_cast<std::size_t>(c)];
    list.push_back(h);
    entries_.insert(h, Entry{.cls = c,
                             .expiry_s = now_s + ttl_s_[static_cast<std::size_t>(c)],
                             .pos = std::prev(list.end())});
    return !held;
}

void KvTierIndex::expire(double now_s) {
    for (auto& list : lru_) {
        while (!list.empty() && at(list.front()).expiry_s <= now_s) {
            entries_.erase(list.front());
            list.pop_front();
            ++num_expired_;
        }
    }
}

const KvTierIndex::Entry& KvTierIndex::at(std::uint64_t h) const {
    const Entry* e = entries_.find(h);
    DI_CHECK(e != nullptr, "tier index lost hash " << h);
    return *e;
}

void KvTierIndex::erase(std::uint64_t h) {
    const Entry& e = at(h);
    lru_[static_cast<std::size_t>(e.cls)].erase(e.pos);
    entries_.erase(h);
}

void KvTierIndex::evict_one() {
    // The head of each class list expires first within its class; evict the earliest of them
    // (ties: lower class index).
    int victim = -1;
    double best = 0.0;
    for (int c = 0; c < kNumTrafficClasses; ++c) {
        const auto& list = lru_[static_cast<std::size_t>(c)];
        if (list.empty()) continue;
        const double e = at(list.front()).expiry_s;
        if (victim < 0 || e < best) {
            victim = c;
            best = e;
        }
    }
    DI_CHECK(victim >= 0, "evict_one on an empty tier");
    auto& list = lru_[static_cast<std::size_t>(victim)];
    entries_.erase(list.front());
    list.pop_front();
    ++num_evicted_;
}

}  // namespace deepinfer
