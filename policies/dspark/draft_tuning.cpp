// Draft-length tuning: runs each candidate policy on batches of representative drafts and scores it
// by expected tokens over predicted step time.
#include "policies/dspark/draft_tuning.h"

#include "policies/common/check.h"

namespace deepinfer {

VerifyStep make_rank_decode_step(const TuningLoad& load, const ModelShape& model) {
    DI_CHECK(load.seqs_per_rank > 0 && load.ep_size > 0,
             "seqs " << load.seqs_per_rank << " ep " << load.ep_size);
    VerifyStep v = make_decode_step(load.seqs_per_rank, load.context_tokens, model);
    const double pairs_per_token = model.top_k * load.moe_imbalance;
    const double leaving = load.ep_size > 1 ? 1.0 - 1.0 / load.ep_size : 0.0;
    v.moe_pairs_per_token = pairs_per_token;
    v.ep_tokens_per_token = pairs_per_token * leaving;
    v.num_local_experts = load.ep_size > 1 ? model.num_experts / load.ep_size : 0;
    v.other.moe_tokens_per_rank = pairs_per_token * load.seqs_per_rank;
    v.other.ep_tokens = v.ep_tokens_per_token * load.seqs_per_rank;
    return v;
}

CandidateResult evaluate_verify_policy(const CostModel& cost, const TuningLoad& load,
                                       std::span<const DraftSample> pool, const VerifyPolicyConfig& config,
                                       std::int32_t num_batches) {
    DI_CHECK(!pool.empty() && num_batches > 0, "empty pool or no batches");
    VerifyPolicy policy = make_verify_policy(config);
    const auto n = static_cast<std::size_t>(load.seqs_per_rank);
    const VerifyStep step = make_rank_decode_step(load, cost.model());
    std::vector<SeqDrafts> drafts(n);
    VerifyDecision out;
    double tokens = 0;
    double time_s = 0;
    double verified = 0;
    std::size_t next = 0;
    for (std::int32_t b = 0; b < num_batches; ++b) {
        const std::size_t first = next;
        for (std::size_t i = 0; i < n; ++i, next = (next + 1) % pool.size()) {
            drafts[i].request = RequestId(static_cast<std::int64_t>(i));
            drafts[i].num_drafts = pool[next].num_drafts;
            drafts[i].confidence = pool[next].confidence;
        }
        choose_verify(policy, VerifyInput{.drafts = drafts, .step = step, .token_budget = load.token_budget},
                      cost, out);
        tokens += step.base_tokens;
        for (std::size_t i = 0; i < n; ++i) {
            const DraftSample& s = pool[(first + i) % pool.size()];
            double p = 1;
            for (std::int32_t j = 0; j < out.verify_len[i]; ++j) {
                p *= s.accept_prob[static_cast<std::size_t>(j)];
                tokens += p;
            }
        }
        verified += out.num_verify_tokens;
        time_s += out.step_time_s + config.max_draft_tokens * load.draft_pass_s;
    }
    CandidateResult r;
    r.config = config;
    r.tokens_per_s = tokens / time_s;
    r.verified_per_step = verified / num_batches;
    r.accepted_length = tokens / (static_cast<double>(n) * num_batches);
    r.step_time_s = time_s / num_batches;
    return r;
}

std::vector<VerifyPolicyConfig> default_tuning_candidates() {
    std::vector<VerifyPolicyConfig> out;
    for (std::int32_t k = 1; k <= kMaxDraftTokens; ++k) {
        out.push_back({.kind = VerifyPolicyKind::kFixed, .max_draft_tokens = k});
        out.push_back({.kind = VerifyPolicyKind::kDynamic, .max_draft_tokens = k});
    }
    for (std::int32_t k : {5, 7})
        for (double t : {0.3, 0.5, 0.7})
            out.push_back({.kind = VerifyPolicyKind::kThreshold, .max_draft_tokens = k, .threshold = t});
    return out;
}

TuningReport tune_draft_length(const CostModel& cost, const TuningLoad& load,
                               std::span<const DraftSample> pool,
                               std::span<const VerifyPolicyConfig> candidates, std::int32_t num_batches) {
    TuningReport report;
    for (const VerifyPolicyConfig& c : candidates) {
        report.candidates.push_back(evaluate_verify_policy(cost, load, pool, c, num_batches));
        if (report.candidates.back().tokens_per_s > report.candidates[report.best].tokens_per_s)
            report.best = report.candidates.size() - 1;
    }
    return report;
}

}  // namespace deepinfer
