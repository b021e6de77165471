// Draft-length tuning: expected throughput of verify policies and max draft lengths at one load level
// on a CostModel, from acceptance statistics given as plain data (no simulation).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "policies/dspark/verify_policy.h"

namespace deepinfer {

/// One representative sequence-step of drafts (e.g. drawn from the simulator's acceptance model or
/// logged from the engine's MTP head).
struct DraftSample {
    /// Drafts available; candidates with a larger max_draft_tokens see only these.
    std::int32_t num_drafts = 0;
    /// What the confidence head reported for draft j.
    std::array<float, kMaxDraftTokens> confidence{};
    /// True probability that draft j is accepted given drafts before it were (== confidence for a
    /// calibrated head). Expected tokens are computed from these.
    std::array<float, kMaxDraftTokens> accept_prob{};
};

/// The load level of one decode rank.
struct TuningLoad {
    std::int32_t seqs_per_rank = 16;
    /// Mean context of the decode sequences, tokens.
    double context_tokens = 8192;
    /// Expert-parallel width (1 = every expert on the rank).
    std::int32_t ep_size = 1;
    /// Token-expert pairs on the busiest rank over the mean (1 = perfectly balanced).
    double moe_imbalance = 1.0;
    /// Time of one draft pass (one MTP forward over the batch), seconds; drafting k tokens costs k
    /// passes per step. 0 ignores drafting cost.
    double draft_pass_s = 0;
    std::int64_t token_budget = std::numeric_limits<std::int64_t>::max();
};

/// Expected figures of one policy at one load.
struct CandidateResult {
    VerifyPolicyConfig config;
    /// Σ expected tokens / Σ (step time + drafting time), over the evaluated batches; tokens/s.
    double tokens_per_s = 0;
    /// Mean verified draft tokens per step on the rank.
    double verified_per_step = 0;
    /// Mean tokens a sequence gains per step (expected accepted drafts + the bonus token).
    double accepted_length = 0;
    /// Mean step time including drafting, seconds.
    double step_time_s = 0;
};

struct TuningReport {
    std::vector<CandidateResult> candidates;
    /// Index of the highest tokens_per_s (the first on ties).
    std::size_t best = 0;
};

/// The VerifyStep of a decode rank at `load`: seqs_per_rank tokens at context_tokens; MoE pairs
/// top_k · imbalance per token over num_experts / ep_size local experts; with EP, the pairs leaving
/// the rank are pairs · (1 − 1/ep_size) (as the simulator's executor charges them).
VerifyStep make_rank_decode_step(const TuningLoad& load, const ModelShape& model);

/// Evaluates one policy on `num_batches` batches of seqs_per_rank samples taken in order from
/// `pool` (cycling). Expected tokens use accept_prob; the policy sees confidence.
CandidateResult evaluate_verify_policy(const CostModel& cost, const TuningLoad& load,
                                       std::span<const DraftSample> pool, const VerifyPolicyConfig& config,
                                       std::int32_t num_batches);

/// Fixed-k and dynamic for k = 1..kMaxDraftTokens, threshold 0.3/0.5/0.7 for k = 5 and 7.
std::vector<VerifyPolicyConfig> default_tuning_candidates();

/// Evaluates every candidate at `load` and names the best max draft length and policy.
TuningReport tune_draft_length(const CostModel& cost, const TuningLoad& load,
                               std::span<const DraftSample> pool,
                               std::span<const VerifyPolicyConfig> candidates, std::int32_t num_batches);

}  // namespace deepinfer
