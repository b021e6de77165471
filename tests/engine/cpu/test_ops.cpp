// CPU reference ops against hand-computed values.
#include <catch2/catch.hpp>
#include <cmath>

#include "engine/cpu/ops.h"

TEST_CASE("cpu::rms_norm: matches the formula, weighted and unweighted", "[engine][cpu]") {
    const std::vector<float> x = {1, 2, 3, 4, -1, 0, 0, 1};
    const std::vector<float> w = {1, 0.5f, 2, 1};
    std::vector<float> y(8);
    deepinfer::cpu::rms_norm(x, w, y, 2, 4, 1e-6f);
    const double inv0 = 1 / std::sqrt((1 + 4 + 9 + 16) / 4.0 + 1e-6);
    CHECK(y[0] == Approx(1 * inv0));
    CHECK(y[1] == Approx(2 * inv0 * 0.5));
    CHECK(y[2] == Approx(3 * inv0 * 2));
    const double inv1 = 1 / std::sqrt(2 / 4.0 + 1e-6);
    CHECK(y[4] == Approx(-inv1));
    deepinfer::cpu::rms_norm(x, {}, y, 2, 4, 1e-6f);
    CHECK(y[1] == Approx(2 * inv0));
}
