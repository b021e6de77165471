// EPLB placement driver: option checks, flat or node-first (hierarchical) placement per layer, the
// lower bound and balance measurement.
#include "policies/eplb/rebalance.h"

#include <algorithm>
#include <numeric>

#include "policies/common/check.h"
#include "policies/eplb/flat_placer.h"

namespace deepinfer {
namespace {

using Index = std::size_t;
Index ix(std::int32_t v) { return static_cast<Index>(v); }

[[noreturn]] void bad_option(const std::string& name, const std::string& expected, std::int64_t got) {
    throw ConfigError("eplb options", name, expected, std::to_string(got));
}

eplb_detail::FlatLimits limits_of(const PlacementOptions& o) {
    return {.max_swap_rounds = o.max_swap_rounds,
            .max_split_sweeps = o.max_split_sweeps,
            .split_spread = o.split_spread,
            .hedge_reach = o.hedge_reach,
            .hedge_slack = o.hedge_slack,
            .drift_weight = o.drift_weight,
            .hedge_min_pair = o.hedge_min_pair,
            .max_hedge_rounds = o.max_hedge_rounds};
}

eplb_detail::Split split_of(SplitMode m) {
    return m == SplitMode::kWeighted ? eplb_detail::Split::kWeighted : eplb_detail::Split::kUniform;
}

LayerPlacement place_layer_flat(std::span<const double> w, const PlacementOptions& o) {
    const std::int32_t slots = o.slots_per_gpu(static_cast<std::int32_t>(w.size()));
    auto sol = eplb_detail::place_flat(w, o.num_gpus, slots, split_of(o.split), limits_of(o));
    LayerPlacement layer;
    layer.phy2log.reserve(sol.expert.size());
    for (std::int32_t e : sol.expert) layer.phy2log.emplace_back(e);
    layer.replica_share = std::move(sol.share);
    return layer;
}

// Node-first: groups are packed onto nodes with an equal group count per node (a flat placement with
// one slot per group and no redundancy), then each node's experts get a flat placement on its GPUs.
LayerPlacement place_layer_hierarchical(std::span<const double> w, const PlacementOptions& o) {
    const auto num_experts = static_cast<std::int32_t>(w.size());
    const std::int32_t num_groups = o.num_groups > 0 ? o.num_groups : num_experts;
    const std::int32_t group_size = num_experts / num_groups;
    std::vector<double> group_load(ix(num_groups), 0.0);
    for (std::int32_t e = 0; e < num_experts; ++e) group_load[ix(e / group_size)] += w[ix(e)];
    const std::int32_t groups_per_node = num_groups / o.num_nodes;
    const auto packing = eplb_detail::place_flat(group_load, o.num_nodes, groups_per_node,
                                                 eplb_detail::Split::kUniform, limits_of(o));
    const std::int32_t gpus_per_node = o.num_gpus / o.num_nodes;
    const std::int32_t slots = o.slots_per_gpu(num_experts);
    const std::int32_t node_slots = gpus_per_node * slots;
    LayerPlacement layer;
    layer.phy2log.resize(ix(o.num_gpus * slots));
    layer.replica_share.resize(layer.phy2log.size());
    for (std::int32_t node = 0; node < o.num_nodes; ++node) {
        std::vector<std::int32_t> groups(packing.expert.begin() + node * groups_per_node,
                                         packing.expert.begin() + (node + 1) * groups_per_node);
        std::sort(groups.begin(), groups.end());
        std::vector<std::int32_t> experts;
        std::vector<double> node_w;
        for (std::int32_t g : groups)
            for (std::int32_t e = g * group_size; e < (g + 1) * group_size; ++e) {
                experts.push_back(e);
                node_w.push_back(w[ix(e)]);
            }
        const auto sol =
            eplb_detail::place_flat(node_w, gpus_per_node, slots, split_of(o.split), limits_of(o));
        for (std::int32_t s = 0; s < node_slots; ++s) {
            layer.phy2log[ix(node * node_slots + s)] = LogicalExpertId(experts[ix(sol.expert[ix(s)])]);
            layer.replica_share[ix(node * node_slots + s)] = sol.share[ix(s)];
        }
    }
    return layer;
}

}  // namespace

void check_placement_options(const PlacementOptions& o, std::int32_t num_experts) {
    if (num_experts <= 0) bad_option("num_experts", "a positive integer", num_experts);
    if (o.num_gpus <= 0 || num_experts % o.num_gpus != 0)
        bad_option("num_gpus", "a positive divisor of the " + std::to_string(num_experts) + " experts",
                   o.num_gpus);
    if (o.num_nodes <= 0 || o.num_gpus % o.num_nodes != 0)
        bad_option("num_nodes", "a positive divisor of the " + std::to_string(o.num_gpus) + " GPUs",
                   o.num_nodes);
    if (o.redundant_per_gpu < 0 || o.slots_per_gpu(num_experts) > num_experts)
        bad_option("redundant_per_gpu",
                   "in [0, " + std::to_string(num_experts - num_experts / o.num_gpus) +
                       "] (a GPU holds distinct experts)",
                   o.redundant_per_gpu);
    if (o.num_groups < 0 || (o.num_groups > 0 && num_experts % o.num_groups != 0))
        bad_option("num_groups", "0 or a positive divisor of the " + std::to_string(num_experts) + " experts",
                   o.num_groups);
    const std::int32_t groups = o.num_groups > 0 ? o.num_groups : num_experts;
    if (o.hierarchical && groups % o.num_nodes != 0)
        bad_option("num_groups",
                   "a multiple of the " + std::to_string(o.num_nodes) + " nodes for node-first placement",
                   groups);
    if (o.max_swap_rounds < 0) bad_option("max_swap_rounds", "non-negative", o.max_swap_rounds);
    if (o.max_split_sweeps < 0) bad_option("max_split_sweeps", "non-negative", o.max_split_sweeps);
    if (!(o.split_spread >= 0.0 && o.split_spread <= 10.0))
        throw ConfigError("eplb options", "split_spread", "in [0, 10]", std::to_string(o.split_spread));
    if (o.hedge_reach < 0) bad_option("hedge_reach", "non-negative", o.hedge_reach);
    if (!(o.drift_weight >= 0.0 && o.drift_weight <= 1.0))
        throw ConfigError("eplb options", "drift_weight", "in [0, 1]", std::to_string(o.drift_weight));
    if (!(o.hedge_min_pair >= 0.0 && o.hedge_min_pair <= 1.0))
        throw ConfigError("eplb options", "hedge_min_pair", "in [0, 1]", std::to_string(o.hedge_min_pair));
    if (o.max_hedge_rounds < 0) bad_option("max_hedge_rounds", "non-negative", o.max_hedge_rounds);
    if (!(o.hedge_slack >= 0.0 && o.hedge_slack <= 1.0))
        throw ConfigError("eplb options", "hedge_slack", "in [0, 1]", std::to_string(o.hedge_slack));
}

PlacementResult compute_placement(const LoadMatrix& loads, const PlacementOptions& options) {
    check_placement_options(options, loads.num_experts);
    DI_CHECK(loads.tokens.size() == ix(loads.num_layers) * ix(loads.num_experts),
             "load matrix size mismatch");
    for (double v : loads.tokens)
        if (!(v >= 0.0))
            throw ConfigError("eplb loads", "tokens", "finite non-negative loads", std::to_string(v));
    PlacementResult out;
    out.placement = ExpertPlacement{.num_gpus = options.num_gpus,
                                    .num_nodes = options.num_nodes,
                                    .num_logical_experts = loads.num_experts,
                                    .layers = {}};
    const bool node_first = options.hierarchical && options.num_nodes > 1;
    for (std::int32_t l = 0; l < loads.num_layers; ++l) {
        const auto w = loads.layer(l);
        out.placement.layers.push_back(node_first ? place_layer_hierarchical(w, options)
                                                  : place_layer_flat(w, options));
        out.layers.push_back(measure_balance(out.placement.layers.back(), w, options.num_gpus));
    }
    return out;
}

std::vector<std::int32_t> replica_counts(const LayerPlacement& layer, std::int32_t num_experts) {
    std::vector<std::int32_t> counts(ix(num_experts), 0);
    for (auto e : layer.phy2log) ++counts[ix(e.value())];
    return counts;
}

std::vector<std::vector<PhysicalSlotId>> make_log2phy(const LayerPlacement& layer, std::int32_t num_experts) {
    std::vector<std::vector<PhysicalSlotId>> out(ix(num_experts));
    for (std::size_t s = 0; s < layer.phy2log.size(); ++s)
        out[ix(layer.phy2log[s].value())].emplace_back(static_cast<std::int32_t>(s));
    return out;
}

std::vector<double> gpu_loads(const LayerPlacement& layer, std::span<const double> loads,
                              std::int32_t num_gpus) {
    const auto num_experts = static_cast<std::int32_t>(loads.size());
    const Index per_gpu = layer.phy2log.size() / ix(num_gpus);
    const auto counts = replica_counts(layer, num_experts);
    std::vector<double> out(ix(num_gpus), 0.0);
    for (Index s = 0; s < layer.phy2log.size(); ++s) {
        const Index e = ix(layer.phy2log[s].value());
        const double share = layer.replica_share.empty() ? 1.0 / counts[e] : layer.replica_share[s];
        out[s / per_gpu] += loads[e] * share;
    }
    return out;
}

LayerPlacement resplit_layer(const LayerPlacement& layer, std::span<const double> loads,
                             const PlacementOptions& o) {
    if (o.split != SplitMode::kWeighted) return layer;
    const std::vector<std::int32_t> counts = replica_counts(layer, static_cast<std::int32_t>(loads.size()));
    eplb_detail::FlatSolution sol;
    sol.expert.reserve(layer.phy2log.size());
    sol.share.reserve(layer.phy2log.size());
    for (std::size_t s = 0; s < layer.phy2log.size(); ++s) {
        const std::int32_t e = layer.phy2log[s].value();
        sol.expert.push_back(e);
        sol.share.push_back(layer.replica_share.empty() ? 1.0 / counts[ix(e)] : layer.replica_share[s]);
    }
    eplb_detail::water_fill(loads, o.num_gpus, sol, o.max_split_sweeps, o.split_spread);
    LayerPlacement out = layer;
    out.replica_share = std::move(sol.share);
    return out;
}

namespace {

/// improve_layer for node-first placements: each node's slots get their own rounds (`budgets[i]`
/// per node), so every expert stays on its node. Empty when an expert has replicas on two nodes
/// (such a layer was not placed node-first).
std::vector<LayerPlacement> improve_layer_by_node(const LayerPlacement& layer, std::span<const double> loads,
                                                  const PlacementOptions& o,
                                                  std::span<const std::int32_t> budgets) {
    const auto num_slots = static_cast<std::int32_t>(layer.phy2log.size());
    const std::int32_t node_slots = num_slots / o.num_nodes;
    const std::int32_t gpus_per_node = o.num_gpus / o.num_nodes;
    std::vector<std::int32_t> node_of(loads.size(), -1);
    for (std::int32_t s = 0; s < num_slots; ++s) {
        std::int32_t& node = node_of[ix(layer.phy2log[ix(s)].value())];
        if (node >= 0 && node != s / node_slots) return {};
        node = s / node_slots;
    }
    const bool shares = layer.replica_share.size() == layer.phy2log.size();
    // Per node: its experts (ascending ids, local ids are their ranks) and its solutions per budget.
    std::vector<std::vector<std::int32_t>> experts(ix(o.num_nodes));
    for (std::size_t e = 0; e < loads.size(); ++e)
        if (node_of[e] >= 0) experts[ix(node_of[e])].push_back(static_cast<std::int32_t>(e));
    std::vector<std::vector<eplb_detail::FlatSolution>> solutions(ix(o.num_nodes));
    std::size_t num_out = 0;
    for (std::int32_t node = 0; node < o.num_nodes; ++node) {
        const std::vector<std::int32_t>& ids = experts[ix(node)];
        std::vector<double> local_loads;
        for (std::int32_t e : ids) local_loads.push_back(loads[ix(e)]);
        std::vector<std::int32_t> start;
        for (std::int32_t s = node * node_slots; s < (node + 1) * node_slots; ++s) {
            const std::int32_t e = layer.phy2log[ix(s)].value();
            start.push_back(
                static_cast<std::int32_t>(std::lower_bound(ids.begin(), ids.end(), e) - ids.begin()));
        }
        const std::span<const double> start_share =
            shares
                ? std::span<const double>(layer.replica_share).subspan(ix(node * node_slots), ix(node_slots))
                : std::span<const double>();
        solutions[ix(node)] = eplb_detail::improve_flat(local_loads, gpus_per_node, start, start_share,
                                                        split_of(o.split), limits_of(o), budgets);
        num_out = std::max(num_out, solutions[ix(node)].size());
    }
    // Candidate i takes each node's solution after budgets[i] rounds (its last one where its rounds
    // stopped improving earlier).
    std::vector<LayerPlacement> out(num_out, layer);
    for (std::size_t i = 0; i < num_out; ++i) {
        LayerPlacement& p = out[i];
        p.replica_share.assign(layer.phy2log.size(), 0.0);
        for (std::int32_t node = 0; node < o.num_nodes; ++node) {
            const auto& sols = solutions[ix(node)];
            const eplb_detail::FlatSolution& sol = sols[std::min(i, sols.size() - 1)];
            const std::vector<std::int32_t>& ids = experts[ix(node)];
            for (std::int32_t s = 0; s < node_slots; ++s) {
                p.phy2log[ix(node * node_slots + s)] = LogicalExpertId(ids[ix(sol.expert[ix(s)])]);
                p.replica_share[ix(node * node_slots + s)] = sol.share[ix(s)];
            }
        }
    }
    return out;
}

}  // namespace

std::vector<LayerPlacement> improve_layer(const LayerPlacement& layer, std::span<const double> loads,
                                          const PlacementOptions& o, std::span<const std::int32_t> budgets) {
    if (o.hierarchical && o.num_nodes > 1) return improve_layer_by_node(layer, loads, o, budgets);
    std::vector<std::int32_t> start;
    start.reserve(layer.phy2log.size());
    for (const LogicalExpertId e : layer.phy2log) start.push_back(e.value());
    std::vector<LayerPlacement> out;
    for (auto& sol : eplb_detail::improve_flat(loads, o.num_gpus, start, layer.replica_share,
                                               split_of(o.split), limits_of(o), budgets)) {
        LayerPlacement p;
        p.phy2log.reserve(sol.expert.size());
        for (std::int32_t e : sol.expert) p.phy2log.emplace_back(e);
        p.replica_share = std::move(sol.share);
        out.push_back(std::move(p));
    }
    return out;
}

LayerBalance measure_balance(const LayerPlacement& layer, std::span<const double> loads,
                             std::int32_t num_gpus) {
    const auto per_gpu = gpu_loads(layer, loads, num_gpus);
    const double total = std::accumulate(loads.begin(), loads.end(), 0.0);
    const auto slots = static_cast<std::int32_t>(layer.phy2log.size()) / num_gpus;
    return {.max_gpu_load = *std::max_element(per_gpu.begin(), per_gpu.end()),
            .mean_gpu_load = total / num_gpus,
            .lower_bound = max_load_lower_bound(loads, num_gpus, slots)};
}

double max_load_lower_bound(std::span<const double> loads, std::int32_t num_gpus,
                            std::int32_t slots_per_gpu) {
    return eplb_detail::max_load_lower_bound_flat(loads, num_gpus, slots_per_gpu);
}

}  // namespace deepinfer
