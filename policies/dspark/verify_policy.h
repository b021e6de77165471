// DSpark verification: how many of each sequence's draft tokens a step verifies. The dynamic policy
// picks the lengths that maximise expected tokens per second of predicted step time on the CostModel.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "policies/common/ids.h"
#include "policies/common/json_reader.h"
#include "policies/cost/cost_model.h"

namespace deepinfer {

/// The most draft tokens a sequence may carry into one verify step.
inline constexpr std::int32_t kMaxDraftTokens = 7;

/// One sequence's drafts for the step being planned.
struct SeqDrafts {
    RequestId request{0};
    /// Draft tokens proposed (0..kMaxDraftTokens).
    std::int32_t num_drafts = 0;
    /// confidence[j]: the confidence head's probability that draft j is accepted given drafts
    /// 0..j-1 were. Entries at or past num_drafts are ignored; values are clamped to [0, 1] and NaN
    /// counts as 0.
    std::array<float, kMaxDraftTokens> confidence{};
};

/// The step the verified drafts join, and what one verified draft token adds to it.
/// NOTE: every verified token is charged the same way (one more token at `draft_context`, the same
/// MoE and EP load), so the predicted step time depends on the number T of verified tokens only,
/// not on which sequences they belong to: time(T) = CostModel(shape_with_verified(step, T)). That is
/// what makes the optimisation separable (best allocation for each T, then the best T).
struct VerifyStep {
    /// The step without any verified draft: prefill chunks plus the one token each decode sequence
    /// computes anyway (the token that yields its bonus token). MoE/EP fields as on the busiest rank.
    StepShape other;
    /// Mean position (keys attended) of a verified draft token, tokens.
    double draft_context = 0;
    /// Token-expert pairs a verified token adds on the busiest rank per MoE layer (top_k for EP1;
    /// top_k · imbalance for expert parallelism with DP attention).
    double moe_pairs_per_token = 6;
    /// Tokens a verified token adds to the rank's EP dispatch per MoE layer (0 without EP).
    double ep_tokens_per_token = 0;
    /// Routed experts hosted on the rank (0 = every expert of the model: EP1). Used to recompute
    /// the distinct active experts from the token-expert pairs.
    std::int32_t num_local_experts = 0;
    /// Tokens the step yields whatever is verified (one bonus token per decode sequence).
    double base_tokens = 0;
};

/// What the verify policy decides on.
struct VerifyInput {
    std::span<const SeqDrafts> drafts;
    VerifyStep step;
    /// Most tokens the step may compute, its other work included: the verified drafts get at most
    /// token_budget − step.other.num_tokens (never below 0).
    std::int64_t token_budget = std::numeric_limits<std::int64_t>::max();
};

/// The decision: one verify length per input sequence, in input order, and what it predicts.
struct VerifyDecision {
    /// verify_len[i] in 0..min(num_drafts, max_draft_tokens) for drafts[i].
    std::vector<std::int32_t> verify_len;
    std::int32_t num_verify_tokens = 0;
    /// base_tokens + Σ_i Σ_{j ≤ verify_len[i]} Π_{l ≤ j} c_il: expected tokens the step yields when
    /// the confidences are calibrated.
    double expected_tokens = 0;
    /// CostModel's step time with the verified tokens, seconds.
    double step_time_s = 0;
    /// CostModel evaluations the decision needed (diagnostic).
    std::int32_t num_time_evals = 0;
    /// Dynamic policy: a proven bound on how far the chosen ratio may fall short of the optimum,
    /// relative (0 = exact), valid when time is non-decreasing in the verified tokens.
    double optimality_gap_bound = 0;

    double tokens_per_s() const { return step_time_s > 0 ? expected_tokens / step_time_s : 0.0; }
};

/// Expected tokens from verifying the first `verify_len` drafts: Σ_{j ≤ L} Π_{i ≤ j} c_i (the bonus
/// token not included). Confidences are clamped as in SeqDrafts.
double expected_accepted_drafts(const SeqDrafts& d, std::int32_t verify_len);

/// The step's shape with `num_verified` draft tokens added (see VerifyStep).
StepShape shape_with_verified(const VerifyStep& step, double num_verified, const ModelShape& model);
/// Same, with log(1 − 1/step.num_local_experts) given (0 when num_local_experts is 0): the dynamic
/// policy evaluates many totals for one step.
StepShape shape_with_verified(const VerifyStep& step, double num_verified, const ModelShape& model,
                              double log_keep);

/// Expected distinct experts hit among `num_experts` local ones by `pairs` token-expert pairs drawn
/// uniformly: e · (1 − (1 − 1/e)^pairs). `log_keep` = log(1 − 1/e) when the caller has it.
double distinct_local_experts(double num_experts, double pairs);
double distinct_local_experts(double num_experts, double pairs, double log_keep);

/// A decode-only step of `num_seqs` sequences at mean position `context` with EP1: one token per
/// sequence, each sequence sampling, base_tokens = num_seqs.
VerifyStep make_decode_step(std::int32_t num_seqs, double context, const ModelShape& model);

enum class VerifyPolicyKind : std::uint8_t { kFixed = 0, kThreshold, kDynamic };
std::string_view name(VerifyPolicyKind k);

/// Which policy, and its parameters. JSON: verify_policy_json.cpp.
struct VerifyPolicyConfig {
    VerifyPolicyKind kind = VerifyPolicyKind::kDynamic;
    /// Drafts proposed per sequence per step and the most any policy verifies (1..kMaxDraftTokens).
    /// Fixed-k verifies min(num_drafts, max_draft_tokens).
    std::int32_t max_draft_tokens = 5;
    /// kThreshold: verify draft j iff Π_{i ≤ j} c_i ≥ threshold (the probability it is accepted).
    double threshold = 0.5;
    /// kDynamic: evaluate the step time at every T instead of branch and bound (tests, reference).
    bool exhaustive = false;
    /// kDynamic: accepted relative shortfall from the optimal ratio (0 = exact; see DynamicVerify).
    double optimality_gap = 1e-3;
    /// kDynamic: most CostModel evaluations per decision (>= 2; one costs ~0.2 us).
    std::int32_t max_time_evals = 64;
};

/// Verify min(num_drafts, k) drafts of every sequence. Over budget, drafts are cut level by level
/// from the last position (every sequence keeps its first j before any keeps its j+1-th); within a
/// level, smaller request ids keep theirs.
class FixedVerify {
public:
    explicit FixedVerify(std::int32_t k);
    void operator()(const VerifyInput& in, const CostModel& cost, VerifyDecision& out);

private:
    std::int32_t k_;
};

/// Verify the longest prefix whose every token has Π_{i ≤ j} c_i ≥ threshold (capped at k). Over
/// budget, cut as FixedVerify.
class ThresholdVerify {
public:
    ThresholdVerify(std::int32_t k, double threshold);
    void operator()(const VerifyInput& in, const CostModel& cost, VerifyDecision& out);

private:
    std::int32_t k_;
    double threshold_;
};

/// Maximises expected tokens / predicted step time over all verify lengths (0..min(num_drafts, k)
/// per sequence) within the token budget.
///
/// Method:
/// 1. The marginal gain of verifying draft j of a sequence is g_j = Π_{i ≤ j} c_i. Gains are
///    non-increasing along a sequence, so for a fixed total T the best allocation is the T largest
///    gains (they automatically form prefixes), and G(T), their sum, is concave. The gains are
///    ordered once by a stable radix sort of their float bits: exact for every T at once.
/// 2. time(T) depends on T only (VerifyStep), so the optimum is max_T (base + G(T)) / time(T) over
///    T = 0..T_max. Best-first branch and bound over T: an interval (a, b) whose bound
///    (base + G(b−1)) / time(a) cannot beat the best ratio found is discarded; otherwise it is split
///    at its midpoint. The bound is valid whenever time(T) is non-decreasing in T (every
///    roofline-shaped profile).
/// Exactness: with optimality_gap = 0 and no evaluation cap the result is the exact optimum
/// (tests check it against evaluating every T). With a gap ε, intervals that could beat the best
/// by less than a factor 1 + ε are dropped; when the evaluation cap binds, the open intervals are
/// dropped. Either way the decision reports the proven bound on its shortfall
/// (VerifyDecision::optimality_gap_bound), so every decision is certified near-optimal.
/// Ties: the smallest T attaining the best ratio; among equal gains at the cut, smaller request
/// ids (then earlier drafts) are verified first.
class DynamicVerify {
public:
    /// `optimality_gap` >= 0: relative shortfall the search may accept (0 = exact). `max_time_evals`
    /// caps the CostModel evaluations per call. The defaults are exact and uncapped.
    explicit DynamicVerify(std::int32_t k, bool exhaustive = false, double optimality_gap = 0.0,
                           std::int32_t max_time_evals = std::numeric_limits<std::int32_t>::max());
    void operator()(const VerifyInput& in, const CostModel& cost, VerifyDecision& out);

private:
    std::int32_t choose_total(const VerifyInput& in, const CostModel& cost, std::int32_t t_max,
                              VerifyDecision& out);
    void assign_lengths(const VerifyInput& in, std::int32_t total, VerifyDecision& out);

    /// An open interval (a, b) of totals and the best ratio any T inside it can reach. Max-heap by
    /// bound; equal bounds pop the smaller a first.
    struct Interval {
        double bound;
        std::int32_t a;
        std::int32_t b;
        bool operator<(const Interval& o) const { return bound < o.bound || (bound == o.bound && a > o.a); }
    };

    std::int32_t k_;
    bool exhaustive_;
    double optimality_gap_;
    std::int32_t max_time_evals_;
    // Scratch reused across calls (no allocation once warm).
    std::vector<std::uint64_t> items_;
    std::vector<std::uint64_t> tmp_;
    std::vector<double> gain_prefix_;
    std::vector<double> time_s_;
    std::vector<std::uint64_t> tie_;
    std::vector<Interval> heap_;
};

/// The closed set of verify policies (STYLE.md: a variant of functors chosen by config).
using VerifyPolicy = std::variant<FixedVerify, ThresholdVerify, DynamicVerify>;

/// Builds the policy a config names. Throws ConfigError (file label "verify_policy") on a bad
/// max_draft_tokens or threshold.
VerifyPolicy make_verify_policy(const VerifyPolicyConfig& config);

/// Runs `policy` on `in`; `out` is overwritten (its buffers are reused).
void choose_verify(VerifyPolicy& policy, const VerifyInput& in, const CostModel& cost, VerifyDecision& out);

/// Reads {"policy": "fixed"|"threshold"|"dynamic", "max_draft_tokens": 1..7, "threshold": [0,1],
/// "exhaustive": bool, "optimality_gap": [0,1], "max_time_evals": >= 2}; absent keys keep their
/// defaults, unknown keys are errors.
VerifyPolicyConfig verify_policy_config_from_json(const JsonReader& r);
nlohmann::json verify_policy_config_to_json(const VerifyPolicyConfig& c);

}  // namespace deepinfer
