// Draft-length tuning: the best max draft length follows the curve and the drafting cost.
#include <catch2/catch.hpp>

#include "policies/dspark/draft_tuning.h"
#include "tests/policies/dspark/dspark_test_support.h"

using namespace deepinfer;

namespace {

/// Calibrated samples with 7 drafts (confidence == acceptance probability).
std::vector<DraftSample> calibrated_pool(std::uint64_t seed, int n) {
    Rng rng(seed);
    std::vector<DraftSample> pool(static_cast<std::size_t>(n));
    for (DraftSample& s : pool) {
        s.num_drafts = kMaxDraftTokens;
        for (std::size_t j = 0; j < kMaxDraftTokens; ++j)
            s.confidence[j] = s.accept_prob[j] = static_cast<float>(rng.beta(0.75 * 2, 0.25 * 2));
    }
    return pool;
}

}  // namespace

TEST_CASE("Draft tuning: on a flat curve with free drafting the longest drafts win", "[policies][dspark]") {
    const CostModel flat = testing::make_token_curve_cost({1, 100000}, {3000, 3000});
    const auto pool = calibrated_pool(1, 256);
    const auto candidates = default_tuning_candidates();
    const TuningReport r = tune_draft_length(flat, {.seqs_per_rank = 32}, pool, candidates, 8);
    REQUIRE(r.candidates.size() == candidates.size());
    CHECK(r.candidates[r.best].config.max_draft_tokens == kMaxDraftTokens);
    // Dynamic verifies every draft with a non-zero chance here: the same as fixed-7.
    for (const CandidateResult& c : r.candidates)
        if (c.config.max_draft_tokens == 7 && c.config.kind != VerifyPolicyKind::kThreshold)
            CHECK(c.tokens_per_s == Approx(r.candidates[r.best].tokens_per_s));
}

TEST_CASE("Draft tuning: costly drafting shortens the best draft length", "[policies][dspark]") {
    const CostModel flat = testing::make_token_curve_cost({1, 100000}, {3000, 3000});
    const auto pool = calibrated_pool(2, 256);
    const auto candidates = default_tuning_candidates();
    const TuningReport free = tune_draft_length(flat, {.seqs_per_rank = 32}, pool, candidates, 8);
    const TuningReport costly =
        tune_draft_length(flat, {.seqs_per_rank = 32, .draft_pass_s = 1.5e-3}, pool, candidates, 8);
    CHECK(costly.candidates[costly.best].config.max_draft_tokens <
          free.candidates[free.best].config.max_draft_tokens);
}

TEST_CASE("Draft tuning: dynamic beats fixed-k on a compute-bound curve", "[policies][dspark]") {
    const CostModel steep = testing::make_roofline_cost(1500, 64, 8);
    const auto pool = calibrated_pool(3, 512);
    for (std::int32_t k : {3, 5, 7}) {
        const auto fixed = evaluate_verify_policy(
            steep, {.seqs_per_rank = 96}, pool, {.kind = VerifyPolicyKind::kFixed, .max_draft_tokens = k}, 8);
        const auto dyn =
            evaluate_verify_policy(steep, {.seqs_per_rank = 96}, pool,
                                   {.kind = VerifyPolicyKind::kDynamic, .max_draft_tokens = k}, 8);
        CAPTURE(k);
        CHECK(dyn.tokens_per_s > fixed.tokens_per_s);
        CHECK(dyn.verified_per_step < fixed.verified_per_step);
    }
}
