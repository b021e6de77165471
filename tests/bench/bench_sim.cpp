// Per-step costs inside the simulator that do not need a SimGrid engine: the EP load model and
// workload generation. The end-to-end event rate is reported by `deepinfer simulate` itself
// (summary.json "wall": events_per_s, simulated_per_wall).
#if __has_include(<simgrid/s4u.hpp>)
#include <benchmark/benchmark.h>

#include "sim/outcome_model/routing_model.h"
#include "sim/workload/workload.h"

using namespace deepinfer;
using namespace deepinfer::sim;

static void BM_EpLoadModelStep(benchmark::State& state) {
    RoutingModel routing(RoutingModelConfig{}, ModelShape::v4_flash(), Rng(1));
    EpLoadModel ep(routing, make_static_placement(43, 256, 64, 1));
    double t = 0;
    for (auto _ : state) {
        t += 0.01;  // a 10 ms decode step; drift recomputes every 30 simulated seconds
        benchmark::DoNotOptimize(ep.step_load(4096, t));
    }
    state.counters["steps/s"] =
        benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EpLoadModelStep);

static void BM_WorkloadAgentArrivals(benchmark::State& state) {
    WorkloadConfig w;
    w.duration_s = 1e12;
    TrafficConfig t;
    t.traffic_class = TrafficClass::kAgent;
    t.rate_per_s = 10;
    w.traffic.push_back(t);
    Workload workload(w, Rng(2));
    for (auto _ : state) {
        const SimRequest r = workload.pop_arrival();
        benchmark::DoNotOptimize(prompt_block_hashes(r));
    }
    state.counters["requests/s"] =
        benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_WorkloadAgentArrivals);
#endif
