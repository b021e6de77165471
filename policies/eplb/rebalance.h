// EPLB placement: from per-layer expert loads to a placement (phy2log, replica counts, router split)
// that minimises the maximum GPU load, plus the lower bound any placement must respect.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "policies/eplb/placement.h"

namespace deepinfer {

/// Expert loads of every MoE layer, `tokens[layer * num_experts + expert]`: tokens routed (or any
/// non-negative load unit; placement depends only on ratios).
struct LoadMatrix {
    std::int32_t num_layers = 0;
    std::int32_t num_experts = 0;
    std::vector<double> tokens;

    std::span<const double> layer(std::int32_t l) const {
        return {tokens.data() + static_cast<std::size_t>(l) * static_cast<std::size_t>(num_experts),
                static_cast<std::size_t>(num_experts)};
    }
    double at(std::int32_t l, std::int32_t e) const {
        return tokens[static_cast<std::size_t>(l) * static_cast<std::size_t>(num_experts) +
                      static_cast<std::size_t>(e)];
    }
};

/// How the router divides an expert's tokens among its replicas.
enum class SplitMode {
    kUniform,   ///< each replica serves 1 / replica count (what DeepSeek's eplb.py assumes)
    kWeighted,  ///< per-replica shares (LayerPlacement::replica_share) chosen to flatten GPU loads
};

struct PlacementOptions {
    std::int32_t num_gpus = 1;
    /// Nodes (scale-up domains); must divide num_gpus. Only hierarchical placement uses them.
    std::int32_t num_nodes = 1;
    /// Extra physical slots per GPU beyond num_experts / num_gpus.
    std::int32_t redundant_per_gpu = 0;
    /// Expert groups of consecutive ids for node-first placement; 0 means one group per expert.
    std::int32_t num_groups = 0;
    /// Node-first: groups are packed onto nodes (equal group count per node), then every replica of an
    /// expert stays on its group's node.
    bool hierarchical = false;
    SplitMode split = SplitMode::kWeighted;
    /// Swap rounds of the local search per layer (0 disables it).
    std::int32_t max_swap_rounds = 512;
    /// Water-filling sweeps per layer for the weighted split.
    std::int32_t max_split_sweeps = 400;
    /// Weighted split only: weight mu of a term that spreads each expert over its replicas; the split
    /// minimises sum_g load_g^2 + mu * sum_replicas part^2. 0 = flattest GPU loads for the predicted
    /// loads; a small mu trades a little of that for robustness when the real loads drift.
    double split_spread = 0.0;
    /// Hedging against drift (0 = off): an expert may take the load of any of its `hedge_reach`
    /// heavier neighbours in the popularity order; replicas are swapped so that a lighter expert's
    /// replicas sit on GPUs that also hold its heavier neighbours (the rise is offset by the fall).
    std::int32_t hedge_reach = 8;
    /// Hedging may raise a GPU's load (replicas at 1 / count) up to max(the packed maximum, lower
    /// bound * (1 + slack)): with the weighted split always (the split flattens it again; the unhedged
    /// placement is kept when it scores better), with the uniform split only when drift_weight > 0
    /// (placing for a later period). Otherwise the uniform split's max GPU load never rises.
    double hedge_slack = 0.01;
    /// Robustness to drift when placing for a later period: candidate placements (weighted split:
    /// unhedged or hedged packed, fill) are scored (1 - w) * max GPU load + w * mean max GPU load over
    /// single rank swaps of the hedging pairs. 0 = the flattest for the given loads (single-window use);
    /// `deepinfer eplb` uses 0.3 when it places from a predictor.
    double drift_weight = 0.0;
    /// Hedging ignores rank-swap pairs whose risk weight (w_e - w_f)^2 / (r_e r_f) is below this
    /// fraction of the largest.
    double hedge_min_pair = 0.2;
    /// Improving swaps of the hedging search per layer.
    std::int32_t max_hedge_rounds = 64;

    std::int32_t slots_per_gpu(std::int32_t num_experts) const {
        return num_experts / num_gpus + redundant_per_gpu;
    }
};

/// Balance of one layer under a given load vector (all in the load unit of that vector).
struct LayerBalance {
    double max_gpu_load = 0.0;
    double mean_gpu_load = 0.0;
    /// No placement with these slots (any split) has a smaller maximum; see max_load_lower_bound.
    double lower_bound = 0.0;

    /// max / mean (1 when the layer carries no load).
    double imbalance() const { return mean_gpu_load > 0.0 ? max_gpu_load / mean_gpu_load : 1.0; }
    double bound_imbalance() const { return mean_gpu_load > 0.0 ? lower_bound / mean_gpu_load : 1.0; }
};

struct PlacementResult {
    ExpertPlacement placement;
    /// Per layer, measured on the loads the placement was computed from.
    std::vector<LayerBalance> layers;
};

/// Throws ConfigError (file "eplb options", the option named) unless the options fit
/// `num_experts`: G divides E, N divides G, slots per GPU <= E, groups divide E and N divides groups.
void check_placement_options(const PlacementOptions& options, std::int32_t num_experts);

/// The placement for every layer of `loads`. Deterministic (ties by expert id, then GPU id).
PlacementResult compute_placement(const LoadMatrix& loads, const PlacementOptions& options);

/// `layer`'s slots unchanged (no weight copies) with the router split re-balanced for `loads` (one
/// layer's expert loads) by `options`' water-filling (weighted split); with the uniform split the
/// layer is returned as it is.
LayerPlacement resplit_layer(const LayerPlacement& layer, std::span<const double> loads,
                             const PlacementOptions& options);

/// `layer` after `budgets[i]` move-aware rounds, one placement per budget (non-decreasing; fewer when
/// the rounds stop improving). A round is a swap of replicas between the most-loaded GPU and another
/// (two copies) or a replica move from a cold expert to a hot one (one copy), whichever lowers the
/// max GPU load more; see eplb_detail::improve_flat. The split is re-balanced (weighted). With
/// node-first placement (`options.hierarchical`, several nodes) each node gets `budgets[i]` rounds
/// of its own, so every expert stays on its node; a layer whose experts are not node-local then
/// yields no placement.
std::vector<LayerPlacement> improve_layer(const LayerPlacement& layer, std::span<const double> loads,
                                          const PlacementOptions& options,
                                          std::span<const std::int32_t> budgets);

/// Tokens on each GPU when `layer` serves `loads` (one layer's expert loads), with its replica_share
/// (uniform when empty).
std::vector<double> gpu_loads(const LayerPlacement& layer, std::span<const double> loads,
                              std::int32_t num_gpus);

/// Max and mean GPU load of `layer` under `loads`, and the lower bound for `slots_per_gpu`.
LayerBalance measure_balance(const LayerPlacement& layer, std::span<const double> loads,
                             std::int32_t num_gpus);

/// A lower bound on the maximum GPU load of any placement of `loads` on G GPUs with S slots each and
/// any split: T >= W / G (the mean), and T >= w_e / r_e for every expert with some replica counts
/// r_e in [1, G] summing to G * S (a GPU carries at most T of each expert, so r_e >= w_e / T); the
/// smallest such max w_e / r_e is reached by the greedy counts. The bound is the larger of the two.
/// With at least one redundant slot per GPU it equals W / G; without, it is max(W / G, max_e w_e).
double max_load_lower_bound(std::span<const double> loads, std::int32_t num_gpus, std::int32_t slots_per_gpu);

/// Replicas of each logical expert: `log2phy[e]` lists its physical slots in ascending order.
std::vector<std::vector<PhysicalSlotId>> make_log2phy(const LayerPlacement& layer, std::int32_t num_experts);
/// Number of replicas of each logical expert.
std::vector<std::int32_t> replica_counts(const LayerPlacement& layer, std::int32_t num_experts);

}  // namespace deepinfer
