// DsparkVerifyAdapter: VerifyContext -> VerifyStep (the step's other work), candidates -> SeqDrafts,
// the DSpark policy's lengths -> the Scheduler's verify choices.
#include "policies/dspark/dspark_verify_adapter.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "policies/common/check.h"

namespace deepinfer {
namespace {

/// A cost model for fixed-k and threshold verification when no profile is given: they never read
/// step times, but the policy interface takes a CostModel. Every op group costs 0 except a constant
/// dense term, so no number here can be mistaken for a measurement (the adapter reports 0 s).
CostModel make_unpriced_cost_model(const ModelShape& model) {
    ProfileSet p;
    p.name = "unpriced (fixed/threshold verify without a profile)";
    const ProfileMeta meta{
        .hardware = "none", .kind = "derived", .method = "constant", .notes = "not a profile"};
    auto add = [&](const char* g, std::vector<CurveAxis> axes, std::size_t n) {
        p.groups.emplace(g, OpGroupProfile{.op_group = g,
                                           .meta = meta,
                                           .curve = Curve(std::move(axes), std::vector<double>(n, 1.0))});
    };
    add("dense", {CurveAxis{"tokens", {1, 2}}}, 2);
    for (const char* g : {"attention_swa", "attention_csa", "attention_hca"})
        add(g, {CurveAxis{"tokens", {1, 2}}, CurveAxis{"context", {1, 2}}}, 4);
    add("moe_experts", {CurveAxis{"tokens", {1, 2}}, CurveAxis{"experts", {1, 2}}}, 4);
    add("sampling", {CurveAxis{"seqs", {1, 2}}}, 2);
    add("ep_dispatch_combine", {CurveAxis{"tokens", {1, 2}}}, 2);
    return CostModel(std::move(p), model);
}

CostModel resolve_cost(const DsparkAdapterConfig& config, std::optional<CostModel>& cost) {
    if (cost) return std::move(*cost);
    if (config.policy.kind == VerifyPolicyKind::kDynamic)
        throw ConfigError(
            "verify_policy", "/policy", "fixed or threshold without a cost model",
            "dynamic (it needs a CostModel: a profile directory such as profiles/h200-roofline)");
    return make_unpriced_cost_model(ModelShape::v4_flash());
}

void check_config(const DsparkAdapterConfig& c) {
    auto bad = [](const char* field, const char* expected, double got) {
        throw ConfigError("dspark_adapter", field, expected, std::to_string(got));
    };
    if (!(c.moe_pairs_per_token >= 0)) bad("/moe_pairs_per_token", "a number >= 0", c.moe_pairs_per_token);
    if (!(c.ep_tokens_per_token >= 0)) bad("/ep_tokens_per_token", "a number >= 0", c.ep_tokens_per_token);
    if (c.num_local_experts < 0) bad("/num_local_experts", "an integer >= 0", c.num_local_experts);
    if (!(c.admission_share >= 0 && c.admission_share <= 1))
        bad("/admission_share", "a number in [0, 1]", c.admission_share);
    if (!(c.missing_confidence >= 0 && c.missing_confidence <= 1))
        bad("/missing_confidence", "a number in [0, 1]", c.missing_confidence);
}

}  // namespace

AdapterStep make_adapter_step(const VerifyContext& ctx, std::span<const DraftCandidate> candidates,
                              const DsparkAdapterConfig& config, const ModelShape& model) {
    const double decode = ctx.num_decode_seqs;
    const auto prefill = static_cast<double>(ctx.num_prefill_tokens);
    const double running_work = decode + prefill;
    // Admission fills what the running work leaves of the budget.
    const double room_after_running = std::max(0.0, ctx.token_budget - running_work);
    const double admit_tokens = std::min(
        config.admission_share * static_cast<double>(ctx.num_waiting_admissible_tokens), room_after_running);
    const double admit_seqs = ctx.num_waiting_admissible_tokens > 0
                                  ? ctx.num_waiting_admissible * admit_tokens /
                                        static_cast<double>(ctx.num_waiting_admissible_tokens)
                                  : 0.0;
    // An admitted prompt chunk of n tokens from position 0 has mean position (n - 1) / 2.
    const double admit_context =
        admit_seqs > 0 ? admit_tokens * std::max(0.0, admit_tokens / admit_seqs - 1.0) / 2.0 : 0.0;

    AdapterStep a;
    VerifyStep& v = a.step;
    StepShape& s = v.other;
    s.num_tokens = running_work + admit_tokens;
    s.num_seqs = decode + ctx.num_prefill_seqs + admit_seqs;
    s.num_sampled = decode + ctx.num_prefill_samples + admit_seqs;
    if (s.num_tokens > 0)
        s.mean_context =
            (static_cast<double>(ctx.decode_context_tokens) + ctx.prefill_context_tokens + admit_context) /
            s.num_tokens;
    v.moe_pairs_per_token = config.moe_pairs_per_token > 0 ? config.moe_pairs_per_token : model.top_k;
    v.ep_tokens_per_token = config.ep_tokens_per_token;
    v.num_local_experts = config.num_local_experts;
    s.moe_tokens_per_rank = s.num_tokens * v.moe_pairs_per_token;
    s.ep_tokens = s.num_tokens * v.ep_tokens_per_token;
    // shape_with_verified recomputes the distinct experts from the pairs; this is the same formula.
    if (v.num_local_experts > 0) {
        s.moe_experts_per_rank = distinct_local_experts(v.num_local_experts, s.moe_tokens_per_rank);
    } else if (model.top_k > 0) {
        s.moe_experts_per_rank =
            expected_distinct_experts(s.moe_tokens_per_rank / model.top_k, model.top_k, model.num_experts);
    }
    // A verified draft sits just past its sequence's context.
    double ctx_sum = 0;
    for (const DraftCandidate& c : candidates) ctx_sum += c.num_context_tokens + 1.0;
    v.draft_context = candidates.empty() ? 0.0 : ctx_sum / static_cast<double>(candidates.size());
    v.base_tokens = decode + ctx.num_prefill_samples;
    // Room for verified drafts = budget - running work (admission comes after them); the policy
    // subtracts other.num_tokens, which also holds the admission estimate, so add it back.
    const auto running = static_cast<std::int64_t>(std::ceil(running_work));
    const std::int64_t room = std::max<std::int64_t>(0, ctx.token_budget - running);
    a.token_budget = room + static_cast<std::int64_t>(std::ceil(s.num_tokens));
    return a;
}

DsparkVerifyAdapter::DsparkVerifyAdapter(DsparkAdapterConfig config, std::optional<CostModel> cost)
    : config_(config),
      priced_(cost.has_value()),
      cost_(resolve_cost(config, cost)),
      policy_(make_verify_policy(config.policy)) {
    check_config(config_);
}

void DsparkVerifyAdapter::choose(const VerifyContext& ctx, std::span<const DraftCandidate> candidates,
                                 std::span<std::int32_t> out) {
    DI_CHECK(out.size() == candidates.size(),
             "verify out has " << out.size() << " slots for " << candidates.size() << " candidates");
    if (candidates.empty()) return;
    AdapterStep a = make_adapter_step(ctx, candidates, config_, cost_.model());
    step_ = a.step;
    token_budget_ = a.token_budget;
    drafts_.resize(candidates.size());
    const auto missing = static_cast<float>(config_.missing_confidence);
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const DraftCandidate& c = candidates[i];
        SeqDrafts& d = drafts_[i];
        d.request = c.request;
        d.num_drafts = std::clamp(c.max_verify, 0, kMaxDraftTokens);
        if (!c.confidences.empty())
            d.num_drafts = std::min(d.num_drafts, static_cast<std::int32_t>(c.confidences.size()));
        for (std::int32_t j = 0; j < kMaxDraftTokens; ++j)
            d.confidence[static_cast<std::size_t>(j)] =
                j < d.num_drafts
                    ? (c.confidences.empty() ? missing : c.confidences[static_cast<std::size_t>(j)])
                    : 0.0F;
    }
    const VerifyInput in{.drafts = drafts_, .step = step_, .token_budget = token_budget_};
    choose_verify(policy_, in, cost_, decision_);
    if (!priced_) decision_.step_time_s = 0;  // see make_unpriced_cost_model
    for (std::size_t i = 0; i < candidates.size(); ++i)
        out[i] = std::clamp(decision_.verify_len[i], 0, candidates[i].max_verify);
}

}  // namespace deepinfer
