// Seeded model of draft acceptance for DSpark: per-draft confidences and accept/reject outcomes
// with a settable mean accepted length, calibration and confidence-acceptance correlation.
// Plain C++ (no SimGrid), so it also feeds analytic evaluations and tests.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "policies/common/rng.h"

namespace deepinfer::sim {

/// The generative model, per sequence and step (K = max_draft_tokens, j = 1..K):
///   μ_j = μ_1 · position_decay^(j−1)             mean acceptance probability of draft j, with μ_1
///                                                 solved so that 1 + Σ_{j≤K} Π_{i≤j} μ_i equals
///                                                 mean_accepted_length (fixed-K verification).
///   q_j ~ Beta(μ_j κ, (1 − μ_j) κ), κ = 1/ρ² − 1  true probability that draft j is accepted given
///                                                 drafts 1..j−1 were; independent over j and
///                                                 sequences (ρ = 0: q_j = μ_j; ρ = 1: q_j ∈ {0,1}
///                                                 with P(q_j = 1) = μ_j).
///   X_j ~ Bernoulli(q_j)                          whether draft j would be accepted if reached.
///   c_j = σ(logit(q_j) / confidence_temperature + confidence_bias)   the confidence head's output.
/// The step accepts the leading run of X_j = 1 among the verified drafts, then emits a bonus token.
/// Properties: E[X_j | q_j] = q_j, so with temperature 1 and bias 0 the head is perfectly
/// calibrated (P(accept | c) = c); corr(c_j, X_j) = ρ exactly when calibrated (Var q_j =
/// μ_j(1 − μ_j) ρ²); temperature < 1 is over-confident, > 1 under-confident, bias > 0 optimistic.
struct AcceptanceModelConfig {
    /// Drafts per sequence and step (1..7).
    std::int32_t max_draft_tokens = 5;
    /// Mean tokens a sequence gains per step (accepted drafts + the bonus token) when all
    /// max_draft_tokens drafts are verified. In (1, 1 + Σ_{j≤K} Π_{i≤j} position_decay^(i−1)]
    /// (max_mean_accepted_length: every μ_1 = 1).
    double mean_accepted_length = 3.20;
    /// Ratio of the mean acceptance of draft j+1 to draft j, in (0, 1].
    double position_decay = 0.95;
    /// ρ: correlation between a reached draft's confidence and its acceptance, in [0, 1].
    double correlation = 0.5;
    double confidence_temperature = 1.0;
    double confidence_bias = 0.0;
};

/// One sequence's drafts in one step: what the executor reports and what the outcome will be.
struct DraftDraw {
    std::int32_t num_drafts = 0;
    std::array<float, 7> confidence{};
    /// q_j: the true acceptance probabilities (what a calibrated head would report).
    std::array<float, 7> accept_prob{};
    /// Leading drafts accepted if all were verified (the first X_j = 0 ends the run).
    std::int32_t num_accepted_if_all = 0;

    /// Drafts accepted when the first `verify_len` are verified.
    std::int32_t accepted(std::int32_t verify_len) const {
        return verify_len < num_accepted_if_all ? verify_len : num_accepted_if_all;
    }
};

class AcceptanceModel {
public:
    /// Throws ConfigError (file label "acceptance") on out-of-range fields or a mean accepted
    /// length the decay cannot reach.
    AcceptanceModel(const AcceptanceModelConfig& config, Rng rng);

    /// Draws one sequence-step.
    DraftDraw draw();

    /// μ_j for j = 1..max_draft_tokens (index j − 1).
    const std::array<double, 7>& position_means() const { return mu_; }
    /// The largest reachable mean_accepted_length for this decay and draft count (μ_1 = 1).
    static double max_mean_accepted_length(double position_decay, std::int32_t max_draft_tokens);
    /// 1 + Σ_{j≤k} Π_{i≤j} μ_i: the expected tokens per sequence-step when the first k drafts are
    /// always verified (k ≤ max_draft_tokens).
    double expected_accepted_length(std::int32_t k) const;
    const AcceptanceModelConfig& config() const { return config_; }

private:
    /// Beta(a, b)'s quantile function tabulated at kQuantileIntervals + 1 equally spaced probabilities
    /// (Boost.Math ibeta_inv), linearly interpolated: one uniform per draw instead of two gamma draws.
    static constexpr std::int32_t kQuantileIntervals = 4096;
    using QuantileTable = std::vector<double>;
    static std::shared_ptr<const QuantileTable> beta_quantiles(double a, double b);
    double draw_accept_prob(std::size_t position);
    float confidence_of(double q) const;

    AcceptanceModelConfig config_;
    Rng rng_;
    std::array<double, 7> mu_{};
    double concentration_ = 0;  // κ
    /// Per position: the quantile table of q_j's Beta (when 0 < ρ < 1 and 0 < μ_j < 1), shared
    /// between models with the same shapes.
    std::array<std::shared_ptr<const QuantileTable>, 7> quantiles_{};
};

}  // namespace deepinfer::sim
