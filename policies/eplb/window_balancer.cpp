// WindowBalancer: bucketed sliding window of expert loads, prediction, periodic re-placement.
#include "policies/eplb/window_balancer.h"

#include "policies/common/check.h"

namespace deepinfer {
namespace {

[[noreturn]] void bad(const std::string& name, const std::string& expected, std::int64_t got) {
    throw ConfigError("eplb options", name, expected, std::to_string(got));
}

}  // namespace

WindowBalancer::WindowBalancer(BalancerConfig config, ExpertPlacement initial)
    : config_(std::move(config)),
      current_(std::move(initial)),
      predictor_(config_.predictor),
      bucket_steps_(1) {
    if (config_.window_steps <= 0) bad("window_steps", "a positive integer", config_.window_steps);
    if (config_.period_steps <= 0) bad("period_steps", "a positive integer", config_.period_steps);
    if (config_.num_buckets <= 0 || config_.num_buckets > config_.window_steps)
        bad("num_buckets", "in [1, window_steps]", config_.num_buckets);
    if (const auto err = current_.validate(); !err.empty())
        throw ConfigError("eplb options", "initial placement", "a valid placement", err);
    config_.placement.num_gpus = current_.num_gpus;
    config_.placement.num_nodes = current_.num_nodes;
    check_placement_options(config_.placement, current_.num_logical_experts);
    if (config_.placement.slots_per_gpu(current_.num_logical_experts) != current_.slots_per_gpu())
        bad("redundant_per_gpu",
            "the initial placement's " + std::to_string(current_.slots_per_gpu()) + " slots per GPU",
            config_.placement.slots_per_gpu(current_.num_logical_experts));
    bucket_steps_ = (config_.window_steps + config_.num_buckets - 1) / config_.num_buckets;
    const std::size_t cells = current_.layers.size() * static_cast<std::size_t>(current_.num_logical_experts);
    buckets_.assign(static_cast<std::size_t>(config_.num_buckets),
                    Bucket{std::vector<std::int64_t>(cells, 0), 0});
}

void WindowBalancer::observe(std::int64_t /*step_id*/, const ExpertLoadSample& load) {
    ++stats_.num_steps_observed;
    ++steps_since_decision_;
    if (buckets_[head_].num_steps == bucket_steps_) {
        head_ = (head_ + 1) % buckets_.size();
        std::fill(buckets_[head_].tokens.begin(), buckets_[head_].tokens.end(), 0);
        buckets_[head_].num_steps = 0;
    }
    Bucket& bucket = buckets_[head_];
    ++bucket.num_steps;
    if (load.empty()) return;
    DI_CHECK(static_cast<std::size_t>(load.num_layers) == current_.layers.size() &&
                 load.num_experts == current_.num_logical_experts &&
                 load.tokens.size() == bucket.tokens.size(),
             "expert load sample is " << load.num_layers << "x" << load.num_experts << ", placement has "
                                      << current_.layers.size() << "x" << current_.num_logical_experts);
    for (std::size_t i = 0; i < bucket.tokens.size(); ++i) bucket.tokens[i] += load.tokens[i];
}

std::int64_t WindowBalancer::steps_in_window() const {
    std::int64_t n = 0;
    for (const auto& b : buckets_) n += b.num_steps;
    return n;
}

LoadMatrix WindowBalancer::window_loads() const {
    LoadMatrix out{.num_layers = static_cast<std::int32_t>(current_.layers.size()),
                   .num_experts = current_.num_logical_experts,
                   .tokens = std::vector<double>(buckets_.front().tokens.size(), 0.0)};
    const std::int64_t steps = steps_in_window();
    if (steps == 0) return out;
    for (const auto& b : buckets_)
        for (std::size_t i = 0; i < b.tokens.size(); ++i) out.tokens[i] += static_cast<double>(b.tokens[i]);
    for (double& v : out.tokens) v /= static_cast<double>(steps);
    return out;
}

std::optional<ExpertPlacement> WindowBalancer::maybe_replace(std::int64_t /*step_id*/) {
    if (steps_since_decision_ < config_.period_steps) return std::nullopt;
    steps_since_decision_ = 0;
    const LoadMatrix window = window_loads();
    double total = 0.0;
    for (double v : window.tokens) total += v;
    if (total <= 0.0) return std::nullopt;
    ++stats_.num_decisions;
    predictor_.observe(window);
    const LoadMatrix predicted = predictor_.predict();
    const PlacementResult next = compute_placement(predicted, config_.placement);
    ExpertPlacement aligned = align_to_previous(current_, next.placement);
    const bool cost_rule =
        config_.expert_bytes > 0 && config_.copy_bytes_per_s > 0.0 && config_.s_per_token > 0.0;
    std::vector<double> new_max(next.layers.size());
    for (std::size_t l = 0; l < next.layers.size(); ++l) new_max[l] = next.layers[l].max_gpu_load;
    if (cost_rule) {
        // Per layer, the candidate that saves the most time over the period net of its own copies
        // (choose_moves). The chosen layers' copies cost at most the sum of their own costs, so the
        // whole re-placement still passes the rule below.
        MoveAwareChoice choice =
            choose_moves(current_, predicted, aligned, new_max, config_.placement,
                         MoveCost{.expert_bytes = config_.expert_bytes,
                                  .copy_bytes_per_s = config_.copy_bytes_per_s,
                                  .s_per_token = config_.s_per_token * config_.period_steps},
                         config_.parallel_for);
        aligned = std::move(choice.placement);
        new_max = std::move(choice.max_load);
        for (const LayerMove k : choice.kind) {
            stats_.num_layers_kept += k == LayerMove::kKept ? 1 : 0;
            stats_.num_layers_swapped += k == LayerMove::kRounds ? 1 : 0;
            stats_.num_layers_new += k == LayerMove::kNew ? 1 : 0;
        }
    }
    MovePlan moves = plan_moves(current_, aligned, config_.expert_bytes);
    double gain_tokens = 0.0;
    for (std::int32_t l = 0; l < predicted.num_layers; ++l) {
        const auto w = predicted.layer(l);
        gain_tokens +=
            measure_balance(current_.layers[static_cast<std::size_t>(l)], w, current_.num_gpus).max_gpu_load -
            new_max[static_cast<std::size_t>(l)];
    }
    stats_.last_gain_s = gain_tokens * config_.s_per_token * config_.period_steps;
    stats_.last_cost_s = config_.copy_bytes_per_s > 0.0
                             ? static_cast<double>(moves.max_bytes_into_gpu) / config_.copy_bytes_per_s
                             : 0.0;
    if (moves.empty() && aligned.layers == current_.layers) return std::nullopt;  // nothing changes
    if (cost_rule && stats_.last_gain_s < stats_.last_cost_s) {
        ++stats_.num_skipped;
        return std::nullopt;
    }
    ++stats_.num_replacements;
    current_ = std::move(aligned);
    last_moves_ = std::move(moves);
    return current_;
}

}  // namespace deepinfer
