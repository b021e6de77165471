// FlatHashMap64: a small open-addressing hash map from uint64 keys to values (linear probing,
// backward-shift deletion, power-of-two capacity, grows at 0.7 load). For hot content-hash indexes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "policies/common/rng.h"

namespace deepinfer {

/// Maps uint64 keys to `V` (default constructible, movable). Keys are mixed with mix64 before
/// probing. Pointers returned by `find`/`insert` stay valid only until the next insert or erase.
/// Iteration order (`for_each`) is unspecified and must never reach outputs.
template <typename V>
class FlatHashMap64 {
public:
    FlatHashMap64() = default;

    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    /// Number of slots (0 or a power of two).
    std::size_t capacity() const { return slots_.size(); }

    /// The value held under `key`, or nullptr.
    V* find(std::uint64_t key) {
        const std::size_t i = find_slot(key);
        return i == kNone ? nullptr : &slots_[i].value;
    }
    const V* find(std::uint64_t key) const {
        const std::size_t i = find_slot(key);
        return i == kNone ? nullptr : &slots_[i].value;
    }
    bool contains(std::uint64_t key) const { return find_slot(key) != kNone; }

    /// Inserts `key -> value` unless `key` is present (then nothing changes). Returns the held value
    /// and whether it was inserted (like std::unordered_map::emplace).
    std::pair<V*, bool> insert(std::uint64_t key, V value) {
        if ((size_ + 1) * 10 > slots_.size() * 7) grow();
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t i = home(key, mask);; i = (i + 1) & mask) {
            Slot& s = slots_[i];
            if (!s.used) {
                s.used = true;
                s.key = key;
                s.value = std::move(value);
                ++size_;
                return {&s.value, true};
            }
            if (s.key == key) return {&s.value, false};
        }
    }

    /// Removes `key`; returns whether it was present.
    bool erase(std::uint64_t key) {
        std::size_t i = find_slot(key);
        if (i == kNone) return false;
        // Backward-shift deletion: pull later entries of the probe run into the hole when the hole
        // lies on their probe path (cyclically between their home slot and their slot).
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
            Slot& s = slots_[j];
            if (!s.used) break;
            const std::size_t h = home(s.key, mask);
            if (((j - h) & mask) >= ((j - i) & mask)) {
                slots_[i].key = s.key;
                slots_[i].value = std::move(s.value);
                i = j;
            }
        }
        slots_[i].used = false;
        slots_[i].value = V{};
        --size_;
        return true;
    }

    void clear() {
        slots_.clear();
        size_ = 0;
    }

    /// Calls f(key, const value&) for every entry, in unspecified order (checks only).
    template <typename F>
    void for_each(F&& f) const {
        for (const Slot& s : slots_)
            if (s.used) f(s.key, s.value);
    }

private:
    struct Slot {
        std::uint64_t key = 0;
        V value{};
        bool used = false;
    };
    static constexpr std::size_t kNone = ~std::size_t{0};
    static constexpr std::size_t kMinCapacity = 16;

    static std::size_t home(std::uint64_t key, std::size_t mask) {
        return static_cast<std::size_t>(mix64(key)) & mask;
    }

    std::size_t find_slot(std::uint64_t key) const {
        if (size_ == 0) return kNone;
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t i = home(key, mask);; i = (i + 1) & mask) {
            const Slot& s = slots_[i];
            if (!s.used) return kNone;
            if (s.key == key) return i;
        }
    }

    void grow() {
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.resize(old.empty() ? kMinCapacity : old.size() * 2);
        const std::size_t mask = slots_.size() - 1;
        for (Slot& o : old) {
            if (!o.used) continue;
            std::size_t i = home(o.key, mask);
            while (slots_[i].used) i = (i + 1) & mask;
            slots_[i].used = true;
            slots_[i].key = o.key;
            slots_[i].value = std::move(o.value);
        }
    }

    std::vector<Slot> slots_;
    std::size_t size_ = 0;
};

}  // namespace deepinfer
