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
};

/// Result over local expert ids 0..E-1: `expert[slot]` and `share[slot]` for the G*S slots, GPU-major.
struct FlatSolution {
    std::vector<std::int32_t> expert;
    std::vector<double> share;
};

/// Places E = loads.size() experts on `num_gpus` GPUs with `slots_per_gpu` slots each
/// (E <= G * S, S <= E). Deterministic: ties are broken by the lower expert id, then the lower GPU.
FlatSolution place_flat(std::span<const double> loads, std::int32_t num_gpus, std::int32_t slots_per_gpu,
                        Split split, const FlatLimits& limits);

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
