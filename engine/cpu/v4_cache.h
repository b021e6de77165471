// Per-sequence V4 caches for the CPU reference (V4_SPEC §5.1): the sliding K=V ring, compressor
// raw rows (which also serve as the open-window buffer and the CSA overlap state), compressed
// entries and indexer keys, the MTP block's ring — all truncatable for rollback of rejected drafts.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace deepinfer::cpu {

/// Fixed-capacity ring of float rows addressed by absolute token position. Rows older than
/// `end - capacity` are gone; truncate() keeps the rows that are still in the ring.
class TokenRing {
public:
    TokenRing() = default;
    TokenRing(std::int64_t capacity, std::int64_t width);

    /// Appends the row of position end().
    void push(const float* row);
    /// Row of absolute position `pos` (valid_begin() <= pos < end()).
    const float* row(std::int64_t pos) const;
    std::int64_t end() const { return end_; }
    /// Oldest position still held.
    std::int64_t valid_begin() const { return valid_begin_; }
    std::int64_t width() const { return width_; }
    /// Drops positions >= new_end (new_end >= valid_begin()).
    void truncate(std::int64_t new_end);

private:
    std::int64_t capacity_ = 0;
    std::int64_t width_ = 0;
    std::int64_t end_ = 0;
    std::int64_t valid_begin_ = 0;
    std::vector<float> data_;
};

/// One compressor's state (main CSA/HCA compressor or the CSA indexer's).
struct CompressorCache {
    /// Raw projections per token: [c (width) | z (width)], without the position bias. Holds the open
    /// window, the previous complete window (the CSA overlap) and the rollback horizon.
    TokenRing raw;
    /// Emitted entries, row-major [num_entries, dim] (normed and roped). Entry w covers window w.
    std::vector<float> entries;
    /// Entry width and compression rate (tokens per entry).
    std::int64_t dim = 0;
    std::int64_t rate = 0;

    std::int64_t num_entries() const {
        return dim == 0 ? 0 : static_cast<std::int64_t>(entries.size()) / dim;
    }
};

struct LayerCache {
    /// Sliding-window K=V rows (roped), [head_dim] each.
    TokenRing kv;
    std::optional<CompressorCache> compressor;
    std::optional<CompressorCache> indexer;
};

/// Everything one sequence keeps between steps.
struct SeqCache {
    /// Tokens processed by the main model (= position of the next token).
    std::int64_t length = 0;
    std::vector<LayerCache> layers;
    /// The MTP block's sliding ring and how many positions it has processed.
    LayerCache mtp;
    std::int64_t mtp_length = 0;
    /// Most tokens truncate() may take back (the ring headroom).
    std::int64_t rollback_horizon = 0;

    /// Rolls the main model's state back to `new_length` tokens (and the MTP state to at most that):
    /// sliding rings, compressor buffers/overlaps, compressed entries and indexer keys.
    /// Requires length - new_length <= rollback_horizon.
    void truncate(std::int64_t new_length);
    /// Rolls back only the MTP state to `new_length` positions.
    void truncate_mtp(std::int64_t new_length);
};

}  // namespace deepinfer::cpu
