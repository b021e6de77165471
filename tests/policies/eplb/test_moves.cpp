// EPLB moves: alignment keeps experts in their slots, the copy list turns the old placement into the
// new one exactly, sources prefer the same GPU and node.
#include <algorithm>
#include <catch2/catch.hpp>

#include "policies/eplb/moves.h"
#include "policies/eplb/rebalance.h"
#include "policies/eplb/synthetic_loads.h"

using namespace deepinfer;

namespace {

ExpertPlacement placement_for(std::uint64_t seed, double drift_zipf) {
    SyntheticLoadSpec spec;
    spec.num_layers = 4;
    spec.num_experts = 64;
    spec.zipf_exponent = drift_zipf;
    Rng rng(seed);
    const auto loads = make_synthetic_loads(spec, 1, rng).front();
    return compute_placement(loads, {.num_gpus = 8, .num_nodes = 2, .redundant_per_gpu = 2}).placement;
}

}  // namespace

TEST_CASE("EPLB moves: applying the move list turns the old placement into the new one exactly",
          "[policies][eplb]") {
    for (std::uint64_t seed = 1; seed <= 10; ++seed) {
        const auto prev = placement_for(seed, 1.0);
        const auto raw = placement_for(seed + 100, 1.3);
        for (const bool aligned : {false, true}) {
            const auto next = aligned ? align_to_previous(prev, raw) : raw;
            REQUIRE(next.validate().empty());
            const auto plan = plan_moves(prev, next, 1000);
            const auto applied = apply_moves(prev, plan);
            for (std::size_t l = 0; l < next.layers.size(); ++l)
                REQUIRE(applied.layers[l].phy2log == next.layers[l].phy2log);
            CHECK(plan.total_bytes == 1000 * static_cast<std::int64_t>(plan.moves.size()));
            for (const auto& m : plan.moves) {
                const auto& old = prev.layers[static_cast<std::size_t>(m.layer)].phy2log;
                const auto per_gpu = static_cast<std::size_t>(prev.slots_per_gpu());
                bool src_held = false;
                for (std::size_t s = 0; s < per_gpu; ++s)
                    src_held = src_held ||
                               old[static_cast<std::size_t>(m.src_gpu.value()) * per_gpu + s] == m.expert;
                CHECK(src_held);
                CHECK(m.dst_gpu == prev.gpu_of(m.dst_slot));
            }
        }
    }
}

TEST_CASE(
    "EPLB moves: alignment relabels GPUs within nodes, keeps their expert sets, never needs more copies",
    "[policies][eplb]") {
    const auto prev = placement_for(3, 1.0);
    const auto raw = placement_for(4, 1.0);
    const auto aligned = align_to_previous(prev, raw);
    REQUIRE(aligned.validate().empty());
    const auto per_gpu = static_cast<std::size_t>(raw.slots_per_gpu());
    const auto per_node = static_cast<std::size_t>(raw.num_gpus / raw.num_nodes);
    auto gpu_set = [&](const ExpertPlacement& p, std::size_t l, std::size_t g) {
        auto v = std::vector<LogicalExpertId>(
            p.layers[l].phy2log.begin() + static_cast<std::ptrdiff_t>(g * per_gpu),
            p.layers[l].phy2log.begin() + static_cast<std::ptrdiff_t>((g + 1) * per_gpu));
        std::sort(v.begin(), v.end());
        return v;
    };
    for (std::size_t l = 0; l < raw.layers.size(); ++l)
        for (std::size_t node = 0; node < static_cast<std::size_t>(raw.num_nodes); ++node) {
            // The node holds the same GPU expert sets, possibly on other GPUs of the node.
            std::vector<std::vector<LogicalExpertId>> a, b;
            for (std::size_t g = node * per_node; g < (node + 1) * per_node; ++g) {
                a.push_back(gpu_set(raw, l, g));
                b.push_back(gpu_set(aligned, l, g));
            }
            std::sort(a.begin(), a.end());
            std::sort(b.begin(), b.end());
            CHECK(a == b);
        }
    CHECK(plan_moves(prev, aligned, 1).moves.size() <= plan_moves(prev, raw, 1).moves.size());
    CHECK(plan_moves(prev, align_to_previous(prev, prev), 1).empty());
}

TEST_CASE("EPLB moves: a placement with its GPUs renumbered within nodes aligns to zero copies",
          "[policies][eplb]") {
    const auto prev = placement_for(5, 1.0);
    ExpertPlacement rotated = prev;
    const auto per_gpu = static_cast<std::size_t>(prev.slots_per_gpu());
    const auto per_node = static_cast<std::size_t>(prev.num_gpus / prev.num_nodes);
    for (std::size_t l = 0; l < prev.layers.size(); ++l)
        for (std::size_t g = 0; g < static_cast<std::size_t>(prev.num_gpus); ++g) {
            const std::size_t node = g / per_node;
            const std::size_t to =
                node * per_node + (g % per_node + 1) % per_node;  // shift by one in the node
            for (std::size_t k = 0; k < per_gpu; ++k) {
                rotated.layers[l].phy2log[to * per_gpu + k] = prev.layers[l].phy2log[g * per_gpu + k];
                if (!prev.layers[l].replica_share.empty())
                    rotated.layers[l].replica_share[to * per_gpu + k] =
                        prev.layers[l].replica_share[g * per_gpu + k];
            }
        }
    REQUIRE(rotated.validate().empty());
    CHECK(plan_moves(prev, rotated, 1).moves.size() > 0);
    CHECK(plan_moves(prev, align_to_previous(prev, rotated), 1).empty());
}

TEST_CASE("EPLB moves: a small diff as a table", "[policies][eplb]") {
    // 2 GPUs x 2 slots, 2 nodes of 1 GPU. Old: GPU0 {0,1}, GPU1 {2,3}. New: GPU0 {0,3}, GPU1 {2,1}.
    auto make = [](std::vector<std::int32_t> ids) {
        ExpertPlacement p{.num_gpus = 2, .num_nodes = 2, .num_logical_experts = 4, .layers = {}};
        LayerPlacement layer;
        for (auto e : ids) layer.phy2log.emplace_back(e);
        p.layers.push_back(layer);
        return p;
    };
    const auto prev = make({0, 1, 2, 3});
    const auto next = make({0, 3, 2, 1});
    REQUIRE(next.validate().empty());
    const auto plan = plan_moves(prev, next, 64);
    REQUIRE(plan.moves.size() == 2);
    CHECK(plan.moves[0].expert == LogicalExpertId(3));
    CHECK(plan.moves[0].src_gpu == GpuRank(1));
    CHECK(plan.moves[0].dst_slot == PhysicalSlotId(1));
    CHECK(plan.moves[1].expert == LogicalExpertId(1));
    CHECK(plan.moves[1].src_gpu == GpuRank(0));
    CHECK(plan.moves[1].dst_gpu == GpuRank(1));
    CHECK(plan.max_bytes_into_gpu == 64);
}
