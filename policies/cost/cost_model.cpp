// CostModel composition.
#include "policies/cost/cost_model.h"

#include <cmath>

#include "policies/common/check.h"

namespace deepinfer {

CostModel::CostModel(ProfileSet profile, ModelShape model)
    : profile_(std::make_shared<const ProfileSet>(std::move(profile))), model_(model) {
    const ProfileSet& set = *profile_;
    for (const char* g : kOpGroups) {
        if (!set.has(g))
            throw ProfileError(set.name, "/" + std::string(g),
                               "a profile for op group \"" + std::string(g) + "\"",
                               "none (every op group is needed by the cost model)");
    }
    auto check_axes = [&](const char* g, std::initializer_list<const char*> names) {
        const Curve& c = set.at(g).curve;
        std::size_t i = 0;
        for (const char* n : names) {
            if (c.num_axes() != names.size() || c.axes()[i].name != n)
                throw ProfileError(
                    set.name, "/" + std::string(g) + "/axes",
                    "axes in this order: " +
                        [&] {
                            std::string s;
                            for (const char* m : names) s += (s.empty() ? "" : ", ") + std::string(m);
                            return s;
                        }(),
                    "a different axis list");
            ++i;
        }
    };
    check_axes("dense", {"tokens"});
    check_axes("attention_swa", {"tokens", "context"});
    check_axes("attention_csa", {"tokens", "context"});
    check_axes("attention_hca", {"tokens", "context"});
    check_axes("moe_experts", {"tokens", "experts"});
    check_axes("sampling", {"seqs"});
    check_axes("ep_dispatch_combine", {"tokens"});
    dense_ = &set.at("dense").curve;
    attention_swa_ = &set.at("attention_swa").curve;
    attention_csa_ = &set.at("attention_csa").curve;
    attention_hca_ = &set.at("attention_hca").curve;
    moe_experts_ = &set.at("moe_experts").curve;
    sampling_ = &set.at("sampling").curve;
    ep_dispatch_combine_ = &set.at("ep_dispatch_combine").curve;
    auto same_axes = [](const Curve& a, const Curve& b) {
        for (std::size_t k = 0; k < a.num_axes(); ++k)
            if (a.axes()[k].values != b.axes()[k].values) return false;
        return true;
    };
    attention_axes_shared_ =
        same_axes(*attention_swa_, *attention_csa_) && same_axes(*attention_swa_, *attention_hca_);
}

namespace {
double eval2(const Curve& c, double x, double y) { return c.eval2_us(c.bracket(0, x), c.bracket(1, y)); }
}  // namespace

StepCost CostModel::step_cost(const StepShape& s) const {
    StepCost c;
    if (s.num_tokens <= 0) return c;
    c.dense_s = dense_->eval1_us(s.num_tokens) * 1e-6;
    double swa_us = 0;
    double csa_us = 0;
    double hca_us = 0;
    if (attention_axes_shared_) {
        const Curve::Bracket tokens = attention_swa_->bracket(0, s.num_tokens);
        const Curve::Bracket context = attention_swa_->bracket(1, s.mean_context);
        swa_us = attention_swa_->eval2_us(tokens, context);
        csa_us = attention_csa_->eval2_us(tokens, context);
        hca_us = attention_hca_->eval2_us(tokens, context);
    } else {
        swa_us = eval2(*attention_swa_, s.num_tokens, s.mean_context);
        csa_us = eval2(*attention_csa_, s.num_tokens, s.mean_context);
        hca_us = eval2(*attention_hca_, s.num_tokens, s.mean_context);
    }
    c.attention_s =
        (model_.num_swa_layers * swa_us + model_.num_csa_layers * csa_us + model_.num_hca_layers * hca_us) *
        1e-6;
    if (s.moe_tokens_per_rank > 0)
        c.moe_s = model_.num_moe_layers *
                  eval2(*moe_experts_, s.moe_tokens_per_rank, s.moe_experts_per_rank) * 1e-6;
    c.ep_comm_s = ep_comm_s(s.ep_tokens);
    if (s.num_sampled > 0) c.sampling_s = sampling_->eval1_us(s.num_sampled) * 1e-6;
    return c;
}

double CostModel::ep_comm_s(double ep_tokens) const {
    if (!(ep_tokens > 0)) return 0;
    return model_.num_moe_layers * ep_dispatch_combine_->eval1_us(ep_tokens) * 1e-6;
}

double expected_distinct_experts(double tokens, std::int32_t top_k, std::int32_t num_experts) {
    if (tokens <= 0 || num_experts <= 0) return 0;
    const double e = num_experts;
    return e * (1.0 - std::pow(1.0 - static_cast<double>(top_k) / e, tokens));
}

StepShape shape_of(const StepPlan& plan, const ModelShape& model) {
    StepShape s;
    double context_sum = 0;
    for (const SeqSchedule& q : plan.seqs) {
        s.num_tokens += q.num_new_tokens;
        s.num_seqs += 1;
        s.num_sampled += q.samples ? 1 : 0;
        // Mean position of the step's tokens: computed + (new + 1) / 2, weighted by new tokens.
        context_sum +=
            static_cast<double>(q.num_new_tokens) * (q.num_computed_tokens + (q.num_new_tokens + 1) / 2.0);
    }
    if (s.num_tokens > 0) s.mean_context = context_sum / s.num_tokens;
    s.moe_tokens_per_rank = s.num_tokens * model.top_k;
    s.moe_experts_per_rank = expected_distinct_experts(s.num_tokens, model.top_k, model.num_experts);
    return s;
}

}  // namespace deepinfer
