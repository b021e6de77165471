// KvTierIndex implementation: per-class LRU lists (expiry is monotone inside a class), threaded
// through a slab of nodes, beside a flat hash index of slots; only the lists are ever walked, so
// order never depends on the index.
#include "policies/kv/kv_tier.h"

#include "policies/common/check.h"

namespace deepinfer {

KvTierIndex::KvTierIndex(std::int64_t capacity_blocks, std::array<double, kNumTrafficClasses> ttl_s)
    : capacity_blocks_(capacity_blocks), ttl_s_(ttl_s) {
    DI_CHECK(capacity_blocks_ >= 0, "capacity_blocks=" << capacity_blocks_);
    for (double t : ttl_s_) DI_CHECK(t > 0.0, "ttl " << t);
}

bool KvTierIndex::contains(std::uint64_t h, double now_s) const {
    const Slot* s = entries_.find(h);
    return s != nullptr && nodes_[*s].expiry_s > now_s;
}

void KvTierIndex::touch(std::uint64_t h, double now_s) {
    if (const Slot* const found = entries_.find(h); found != nullptr) refresh(*found, now_s);
}

void KvTierIndex::refresh(Slot s, double now_s) {
    Node& n = nodes_[s];
    if (lru_[static_cast<std::size_t>(n.cls)].tail != s) {
        unlink(s);
        push_back(s);
    }
    n.expiry_s = now_s + ttl_s_[static_cast<std::size_t>(n.cls)];
}

bool KvTierIndex::insert(std::uint64_t h, TrafficClass c, double now_s) {
    if (!enabled()) return false;
    expire(now_s);
    const Slot* const found = entries_.find(h);
    const bool held = found != nullptr;
    if (held) {
        // A block shared by both classes keeps the longer-lived class (no bytes move).
        const Slot s = *found;
        if (ttl_s_[static_cast<std::size_t>(c)] <= ttl_s_[static_cast<std::size_t>(nodes_[s].cls)]) {
            refresh(s, now_s);
            return false;
        }
        release(s);
    }
    if (size() >= capacity_blocks_) evict_one();
    Slot s = free_;
    if (s != kNil) {
        free_ = nodes_[s].next;
    } else {
        DI_CHECK(nodes_.size() < kNil, "tier index over " << nodes_.size() << " nodes");
        s = static_cast<Slot>(nodes_.size());
        nodes_.emplace_back();
    }
    Node& n = nodes_[s];
    n.hash = h;
    n.cls = c;
    n.expiry_s = now_s + ttl_s_[static_cast<std::size_t>(c)];
    push_back(s);
    entries_.insert(h, s);
    return !held;
}

void KvTierIndex::expire(double now_s) {
    for (const List& list : lru_) {
        while (list.head != kNil && nodes_[list.head].expiry_s <= now_s) {
            release(list.head);
            ++num_expired_;
        }
    }
}

void KvTierIndex::unlink(Slot s) {
    Node& n = nodes_[s];
    List& list = lru_[static_cast<std::size_t>(n.cls)];
    (n.prev == kNil ? list.head : nodes_[n.prev].next) = n.next;
    (n.next == kNil ? list.tail : nodes_[n.next].prev) = n.prev;
}

void KvTierIndex::push_back(Slot s) {
    Node& n = nodes_[s];
    List& list = lru_[static_cast<std::size_t>(n.cls)];
    n.prev = list.tail;
    n.next = kNil;
    (list.tail == kNil ? list.head : nodes_[list.tail].next) = s;
    list.tail = s;
}

void KvTierIndex::release(Slot s) {
    unlink(s);
    Node& n = nodes_[s];
    const bool indexed = entries_.erase(n.hash);
    DI_CHECK(indexed, "tier index lost hash " << n.hash);
    n.next = free_;
    free_ = s;
}

void KvTierIndex::evict_one() {
    // The head of each class list expires first within its class; evict the earliest of them
    // (ties: lower class index).
    int victim = -1;
    double best = 0.0;
    for (int c = 0; c < kNumTrafficClasses; ++c) {
        const Slot head = lru_[static_cast<std::size_t>(c)].head;
        if (head == kNil) continue;
        const double e = nodes_[head].expiry_s;
        if (victim < 0 || e < best) {
            victim = c;
            best = e;
        }
    }
    DI_CHECK(victim >= 0, "evict_one on an empty tier");
    release(lru_[static_cast<std::size_t>(victim)].head);
    ++num_evicted_;
}

}  // namespace deepinfer
