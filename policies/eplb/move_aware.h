// Move-aware re-placement: per layer, the candidate that saves the most time net of its own weight
// copies. Shared by the WindowBalancer's cost rule and `deepinfer eplb --from`.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "policies/eplb/placement.h"
#include "policies/eplb/rebalance.h"

namespace deepinfer {

/// What copying weights costs and what a lower max GPU load is worth.
struct MoveCost {
    /// Weight bytes of one expert replica in one layer.
    std::int64_t expert_bytes = 0;
    /// Bytes per second one GPU receives while copying.
    double copy_bytes_per_s = 0.0;
    /// Seconds saved over the placement's lifetime per token of lower max GPU load in one layer
    /// (seconds of MoE time per token on a GPU × steps until the next re-placement).
    double s_per_token = 0.0;
    bool enabled() const { return expert_bytes > 0 && copy_bytes_per_s > 0.0 && s_per_token > 0.0; }
};

/// The candidate a layer takes.
enum class LayerMove : std::uint8_t { kKept = 0, kRounds, kNew };

struct MoveAwareChoice {
    /// `current` with each layer replaced by its chosen candidate.
    ExpertPlacement placement;
    std::vector<LayerMove> kind;
    /// Per layer: the chosen candidate's max GPU load on the predicted loads.
    std::vector<double> max_load;
};

/// Runs fn(i) for i in [0, n), possibly on several threads; unset: one after the other.
using ParallelFor = std::function<void(std::size_t n, const std::function<void(std::size_t)>& fn)>;

/// Per layer of `current`, the candidate with the largest value
///   −(max GPU load on `predicted`) · cost.s_per_token − (max bytes copied into one GPU) /
///   cost.copy_bytes_per_s
/// among: the current slots with only the router split re-balanced (no copies; resplit_layer),
/// improve_layer's 1, 2, 4, ..., 32 rounds from the current slots, and `fresh`'s layer (a new
/// placement aligned to `current`, align_to_previous; `fresh_max` its max GPU loads). Ties keep the
/// earlier candidate in that order. Each layer writes only its own result, so `parallel_for` changes
/// nothing. Requires cost.enabled().
MoveAwareChoice choose_moves(const ExpertPlacement& current, const LoadMatrix& predicted,
                             const ExpertPlacement& fresh, std::span<const double> fresh_max,
                             const PlacementOptions& options, const MoveCost& cost,
                             const ParallelFor& parallel_for = {});

std::string_view name(LayerMove kind);

}  // namespace deepinfer
