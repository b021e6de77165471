// WindowBalancer: the EPLB policy behind the ExpertBalancer seam. Tracks per-layer, per-expert token
// counts over a sliding window of steps, predicts the next period's loads and re-places every period,
// optionally skipping a re-placement whose predicted gain does not pay for its weight copies.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "policies/eplb/balancer.h"
#include "policies/eplb/move_aware.h"
#include "policies/eplb/moves.h"
#include "policies/eplb/predictor.h"
#include "policies/eplb/rebalance.h"

namespace deepinfer {

struct BalancerConfig {
    /// Steps of load history a decision looks at (DeepSeek: 100 prefill, 1,000 decode).
    std::int32_t window_steps = 1000;
    /// Steps between re-placement decisions (DeepSeek: 1,000 prefill, 10,000 decode).
    std::int32_t period_steps = 10000;
    /// The window slides in buckets of ceil(window_steps / num_buckets) steps: it always covers the
    /// last window_steps steps, rounded up to whole buckets (so between window and window + bucket).
    std::int32_t num_buckets = 10;
    PlacementOptions placement;
    PredictorConfig predictor;
    /// Cost rule, per layer then whole. Per layer the candidate with the largest
    ///   (old - candidate max GPU load, tokens/step) * s_per_token * period_steps - its copies' time
    /// (max bytes into one GPU / copy_bytes_per_s) wins among: keeping the slots with only the
    /// router split re-balanced for the predicted loads (weighted split; no copies), 1, 2, 4, ... 32
    /// move-aware rounds from the current slots (improve_layer: swaps and replica moves; node by node
    /// with node-first placement), and the new placement. Then the
    /// re-placement is skipped when gain_s < cost_s, where
    ///   gain_s = sum over layers of (old - chosen max GPU load) * s_per_token * period_steps
    ///   cost_s = max bytes copied into one GPU / copy_bytes_per_s.
    /// Disabled when any of the three is 0 (every layer then takes its new slots).
    std::int64_t expert_bytes = 0;
    double copy_bytes_per_s = 0.0;
    /// Seconds of MoE time per token on a GPU (one layer).
    double s_per_token = 0.0;
    /// Runs the per-layer choices of the cost rule (independent), possibly on several threads; unset:
    /// one after the other. Results do not depend on it.
    ParallelFor parallel_for;
};

class WindowBalancer final : public ExpertBalancer {
public:
    /// `initial`: the placement in force (its shape fixes layers, experts, GPUs and slots).
    WindowBalancer(BalancerConfig config, ExpertPlacement initial);

    /// Adds one step's tokens per layer and expert (an empty sample only counts the step). Layers
    /// routed by token hash are ordinary layers here: their loads are balanced like any other.
    void observe(std::int64_t step_id, const ExpertLoadSample& load) override;
    /// Every period_steps observed steps: a new placement (slots aligned to the current one so that
    /// experts which stay on a GPU keep their slot), or nullopt (not due, no load seen, nothing
    /// would change, or skipped by the cost rule).
    std::optional<ExpertPlacement> maybe_replace(std::int64_t step_id) override;

    const ExpertPlacement& current() const { return current_; }
    BalancerStats stats() const override { return stats_; }
    /// The copies of the last applied re-placement.
    const MovePlan& last_moves() const { return last_moves_; }
    /// Per-step average loads over the current window (all zero before any load was seen).
    LoadMatrix window_loads() const;
    std::int64_t steps_in_window() const;

private:
    struct Bucket {
        std::vector<std::int64_t> tokens;
        std::int64_t num_steps = 0;
    };

    BalancerConfig config_;
    ExpertPlacement current_;
    LoadPredictor predictor_;
    std::int32_t bucket_steps_;
    std::vector<Bucket> buckets_;  // ring; buckets_[head_] fills now
    std::size_t head_ = 0;
    std::int64_t steps_since_decision_ = 0;
    BalancerStats stats_;
    MovePlan last_moves_;
};

}  // namespace deepinfer
