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
    lookup_.resize(axes_.size());
    for (std::size_t d = 0; d < axes_.size(); ++d) {
        const std::vector<double>& v = axes_[d].values;
        AxisLookup& l = lookup_[d];
        l.inv_span.assign(v.size() - 1, 0.0);
        for (std::size_t i = 0; i + 1 < v.size(); ++i) {
            // Exact when the span is a power of two (mantissa 0.5) with a normal reciprocal.
            const double span = v[i + 1] - v[i];
            int e = 0;
            if (std::isnormal(span) && std::frexp(span, &e) == 0.5 && std::isnormal(1.0 / span))
                l.inv_span[i] = 1.0 / span;
        }
        if (v.size() > 1 && v.front() > 0 && std::isnormal(v.front())) {
            auto binade = [](double x) { return std::bit_cast<std::uint64_t>(x) >> 52; };
            l.first_binade = binade(v.front());
            for (std::uint64_t e = l.first_binade; e <= binade(v.back()); ++e) {
                const double low = std::bit_cast<double>(e << 52);  // 2^(e - 1023)
                l.binade_first_above.push_back(static_cast<std::uint32_t>(upper_index(v, low)));
            }
        }
    }
}

std::size_t Curve::upper_index(const std::vector<double>& v, double x) {
    return static_cast<std::size_t>(std::upper_bound(v.begin(), v.end(), x) - v.begin());
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

}  // namespace deepinfer
