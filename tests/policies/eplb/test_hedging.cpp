// EPLB hedging against drift: without a drift weight it never raises the uniform split's max GPU load,
// it makes single rank swaps (an expert taking a heavier neighbour's load) cost less, options checked.
#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>

#include "policies/eplb/rebalance.h"
#include "policies/eplb/synthetic_loads.h"

using namespace deepinfer;

namespace {

LoadMatrix zipf_loads(double exponent, std::int32_t layers, std::int32_t experts, std::uint64_t seed) {
    SyntheticLoadSpec spec{.shape = SyntheticLoadSpec::Shape::kZipf,
                           .num_layers = layers,
                           .num_experts = experts,
                           .zipf_exponent = exponent,
                           .tokens_per_layer = 100000.0};
    Rng rng(seed);
    return make_synthetic_loads(spec, 1, rng).front();
}

// Mean over layers and over rank swaps (rank i < 16 with rank j in (i, i + 8]) of max/mean GPU load
// after the two experts trade loads, with the placement's own split.
double mean_swap_imbalance(const PlacementResult& r, const LoadMatrix& loads, std::int32_t gpus) {
    double sum = 0.0;
    std::int32_t n = 0;
    for (std::int32_t l = 0; l < loads.num_layers; ++l) {
        const auto w = loads.layer(l);
        std::vector<std::int32_t> by_load(w.size());
        std::iota(by_load.begin(), by_load.end(), 0);
        std::stable_sort(by_load.begin(), by_load.end(), [&](std::int32_t a, std::int32_t b) {
            return w[static_cast<std::size_t>(a)] > w[static_cast<std::size_t>(b)];
        });
        for (std::size_t i = 0; i < 16; ++i)
            for (std::size_t j = i + 1; j <= i + 8; ++j) {
                std::vector<double> swapped(w.begin(), w.end());
                std::swap(swapped[static_cast<std::size_t>(by_load[i])],
                          swapped[static_cast<std::size_t>(by_load[j])]);
                sum += measure_balance(r.placement.layers[static_cast<std::size_t>(l)], swapped, gpus)
                           .imbalance();
                ++n;
            }
    }
    return sum / n;
}

}  // namespace

TEST_CASE("EPLB hedging: placing for the given loads, the uniform split's max GPU load never rises",
          "[policies][eplb]") {
    for (std::uint64_t seed = 1; seed <= 3; ++seed)
        for (double zipf : {0.5, 1.0, 1.5}) {
            const auto loads = zipf_loads(zipf, 3, 64, seed);
            for (std::int32_t gpus : {8, 16, 32}) {
                PlacementOptions plain{
                    .num_gpus = gpus, .redundant_per_gpu = 2, .split = SplitMode::kUniform};
                plain.hedge_reach = 0;
                PlacementOptions hedged = plain;
                hedged.hedge_reach = 8;
                const auto a = compute_placement(loads, plain);
                const auto b = compute_placement(loads, hedged);
                REQUIRE(b.placement.validate().empty());
                for (std::size_t l = 0; l < a.layers.size(); ++l)
                    CHECK(b.layers[l].max_gpu_load <= a.layers[l].max_gpu_load * (1.0 + 1e-12));
            }
        }
}

TEST_CASE("EPLB hedging: rank swaps between neighbours cost the hedged placement less", "[policies][eplb]") {
    const auto split = GENERATE(SplitMode::kWeighted, SplitMode::kUniform);
    const auto loads = zipf_loads(1.0, 6, 128, 7);
    PlacementOptions plain{.num_gpus = 32, .redundant_per_gpu = 4, .split = split};
    plain.hedge_reach = 0;
    PlacementOptions hedged = plain;
    hedged.hedge_reach = 8;
    const auto a = compute_placement(loads, plain);
    const auto b = compute_placement(loads, hedged);
    REQUIRE(b.placement.validate().empty());
    const double before = mean_swap_imbalance(a, loads, 32);
    const double after = mean_swap_imbalance(b, loads, 32);
    INFO("mean max/mean after one rank swap: unhedged " << before << ", hedged " << after);
    CHECK(after < before);
    // The weighted split still reaches the lower bound on the loads it was placed for.
    if (split == SplitMode::kWeighted)
        for (const auto& layer : b.layers) CHECK(layer.max_gpu_load <= layer.lower_bound * 1.005);
}

TEST_CASE("EPLB hedging: out-of-range hedging options are rejected with the option named",
          "[policies][eplb]") {
    LoadMatrix loads{.num_layers = 1, .num_experts = 8, .tokens = std::vector<double>(8, 1.0)};
    PlacementOptions o{.num_gpus = 4, .redundant_per_gpu = 1};
    o.hedge_reach = -1;
    CHECK_THROWS_WITH(compute_placement(loads, o), Catch::Contains("hedge_reach"));
    o = {.num_gpus = 4, .redundant_per_gpu = 1};
    o.hedge_slack = 2.0;
    CHECK_THROWS_WITH(compute_placement(loads, o), Catch::Contains("hedge_slack"));
    o = {.num_gpus = 4, .redundant_per_gpu = 1};
    o.drift_weight = -0.5;
    CHECK_THROWS_WITH(compute_placement(loads, o), Catch::Contains("drift_weight"));
    o = {.num_gpus = 4, .redundant_per_gpu = 1};
    o.hedge_min_pair = 1.5;
    CHECK_THROWS_WITH(compute_placement(loads, o), Catch::Contains("hedge_min_pair"));
}

TEST_CASE("EPLB hedging: with drift weight, every placement keeps its invariants", "[policies][eplb]") {
    for (double weight : {0.0, 0.3, 1.0})
        for (std::int32_t gpus : {16, 32}) {
            const auto loads = zipf_loads(1.2, 3, 64, 11);
            PlacementOptions o{.num_gpus = gpus, .redundant_per_gpu = 1};
            o.drift_weight = weight;
            const auto r = compute_placement(loads, o);
            CHECK(r.placement.validate().empty());
            CHECK(r.placement.slots_per_gpu() == o.slots_per_gpu(64));
        }
}
