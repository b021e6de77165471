// Curve: a hardware time curve over an N-dimensional measured grid, with multilinear interpolation
// inside the grid and a stated extrapolation rule outside it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

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
    Bracket bracket(std::size_t axis, double x) const;
    /// eval_us of a one-axis curve at x (same result, bit for bit, without the generic loops).
    double eval1_us(double x) const;
    /// eval_us of a two-axis curve at the point bracketed by `a` (axis 0) and `b` (axis 1), each
    /// from bracket() of this curve or of a curve with the same axis values (same result, bit for bit).
    double eval2_us(const Bracket& a, const Bracket& b) const;
    std::size_t num_axes() const { return axes_.size(); }
    const std::vector<CurveAxis>& axes() const { return axes_; }
    const std::vector<double>& time_us() const { return time_us_; }
    /// Index of the axis called `name`, or -1.
    int axis_index(const std::string& name) const;

private:
    std::vector<CurveAxis> axes_;
    std::vector<double> time_us_;
    std::vector<std::size_t> strides_;
};

}  // namespace deepinfer
