// Strong integer ids: a RequestId cannot be passed where a BlockId or a GpuRank is expected.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>

namespace deepinfer {

/// An integer id tagged with the kind of thing it names. Construction is explicit; `value()` gives
/// the raw integer back for indexing and printing.
template <class Tag, class Rep = std::int32_t>
class StrongId {
public:
    using rep_type = Rep;
    constexpr StrongId() = default;
    constexpr explicit StrongId(Rep v) : v_(v) {}
    [[nodiscard]] constexpr Rep value() const { return v_; }
    constexpr auto operator<=>(const StrongId&) const = default;

private:
    Rep v_{};
};

template <class Tag, class Rep>
std::ostream& operator<<(std::ostream& os, StrongId<Tag, Rep> id) {
    return os << id.value();
}

using RequestId = StrongId<struct RequestIdTag, std::int64_t>;
using BlockId = StrongId<struct BlockIdTag, std::int32_t>;
using LogicalExpertId = StrongId<struct LogicalExpertIdTag, std::int32_t>;
using PhysicalSlotId = StrongId<struct PhysicalSlotIdTag, std::int32_t>;
using GpuRank = StrongId<struct GpuRankTag, std::int32_t>;

}  // namespace deepinfer

template <class Tag, class Rep>
struct std::hash<deepinfer::StrongId<Tag, Rep>> {
    std::size_t operator()(deepinfer::StrongId<Tag, Rep> id) const noexcept {
        return std::hash<Rep>{}(id.value());
    }
};
