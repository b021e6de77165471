// DsparkVerifyAdapter: the Scheduler's VerifyLengthPolicy hook implemented by a DSpark verify policy
// (fixed-k, threshold or dynamic; make_verify_policy) priced on a CostModel, with the step's other
// work estimated from the VerifyContext the Scheduler fills before it plans the batch.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "policies/cost/cost_model.h"
#include "policies/dspark/verify_policy.h"
#include "policies/scheduler/verify_length_policy.h"

namespace deepinfer {

/// The adapter's parameters. The per-rank MoE shape is a property of the deployment (expert
/// parallelism, placement), not of the scheduler's queue, so it lives here and not in VerifyContext.
struct DsparkAdapterConfig {
    VerifyPolicyConfig policy;
    /// Token-expert pairs one token adds on this rank per MoE layer (0 = the model's top_k: EP1; with
    /// expert parallelism, top_k · imbalance / EP size for the busiest rank).
    double moe_pairs_per_token = 0;
    /// Tokens one token adds to this rank's EP dispatch per MoE layer (0 = no expert parallelism).
    double ep_tokens_per_token = 0;
    /// Routed experts hosted on the rank (0 = every expert of the model: EP1).
    std::int32_t num_local_experts = 0;
    /// Share (0..1) of the admissible waiting tokens counted as this step's prefill (see the class
    /// comment); 0 prices verified tokens against the running sequences' work only.
    double admission_share = 1.0;
    /// Per-draft conditional acceptance assumed when the executor reported no confidences (fixed-k
    /// ignores confidences; threshold and dynamic use this value for every such draft).
    double missing_confidence = 0.5;
};

/// Implements VerifyLengthPolicy with a DSpark policy.
///
/// What the adapter assumes about the step's other work. The Scheduler asks for verify lengths
/// before it plans the running sequences and before it admits anyone, so the batch the verified
/// drafts join is an estimate built from VerifyContext:
/// * every decode sequence computes one token at its own context (exact);
/// * every running sequence mid-prompt computes its next chunk, capped at the budget (exact unless
///   the budget runs out first: the Scheduler serves running sequences in admission order, so an
///   older sequence's verified drafts can cut a newer sequence's chunk);
/// * waiting requests are admitted after the running ones until the budget or the free sequence
///   slots run out: `admission_share` of the admissible tokens, capped at the budget left by the
///   running work, are added as prefill at their mean chunk position (prefix hits not subtracted:
///   an upper bound).
/// The token room for verified drafts is the budget minus the running work only (the Scheduler
/// verifies before it admits, and the adapter keeps that priority). Verified tokens are priced on
/// top of the whole estimate, admission included: when the queue could fill the step, a verified
/// token is charged the marginal cost of a token in a full (compute-bound) step, although in fact it
/// displaces an admitted prompt token. That errs towards verifying less: a draft is verified only
/// when its acceptance probability pays for a compute-bound token (a memory-bound step would make it
/// nearly free), and the tokens it does not take are left to admission.
/// base_tokens (tokens the step yields whatever is verified) counts one bonus token per decode
/// sequence plus the running chunks that complete their prompt; admissions are not counted.
class DsparkVerifyAdapter final : public VerifyLengthPolicy {
public:
    /// `cost` prices steps for the dynamic policy. Fixed-k and threshold decide without step times:
    /// they may run without one (their VerifyDecision then carries no step time). Throws ConfigError
    /// for a dynamic policy without a cost model or a bad config.
    DsparkVerifyAdapter(DsparkAdapterConfig config, std::optional<CostModel> cost);

    void choose(const VerifyContext& ctx, std::span<const DraftCandidate> candidates,
                std::span<std::int32_t> out) override;

    const DsparkAdapterConfig& config() const { return config_; }
    /// The step and decision of the last choose() that had candidates (reports, tests).
    const VerifyStep& last_step() const { return step_; }
    const VerifyDecision& last_decision() const { return decision_; }
    /// Token budget handed to the DSpark policy by the last choose(): its room for verified drafts is
    /// this minus last_step().other.num_tokens.
    std::int64_t last_token_budget() const { return token_budget_; }

private:
    DsparkAdapterConfig config_;
    /// False when fixed-k / threshold run without a cost model (step times are then not reported).
    bool priced_;
    CostModel cost_;
    VerifyPolicy policy_;
    VerifyStep step_;
    VerifyDecision decision_;
    std::int64_t token_budget_ = 0;
    std::vector<SeqDrafts> drafts_;
};

/// The other-work estimate described on DsparkVerifyAdapter, and the token budget to hand to the
/// DSpark policy (so that its verify room is the budget minus the running work).
struct AdapterStep {
    VerifyStep step;
    std::int64_t token_budget = 0;
};
AdapterStep make_adapter_step(const VerifyContext& ctx, std::span<const DraftCandidate> candidates,
                              const DsparkAdapterConfig& config, const ModelShape& model);

/// Reads {"policy": {verify policy, see verify_policy_config_from_json}, "moe_pairs_per_token",
/// "ep_tokens_per_token", "num_local_experts", "admission_share", "missing_confidence"}; every key
/// optional, unknown keys rejected.
DsparkAdapterConfig dspark_adapter_config_from_json(const JsonReader& r);

}  // namespace deepinfer
