// One layer's expert placement over a flat set of GPUs (no node structure): replica counts, a
// GPU assignment that never puts two replicas of an expert on one GPU, and the router split.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace deepinfer::eplb_detail {

/// How the router divides an expert's tokens among its replicas.
enum class Split { kUniform, kWeighted };

struct FlatLimits {
    /// Swap rounds of the local search (each round improves the most-loaded GPU or stops).
    std::int32_t max_swap_rounds = 512;
    /// Gauss-Seidel water-filling sweeps over the replicated experts (weighted split only).
    std::int32_t max_split_sweeps = 400;
    /// Weight mu of the spreading term: the split minimises sum_g load_g^2 + mu * sum_slots part^2.
    double split_spread = 0.0;
    /// Hedging against rank swaps (0 = off): each expert's load may move to any of its `hedge_reach`
    /// heavier rank neighbours; swaps then place a replica of the lighter expert on a GPU that also
    /// holds the heavier one, so the rise is offset by the fall. See hedge_search in flat_placer.cpp.
    std::int32_t hedge_reach = 0;
    /// Hedging may raise a GPU's uniform-split load up to max(current max, lower bound * (1 + slack));
    /// the uniform split allows it only with drift_weight > 0.
    double hedge_slack = 0.0;
    /// Weight of swap stress against the nominal max when choosing between packed and fill placements.
    double drift_weight = 0.0;
    /// Pairs whose risk weight is below this fraction of the largest are ignored.
    double hedge_min_pair = 0.2;
    /// Improving swaps of the hedging search per layer.
    std::int32_t max_hedge_rounds = 64;
};

/// Result over local expert ids 0..E-1: `expert[slot]` and `share[slot]` for the G*S slots, GPU-major.
struct FlatSolution {
    std::vector<std::int32_t> expert;
    std::vector<double> share;
};

/// Places E = loads.size() experts on `num_gpus` GPUs with `slots_per_gpu` slots each
/// (E <= G * S, S <= E). Deterministic: ties are broken by the lower expert id, then the lower GPU.
/// With hedging (limits.hedge_reach > 0), the weighted split keeps the hedged placement only when it
/// scores no worse than the unhedged one (max GPU load, or with drift_weight the blend with the
/// mean max over single rank swaps); the uniform split's max GPU load is raised by hedging only
/// with a drift weight (then up to lower bound * (1 + hedge_slack)).
FlatSolution place_flat(std::span<const double> loads, std::int32_t num_gpus, std::int32_t slots_per_gpu,
                        Split split, const FlatLimits& limits);

/// Move-aware re-placement: `start` (one expert per slot, GPU-major, slots_per_gpu = start.size() /
/// num_gpus) after `budgets[i]` improving rounds, one solution per budget (non-decreasing; the list
/// ends early once no round improves). A round takes the better of the best swap between the
/// most-loaded GPU and another (two copies) and the best replica move (one copy: a replica of the
/// expert that loses least gives its slot to the expert with the most load per replica). Each
/// solution carries its split (weighted: water-filled, from `start_share` where a slot keeps its
/// expert when that is given, else from uniform). One search serves every budget.
std::vector<FlatSolution> improve_flat(std::span<const double> loads, std::int32_t num_gpus,
                                       std::span<const std::int32_t> start,
                                       std::span<const double> start_share, Split split,
                                       const FlatLimits& limits, std::span<const std::int32_t> budgets);

/// max(W / G, smallest max load / replicas over replica counts): see max_load_lower_bound.
double max_load_lower_bound_flat(std::span<const double> loads, std::int32_t num_gpus,
                                 std::int32_t slots_per_gpu);

/// Block-coordinate water-filling of `sol.share` (starting from the given shares) towards the split
/// with the smallest maximum GPU load; at most `max_sweeps` sweeps. Shares of each expert sum to 1.
void water_fill(std::span<const double> loads, std::int32_t num_gpus, FlatSolution& sol,
                std::int32_t max_sweeps, double spread);

/// Replica counts (sum G*S, each in [1, G]) minimising max load / count: the next slot always goes
/// to the expert with the largest load per replica (ties: lower id).
std::vector<std::int32_t> greedy_replica_counts(std::span<const double> loads, std::int32_t num_gpus,
                                                std::int32_t num_slots);

}  // namespace deepinfer::eplb_detail
