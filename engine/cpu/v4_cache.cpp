// TokenRing and SeqCache rollback.
#include "engine/cpu/v4_cache.h"

#include <algorithm>

#include "policies/common/check.h"

namespace deepinfer::cpu {

TokenRing::TokenRing(std::int64_t capacity, std::int64_t width)
    : capacity_(capacity), width_(width), data_(static_cast<std::size_t>(capacity * width)) {
    DI_CHECK(capacity > 0 && width > 0, "TokenRing capacity=" << capacity << " width=" << width);
}

void TokenRing::push(const float* row) {
    const auto slot = static_cast<std::size_t>((end_ % capacity_) * width_);
    std::copy(row, row + width_, data_.begin() + static_cast<std::ptrdiff_t>(slot));
    ++end_;
    valid_begin_ = std::max(valid_begin_, end_ - capacity_);
}

const float* TokenRing::row(std::int64_t pos) const {
    DI_CHECK(pos >= valid_begin_ && pos < end_,
             "TokenRing row " << pos << " outside [" << valid_begin_ << ", " << end_ << ")");
    return data_.data() + (pos % capacity_) * width_;
}

void TokenRing::truncate(std::int64_t new_end) {
    DI_CHECK(new_end <= end_ && new_end >= valid_begin_, "TokenRing cannot truncate to "
                                                             << new_end << " (holds [" << valid_begin_ << ", "
                                                             << end_ << "))");
    end_ = new_end;
}

namespace {

void truncate_compressor(CompressorCache& c, std::int64_t new_length, std::int64_t rate) {
    c.raw.truncate(std::min(c.raw.end(), new_length));
    const std::int64_t keep = new_length / rate;
    if (c.num_entries() > keep) c.entries.resize(static_cast<std::size_t>(keep * c.dim));
}

}  // namespace

void SeqCache::truncate(std::int64_t new_length) {
    DI_CHECK(new_length >= 0 && new_length <= length,
             "SeqCache::truncate to " << new_length << " of " << length);
    DI_CHECK(length - new_length <= rollback_horizon, "rolling back " << (length - new_length)
                                                                      << " tokens exceeds the horizon of "
                                                                      << rollback_horizon);
    for (LayerCache& l : layers) {
        l.kv.truncate(new_length);
        for (auto* c : {&l.compressor, &l.indexer})
            if (c->has_value()) truncate_compressor(**c, new_length, (*c)->rate);
    }
    length = new_length;
    if (mtp_length > new_length) truncate_mtp(new_length);
}

void SeqCache::truncate_mtp(std::int64_t new_length) {
    DI_CHECK(new_length <= mtp_length, "truncate_mtp to " << new_length << " of " << mtp_length);
    mtp.kv.truncate(new_length);
    mtp_length = new_length;
}

}  // namespace deepinfer::cpu
