// Rng throughput (sanity benchmark; the policy benchmarks join this binary).
#include <benchmark/benchmark.h>

#include "policies/common/rng.h"

static void BM_RngNextU64(benchmark::State& state) {
    deepinfer::Rng rng(1);
    for (auto _ : state) benchmark::DoNotOptimize(rng.next_u64());
    state.counters["draws/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RngNextU64);
