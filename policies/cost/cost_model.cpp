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
            throw ProfileError(set.name, "/" + std::string(g), "a profile for op group \"" + std::string(g) + "\"",
                               "none (every op group is needed by the cost model)");
    }
    auto check_axes = [&](const char* g, std::initializer_list<const char*> names) {
        const Curve& c = set.at(g).curve;
        std::size_t i = 0;
        for (const char* n : names) {
            if (c.num_axes() != names.size() || c.axes()[i].name != n)
                throw ProfileError(set.name, "/" + std::string(g) + "/axes",
                                   "axes in this order: " + [&] {
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
}

namespace {
double eval1(const Curve& c, double x) { return c.eval_us(std::span<const double>(&x, 1)); }
double eval2(const Curve& c, double x, double y) {
    const double p[2] = {x, y};
    return c.eval_us(std::span<const double>(p, 2));
}
}  // namespace

StepCost CostModel::step_cost(const StepShape& s) const {
    StepCost c;
    if (s.num_tokens <= 0) return c;
    c.dense_s = eval1(*dense_, s.num_tokens) * 1e-6;
    c.attention_s = (model_.num_swa_layers * eval2(*attention_swa_, s.num_tokens, s.mean_context) +
                     model_.num_csa_layers * eval2(*attention_csa_, s.num_tokens, s.mean_context) +
                     model_.num_hca_layers * eval2(*attention_hca_, s.num_tokens, s.mean_context)) *
                    1e-6;
    if (s.moe_tokens_per_rank > 0)
        c.moe_s = model_.num_moe_layers * eval2(*moe_experts_, s.moe_tokens_per_rank, s.moe_experts_per_rank) * 1e-6;
    if (s.ep_tokens > 0) c.ep_comm_s = model_.num_moe_layers * eval1(*ep_dispatch_combine_, s.ep_tokens) * 1e-6;
    if (s.num_sampled > 0) c.sampling_s = eval1(*sampling_, s.num_sampled) * 1e-6;
    return c;
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
        context_sum += static_cast<double>(q.num_new_tokens) * (q.num_computed_tokens + (q.num_new_tokens + 1) / 2.0);
    }
    if (s.num_tokens > 0) s.mean_context = context_sum / s.num_tokens;
    s.moe_tokens_per_rank = s.num_tokens * model.top_k;
    s.moe_experts_per_rank = expected_distinct_experts(s.num_tokens, model.top_k, model.num_experts);
    return s;
}

}  // namespace deepinfer
