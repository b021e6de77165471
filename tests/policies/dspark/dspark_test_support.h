// Test support for DSpark: cost models whose step time is a chosen curve of the step's tokens, and
// random draft batches.
#pragma once

#include <algorithm>
#include <vector>

#include "policies/common/rng.h"
#include "policies/cost/cost_model.h"
#include "policies/dspark/verify_policy.h"
#include "tests/support/builders.h"

namespace deepinfer::testing {

/// A CostModel whose step time is `time_us(tokens)` (piecewise linear on `grid`, linear beyond its
/// last segment): every other op group costs 0.
inline CostModel make_token_curve_cost(std::vector<double> grid, std::vector<double> time_us) {
    ProfileSet p;
    p.name = "token-curve";
    auto meta = ProfileMeta{
        .hardware = "test", .kind = "derived", .method = "synthetic", .date = "2026-01-01", .build = "test"};
    auto add = [&](const char* g, std::vector<CurveAxis> axes, std::size_t n) {
        p.groups.emplace(g, OpGroupProfile{.op_group = g,
                                           .meta = meta,
                                           .curve = Curve(std::move(axes), std::vector<double>(n, 0.0))});
    };
    p.groups.emplace(
        "dense", OpGroupProfile{.op_group = "dense",
                                .meta = meta,
                                .curve = Curve({CurveAxis{"tokens", std::move(grid)}}, std::move(time_us))});
    for (const char* g : {"attention_swa", "attention_csa", "attention_hca"})
        add(g, {CurveAxis{"tokens", {1, 2}}, CurveAxis{"context", {1, 2}}}, 4);
    add("moe_experts", {CurveAxis{"tokens", {1, 2}}, CurveAxis{"experts", {1, 2}}}, 4);
    add("sampling", {CurveAxis{"seqs", {1, 2}}}, 2);
    add("ep_dispatch_combine", {CurveAxis{"tokens", {1, 2}}}, 2);
    return CostModel(std::move(p), ModelShape::v4_flash());
}

/// Flat (memory-bound) until `knee_tokens`, then `slope_us` per token: the roofline shape.
inline CostModel make_roofline_cost(double floor_us, double knee_tokens, double slope_us) {
    return make_token_curve_cost({1, knee_tokens, knee_tokens + 1000},
                                 {floor_us, floor_us, floor_us + 1000 * slope_us});
}

inline SeqDrafts make_drafts(std::int64_t id, std::vector<float> c) {
    SeqDrafts d;
    d.request = RequestId(id);
    d.num_drafts = static_cast<std::int32_t>(c.size());
    std::copy(c.begin(), c.end(), d.confidence.begin());
    return d;
}

/// `n` sequences with `k` drafts each; confidences Beta-distributed around `mean` (ids 0..n-1).
inline std::vector<SeqDrafts> random_drafts(Rng& rng, std::int32_t n, std::int32_t k, double mean = 0.7,
                                            double concentration = 3.0) {
    std::vector<SeqDrafts> out(static_cast<std::size_t>(n));
    for (std::int32_t i = 0; i < n; ++i) {
        SeqDrafts& d = out[static_cast<std::size_t>(i)];
        d.request = RequestId(i);
        d.num_drafts = k;
        for (std::int32_t j = 0; j < k; ++j)
            d.confidence[static_cast<std::size_t>(j)] =
                static_cast<float>(rng.beta(mean * concentration, (1 - mean) * concentration));
    }
    return out;
}

}  // namespace deepinfer::testing
