// Scheduler plan+commit latency: 256 running sequences verifying 5 draft tokens each, 10,000
// requests waiting behind the sequence cap. Reports the median and p99 of schedule()+commit().
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "policies/common/units.h"
#include "policies/scheduler/scheduler.h"

namespace {

using namespace deepinfer;

Request bench_request(std::int64_t id, std::int32_t prompt_len, std::int32_t max_new) {
    Request r;
    r.id = RequestId(id);
    r.prompt_token_ids.resize(static_cast<std::size_t>(prompt_len));
    for (std::int32_t t = 0; t < prompt_len; ++t)
        r.prompt_token_ids[static_cast<std::size_t>(t)] =
            static_cast<std::int32_t>((id * 131 + t * 7) % 50000);
    r.prompt_len_tokens = prompt_len;
    r.max_new_tokens = max_new;
    return r;
}

/// Fills `out` as an executor would for `plan`: every sampling sequence accepts a varying number of
/// its verified drafts and proposes `drafts` new ones with confidences.
void fill_outcome(const StepPlan& plan, std::int32_t drafts, StepOutcome& out) {
    out.step_id = plan.step_id;
    out.seqs.resize(plan.seqs.size());
    for (std::size_t i = 0; i < plan.seqs.size(); ++i) {
        const SeqSchedule& s = plan.seqs[i];
        SeqOutcome& o = out.seqs[i];
        o.request = s.request;
        o.num_accepted_drafts =
            s.samples ? static_cast<std::int32_t>((plan.step_id + static_cast<std::int64_t>(i)) %
                                                  (s.num_verify_tokens + 1))
                      : 0;
        o.num_sampled = s.samples ? o.num_accepted_drafts + 1 : 0;
        o.token_ids.assign(static_cast<std::size_t>(o.num_sampled), 11);
        o.draft_confidences.assign(static_cast<std::size_t>(s.samples ? drafts : 0), 0.7f);
    }
}

void BM_SchedulerPlanCommit(benchmark::State& state) {
    const auto drafts = static_cast<std::int32_t>(state.range(0));
    SchedulerConfig cfg;
    cfg.max_num_batched_tokens = 8192;
    cfg.max_num_seqs = 256;
    cfg.max_model_len = 1 << 30;
    cfg.num_speculative_tokens = drafts;
    cfg.kv.capacity_bytes = 512 * units::kGiB;  // room for the whole run without preemption
    Scheduler sched(cfg);
    for (std::int64_t i = 0; i < 256; ++i) sched.add_request(bench_request(i, 512, 1 << 22));
    StepOutcome outcome;
    double now = 0.0;
    // Warm up: prefill all 256 and reach steady decode with drafts ready.
    for (int k = 0; k < 40; ++k) {
        const StepPlan p = sched.schedule(now);
        fill_outcome(p, drafts, outcome);
        sched.commit(p, outcome, now);
    }
    if (sched.num_running() != 256 || sched.num_waiting() != 0) {
        state.SkipWithError(("warm-up: running " + std::to_string(sched.num_running()) + " waiting " +
                             std::to_string(sched.num_waiting()))
                                .c_str());
        return;
    }
    for (std::int64_t i = 0; i < 10000; ++i) sched.add_request(bench_request(256 + i, 512, 16));
    std::vector<double> samples_us;
    samples_us.reserve(1 << 16);
    std::int64_t tokens = 0;
    for (auto _ : state) {
        now += 0.02;
        const auto t0 = std::chrono::steady_clock::now();
        StepPlan plan = sched.schedule(now);
        const auto t1 = std::chrono::steady_clock::now();
        fill_outcome(plan, drafts, outcome);
        const auto t2 = std::chrono::steady_clock::now();
        CommitResult res = sched.commit(plan, outcome, now);
        const auto t3 = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(res);
        const double s = std::chrono::duration<double>((t1 - t0) + (t3 - t2)).count();
        state.SetIterationTime(s);
        samples_us.push_back(s * 1e6);
        tokens += plan.num_tokens();
        if (plan.seqs.size() != 256 || sched.num_waiting() != 10000 ||
            plan.num_tokens() != 256 * (1 + drafts)) {
            state.SkipWithError("workload drifted");
            break;
        }
    }
    std::sort(samples_us.begin(), samples_us.end());
    if (!samples_us.empty()) {
        state.counters["median_us"] = samples_us[samples_us.size() / 2];
        state.counters["p99_us"] = samples_us[samples_us.size() * 99 / 100];
    }
    state.counters["tokens/step"] = static_cast<double>(tokens) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_SchedulerPlanCommit)
    ->Arg(5)
    ->Arg(0)
    ->UseManualTime()
    ->Iterations(20000)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
