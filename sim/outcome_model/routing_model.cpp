// Zipf + drift routing model and the per-instance EP load view.
#include "sim/outcome_model/routing_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "policies/common/check.h"

namespace deepinfer::sim {

RoutingModel::RoutingModel(const RoutingModelConfig& config, const ModelShape& model, Rng rng)
    : config_(config), model_(model), rng_(rng) {
    const auto E = static_cast<std::size_t>(model.num_experts);
    log_weight_.resize(static_cast<std::size_t>(model.num_moe_layers));
    for (auto& lw : log_weight_) {
        // A random rank order per layer: popularity rank r gets weight (r + 1)^-s.
        std::vector<std::size_t> order(E);
        std::iota(order.begin(), order.end(), std::size_t{0});
        for (std::size_t i = E; i > 1; --i) std::swap(order[i - 1], order[rng_.below(i)]);
        lw.assign(E, 0.0);
        for (std::size_t r = 0; r < E; ++r)
            lw[order[r]] = -config.zipf_exponent * std::log(static_cast<double>(r + 1));
    }
    base_log_weight_ = log_weight_;
    normalise();
}

void RoutingModel::normalise() {
    prob_.resize(log_weight_.size());
    for (std::size_t l = 0; l < log_weight_.size(); ++l) {
        const auto& lw = log_weight_[l];
        const double mx = *std::max_element(lw.begin(), lw.end());
        auto& p = prob_[l];
        p.resize(lw.size());
        double sum = 0;
        for (std::size_t e = 0; e < lw.size(); ++e) sum += (p[e] = std::exp(lw[e] - mx));
        for (double& v : p) v /= sum;
    }
    ++epoch_;
}

void RoutingModel::advance_to(double now_s) {
    const auto target = static_cast<std::int64_t>(std::floor(now_s / config_.drift_interval_s));
    if (config_.drift_sigma <= 0 || target + 1 <= epoch_) return;
    // epoch_ counts normalisations: 1 after construction, then one per drift interval.
    while (epoch_ < target + 1) {
        for (std::size_t l = 0; l < log_weight_.size(); ++l)
            for (std::size_t e = 0; e < log_weight_[l].size(); ++e) {
                const double base = base_log_weight_[l][e];
                log_weight_[l][e] = base + config_.drift_reversion * (log_weight_[l][e] - base) +
                                    rng_.normal(0.0, config_.drift_sigma);
            }
        normalise();
    }
}

EpLoadModel::EpLoadModel(RoutingModel& routing, ExpertPlacement placement)
    : routing_(routing), placement_(std::move(placement)) {
    DI_CHECK(placement_.num_logical_experts == routing.model().num_experts,
             "placement/model expert count mismatch");
}

void EpLoadModel::set_placement(ExpertPlacement placement) {
    placement_ = std::move(placement);
    cached_epoch_ = -1;
}

void EpLoadModel::refresh() {
    const std::int32_t G = placement_.num_gpus;
    const std::int32_t spg = placement_.slots_per_gpu();
    const std::size_t num_layers = placement_.layers.size();
    std::vector<double> replicas(static_cast<std::size_t>(placement_.num_logical_experts));
    std::vector<double> share(static_cast<std::size_t>(G));
    double sum_max = 0;
    for (std::size_t l = 0; l < num_layers; ++l) {
        const auto& p = routing_.popularity(static_cast<std::int32_t>(l));
        const auto& phy2log = placement_.layers[l].phy2log;
        std::fill(replicas.begin(), replicas.end(), 0.0);
        for (LogicalExpertId e : phy2log) replicas[static_cast<std::size_t>(e.value())] += 1;
        std::fill(share.begin(), share.end(), 0.0);
        for (std::size_t s = 0; s < phy2log.size(); ++s) {
            const auto e = static_cast<std::size_t>(phy2log[s].value());
            share[s / static_cast<std::size_t>(spg)] += p[e] / replicas[e];
        }
        sum_max += *std::max_element(share.begin(), share.end());
    }
    mean_max_share_ = num_layers == 0 ? 1.0 / G : sum_max / static_cast<double>(num_layers);
    cached_epoch_ = routing_.epoch();
}

EpStepLoad EpLoadModel::step_load(double num_tokens, double now_s) {
    routing_.advance_to(now_s);
    if (cached_epoch_ != routing_.epoch()) refresh();
    const double G = placement_.num_gpus;
    const double pairs = num_tokens * routing_.model().top_k;
    EpStepLoad out;
    if (pairs <= 0) return out;
    const double expected_max = pairs * mean_max_share_;
    out.busiest_rank_pairs =
        std::min(pairs, expected_max + std::sqrt(2 * std::log(std::max(G, 1.0))) * std::sqrt(expected_max));
    const double spg = placement_.slots_per_gpu();
    out.busiest_rank_experts = spg * (1 - std::exp(-out.busiest_rank_pairs / spg));
    out.imbalance_max_mean = std::max(1.0, out.busiest_rank_pairs / (pairs / G));
    return out;
}

ExpertLoadSample EpLoadModel::expected_sample(double num_tokens) const {
    ExpertLoadSample s;
    const auto& m = routing_.model();
    s.num_layers = m.num_moe_layers;
    s.num_experts = m.num_experts;
    s.tokens.resize(static_cast<std::size_t>(s.num_layers) * static_cast<std::size_t>(s.num_experts));
    const double pairs = num_tokens * m.top_k;
    for (std::int32_t l = 0; l < s.num_layers; ++l) {
        const auto& p = routing_.popularity(l);
        for (std::int32_t e = 0; e < s.num_experts; ++e)
            s.tokens[static_cast<std::size_t>(l) * static_cast<std::size_t>(s.num_experts) +
                     static_cast<std::size_t>(e)] = std::llround(pairs * p[static_cast<std::size_t>(e)]);
    }
    return s;
}

ExpertPlacement make_static_placement(std::int32_t num_layers, std::int32_t num_experts,
                                      std::int32_t num_gpus, std::int32_t redundant_per_gpu) {
    ExpertPlacement base = make_identity_placement(num_layers, num_experts, num_gpus);
    if (redundant_per_gpu == 0) return base;
    const std::int32_t per_gpu = num_experts / num_gpus;
    ExpertPlacement out = base;
    for (std::size_t l = 0; l < out.layers.size(); ++l) {
        std::vector<LogicalExpertId> slots;
        for (std::int32_t g = 0; g < num_gpus; ++g) {
            for (std::int32_t j = 0; j < per_gpu; ++j)
                slots.push_back(base.layers[l].phy2log[static_cast<std::size_t>(g * per_gpu + j)]);
            std::int32_t e = (g * redundant_per_gpu + num_experts / 2) % num_experts;
            for (std::int32_t r = 0; r < redundant_per_gpu; ++r) {
                while (e / per_gpu == g) e = (e + 1) % num_experts;  // never a second copy on its home GPU
                slots.push_back(LogicalExpertId(e));
                e = (e + 1) % num_experts;
            }
        }
        out.layers[l].phy2log = std::move(slots);
    }
    return out;
}

}  // namespace deepinfer::sim
