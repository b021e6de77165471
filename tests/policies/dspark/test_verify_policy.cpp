// DSpark verify policies: hand-computed optimal choices, exactness against brute force, and the
// invariants (budget, monotonicity, determinism, ties by id).
#include <catch2/catch.hpp>
#include <numeric>

#include "policies/dspark/verify_policy.h"
#include "tests/policies/dspark/dspark_test_support.h"

using namespace deepinfer;
using testing::make_drafts;

namespace {

VerifyDecision run(VerifyPolicy policy, std::span<const SeqDrafts> drafts, const CostModel& cost,
                   std::int64_t budget = std::numeric_limits<std::int64_t>::max(), double context = 4096) {
    VerifyInput in{.drafts = drafts,
                   .step = make_decode_step(static_cast<std::int32_t>(drafts.size()), context, cost.model()),
                   .token_budget = budget};
    VerifyDecision out;
    choose_verify(policy, in, cost, out);
    return out;
}

/// The exact dynamic policy (no gap, no evaluation cap).
VerifyPolicy dynamic(std::int32_t k = 5, bool exhaustive = false) {
    return make_verify_policy({.kind = VerifyPolicyKind::kDynamic,
                               .max_draft_tokens = k,
                               .exhaustive = exhaustive,
                               .optimality_gap = 0,
                               .max_time_evals = 1 << 30});
}

/// Best (base + gain) / time over every combination of verify lengths (tiny batches only).
double brute_force_best_ratio(std::span<const SeqDrafts> drafts, const CostModel& cost, std::int64_t budget) {
    const VerifyStep step = make_decode_step(static_cast<std::int32_t>(drafts.size()), 4096, cost.model());
    std::vector<std::int32_t> len(drafts.size(), 0);
    double best = 0;
    while (true) {
        const std::int32_t total = std::accumulate(len.begin(), len.end(), 0);
        if (step.other.num_tokens + total <= static_cast<double>(budget)) {
            double tokens = step.base_tokens;
            for (std::size_t i = 0; i < drafts.size(); ++i)
                tokens += expected_accepted_drafts(drafts[i], len[i]);
            best = std::max(best, tokens / cost.step_time_s(shape_with_verified(step, total, cost.model())));
        }
        std::size_t i = 0;
        while (i < len.size() && len[i] == drafts[i].num_drafts) len[i++] = 0;
        if (i == len.size()) return best;
        ++len[i];
    }
}

}  // namespace

TEST_CASE("DSpark dynamic: on a flat curve every draft with a non-zero acceptance chance is verified",
          "[policies][dspark]") {
    const CostModel flat = testing::make_token_curve_cost({1, 100000}, {1000, 1000});
    const std::vector<SeqDrafts> drafts = {make_drafts(0, {0.9F, 0.8F, 0.0F, 0.5F, 0.5F}),
                                           make_drafts(1, {0.1F, 0.1F, 0.1F, 0.1F, 0.1F}),
                                           make_drafts(2, {1.0F, 1.0F, 1.0F})};
    const VerifyDecision d = run(dynamic(), drafts, flat);
    CHECK(d.verify_len == std::vector<std::int32_t>{2, 5, 3});
    CHECK(d.num_verify_tokens == 10);
    CHECK(d.expected_tokens == Approx(3 + 0.9 + 0.72 + (0.1 + 0.01 + 0.001 + 0.0001 + 0.00001) + 3));
    CHECK(d.step_time_s == Approx(1e-3));
}

TEST_CASE("DSpark dynamic: on a steep curve only the confident prefixes are verified", "[policies][dspark]") {
    // time = 10 us + 1 us per token; two decode sequences (2 tokens). Sorted gains: .9 .81 .729 .4 .2 ...
    // Ratios (2 + G(T)) / (12 + T): T=0 .167, 1 .223, 2 .265, 3 .296, 4 .3024, 5 .2964 -> T* = 4.
    const CostModel steep = testing::make_token_curve_cost({1, 1000}, {11, 1010});
    const std::vector<SeqDrafts> drafts = {make_drafts(0, {0.9F, 0.9F, 0.9F, 0.2F, 0.2F}),
                                           make_drafts(1, {0.4F, 0.5F, 0.5F, 0.5F, 0.5F})};
    const VerifyDecision d = run(dynamic(), drafts, steep);
    CHECK(d.verify_len == std::vector<std::int32_t>{3, 1});
    CHECK(d.expected_tokens == Approx(2 + 0.9 + 0.81 + 0.729 + 0.4));
    CHECK(d.step_time_s == Approx(16e-6));
    // Fixed-5 on the same step verifies everything and is slower per token.
    const VerifyDecision f = run(make_verify_policy({.kind = VerifyPolicyKind::kFixed}), drafts, steep);
    CHECK(f.verify_len == std::vector<std::int32_t>{5, 5});
    CHECK(f.tokens_per_s() < d.tokens_per_s());
}

TEST_CASE("DSpark dynamic: when time is proportional to tokens nothing below certainty is verified",
          "[policies][dspark]") {
    const CostModel linear = testing::make_token_curve_cost({1, 1000}, {1, 1000});
    const std::vector<SeqDrafts> drafts = {make_drafts(0, {1.0F, 0.99F}), make_drafts(1, {0.95F, 0.9F})};
    const VerifyDecision d = run(dynamic(), drafts, linear);
    // (2 + 1) / 3 == 1 == 2 / 2: the tie goes to fewer tokens; 0.99 < 1 never pays.
    CHECK(d.verify_len == std::vector<std::int32_t>{0, 0});
}

TEST_CASE("DSpark dynamic: matches brute force over every length combination", "[policies][dspark]") {
    Rng rng(7);
    for (int trial = 0; trial < 60; ++trial) {
        const auto n = static_cast<std::int32_t>(rng.uniform_int(1, 3));
        const auto k = static_cast<std::int32_t>(rng.uniform_int(1, 3));
        auto drafts = testing::random_drafts(rng, n, k, rng.uniform(0.2, 0.9), 2.0);
        const CostModel cost =
            testing::make_roofline_cost(rng.uniform(5, 50), rng.uniform(2, 8), rng.uniform(0.1, 20));
        const std::int64_t budget = rng.bernoulli(0.3) ? n + rng.uniform_int(0, n * k) : 1000;
        const VerifyDecision d = run(dynamic(k), drafts, cost, budget);
        CAPTURE(trial, n, k, budget);
        CHECK(d.tokens_per_s() == Approx(brute_force_best_ratio(drafts, cost, budget)).epsilon(1e-5));
    }
}

TEST_CASE("DSpark dynamic: branch and bound finds the same optimum as evaluating every total",
          "[policies][dspark]") {
    Rng rng(11);
    VerifyPolicy fast = dynamic(7);
    VerifyPolicy slow = dynamic(7, /*exhaustive=*/true);
    // Exact mode certifies itself: no gap left open.
    for (int trial = 0; trial < 40; ++trial) {
        const auto n = static_cast<std::int32_t>(rng.uniform_int(1, 200));
        const auto drafts = testing::random_drafts(rng, n, 7, rng.uniform(0.3, 0.95), rng.uniform(0.5, 10));
        const CostModel cost =
            testing::make_roofline_cost(rng.uniform(100, 5000), rng.uniform(2, 600), rng.uniform(0.5, 30));
        const std::int64_t budget = rng.bernoulli(0.3) ? n + rng.uniform_int(0, 4 * n) : 1 << 20;
        const VerifyInput in{
            .drafts = drafts, .step = make_decode_step(n, 2048, cost.model()), .token_budget = budget};
        VerifyDecision a;
        VerifyDecision b;
        choose_verify(fast, in, cost, a);
        choose_verify(slow, in, cost, b);
        CAPTURE(trial, n, budget);
        CHECK(a.verify_len == b.verify_len);
        CHECK(a.tokens_per_s() == b.tokens_per_s());
        CHECK(a.num_time_evals <= b.num_time_evals);
        CHECK(a.optimality_gap_bound == 0);
    }
}

TEST_CASE(
    "DSpark dynamic: with the default gap and evaluation cap the shortfall stays within its certificate",
    "[policies][dspark]") {
    Rng rng(13);
    VerifyPolicy fast = make_verify_policy({.kind = VerifyPolicyKind::kDynamic});
    VerifyPolicy exact = dynamic(5, /*exhaustive=*/true);
    const CostModel composed(testing::make_synthetic_profile(), ModelShape::v4_flash());
    for (int trial = 0; trial < 40; ++trial) {
        const auto n = static_cast<std::int32_t>(rng.uniform_int(1, 256));
        const auto drafts = testing::random_drafts(rng, n, 5, rng.uniform(0.3, 0.95), rng.uniform(0.5, 10));
        const CostModel roofline =
            testing::make_roofline_cost(rng.uniform(500, 5000), rng.uniform(2, 800), rng.uniform(0.5, 30));
        const CostModel& cost = trial % 2 == 0 ? roofline : composed;
        const VerifyInput in{.drafts = drafts, .step = make_decode_step(n, 4096, cost.model())};
        VerifyDecision a;
        VerifyDecision b;
        choose_verify(fast, in, cost, a);
        choose_verify(exact, in, cost, b);
        CAPTURE(trial, n, a.num_time_evals, a.optimality_gap_bound);
        CHECK(a.num_time_evals <= 64);
        CHECK(b.optimality_gap_bound == 0);
        CHECK(a.tokens_per_s() * (1 + a.optimality_gap_bound) >= b.tokens_per_s() * (1 - 1e-12));
        if (a.num_time_evals < 64) CHECK(a.optimality_gap_bound <= 1e-3);
    }
}

TEST_CASE("DSpark policies: the token budget is never exceeded", "[policies][dspark]") {
    Rng rng(3);
    const CostModel flat = testing::make_token_curve_cost({1, 100000}, {1000, 1000});
    for (VerifyPolicyKind kind :
         {VerifyPolicyKind::kFixed, VerifyPolicyKind::kThreshold, VerifyPolicyKind::kDynamic}) {
        for (int trial = 0; trial < 30; ++trial) {
            const auto n = static_cast<std::int32_t>(rng.uniform_int(1, 64));
            const auto drafts = testing::random_drafts(rng, n, 5, 0.8, 5);
            const std::int64_t budget = n + rng.uniform_int(-3, 5 * n);
            const VerifyDecision d =
                run(make_verify_policy({.kind = kind, .threshold = 0.1}), drafts, flat, budget);
            CAPTURE(name(kind), trial, n, budget);
            CHECK(n + d.num_verify_tokens <= std::max<std::int64_t>(budget, n));
            CHECK(std::accumulate(d.verify_len.begin(), d.verify_len.end(), 0) == d.num_verify_tokens);
            for (std::int32_t l : d.verify_len) CHECK((l >= 0 && l <= 5));
        }
    }
}

TEST_CASE("DSpark fixed-k: over budget, last positions are cut first and smaller ids keep theirs",
          "[policies][dspark]") {
    const CostModel flat = testing::make_token_curve_cost({1, 100000}, {1000, 1000});
    const std::vector<SeqDrafts> drafts = {make_drafts(5, {.5F, .5F, .5F}), make_drafts(2, {.5F, .5F, .5F}),
                                           make_drafts(9, {.5F})};
    // 3 decode tokens + room for 5 verified: level 1 takes 3, level 2 has room for 2 of 2.
    CHECK(run(make_verify_policy({.kind = VerifyPolicyKind::kFixed}), drafts, flat, 8).verify_len ==
          std::vector<std::int32_t>{2, 2, 1});
    // Room for 4: level 2 only has room for one, and id 2 < id 5 keeps it.
    CHECK(run(make_verify_policy({.kind = VerifyPolicyKind::kFixed}), drafts, flat, 7).verify_len ==
          std::vector<std::int32_t>{1, 2, 1});
    CHECK(run(make_verify_policy({.kind = VerifyPolicyKind::kFixed, .max_draft_tokens = 2}), drafts, flat)
              .verify_len == std::vector<std::int32_t>{2, 2, 1});
}

TEST_CASE("DSpark threshold: verifies while the cumulative acceptance probability stays above it",
          "[policies][dspark]") {
    const CostModel flat = testing::make_token_curve_cost({1, 100000}, {1000, 1000});
    const std::vector<SeqDrafts> drafts = {make_drafts(0, {0.9F, 0.8F, 0.5F, 0.9F}),  // .9 .72 .36
                                           make_drafts(1, {0.3F, 1.0F}), make_drafts(2, {1.0F, 1.0F, 1.0F})};
    CHECK(run(make_verify_policy({.kind = VerifyPolicyKind::kThreshold, .threshold = 0.5}), drafts, flat)
              .verify_len == std::vector<std::int32_t>{2, 0, 3});
}

namespace {

/// Raises one confidence of one sequence and checks that its verify length does not shrink.
void check_more_confidence_never_shortens(std::uint64_t seed, int trials) {
    Rng rng(seed);
    for (VerifyPolicyKind kind :
         {VerifyPolicyKind::kFixed, VerifyPolicyKind::kThreshold, VerifyPolicyKind::kDynamic}) {
        // The exact dynamic policy: a gap or an evaluation cap may stop the search at different totals.
        VerifyPolicy policy =
            kind == VerifyPolicyKind::kDynamic
                ? dynamic()
                : make_verify_policy({.kind = kind, .max_draft_tokens = 5, .threshold = 0.4});
        for (int trial = 0; trial < trials; ++trial) {
            const auto n = static_cast<std::int32_t>(rng.uniform_int(1, 48));
            auto drafts = testing::random_drafts(rng, n, 5, rng.uniform(0.3, 0.9), rng.uniform(0.5, 8));
            const CostModel cost =
                testing::make_roofline_cost(rng.uniform(50, 2000), rng.uniform(2, 200), rng.uniform(0.5, 30));
            const std::int64_t budget = rng.bernoulli(0.3) ? n + rng.uniform_int(0, 5 * n) : 1 << 20;
            const VerifyDecision before = run(policy, drafts, cost, budget);
            const auto s = static_cast<std::size_t>(rng.below(static_cast<std::uint64_t>(n)));
            const auto j = static_cast<std::size_t>(rng.below(5));
            float& c = drafts[s].confidence[j];
            c = static_cast<float>(c + (1 - c) * rng.uniform01());
            const VerifyDecision after = run(policy, drafts, cost, budget);
            CAPTURE(name(kind), trial, n, s, j, budget);
            CHECK(after.verify_len[s] >= before.verify_len[s]);
        }
    }
}

}  // namespace

TEST_CASE("DSpark policies: more confidence never shortens a sequence's verify", "[policies][dspark]") {
    check_more_confidence_never_shortens(5, 150);
}

TEST_CASE("DSpark policies: more confidence never shortens a verify (long sweep)",
          "[.slow][policies][dspark]") {
    check_more_confidence_never_shortens(17, 20000);
}

TEST_CASE("DSpark dynamic: the decision is deterministic and follows the sequences when reordered",
          "[policies][dspark]") {
    Rng rng(9);
    const CostModel cost = testing::make_roofline_cost(800, 64, 4);
    // Many equal confidences, so that the cut falls inside groups of equal gains.
    std::vector<SeqDrafts> drafts;
    for (int i = 0; i < 40; ++i) {
        SeqDrafts d = make_drafts(100 - i, {0.5F, 0.5F, 0.5F, 0.5F, 0.5F});
        if (i % 3 == 0) d.confidence[0] = 0.75F;
        drafts.push_back(d);
    }
    VerifyPolicy p = dynamic();
    const VerifyDecision a = run(p, drafts, cost);
    const VerifyDecision b = run(p, drafts, cost);
    CHECK(a.verify_len == b.verify_len);
    CHECK(a.expected_tokens == b.expected_tokens);
    // Reversed input order: the same sequence gets the same length.
    std::vector<SeqDrafts> rev(drafts.rbegin(), drafts.rend());
    const VerifyDecision c = run(p, rev, cost);
    for (std::size_t i = 0; i < drafts.size(); ++i)
        CHECK(c.verify_len[drafts.size() - 1 - i] == a.verify_len[i]);
    // Within one level of equal gains, smaller ids are the ones verified deeper.
    const auto cut = std::minmax_element(a.verify_len.begin(), a.verify_len.end());
    INFO("lengths from " << *cut.first << " to " << *cut.second);
    for (std::size_t x = 0; x < drafts.size(); ++x)
        for (std::size_t y = 0; y < drafts.size(); ++y)
            if (drafts[x].confidence[0] == drafts[y].confidence[0] && drafts[x].request < drafts[y].request)
                CHECK(a.verify_len[x] >= a.verify_len[y]);
}

TEST_CASE("DSpark policies: configs read from JSON, bad values named by field", "[policies][dspark]") {
    const auto c = verify_policy_config_from_json(JsonReader::parse_text(
        R"({"policy": "threshold", "max_draft_tokens": 7, "threshold": 0.25})", "dspark.json"));
    CHECK(c.kind == VerifyPolicyKind::kThreshold);
    CHECK(c.max_draft_tokens == 7);
    CHECK(c.threshold == 0.25);
    const auto back =
        verify_policy_config_from_json(JsonReader::from_json(verify_policy_config_to_json(c), "round-trip"));
    CHECK(back.kind == c.kind);
    CHECK(back.threshold == c.threshold);
    CHECK_THROWS_WITH(
        verify_policy_config_from_json(JsonReader::parse_text(R"({"max_draft_tokens": 8})", "d.json")),
        Catch::Contains("d.json: /max_draft_tokens: expected"));
    CHECK_THROWS_WITH(
        verify_policy_config_from_json(JsonReader::parse_text(R"({"policy": "greedy"})", "d.json")),
        Catch::Contains("d.json: /policy: expected one of"));
    CHECK_THROWS_WITH(verify_policy_config_from_json(JsonReader::parse_text(R"({"k": 3})", "d.json")),
                      Catch::Contains("d.json"));
    CHECK_THROWS_AS(make_verify_policy({.max_draft_tokens = 0}), ConfigError);
}
