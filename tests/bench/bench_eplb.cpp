// EPLB placement run time: 43 layers x 256 experts on EP8/64/128 with 1 or 4 redundant slots per GPU
// (target: <= 50 ms for EP128, 4 redundant, one core); hedge_rounds 0 turns hedging off. Counters
// report the mean max/mean GPU load.
#include <benchmark/benchmark.h>

#include "policies/eplb/rebalance.h"
#include "policies/eplb/synthetic_loads.h"

namespace {

using namespace deepinfer;

void run_placement(benchmark::State& state, SplitMode split) {
    SyntheticLoadSpec spec{.shape = SyntheticLoadSpec::Shape::kZipf,
                           .num_layers = 43,
                           .num_experts = 256,
                           .zipf_exponent = 1.0,
                           .num_hot = 4,
                           .hot_fraction = 0.5,
                           .tokens_per_layer = 1e6,
                           .drift = 0.0};
    Rng rng(42);
    const auto loads = make_synthetic_loads(spec, 1, rng).front();
    PlacementOptions options;
    options.num_gpus = static_cast<std::int32_t>(state.range(0));
    options.redundant_per_gpu = static_cast<std::int32_t>(state.range(1));
    options.split = split;
    options.max_hedge_rounds = static_cast<std::int32_t>(state.range(2));
    if (options.max_hedge_rounds == 0) options.hedge_reach = 0;
    double imbalance = 0.0;
    for (auto _ : state) {
        auto result = compute_placement(loads, options);
        imbalance = 0.0;
        for (const auto& l : result.layers) imbalance += l.imbalance();
        imbalance /= static_cast<double>(result.layers.size());
        benchmark::DoNotOptimize(result);
    }
    state.counters["max/mean"] = imbalance;
}

void BM_EplbWeighted(benchmark::State& state) { run_placement(state, SplitMode::kWeighted); }
void BM_EplbUniform(benchmark::State& state) { run_placement(state, SplitMode::kUniform); }

}  // namespace

BENCHMARK(BM_EplbWeighted)
    ->ArgNames({"gpus", "redundant", "hedge_rounds"})
    ->Args({128, 4, 64})
    ->Args({128, 4, 0})
    ->Args({128, 1, 64})
    ->Args({64, 1, 64})
    ->Args({8, 4, 64})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EplbUniform)
    ->ArgNames({"gpus", "redundant", "hedge_rounds"})
    ->Args({128, 4, 64})
    ->Args({128, 4, 0})
    ->Args({64, 1, 64})
    ->Unit(benchmark::kMillisecond);
