// Curve: a hardware time curve over an N-dimensional measured grid, with multilinear interpolation
// inside the grid and a stated extrapolation rule outside it.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "policies/common/check.h"

namespace deepinfer {

struct CurveAxis {
    std::string name;
    /// Strictly increasing grid values.
    std::vector<double> values;
};

/// Time (microseconds) at each grid point, row-major over `axes` (the last axis varies fastest).
///
/// Evaluation at a point x:
/// * inside the grid: multilinear interpolation between the surrounding grid points;
/// * below an axis' first value: flat (the latency floor: a kernel never gets faster than its
///   smallest measured launch);
/// * above an axis' last value: linear continuation of the last grid segment on that axis (the
///   sloped, throughput-bound part of a roofline: time grows in proportion to the work), with the
///   slope clamped at >= 0 and the result never below the boundary value.
class Curve {
public:
    Curve() = default;
    /// Throws std::invalid_argument on an inconsistent grid (callers turn it into a ProfileError).
    Curve(std::vector<CurveAxis> axes, std::vector<double> time_us);

    double eval_us(std::span<const double> point) const;

    /// Where a coordinate falls on one axis under the rules above: the grid indices either side,
    /// the weight of the upper one (> 1 when extrapolating above) and the nearest grid index.
    /// Curves whose axes hold the same values share brackets.
    struct Bracket {
        std::size_t lo = 0;
        std::size_t hi = 0;
        double w = 0;
        std::size_t nearest = 0;
    };
    Bracket bracket(std::size_t axis, double x) const {
        const std::vector<double>& v = axes_[axis].values;
        const AxisLookup& l = lookup_[axis];
        const std::size_t n = v.size();
        Bracket b;
        if (n == 1 || x <= v.front()) return b;
        if (!(x < v.back())) {
            b.hi = n - 1;
            b.lo = b.hi - 1;
            b.w = upper_weight(v, l, b.lo, x);
            b.nearest = b.hi;
            return b;
        }
        // Inside: the first grid value above x.
        b.hi = l.binade_first_above.empty() ? upper_index(v, x) : upper_index_by_binade(v, l, x);
        b.lo = b.hi - 1;
        b.w = upper_weight(v, l, b.lo, x);
        b.nearest = b.w < 0.5 ? b.lo : b.hi;
        return b;
    }
    // NOTE: eval1_us and eval2_us unroll eval_us's corner loop with the same operations in the same
    // order (1 · x == x exactly), so they return the same doubles; they are inline because the cost
    // model calls them in the DSpark policy's inner loop (three attention curves share brackets).
    /// eval_us of a one-axis curve at x (same result, bit for bit, without the generic loops).
    double eval1_us(double x) const {
        DI_CHECK(axes_.size() == 1, "curve has " << axes_.size() << " axes, point 1");
        const Bracket b = bracket(0, x);
        double sum = 0;
        if (const double weight = 1 - b.w; weight != 0) sum += weight * time_us_[b.lo];
        if (b.w != 0) sum += b.w * time_us_[b.hi];
        if (b.w > 1) sum = std::max(sum, time_us_[b.nearest]);
        return std::max(sum, 0.0);
    }
    /// eval_us of a two-axis curve at the point bracketed by `a` (axis 0) and `b` (axis 1), each
    /// from bracket() of this curve or of a curve with the same axis values (same result, bit for bit).
    double eval2_us(const Bracket& a, const Bracket& b) const {
        DI_CHECK(axes_.size() == 2, "curve has " << axes_.size() << " axes, point 2");
        const std::size_t s0 = strides_[0];
        double sum = 0;
        const double a0 = 1 - a.w;
        const double b0 = 1 - b.w;
        if (const double weight = a0 * b0; weight != 0) sum += weight * time_us_[a.lo * s0 + b.lo];
        if (const double weight = a.w * b0; weight != 0) sum += weight * time_us_[a.hi * s0 + b.lo];
        if (const double weight = a0 * b.w; weight != 0) sum += weight * time_us_[a.lo * s0 + b.hi];
        if (const double weight = a.w * b.w; weight != 0) sum += weight * time_us_[a.hi * s0 + b.hi];
        if (a.w > 1 || b.w > 1) sum = std::max(sum, time_us_[a.nearest * s0 + b.nearest]);
        return std::max(sum, 0.0);
    }
    std::size_t num_axes() const { return axes_.size(); }
    const std::vector<CurveAxis>& axes() const { return axes_; }
    const std::vector<double>& time_us() const { return time_us_; }
    /// Index of the axis called `name`, or -1.
    int axis_index(const std::string& name) const;

private:
    /// Per axis, what makes bracket() cheap; derived from the axis values at construction.
    struct AxisLookup {
        /// When the first value is a positive normal double: per binade [2^e, 2^(e + 1)) from the
        /// first value's to the last value's, the index of the first value above 2^e (for x in the
        /// binade, the first value above x is at most a few steps further; none on a power-of-two
        /// grid). Empty otherwise.
        std::vector<std::uint32_t> binade_first_above;
        /// Biased exponent of the first value (the binade of binade_first_above[0]).
        std::uint64_t first_binade = 0;
        /// Per segment, 1 / (v[i + 1] - v[i]) when that reciprocal is exact (a power-of-two span), else 0.
        std::vector<double> inv_span;
    };
    /// Index of the first value above x (x strictly inside the grid).
    static std::size_t upper_index(const std::vector<double>& v, double x);
    /// upper_index through the binade table (x strictly inside the grid, so a positive normal double).
    static std::size_t upper_index_by_binade(const std::vector<double>& v, const AxisLookup& l, double x) {
        std::size_t i = l.binade_first_above[(std::bit_cast<std::uint64_t>(x) >> 52) - l.first_binade];
        while (v[i] <= x) ++i;
        return i;
    }
    /// (x - v[lo]) / (v[lo + 1] - v[lo]); with an exact reciprocal a product, which rounds the same
    /// real number, so the same double.
    static double upper_weight(const std::vector<double>& v, const AxisLookup& l, std::size_t lo, double x) {
        const double inv = l.inv_span[lo];
        return inv != 0 ? (x - v[lo]) * inv : (x - v[lo]) / (v[lo + 1] - v[lo]);
    }

    std::vector<CurveAxis> axes_;
    std::vector<AxisLookup> lookup_;
    std::vector<double> time_us_;
    std::vector<std::size_t> strides_;
};

}  // namespace deepinfer
