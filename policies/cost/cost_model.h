// CostModel: predicted step time from profiled op-group curves, composed for a step's shape.
// Used by the DSpark policy (marginal cost of verified tokens) and by the simulator's executor.
#pragma once

#include <cstdint>
#include <memory>

#include "policies/cost/profile.h"
#include "policies/step_plan.h"

namespace deepinfer {

/// The layer counts the composition needs (V4-Flash by default; V4_SPEC.md §1).
struct ModelShape {
    std::int32_t num_swa_layers = 2;
    std::int32_t num_csa_layers = 21;
    std::int32_t num_hca_layers = 20;
    std::int32_t num_moe_layers = 43;
    std::int32_t num_experts = 256;
    std::int32_t top_k = 6;

    static ModelShape v4_flash() { return {}; }
};

/// The work of one step on one GPU rank. Sizes are totals over the step's sequences.
struct StepShape {
    /// Tokens computed in the step (all sequences).
    double num_tokens = 0;
    /// Sequences in the step.
    double num_seqs = 0;
    /// Sequences that sample (LM head + sampling run on these).
    double num_sampled = 0;
    /// Mean number of keys a computed token attends over before compression (its position).
    double mean_context = 0;
    /// Tokens the busiest rank's experts process per MoE layer (top-k copies counted), and the number
    /// of distinct experts active on it. For EP1 both are the whole step's.
    double moe_tokens_per_rank = 0;
    double moe_experts_per_rank = 0;
    /// Tokens dispatched to other ranks per MoE layer (0 without expert parallelism).
    double ep_tokens = 0;
};

struct StepCost {
    double dense_s = 0;
    double attention_s = 0;
    double moe_s = 0;
    double ep_comm_s = 0;
    double sampling_s = 0;
    double total_s() const { return dense_s + attention_s + moe_s + ep_comm_s + sampling_s; }
};

/// Composition (per step, on one rank):
///   dense(tokens)
/// + Σ_type n_type · attention_<type>(tokens, mean_context)           for type in swa, csa, hca
/// + n_moe · moe_experts(moe_tokens_per_rank, moe_experts_per_rank)
/// + n_moe · ep_dispatch_combine(ep_tokens)                             when ep_tokens > 0
/// + sampling(num_sampled)                                              when num_sampled > 0
/// Every group a profile lacks contributes 0 only if `allow_missing` lists it; otherwise it throws.
class CostModel {
public:
    CostModel(ProfileSet profile, ModelShape model);

    StepCost step_cost(const StepShape& shape) const;
    double step_time_s(const StepShape& shape) const { return step_cost(shape).total_s(); }
    /// The ep_comm_s term alone: n_moe · ep_dispatch_combine(ep_tokens), 0 when ep_tokens ≤ 0.
    double ep_comm_s(double ep_tokens) const;
    const ProfileSet& profile() const { return *profile_; }
    const ModelShape& model() const { return model_; }

private:
    /// Shared and immutable, so copies of a CostModel stay cheap and the cached curve pointers valid.
    std::shared_ptr<const ProfileSet> profile_;
    ModelShape model_;
    // NOTE: resolved once at construction; step_cost runs in the DSpark policy's inner loop.
    const Curve* dense_ = nullptr;
    const Curve* attention_swa_ = nullptr;
    const Curve* attention_csa_ = nullptr;
    const Curve* attention_hca_ = nullptr;
    const Curve* moe_experts_ = nullptr;
    const Curve* sampling_ = nullptr;
    const Curve* ep_dispatch_combine_ = nullptr;
    /// True when the csa and hca attention curves have the swa curve's axis values, so one pair of
    /// brackets serves all three.
    bool attention_axes_shared_ = false;
};

/// Expected number of distinct experts hit when `tokens` tokens each pick `top_k` of `num_experts`
/// uniformly: E · (1 − (1 − k/E)^tokens).
double expected_distinct_experts(double tokens, std::int32_t top_k, std::int32_t num_experts);

/// The sequence-level part of a StepShape from a plan: tokens, seqs, sampled and mean context.
/// MoE and EP fields are filled for EP1 with expected_distinct_experts; callers with expert
/// parallelism overwrite them.
StepShape shape_of(const StepPlan& plan, const ModelShape& model);

}  // namespace deepinfer
