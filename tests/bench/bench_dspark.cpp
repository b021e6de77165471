// DSpark verify policy cost per step: the dynamic policy (branch and bound, and exhaustive as the
// reference) against fixed-k and threshold, for batches of sequences x drafts.
// Run: deepinfer_bench --benchmark_filter=DSpark --benchmark_repetitions=10
// --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include "policies/cost/roofline.h"
#include "policies/dspark/draft_tuning.h"
#include "policies/dspark/verify_policy.h"
#include "tests/policies/dspark/dspark_test_support.h"

using namespace deepinfer;

namespace {

void run_policy(benchmark::State& state, VerifyPolicyConfig config) {
    const auto n = static_cast<std::int32_t>(state.range(0));
    config.max_draft_tokens = static_cast<std::int32_t>(state.range(1));
    // Every op group present and sloped (the composition's real cost); context 4096.
    const CostModel cost(testing::make_synthetic_profile(), ModelShape::v4_flash());
    Rng rng(42);
    const auto drafts = testing::random_drafts(rng, n, config.max_draft_tokens, 0.7, 3.0);
    const VerifyInput in{.drafts = drafts, .step = make_decode_step(n, 4096, cost.model())};
    VerifyPolicy policy = make_verify_policy(config);
    VerifyDecision out;
    for (auto _ : state) {
        choose_verify(policy, in, cost, out);
        benchmark::DoNotOptimize(out.num_verify_tokens);
    }
    state.counters["verified"] = out.num_verify_tokens;
    state.counters["time_evals"] = out.num_time_evals;
    state.counters["gap_bound"] = out.optimality_gap_bound;
    state.counters["seqs/s"] =
        benchmark::Counter(static_cast<double>(state.iterations()) * n, benchmark::Counter::kIsRate);
}

void BM_DSparkDynamic(benchmark::State& s) { run_policy(s, {.kind = VerifyPolicyKind::kDynamic}); }
void BM_DSparkDynamicExhaustive(benchmark::State& s) {
    run_policy(s, {.kind = VerifyPolicyKind::kDynamic, .exhaustive = true});
}
void BM_DSparkDynamicExact(benchmark::State& s) {
    run_policy(s, {.kind = VerifyPolicyKind::kDynamic, .optimality_gap = 0, .max_time_evals = 1 << 30});
}
void BM_DSparkFixed(benchmark::State& s) { run_policy(s, {.kind = VerifyPolicyKind::kFixed}); }
void BM_DSparkThreshold(benchmark::State& s) { run_policy(s, {.kind = VerifyPolicyKind::kThreshold}); }

/// The default dynamic policy on the derived B200 (SM100) roofline profile, EP64 decode rank.
void BM_DSparkDynamicB200(benchmark::State& state) {
    const auto n = static_cast<std::int32_t>(state.range(0));
    const CostModel cost(
        roofline::derive_profile(roofline::hardware_spec("b200"), roofline::Efficiency{}, "bench", "bench"),
        ModelShape::v4_flash());
    Rng rng(42);
    const auto drafts = testing::random_drafts(rng, n, 5, 0.7, 3.0);
    const VerifyInput in{.drafts = drafts,
                         .step = make_rank_decode_step(
                             {.seqs_per_rank = n, .context_tokens = 8192, .ep_size = 64}, cost.model())};
    VerifyPolicy policy = make_verify_policy({.kind = VerifyPolicyKind::kDynamic});
    VerifyDecision out;
    for (auto _ : state) {
        choose_verify(policy, in, cost, out);
        benchmark::DoNotOptimize(out.num_verify_tokens);
    }
    state.counters["verified"] = out.num_verify_tokens;
    state.counters["time_evals"] = out.num_time_evals;
    state.counters["gap_bound"] = out.optimality_gap_bound;
}

void batch_sizes(benchmark::internal::Benchmark* b) {
    for (int n : {16, 64, 256}) b->Args({n, 5});
    b->Args({256, 7});
}

}  // namespace

BENCHMARK(BM_DSparkDynamic)->Apply(batch_sizes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DSparkDynamicB200)->Arg(16)->Arg(96)->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DSparkDynamicExact)->Apply(batch_sizes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DSparkDynamicExhaustive)->Args({256, 5})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DSparkFixed)->Args({256, 5})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DSparkThreshold)->Args({256, 5})->Unit(benchmark::kMicrosecond);
