// Curve evaluation: multilinear inside, flat below, last-segment-linear above.
#include "policies/cost/curve.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "policies/common/check.h"

namespace deepinfer {

Curve::Curve(std::vector<CurveAxis> axes, std::vector<double> time_us) : axes_(std::move(axes)), time_us_(std::move(time_us)) {
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
        throw std::invalid_argument("grid has " + std::to_string(n) + " points but " + std::to_string(time_us_.size()) +
                                    " times");
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
        const auto& v = axes_[k].values;
        const double x = point[k];
        if (v.size() == 1 || x <= v.front()) {
            lo[k] = hi[k] = 0;
            w[k] = 0;
        } else if (x >= v.back()) {
            hi[k] = v.size() - 1;
            lo[k] = hi[k] - 1;
            w[k] = (x - v[lo[k]]) / (v[hi[k]] - v[lo[k]]);
        } else {
            hi[k] = static_cast<std::size_t>(std::upper_bound(v.begin(), v.end(), x) - v.begin());
            lo[k] = hi[k] - 1;
            w[k] = (x - v[lo[k]]) / (v[hi[k]] - v[lo[k]]);
        }
        const std::size_t nearest = x <= v.front() ? 0 : (x >= v.back() ? v.size() - 1 : (w[k] < 0.5 ? lo[k] : hi[k]));
        boundary_index += nearest * strides_[k];
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

}  // namespace deepinfer
