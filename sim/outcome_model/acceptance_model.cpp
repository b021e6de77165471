// AcceptanceModel: solves μ_1 for the target mean accepted length and draws confidences and outcomes.
#include "sim/outcome_model/acceptance_model.h"

#include <algorithm>
#include <boost/math/special_functions/beta.hpp>
#include <cmath>
#include <map>
#include <mutex>
#include <string>

#include "policies/common/check.h"

namespace deepinfer::sim {
namespace {

double length_for(double mu1, double decay, std::int32_t k) {
    double len = 1;
    double prefix = 1;
    double mu = mu1;
    for (std::int32_t j = 0; j < k; ++j) {
        prefix *= mu;
        len += prefix;
        mu *= decay;
    }
    return len;
}

[[noreturn]] void bad(const char* field, const std::string& expected, double got) {
    throw ConfigError("acceptance", std::string("/") + field, expected, std::to_string(got));
}

}  // namespace

AcceptanceModel::AcceptanceModel(const AcceptanceModelConfig& c, Rng rng) : config_(c), rng_(rng) {
    if (c.max_draft_tokens < 1 || c.max_draft_tokens > 7)
        bad("max_draft_tokens", "an integer in 1..7", c.max_draft_tokens);
    if (!(c.position_decay > 0 && c.position_decay <= 1))
        bad("position_decay", "a number in (0, 1]", c.position_decay);
    if (!(c.correlation >= 0 && c.correlation <= 1)) bad("correlation", "a number in [0, 1]", c.correlation);
    if (!(c.confidence_temperature > 0))
        bad("confidence_temperature", "a positive number", c.confidence_temperature);
    if (!std::isfinite(c.confidence_bias)) bad("confidence_bias", "a finite number", c.confidence_bias);
    const double max_len = length_for(1.0, c.position_decay, c.max_draft_tokens);
    if (!(c.mean_accepted_length > 1 && c.mean_accepted_length <= max_len))
        bad("mean_accepted_length",
            "a number in (1, " + std::to_string(max_len) + "] for this decay and length",
            c.mean_accepted_length);
    // length_for is increasing in μ_1: bisection to double precision.
    double lo = 0;
    double hi = 1;
    for (int it = 0; it < 200 && hi - lo > 1e-15; ++it) {
        const double mid = 0.5 * (lo + hi);
        (length_for(mid, c.position_decay, c.max_draft_tokens) < c.mean_accepted_length ? lo : hi) = mid;
    }
    double mu = 0.5 * (lo + hi);
    for (std::int32_t j = 0; j < 7; ++j) {
        mu_[static_cast<std::size_t>(j)] = j < c.max_draft_tokens ? mu : 0.0;
        mu *= c.position_decay;
    }
    concentration_ = c.correlation > 0 ? 1.0 / (c.correlation * c.correlation) - 1.0 : 0.0;
    if (c.correlation > 0 && c.correlation < 1) {
        for (std::size_t j = 0; j < mu_.size(); ++j) {
            const double m = mu_[j];
            if (m <= 0 || m >= 1) continue;
            quantiles_[j] = beta_quantiles(m * concentration_, (1 - m) * concentration_);
        }
    }
}

std::shared_ptr<const AcceptanceModel::QuantileTable> AcceptanceModel::beta_quantiles(double a, double b) {
    // Models are built per instance and per test with a handful of shapes: the tables are cached
    // process-wide (4,097 ibeta_inv calls each).
    static std::mutex mutex;
    static std::map<std::pair<double, double>, std::shared_ptr<const QuantileTable>> cache;
    const std::lock_guard<std::mutex> lock(mutex);
    auto& slot = cache[{a, b}];
    if (!slot) {
        auto t = std::make_shared<QuantileTable>(kQuantileIntervals + 1);
        for (std::int32_t i = 0; i <= kQuantileIntervals; ++i) {
            const double p = static_cast<double>(i) / kQuantileIntervals;
            (*t)[static_cast<std::size_t>(i)] = i == 0                    ? 0.0
                                                : i == kQuantileIntervals ? 1.0
                                                                          : boost::math::ibeta_inv(a, b, p);
        }
        slot = std::move(t);
    }
    return slot;
}

double AcceptanceModel::draw_accept_prob(std::size_t position) {
    const double mu = mu_[position];
    if (config_.correlation == 0 || mu <= 0 || mu >= 1) return mu;
    if (config_.correlation == 1) return rng_.bernoulli(mu) ? 1.0 : 0.0;
    const QuantileTable& t = *quantiles_[position];
    const double x = rng_.uniform01() * kQuantileIntervals;
    const auto i = std::min(static_cast<std::size_t>(x), static_cast<std::size_t>(kQuantileIntervals - 1));
    const double frac = x - static_cast<double>(i);
    return t[i] + (t[i + 1] - t[i]) * frac;
}

float AcceptanceModel::confidence_of(double q) const {
    if (config_.confidence_temperature == 1 && config_.confidence_bias == 0) return static_cast<float>(q);
    if (q <= 0 || q >= 1) return static_cast<float>(q);
    const double z = std::log(q / (1 - q)) / config_.confidence_temperature + config_.confidence_bias;
    return static_cast<float>(1 / (1 + std::exp(-z)));
}

DraftDraw AcceptanceModel::draw() {
    DraftDraw d;
    d.num_drafts = config_.max_draft_tokens;
    bool running = true;
    for (std::int32_t j = 0; j < d.num_drafts; ++j) {
        const auto i = static_cast<std::size_t>(j);
        const double q = draw_accept_prob(i);
        d.accept_prob[i] = static_cast<float>(q);
        d.confidence[i] = confidence_of(q);
        // NOTE: the outcome is drawn for every draft (not only reached ones) so that the number of
        // random draws per step does not depend on the outcome: streams stay aligned across policies.
        const bool accepted = rng_.uniform01() < q;
        running = running && accepted;
        if (running) ++d.num_accepted_if_all;
    }
    return d;
}

double AcceptanceModel::max_mean_accepted_length(double position_decay, std::int32_t max_draft_tokens) {
    return length_for(1.0, position_decay, max_draft_tokens);
}

double AcceptanceModel::expected_accepted_length(std::int32_t k) const {
    DI_CHECK(k >= 0 && k <= config_.max_draft_tokens, "k=" << k);
    return length_for(mu_[0], config_.position_decay, k);
}

}  // namespace deepinfer::sim
