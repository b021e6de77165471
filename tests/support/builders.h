// Test builders: requests, plans and profiles without setup boilerplate.
#pragma once

#include <cstdint>
#include <vector>

#include "policies/cost/profile.h"
#include "policies/request.h"

namespace deepinfer::testing {

/// `n` requests with ids first_id.., prompt `prompt_len` tokens (ids 1..), `max_new_tokens` outputs.
inline std::vector<Request> make_requests(int n, std::int32_t prompt_len, std::int32_t max_new_tokens = 4,
                                          std::int64_t first_id = 0) {
    std::vector<Request> out;
    for (int i = 0; i < n; ++i) {
        Request r;
        r.id = RequestId(first_id + i);
        r.prompt_token_ids.resize(static_cast<std::size_t>(prompt_len));
        for (std::int32_t t = 0; t < prompt_len; ++t) r.prompt_token_ids[static_cast<std::size_t>(t)] = 1 + t;
        r.prompt_len_tokens = prompt_len;
        r.max_new_tokens = max_new_tokens;
        out.push_back(std::move(r));
    }
    return out;
}

/// A one-axis op-group profile t(x) = a + b x sampled on `grid`.
inline OpGroupProfile make_linear_group(const char* group, const char* axis, std::vector<double> grid, double a,
                                        double b) {
    std::vector<double> t;
    for (double x : grid) t.push_back(a + b * x);
    return OpGroupProfile{.op_group = group,
                          .meta = {.hardware = "test", .kind = "derived", .method = "synthetic", .date = "2026-01-01",
                                   .build = "test"},
                          .curve = Curve({CurveAxis{axis, std::move(grid)}}, std::move(t))};
}

/// A two-axis op-group profile t(x, y) = a + b x + c y + d x y.
inline OpGroupProfile make_bilinear_group(const char* group, const char* ax, const char* ay, std::vector<double> gx,
                                          std::vector<double> gy, double a, double b, double c, double d) {
    std::vector<double> t;
    for (double x : gx)
        for (double y : gy) t.push_back(a + b * x + c * y + d * x * y);
    return OpGroupProfile{.op_group = group,
                          .meta = {.hardware = "test", .kind = "derived", .method = "synthetic", .date = "2026-01-01",
                                   .build = "test"},
                          .curve = Curve({CurveAxis{ax, std::move(gx)}, CurveAxis{ay, std::move(gy)}}, std::move(t))};
}

/// A complete synthetic profile whose every group is linear in its axes.
inline ProfileSet make_synthetic_profile() {
    ProfileSet p;
    p.name = "synthetic";
    auto add = [&](OpGroupProfile g) { p.groups.emplace(g.op_group, std::move(g)); };
    add(make_linear_group("dense", "tokens", {1, 64, 1024, 8192}, 100, 0.5));
    for (const char* g : {"attention_swa", "attention_csa", "attention_hca"})
        add(make_bilinear_group(g, "tokens", "context", {1, 64, 1024}, {128, 4096, 65536}, 5, 0.01, 0.0001, 0.0));
    add(make_bilinear_group("moe_experts", "tokens", "experts", {1, 64, 1024, 8192}, {1, 8, 64, 256}, 10, 0.02, 2, 0));
    add(make_linear_group("sampling", "seqs", {1, 256}, 20, 0.1));
    add(make_linear_group("ep_dispatch_combine", "tokens", {1, 8192}, 15, 0.01));
    return p;
}

}  // namespace deepinfer::testing
