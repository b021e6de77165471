// Seeded expert-routing model: skewed (Zipf) expert popularity per layer that drifts over time, and
// what it means for one EP instance under an expert placement (tokens on the busiest rank, imbalance).
#pragma once

#include <cstdint>
#include <vector>

#include "policies/common/rng.h"
#include "policies/cost/cost_model.h"
#include "policies/eplb/placement.h"
#include "policies/step_outcome.h"
#include "sim/config/sim_config.h"

namespace deepinfer::sim {

/// Popularity of every routed expert in every MoE layer at the current simulated time. Shared by all
/// instances (they serve the same model and traffic). Deterministic for a seed.
class RoutingModel {
public:
    RoutingModel(const RoutingModelConfig& config, const ModelShape& model, Rng rng);
    /// Applies the drift steps of every interval that started at or before `now_s` (monotone).
    void advance_to(double now_s);
    /// Probability that one top-k pick of a token goes to `expert` in `layer` (sums to 1 per layer).
    const std::vector<double>& popularity(std::int32_t layer) const {
        return prob_[static_cast<std::size_t>(layer)];
    }
    /// Increments whenever the popularity changes.
    std::int64_t epoch() const { return epoch_; }
    const ModelShape& model() const { return model_; }

private:
    void normalise();

    RoutingModelConfig config_;
    ModelShape model_;
    Rng rng_;
    std::vector<std::vector<double>> base_log_weight_;
    std::vector<std::vector<double>> log_weight_;
    std::vector<std::vector<double>> prob_;
    std::int64_t epoch_ = 0;
};

/// MoE load of one step on an EP group.
struct EpStepLoad {
    /// Token-expert pairs the busiest rank processes per layer (mean over layers).
    double busiest_rank_pairs = 0;
    /// Distinct experts active on the busiest rank.
    double busiest_rank_experts = 0;
    /// Busiest rank over mean rank load (>= 1), mean over layers.
    double imbalance_max_mean = 1;
};

/// One instance's view: the routing model under its current placement. Per-step cost O(1): the
/// per-layer rank shares are cached and recomputed only when the popularity or placement changes.
class EpLoadModel {
public:
    EpLoadModel(RoutingModel& routing, ExpertPlacement placement);
    void set_placement(ExpertPlacement placement);
    const ExpertPlacement& placement() const { return placement_; }

    /// Load of a step computing `num_tokens` tokens across the whole EP group at `now_s`.
    /// NOTE: multinomial noise on the busiest rank is charged as sqrt(2 ln G) standard deviations.
    EpStepLoad step_load(double num_tokens, double now_s);
    /// Expected tokens per (layer, logical expert) for `num_tokens` tokens, rounded (EPLB input).
    ExpertLoadSample expected_sample(double num_tokens) const;

private:
    void refresh();

    RoutingModel& routing_;
    ExpertPlacement placement_;
    std::int64_t cached_epoch_ = -1;
    /// Mean over layers of the largest per-rank share of the layer's picks.
    double mean_max_share_ = 0;
};

/// An initial placement without EPLB: the identity placement plus `redundant_per_gpu` extra slots per
/// GPU holding replicas chosen round-robin (expert (g * r + j + E/2) mod E, skipping experts already on g).
ExpertPlacement make_static_placement(std::int32_t num_layers, std::int32_t num_experts,
                                      std::int32_t num_gpus, std::int32_t redundant_per_gpu);

}  // namespace deepinfer::sim
