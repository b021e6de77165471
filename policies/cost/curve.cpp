// Curve evaluation: multilinear inside, flat below, last-segment-linear above.
#include "policies/cost/curve.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "policies/common/check.h"

namespace deepinfer {

Curve::Curve(std::vector<CurveAxis> axes, std::vector<double> time_us)
    : axes_(std::move(axes)), time_us_(std::move(time_us)) {
    if (axes_.empty()) throw std::invalid_argument("a curve needs at least one axis");
    std::size_t n = 1;
    for (const auto& a : axes_) {
        if (a.values.empty()) throw std::invalid_argument("axis \"" + a.name + "\" has no values");
        for (std::size_t i = 1; i < a.values.size(); ++i)
            if (!(a.values[i] > a.values[i - 1]))
                throw std::invalid_argument("axis \"" + a.name + "\" values must be strictly increasing");
        n *= a.values.size();
    }
    if (time_us_.size() != n)
        throw std::invalid_argument("grid has " + std::to_string(n) + " points but " +
                                    std::to_string(time_us_.size()) + " times");
    for (double t : time_us_)
        if (!std::isfinite(t) || t < 0) throw std::invalid_argument("times must be finite and >= 0");
    strides_.assign(axes_.size(), 1);
    for (std::size_t d = axes_.size() - 1; d > 0; --d) strides_[d - 1] = strides_[d] * axes_[d].values.size();
}

int Curve::axis_index(const std::string& name) const {
    for (std::size_t i = 0; i < axes_.size(); ++i)
        if (axes_[i].name == name) return static_cast<int>(i);
    return -1;
}

Curve::Bracket Curve::bracket(std::size_t axis, double x) const {
    const auto& v = axes_[axis].values;
    Bracket b;
    if (v.size() == 1 || x <= v.front()) {
        b.lo = b.hi = 0;
        b.w = 0;
    } else if (x >= v.back()) {
        b.hi = v.size() - 1;
        b.lo = b.hi - 1;
        b.w = (x - v[b.lo]) / (v[b.hi] - v[b.lo]);
    } else {
        b.hi = static_cast<std::size_t>(std::upper_bound(v.begin(), v.end(), x) - v.begin());
        b.lo = b.hi - 1;
        b.w = (x - v[b.lo]) / (v[b.hi] - v[b.lo]);
    }
    b.nearest = x <= v.front() ? 0 : (x >= v.back() ? v.size() - 1 : (b.w < 0.5 ? b.lo : b.hi));
    return b;
}

double Curve::eval_us(std::span<const double> point) const {
    DI_CHECK(point.size() == axes_.size(), "curve has " << axes_.size() << " axes, point " << point.size());
    const std::size_t d = axes_.size();
    // Per axis: two grid indices and the weight of the upper one (> 1 when extrapolating above).
    std::size_t lo[8];
    std::size_t hi[8];
    double w[8];
    std::size_t boundary_index = 0;  // the grid point nearest to x, for the never-below rule
    DI_CHECK(d <= 8, "curves support at most 8 axes");
    for (std::size_t k = 0; k < d; ++k) {
        const Bracket b = bracket(k, point[k]);
        lo[k] = b.lo;
        hi[k] = b.hi;
        w[k] = b.w;
        boundary_index += b.nearest * strides_[k];
    }
    double sum = 0;
    for (std::size_t corner = 0; corner < (std::size_t{1} << d); ++corner) {
        double weight = 1;
        std::size_t index = 0;
        for (std::size_t k = 0; k < d; ++k) {
            const bool upper = (corner >> k) & 1U;
            weight *= upper ? w[k] : 1 - w[k];
            index += (upper ? hi[k] : lo[k]) * strides_[k];
        }
        if (weight != 0) sum += weight * time_us_[index];
    }
    // Extrapolation above the grid never predicts less than the nearest grid point.
    bool extrapolated = false;
    for (std::size_t k = 0; k < d; ++k) extrapolated = extrapolated || w[k] > 1;
    if (extrapolated) sum = std::max(sum, time_us_[boundary_index]);
    return std::max(sum, 0.0);
}

// NOTE: eval1_us and eval2_us unroll eval_us's corner loop with the same operations in the same
// order (1 · x == x exactly), so they return the same doubles; the cost model calls them in the
// DSpark policy's inner loop.
double Curve::eval1_us(double x) const {
    DI_CHECK(axes_.size() == 1, "curve has " << axes_.size() << " axes, point 1");
    const Bracket b = bracket(0, x);
    double sum = 0;
    if (const double weight = 1 - b.w; weight != 0) sum += weight * time_us_[b.lo];
    if (b.w != 0) sum += b.w * time_us_[b.hi];
    if (b.w > 1) sum = std::max(sum, time_us_[b.nearest]);
    return std::max(sum, 0.0);
}

double Curve::eval2_us(const Bracket& a, const Bracket& b) const {
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

}  // namespace deepinfer
