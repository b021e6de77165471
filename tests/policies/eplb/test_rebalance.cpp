// EPLB placement: invariants over many seeds and shapes, the lower bound, determinism, node-first.
#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>

#include "policies/eplb/rebalance.h"
#include "policies/eplb/synthetic_loads.h"

using namespace deepinfer;

namespace {

LoadMatrix synthetic(SyntheticLoadSpec::Shape shape, double zipf, std::int32_t layers, std::int32_t experts,
                     std::uint64_t seed) {
    SyntheticLoadSpec spec;
    spec.shape = shape;
    spec.num_layers = layers;
    spec.num_experts = experts;
    spec.zipf_exponent = zipf;
    spec.num_hot = 3;
    spec.hot_fraction = 0.6;
    spec.tokens_per_layer = 50000.0;
    Rng rng(seed);
    return make_synthetic_loads(spec, 1, rng).front();
}

void check_invariants(const PlacementResult& r, const PlacementOptions& o, const LoadMatrix& loads) {
    const auto& p = r.placement;
    INFO(p.validate());
    REQUIRE(p.validate().empty());  // every expert placed, no two replicas on a GPU, shares sum to 1
    REQUIRE(p.num_gpus == o.num_gpus);
    REQUIRE(p.slots_per_gpu() == o.slots_per_gpu(loads.num_experts));
    REQUIRE(p.num_slots() == p.num_gpus * p.slots_per_gpu());  // equal slot count on every GPU
    REQUIRE(p.layers.size() == static_cast<std::size_t>(loads.num_layers));
    for (std::int32_t l = 0; l < loads.num_layers; ++l) {
        const auto& b = r.layers[static_cast<std::size_t>(l)];
        CHECK(b.max_gpu_load >= b.lower_bound * (1.0 - 1e-9));
        CHECK(b.lower_bound >= b.mean_gpu_load * (1.0 - 1e-12));
        const auto counts = replica_counts(p.layers[static_cast<std::size_t>(l)], loads.num_experts);
        CHECK(std::accumulate(counts.begin(), counts.end(), 0) == p.num_slots());
    }
}

}  // namespace

TEST_CASE("EPLB: placements keep every invariant across shapes, skews and seeds", "[policies][eplb]") {
    const auto split = GENERATE(SplitMode::kWeighted, SplitMode::kUniform);
    const auto gpus = GENERATE(4, 8, 32);
    const auto redundant = GENERATE(0, 1, 3);
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
        for (double zipf : {0.0, 0.8, 1.5}) {
            const auto loads = synthetic(SyntheticLoadSpec::Shape::kZipf, zipf, 3, 64, seed);
            PlacementOptions o{
                .num_gpus = gpus, .num_nodes = 1, .redundant_per_gpu = redundant, .split = split};
            check_invariants(compute_placement(loads, o), o, loads);
        }
        const auto hot = synthetic(SyntheticLoadSpec::Shape::kHot, 0.0, 3, 64, seed);
        PlacementOptions o{.num_gpus = gpus, .num_nodes = 1, .redundant_per_gpu = redundant, .split = split};
        check_invariants(compute_placement(hot, o), o, hot);
    }
}

TEST_CASE("EPLB: the weighted split reaches the lower bound with redundant slots", "[policies][eplb]") {
    const auto gpus = GENERATE(8, 16, 32);
    const auto redundant = GENERATE(1, 4);
    for (double zipf : {0.5, 1.0, 1.5}) {
        const auto loads = synthetic(SyntheticLoadSpec::Shape::kZipf, zipf, 4, 128, 11);
        PlacementOptions o{.num_gpus = gpus, .redundant_per_gpu = redundant, .split = SplitMode::kWeighted};
        const auto r = compute_placement(loads, o);
        for (const auto& b : r.layers) CHECK(b.max_gpu_load <= b.lower_bound * 1.005);
    }
}

TEST_CASE("EPLB: the lower bound is the mean with redundancy and the hottest expert without",
          "[policies][eplb]") {
    const std::vector<double> w = {100, 1, 1, 1, 1, 1, 1, 1};
    CHECK(max_load_lower_bound(w, 4, 2) == Approx(100.0));        // no redundant slot: 100 cannot split
    CHECK(max_load_lower_bound(w, 4, 3) == Approx(107.0 / 4.0));  // one per GPU: the mean
    const std::vector<double> flat = {5, 5, 5, 5};
    CHECK(max_load_lower_bound(flat, 2, 2) == Approx(10.0));
}

TEST_CASE("EPLB: a tiny instance is placed exactly as worked out by hand", "[policies][eplb]") {
    // 4 experts, 2 GPUs, 1 redundant slot each: 3 slots per GPU, 6 slots in all.
    LoadMatrix loads{.num_layers = 1, .num_experts = 4, .tokens = {60, 20, 10, 10}};
    PlacementOptions o{.num_gpus = 2, .redundant_per_gpu = 1, .split = SplitMode::kUniform};
    const auto r = compute_placement(loads, o);
    // Greedy counts: expert 0 takes an extra slot (60 > 20) and reaches the cap of one replica per GPU;
    // expert 1 (20 > 10) takes the other one.
    const auto counts = replica_counts(r.placement.layers[0], 4);
    CHECK(counts == std::vector<std::int32_t>{2, 2, 1, 1});
    CHECK(r.layers[0].max_gpu_load == Approx(50.0));  // {0:30, 1:10, 2:10} and {0:30, 1:10, 3:10}
    CHECK(r.layers[0].lower_bound == Approx(50.0));
}

TEST_CASE("EPLB: placement is deterministic and ties go to the lower id", "[policies][eplb]") {
    const auto loads = synthetic(SyntheticLoadSpec::Shape::kZipf, 1.0, 5, 64, 3);
    PlacementOptions o{.num_gpus = 8, .num_nodes = 2, .redundant_per_gpu = 2, .hierarchical = true};
    const auto a = compute_placement(loads, o);
    const auto b = compute_placement(loads, o);
    for (std::size_t l = 0; l < a.placement.layers.size(); ++l) {
        CHECK(a.placement.layers[l].phy2log == b.placement.layers[l].phy2log);
        CHECK(a.placement.layers[l].replica_share == b.placement.layers[l].replica_share);
    }
    // All-equal loads, no redundancy: LPT hands out experts in id order, GPU 0 first.
    LoadMatrix flat{.num_layers = 1, .num_experts = 4, .tokens = {1, 1, 1, 1}};
    const auto f = compute_placement(flat, {.num_gpus = 2, .split = SplitMode::kUniform});
    std::vector<std::int32_t> ids;
    for (auto e : f.placement.layers[0].phy2log) ids.push_back(e.value());
    CHECK(ids == std::vector<std::int32_t>{0, 2, 1, 3});
}

TEST_CASE("EPLB: node-first placement keeps each group and all its replicas on one node",
          "[policies][eplb]") {
    const auto nodes = GENERATE(2, 4);
    const auto loads = synthetic(SyntheticLoadSpec::Shape::kZipf, 1.2, 4, 64, 5);
    PlacementOptions o{
        .num_gpus = 16, .num_nodes = nodes, .redundant_per_gpu = 2, .num_groups = 8, .hierarchical = true};
    const auto r = compute_placement(loads, o);
    check_invariants(r, o, loads);
    const std::int32_t slots_per_node = r.placement.num_slots() / nodes;
    for (const auto& layer : r.placement.layers) {
        std::vector<std::int32_t> node_of_group(8, -1);
        for (std::size_t s = 0; s < layer.phy2log.size(); ++s) {
            const std::int32_t node = static_cast<std::int32_t>(s) / slots_per_node;
            auto& seen = node_of_group[static_cast<std::size_t>(layer.phy2log[s].value() / 8)];
            if (seen < 0) seen = node;
            CHECK(seen == node);
        }
        for (std::int32_t n = 0; n < nodes; ++n)
            CHECK(std::count(node_of_group.begin(), node_of_group.end(), n) == 8 / nodes);
    }
}

TEST_CASE("EPLB: options that cannot fit are rejected with the option named", "[policies][eplb]") {
    LoadMatrix loads{.num_layers = 1, .num_experts = 8, .tokens = std::vector<double>(8, 1.0)};
    CHECK_THROWS_WITH(compute_placement(loads, {.num_gpus = 3}),
                      "eplb options: num_gpus: expected a positive divisor of the 8 experts, got 3");
    CHECK_THROWS_WITH(compute_placement(loads, {.num_gpus = 4, .num_nodes = 3}),
                      Catch::Contains("num_nodes"));
    CHECK_THROWS_WITH(compute_placement(loads, {.num_gpus = 4, .redundant_per_gpu = 7}),
                      Catch::Contains("redundant_per_gpu"));
    CHECK_THROWS_WITH(
        compute_placement(loads, {.num_gpus = 4, .num_nodes = 4, .num_groups = 2, .hierarchical = true}),
        Catch::Contains("num_groups"));
}

TEST_CASE("EPLB: a layer without load still gets a valid placement", "[policies][eplb]") {
    LoadMatrix loads{.num_layers = 2, .num_experts = 8, .tokens = std::vector<double>(16, 0.0)};
    loads.tokens[9] = 5.0;  // hash-routed layers look like this early on: few experts seen
    const auto r = compute_placement(loads, {.num_gpus = 4, .redundant_per_gpu = 1});
    CHECK(r.placement.validate().empty());
    CHECK(r.layers[0].imbalance() == 1.0);
    CHECK(r.layers[1].max_gpu_load == Approx(5.0 / 4.0));
}

TEST_CASE("EPLB: improve_layer lowers the max GPU load with few copies", "[policies][eplb]") {
    // Place for one load, then the popularity drifts (another seed): a few rounds from the old slots
    // recover balance, each round changing at most two slots (a swap; a replica move changes one).
    const auto split = GENERATE(SplitMode::kWeighted, SplitMode::kUniform);
    const PlacementOptions o{.num_gpus = 16, .num_nodes = 1, .redundant_per_gpu = 1, .split = split};
    const auto before = synthetic(SyntheticLoadSpec::Shape::kZipf, 0.8, 1, 64, 1);
    const auto after = synthetic(SyntheticLoadSpec::Shape::kZipf, 0.8, 1, 64, 2);
    const LayerPlacement old_layer = compute_placement(before, o).placement.layers.front();
    const auto w = after.layer(0);
    const LayerPlacement stale = resplit_layer(old_layer, w, o);
    CHECK(stale.phy2log == old_layer.phy2log);  // a re-split moves nothing
    double prev_max = measure_balance(stale, w, o.num_gpus).max_gpu_load;
    const double start_max = prev_max;
    const std::vector<std::int32_t> budgets{1, 2, 4, 8};
    const std::vector<LayerPlacement> better = improve_layer(old_layer, w, o, budgets);
    REQUIRE(!better.empty());
    for (std::size_t i = 0; i < better.size(); ++i) {
        const std::int32_t swaps = budgets[i];
        INFO("swaps " << swaps);
        ExpertPlacement check{
            .num_gpus = 16, .num_nodes = 1, .num_logical_experts = 64, .layers = {better[i]}};
        REQUIRE(check.validate().empty());
        const auto counts = replica_counts(better[i], 64);
        CHECK(std::accumulate(counts.begin(), counts.end(), 0) == 16 * 5);
        std::int32_t changed = 0;
        for (std::size_t s = 0; s < better[i].phy2log.size(); ++s)
            changed += better[i].phy2log[s] != old_layer.phy2log[s];
        CHECK(changed <= 2 * swaps);
        const double m = measure_balance(better[i], w, o.num_gpus).max_gpu_load;
        CHECK(m <= prev_max * (1.0 + 1e-12));
        prev_max = m;
    }
    CHECK(prev_max < start_max);
}

TEST_CASE("EPLB: improve_layer moves a cold expert's replica to a hot expert in one copy",
          "[policies][eplb]") {
    // 8 experts on 4 GPUs x 3 slots: GPU g holds 2g, 2g+1 and (2g+2) mod 8, so experts 0, 2, 4, 6
    // have two replicas. Expert 3 turns hot: one round gives it a second replica in place of a
    // replica of a cold expert, halving the hottest GPU's load.
    LayerPlacement layer;
    for (std::int32_t g = 0; g < 4; ++g)
        for (std::int32_t e : {2 * g, 2 * g + 1, (2 * g + 2) % 8}) layer.phy2log.emplace_back(e);
    std::vector<double> w(8, 1.0);
    w[3] = 1000.0;
    const auto split = GENERATE(SplitMode::kWeighted, SplitMode::kUniform);
    const PlacementOptions o{.num_gpus = 4, .num_nodes = 1, .redundant_per_gpu = 1, .split = split};
    const std::vector<std::int32_t> one{1};
    const auto moved = improve_layer(layer, w, o, one);
    REQUIRE(moved.size() == 1);
    CHECK(replica_counts(moved[0], 8)[3] == 2);
    std::int32_t changed = 0;
    for (std::size_t s = 0; s < layer.phy2log.size(); ++s) changed += moved[0].phy2log[s] != layer.phy2log[s];
    CHECK(changed == 1);
    ExpertPlacement check{.num_gpus = 4, .num_nodes = 1, .num_logical_experts = 8, .layers = {moved[0]}};
    CHECK(check.validate().empty());
    CHECK(measure_balance(moved[0], w, 4).max_gpu_load < 0.6 * measure_balance(layer, w, 4).max_gpu_load);
}

TEST_CASE("EPLB: improve_layer keeps node-first placements node-local and lowers the max GPU load",
          "[policies][eplb]") {
    // Node-first on 2 nodes of 8 GPUs: rounds run inside each node, so every expert keeps all its
    // replicas on its node, and a round changes at most two slots per node.
    const auto split = GENERATE(SplitMode::kWeighted, SplitMode::kUniform);
    const PlacementOptions o{
        .num_gpus = 16, .num_nodes = 2, .redundant_per_gpu = 1, .hierarchical = true, .split = split};
    const auto before = synthetic(SyntheticLoadSpec::Shape::kZipf, 0.8, 1, 64, 1);
    const auto after = synthetic(SyntheticLoadSpec::Shape::kZipf, 0.8, 1, 64, 2);
    const LayerPlacement old_layer = compute_placement(before, o).placement.layers.front();
    const auto w = after.layer(0);
    const std::int32_t node_slots = static_cast<std::int32_t>(old_layer.phy2log.size()) / 2;
    auto node_of = [&](const LayerPlacement& layer) {
        std::vector<std::int32_t> node(64, -1);
        for (std::size_t s = 0; s < layer.phy2log.size(); ++s) {
            std::int32_t& n = node[static_cast<std::size_t>(layer.phy2log[s].value())];
            const auto here = static_cast<std::int32_t>(s) / node_slots;
            if (n >= 0 && n != here) return std::vector<std::int32_t>{};  // not node-local
            n = here;
        }
        return node;
    };
    const auto start_nodes = node_of(old_layer);
    REQUIRE(!start_nodes.empty());
    double prev_max = measure_balance(resplit_layer(old_layer, w, o), w, o.num_gpus).max_gpu_load;
    const double start_max = prev_max;
    const std::vector<std::int32_t> budgets{1, 2, 4, 8};
    const std::vector<LayerPlacement> better = improve_layer(old_layer, w, o, budgets);
    REQUIRE(!better.empty());
    for (std::size_t i = 0; i < better.size(); ++i) {
        INFO("rounds per node " << budgets[i]);
        ExpertPlacement check{
            .num_gpus = 16, .num_nodes = 2, .num_logical_experts = 64, .layers = {better[i]}};
        REQUIRE(check.validate().empty());
        CHECK(node_of(better[i]) == start_nodes);
        std::int32_t changed = 0;
        for (std::size_t s = 0; s < better[i].phy2log.size(); ++s)
            changed += better[i].phy2log[s] != old_layer.phy2log[s];
        CHECK(changed <= 2 * 2 * budgets[i]);
        const double m = measure_balance(better[i], w, o.num_gpus).max_gpu_load;
        CHECK(m <= prev_max * (1.0 + 1e-12));
        prev_max = m;
    }
    CHECK(prev_max < start_max);
    // A layer whose experts span nodes was not placed node-first: no rounds for it.
    LayerPlacement mixed = old_layer;
    mixed.phy2log.back() = mixed.phy2log.front();  // slot 0's expert gains a replica on node 1
    REQUIRE(node_of(mixed).empty());
    CHECK(improve_layer(mixed, w, o, budgets).empty());
}
