// DSpark acceptance model: target mean accepted length, calibration, correlation, determinism.
#include <algorithm>
#include <boost/math/special_functions/beta.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "sim/outcome_model/acceptance_model.h"

using namespace deepinfer;
using sim::AcceptanceModel;
using sim::AcceptanceModelConfig;

TEST_CASE("AcceptanceModel: fixed-5 verification accepts the configured mean length", "[sim][dspark]") {
    for (double rho : {0.0, 0.3, 0.7, 1.0}) {
        AcceptanceModel m({.mean_accepted_length = 3.20, .correlation = rho}, Rng(2024));
        CHECK(m.expected_accepted_length(5) == Approx(3.20).epsilon(1e-12));
        double sum = 0;
        const int n = 200000;
        for (int i = 0; i < n; ++i) sum += 1 + m.draw().accepted(5);
        CAPTURE(rho);
        // Standard error of the mean is below 0.004 for every rho here.
        CHECK(sum / n == Approx(3.20).margin(0.02));
    }
}

TEST_CASE("AcceptanceModel: a calibrated head's confidence is the acceptance frequency", "[sim][dspark]") {
    AcceptanceModel m({.mean_accepted_length = 3.2, .correlation = 0.6}, Rng(7));
    // Per confidence decile, over reached drafts: accepted count and confidence sum.
    std::array<double, 10> reached{};
    std::array<double, 10> accepted{};
    std::array<double, 10> conf{};
    for (int i = 0; i < 200000; ++i) {
        const sim::DraftDraw d = m.draw();
        for (std::int32_t j = 0; j < d.num_drafts && j <= d.num_accepted_if_all; ++j) {
            const float c = d.confidence[static_cast<std::size_t>(j)];
            const auto bin = static_cast<std::size_t>(std::min(9, static_cast<int>(c * 10)));
            reached[bin] += 1;
            conf[bin] += c;
            accepted[bin] += j < d.num_accepted_if_all ? 1 : 0;
        }
    }
    for (std::size_t b = 0; b < 10; ++b) {
        if (reached[b] < 2000) continue;
        CAPTURE(b, reached[b]);
        CHECK(accepted[b] / reached[b] == Approx(conf[b] / reached[b]).margin(0.02));
    }
}

TEST_CASE("AcceptanceModel: an over-confident head accepts less than it claims at high confidence",
          "[sim][dspark]") {
    AcceptanceModel m({.mean_accepted_length = 3.2, .correlation = 0.6, .confidence_temperature = 0.5},
                      Rng(7));
    double reached = 0;
    double accepted = 0;
    double conf = 0;
    for (int i = 0; i < 100000; ++i) {
        const sim::DraftDraw d = m.draw();
        if (d.confidence[0] < 0.9F) continue;
        reached += 1;
        conf += d.confidence[0];
        accepted += d.num_accepted_if_all > 0 ? 1 : 0;
    }
    REQUIRE(reached > 1000);
    CHECK(accepted / reached < conf / reached - 0.03);
}

TEST_CASE("AcceptanceModel: correlation between confidence and acceptance is the configured rho",
          "[sim][dspark]") {
    for (double rho : {0.2, 0.5, 0.8}) {
        AcceptanceModel m({.mean_accepted_length = 3.2, .correlation = rho}, Rng(99));
        double sc = 0, sx = 0, scc = 0, sxx = 0, scx = 0;
        const int n = 200000;
        for (int i = 0; i < n; ++i) {
            const sim::DraftDraw d = m.draw();
            const double c = d.confidence[0];
            const double x = d.num_accepted_if_all > 0 ? 1 : 0;
            sc += c, sx += x, scc += c * c, sxx += x * x, scx += c * x;
        }
        const double cov = scx / n - (sc / n) * (sx / n);
        const double corr =
            cov / std::sqrt((scc / n - (sc / n) * (sc / n)) * (sxx / n - (sx / n) * (sx / n)));
        CAPTURE(rho);
        CHECK(corr == Approx(rho).margin(0.01));
    }
}

TEST_CASE("AcceptanceModel: the same seed gives the same draws; bad configs are named", "[sim][dspark]") {
    AcceptanceModel a({}, Rng(5));
    AcceptanceModel b({}, Rng(5));
    for (int i = 0; i < 100; ++i) {
        const sim::DraftDraw x = a.draw();
        const sim::DraftDraw y = b.draw();
        CHECK(x.confidence == y.confidence);
        CHECK(x.num_accepted_if_all == y.num_accepted_if_all);
    }
    CHECK_THROWS_WITH(AcceptanceModel({.mean_accepted_length = 6.5}, Rng(1)),
                      Catch::Contains("acceptance: /mean_accepted_length: expected a number in (1,"));
    CHECK_THROWS_WITH(AcceptanceModel({.max_draft_tokens = 9}, Rng(1)), Catch::Contains("/max_draft_tokens"));
    CHECK_THROWS_WITH(AcceptanceModel({.correlation = 1.5}, Rng(1)), Catch::Contains("/correlation"));
}

// ---- Analytic DSpark evaluation (report) -------------------------------------------------------------
// Expected values only (no simulation of the cluster): draft batches drawn from the acceptance model,
// each policy's verify lengths on them, expected tokens from the true acceptance probabilities, step
// time from the CostModel on the derived B200 (SM100) roofline profile. Run:
//   deepinfer_tests "[report][dspark]" -s

#include <cstdio>

#include "policies/cost/profile.h"
#include "policies/dspark/draft_tuning.h"

namespace {

std::vector<DraftSample> sample_pool(const AcceptanceModelConfig& config, std::uint64_t seed, int n) {
    AcceptanceModel model(config, Rng(seed).fork("acceptance"));
    std::vector<DraftSample> pool(static_cast<std::size_t>(n));
    for (DraftSample& s : pool) {
        const sim::DraftDraw d = model.draw();
        s.num_drafts = d.num_drafts;
        s.confidence = d.confidence;
        s.accept_prob = d.accept_prob;
    }
    return pool;
}

}  // namespace

TEST_CASE(
    "DSpark analytic evaluation: dynamic vs fixed-5 on the B200 roofline profile at 16, 60, 96 seqs per rank",
    "[.slow][report][sim][dspark]") {
    const CostModel cost(load_profile_dir(std::string(DEEPINFER_SOURCE_DIR) + "/profiles/b200-roofline"),
                         ModelShape::v4_flash());
    // Acceptance: fixed-5 accepts 3.20 tokens per step (bonus included); drafts 6 and 7 continue the
    // same per-position decay.
    for (double rho : {0.3, 0.5, 0.7}) {
        const AcceptanceModelConfig five{
            .max_draft_tokens = 5, .mean_accepted_length = 3.20, .correlation = rho};
        const AcceptanceModel m5(five, Rng(1));
        AcceptanceModelConfig seven = five;
        seven.max_draft_tokens = 7;
        seven.mean_accepted_length = [&] {
            double len = 1, p = 1;
            for (int j = 0; j < 7; ++j)
                len += (p *= m5.position_means()[0] * std::pow(five.position_decay, j));
            return len;
        }();
        const auto pool = sample_pool(seven, 11, 40000);
        std::printf(
            "\nrho=%.1f (mu_1=%.3f, decay %.2f; EP64 decode, balanced experts, context 8192, B200 "
            "roofline)\n",
            rho, m5.position_means()[0], five.position_decay);
        std::printf("%5s %-22s %12s %10s %9s %10s %9s\n", "seqs", "policy", "tokens/s", "verified", "acc.len",
                    "step_ms", "vs fixed5");
        for (std::int32_t n : {16, 60, 96}) {
            TuningLoad load{.seqs_per_rank = n, .context_tokens = 8192, .ep_size = 64};
            // Draft pass: one layer's share of a decode step plus an LM-head weight read (1.06 GB bf16 at
            // 0.8 x 8 TB/s). An assumption, stated in the report.
            const double step1 = cost.step_time_s(
                shape_with_verified(make_rank_decode_step(load, cost.model()), 0, cost.model()));
            for (double draft_pass_s : {0.0, step1 / 43 + 1.06e9 / 6.4e12}) {
                load.draft_pass_s = draft_pass_s;
                const auto fixed5 =
                    evaluate_verify_policy(cost, load, pool, {.kind = VerifyPolicyKind::kFixed}, 200);
                const auto dyn5 =
                    evaluate_verify_policy(cost, load, pool, {.kind = VerifyPolicyKind::kDynamic}, 200);
                const auto candidates = default_tuning_candidates();
                const TuningReport tuned = tune_draft_length(cost, load, pool, candidates, 200);
                const CandidateResult& best = tuned.candidates[tuned.best];
                auto row = [&](const char* label, const CandidateResult& c) {
                    std::printf("%5d %-22s %12.0f %10.1f %9.3f %10.3f %+8.1f%%\n", n, label, c.tokens_per_s,
                                c.verified_per_step, c.accepted_length, c.step_time_s * 1e3,
                                100 * (c.tokens_per_s / fixed5.tokens_per_s - 1));
                };
                std::printf("  draft pass %.0f us:\n", draft_pass_s * 1e6);
                row("fixed-5", fixed5);
                row("dynamic-5", dyn5);
                char label[64];
                std::snprintf(label, sizeof label, "best: %s-%d%s",
                              std::string(name(best.config.kind)).c_str(), best.config.max_draft_tokens,
                              best.config.kind == VerifyPolicyKind::kThreshold ? " (thr)" : "");
                row(label, best);
                CHECK(dyn5.tokens_per_s >= fixed5.tokens_per_s * (1 - 1e-3));
            }
        }
    }
}

TEST_CASE("AcceptanceModel: q_j follows Beta(mu_j kappa, (1 - mu_j) kappa) (tabulated quantiles)",
          "[sim][dspark]") {
    // Kolmogorov-Smirnov distance of 20,000 draws per position against the exact Beta CDF, plus the
    // first two moments; the table interpolation error is far below the sampling noise. With ρ ≥ 0.7
    // the shapes are so small that much of the mass lies within float resolution of 0 or 1 (the
    // reported q_j is a float), so there the CDF is compared at 0.5 only.
    constexpr int kDraws = 20000;
    for (double rho : {0.2, 0.5, 0.7, 0.9}) {
        const AcceptanceModelConfig c{.mean_accepted_length = 3.20, .correlation = rho};
        AcceptanceModel m(c, Rng(77));
        const double kappa = 1.0 / (rho * rho) - 1.0;
        std::vector<std::vector<double>> q(static_cast<std::size_t>(c.max_draft_tokens));
        for (int i = 0; i < kDraws; ++i) {
            const sim::DraftDraw d = m.draw();
            for (std::size_t j = 0; j < q.size(); ++j) q[j].push_back(d.accept_prob[j]);
        }
        for (std::size_t j = 0; j < q.size(); ++j) {
            const double mu = m.position_means()[j];
            const double a = mu * kappa;
            const double b = (1 - mu) * kappa;
            std::sort(q[j].begin(), q[j].end());
            double ks = 0, sum = 0, sum2 = 0, below_half = 0;
            for (std::size_t i = 0; i < q[j].size(); ++i) {
                const double cdf = boost::math::ibeta(a, b, q[j][i]);
                ks = std::max({ks, std::abs(cdf - static_cast<double>(i) / kDraws),
                               std::abs(cdf - static_cast<double>(i + 1) / kDraws)});
                sum += q[j][i];
                sum2 += q[j][i] * q[j][i];
                below_half += q[j][i] < 0.5 ? 1 : 0;
            }
            const double mean = sum / kDraws;
            const double var = sum2 / kDraws - mean * mean;
            CAPTURE(rho, j, a, b, mean, var, ks);
            const double ks_critical = 1.63 / std::sqrt(kDraws);  // the KS test's 1% critical value
            if (rho <= 0.5)
                CHECK(ks < ks_critical);
            else
                CHECK(std::abs(below_half / kDraws - boost::math::ibeta(a, b, 0.5)) < ks_critical);
            const double var_expected = mu * (1 - mu) * rho * rho;
            CHECK(std::abs(mean - mu) < 4 * std::sqrt(var_expected / kDraws));
            CHECK(var == Approx(var_expected).epsilon(0.05));
        }
    }
}
