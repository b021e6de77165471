// CostModel composition.
#include "policies/cost/cost_model.h"

#include <cmath>

#include "policies/common/check.h"

namespace deepinfer {

CostModel::CostModel(ProfileSet profile, ModelShape model) : profile_(std::move(profile)), model_(model) {
    for (const char* g : kOpGroups) {
        if (!profile_.has(g))
            throw ProfileError(profile_.name, "/" + std::string(g), "a profile for op group \"" + std::string(g) + "\"",
                               "none (every op group is needed by the cost model)");
    }
    auto check_axes = [&](const char* g, std::initializer_list<const char*> names) {
        const Curve& c = profile_.at(g).curve;
        std::size_t i = 0;
        for (const char* n : names) {
            if (c.num_axes() != names.size() || c.axes()[i].name != n)
                throw ProfileError(profile_.name, "/" + std::string(g) + "/axes",
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
}

double CostModel::group_us(const char* group, std::initializer_list<double> point) const {
    return profile_.at(group).curve.eval_us(std::span<const double>(point.begin(), point.size()));
}

StepCost CostModel::step_cost(const StepShape& s) const {
    StepCost c;
    if (s.num_tokens <= 0) return c;
    c.dense_s = group_us("dense", {s.num_tokens}) * 1e-6;
    c.attention_s = (model_.num_swa_layers * group_us("attention_swa", {s.num_tokens, s.mean_context}) +
                     model_.num_csa_layers * group_us("attention_csa", {s.num_tokens, s.mean_context}) +
                     model_.num_hca_layers * group_us("attention_hca", {s.num_tokens, s.mean_context})) *
                    1e-6;
    if (s.moe_tokens_per_rank > 0)
        c.moe_s = model_.num_moe_layers * group_us("moe_experts", {s.moe_tokens_per_rank, s.moe_experts_per_rank}) * 1e-6;
    if (s.ep_tokens > 0) c.ep_comm_s = model_.num_moe_layers * group_us("ep_dispatch_combine", {s.ep_tokens}) * 1e-6;
    if (s.num_sampled > 0) c.sampling_s = group_us("sampling", {s.num_sampled}) * 1e-6;
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
