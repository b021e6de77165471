// Curve interpolation/extrapolation, profile files, and the CostModel composition on synthetic curves.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "policies/common/rng.h"
#include "policies/cost/cost_model.h"
#include "tests/support/builders.h"

using namespace deepinfer;

TEST_CASE("Curve: exact at grid points, linear between them", "[policies][cost]") {
    const auto g =
        testing::make_bilinear_group("moe_experts", "tokens", "experts", {1, 10, 100}, {1, 8}, 3, 2, 5, 0.5);
    auto f = [](double x, double y) { return 3 + 2 * x + 5 * y + 0.5 * x * y; };
    for (double x : {1.0, 10.0, 100.0})
        for (double y : {1.0, 8.0}) CHECK(g.curve.eval_us(std::vector<double>{x, y}) == Approx(f(x, y)));
    // Bilinear functions are reproduced exactly by multilinear interpolation.
    CHECK(g.curve.eval_us(std::vector<double>{55, 4.5}) == Approx(f(55, 4.5)));
    CHECK(g.curve.eval_us(std::vector<double>{3, 2}) == Approx(f(3, 2)));
}

TEST_CASE("Curve: flat below the grid, last-segment slope above it", "[policies][cost]") {
    // A roofline-shaped curve: flat 10 us until x = 100, then 0.1 us per unit.
    Curve c({CurveAxis{"tokens", {1, 50, 100, 200, 400}}}, {10, 10, 10, 20, 40});
    CHECK(c.eval_us(std::vector<double>{0.0}) == Approx(10));
    CHECK(c.eval_us(std::vector<double>{800}) == Approx(80));
    CHECK(c.eval_us(std::vector<double>{150}) == Approx(15));
    // A falling last segment never extrapolates below the boundary value.
    Curve d({CurveAxis{"tokens", {1, 2}}}, {10, 8});
    CHECK(d.eval_us(std::vector<double>{100}) == Approx(8));
}

TEST_CASE("Curve: inconsistent grids are rejected", "[policies][cost]") {
    CHECK_THROWS(Curve({CurveAxis{"x", {1, 1}}}, {1, 2}));
    CHECK_THROWS(Curve({CurveAxis{"x", {1, 2}}}, {1}));
    CHECK_THROWS(Curve({CurveAxis{"x", {1, 2}}}, {1, -1}));
}

TEST_CASE("Profile files: round trip and errors naming file and field", "[policies][cost]") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "deepinfer_test_profile";
    fs::remove_all(dir);
    ProfileSet p = testing::make_synthetic_profile();
    save_profile_dir(p, dir.string());
    const ProfileSet q = load_profile_dir(dir.string());
    REQUIRE(q.name == "synthetic");
    REQUIRE(q.groups.size() == p.groups.size());
    for (const auto& [g, prof] : p.groups) REQUIRE(q.at(g).curve.time_us() == prof.curve.time_us());

    // Break one file: a non-increasing axis value.
    {
        auto j = op_group_profile_to_json(p.at("dense"));
        j["axes"][0]["values"][2] = 1;
        std::ofstream(dir / "dense.json") << j.dump();
    }
    try {
        load_profile_dir(dir.string());
        FAIL("expected a ProfileError");
    } catch (const ProfileError& e) {
        CHECK(std::string(e.what()) ==
              (dir / "dense.json").string() +
                  ": /axes/0/values/2: expected a value larger than the previous one, got 1");
    }
    // Wrong kind.
    {
        auto j = op_group_profile_to_json(p.at("dense"));
        j["kind"] = "guessed";
        std::ofstream(dir / "dense.json") << j.dump();
    }
    CHECK_THROWS_WITH(load_profile_dir(dir.string()),
                      Catch::Contains("/kind: expected one of \"measured\", \"derived\""));
    // Wrong time grid shape.
    {
        auto j = op_group_profile_to_json(p.at("dense"));
        j["time_us"].erase(0);
        std::ofstream(dir / "dense.json") << j.dump();
    }
    CHECK_THROWS_WITH(load_profile_dir(dir.string()), Catch::Contains("/time_us: expected an array of 4"));
    fs::remove_all(dir);
}

TEST_CASE("CostModel: composes the op groups as documented", "[policies][cost]") {
    const CostModel m(testing::make_synthetic_profile(), ModelShape::v4_flash());
    StepShape s{.num_tokens = 64,
                .num_seqs = 64,
                .num_sampled = 64,
                .mean_context = 4096,
                .moe_tokens_per_rank = 384,
                .moe_experts_per_rank = 64,
                .ep_tokens = 0};
    const StepCost c = m.step_cost(s);
    CHECK(c.dense_s == Approx((100 + 0.5 * 64) * 1e-6));
    const double attn_us = 5 + 0.01 * 64 + 0.0001 * 4096;
    CHECK(c.attention_s == Approx(43 * attn_us * 1e-6));
    CHECK(c.moe_s == Approx(43 * (10 + 0.02 * 384 + 2 * 64) * 1e-6));
    CHECK(c.ep_comm_s == 0);
    CHECK(c.sampling_s == Approx((20 + 0.1 * 64) * 1e-6));
    CHECK(m.step_time_s(StepShape{}) == 0);
}

TEST_CASE("CostModel: a profile missing a group is refused by name", "[policies][cost]") {
    ProfileSet p = testing::make_synthetic_profile();
    p.groups.erase("sampling");
    CHECK_THROWS_WITH((CostModel(p, ModelShape{})),
                      Catch::Contains("/sampling: expected a profile for op group"));
}

TEST_CASE("shape_of: tokens, sampled sequences and mean context from a plan", "[policies][cost]") {
    StepPlan plan;
    plan.seqs.push_back({.num_computed_tokens = 100, .num_new_tokens = 1, .samples = true});
    plan.seqs.push_back({.num_computed_tokens = 0, .num_new_tokens = 3, .samples = false});
    const StepShape s = shape_of(plan, ModelShape{});
    CHECK(s.num_tokens == 4);
    CHECK(s.num_sampled == 1);
    CHECK(s.mean_context == Approx((1 * 101 + 3 * 2.0) / 4));
    CHECK(expected_distinct_experts(1, 6, 256) == Approx(6));
    CHECK(expected_distinct_experts(1e6, 6, 256) == Approx(256));
}

TEST_CASE("CostModel: a copy outlives its original and predicts the same", "[policies][cost]") {
    const StepShape s{.num_tokens = 100,
                      .num_seqs = 10,
                      .num_sampled = 10,
                      .mean_context = 2048,
                      .moe_tokens_per_rank = 600,
                      .moe_experts_per_rank = 100,
                      .ep_tokens = 50};
    std::optional<CostModel> original(std::in_place, testing::make_synthetic_profile(), ModelShape{});
    const double expected = original->step_time_s(s);
    const CostModel copy = *original;
    original.reset();
    CHECK(copy.step_time_s(s) == expected);
}

TEST_CASE("Curve: the one- and two-axis fast paths return eval_us's doubles exactly", "[policies][cost]") {
    const Curve c1({CurveAxis{"tokens", {1, 2, 4, 8, 16}}}, {3, 4, 6, 9, 15});
    const Curve c2({CurveAxis{"tokens", {1, 4, 16}}, CurveAxis{"context", {1, 8, 64, 512}}},
                   {1, 2, 4, 8, 2, 3, 7, 12, 5, 9, 14, 30});
    Rng rng(5);
    for (int i = 0; i < 5000; ++i) {
        // Below, inside, on grid points and far above the grid.
        const double x =
            i % 7 == 0 ? std::pow(2.0, static_cast<double>(rng.uniform_int(0, 5))) : rng.uniform(-2, 40);
        const double y = rng.uniform(-5, 2000);
        const double p1[1] = {x};
        CHECK(c1.eval1_us(x) == c1.eval_us(std::span<const double>(p1, 1)));
        const double p2[2] = {x, y};
        CHECK(c2.eval2_us(c2.bracket(0, x), c2.bracket(1, y)) == c2.eval_us(std::span<const double>(p2, 2)));
    }
}

TEST_CASE("Curve: bracket matches a binary search with divisions bit for bit", "[policies][cost]") {
    // Power-of-two grids (exact reciprocals, at most one value per binade), power-of-two spans only,
    // several values in one binade, grids through zero and with neither property.
    const std::vector<std::vector<double>> grids = {
        {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536},
        {0.25, 0.5, 1, 2, 4},
        {1, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288,
         1048576},
        {3, 5, 6, 7.5, 100, 1e6},
        {0, 1, 3, 7, 15},
        {-6, -2, 2, 10},
        {1, 10, 100, 1000},
        {3, 5},
        {4}};
    auto reference = [](const std::vector<double>& v, double x) {
        Curve::Bracket b;
        if (v.size() == 1 || x <= v.front()) return b;
        b.hi = x >= v.back() ? v.size() - 1
                             : static_cast<std::size_t>(std::upper_bound(v.begin(), v.end(), x) - v.begin());
        b.lo = b.hi - 1;
        b.w = (x - v[b.lo]) / (v[b.hi] - v[b.lo]);
        b.nearest = x >= v.back() ? v.size() - 1 : (b.w < 0.5 ? b.lo : b.hi);
        return b;
    };
    Rng rng(17);
    for (const auto& v : grids) {
        const Curve c({CurveAxis{"x", v}}, std::vector<double>(v.size(), 1.0));
        std::vector<double> xs = {-1e300, -1.0, 0.0, 1e-300, 1e300, std::numeric_limits<double>::infinity()};
        for (double g : v) {
            xs.push_back(g);
            xs.push_back(std::nextafter(g, -1e308));
            xs.push_back(std::nextafter(g, 1e308));
        }
        for (int i = 0; i < 20000; ++i) {
            const double lo = v.front() - 2;
            const double hi = v.back() * 1.5 + 2;
            xs.push_back(i % 2 == 0 ? rng.uniform(lo, hi) : std::exp2(rng.uniform(-3, std::log2(hi))));
        }
        for (double x : xs) {
            const Curve::Bracket got = c.bracket(0, x);
            const Curve::Bracket want = reference(v, x);
            INFO("x = " << x);
            REQUIRE(got.lo == want.lo);
            REQUIRE(got.hi == want.hi);
            REQUIRE(std::bit_cast<std::uint64_t>(got.w) == std::bit_cast<std::uint64_t>(want.w));
            REQUIRE(got.nearest == want.nearest);
        }
    }
}
