// DpGroupScheduler: the ranks of one EP group step together, so no rank plans while another rank's
// step with drafts is in flight.
#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/clock.h"
#include "sim/parallel/worker_pool.h"
#include "sim/scheduler/dp_group_scheduler.h"
#include "tests/policies/scheduler/sched_test_util.h"
#include "tests/support/builders.h"
#include "tests/support/fake_executor.h"

using namespace deepinfer;
using deepinfer::testing::FakeExecutor;
using deepinfer::testing::make_requests;
using deepinfer::testing::tiny_kv;

TEST_CASE("DpGroupScheduler: an arrival on an idle rank waits for another rank's drafting step",
          "[sim][scheduler]") {
    std::vector<std::unique_ptr<Scheduler>> ranks;
    for (std::int32_t r = 0; r < 2; ++r) {
        SchedulerConfig cfg;
        cfg.dp_rank = r;
        cfg.num_speculative_tokens = 3;
        cfg.kv = tiny_kv(40, 16, 10);
        ranks.push_back(std::make_unique<Scheduler>(cfg));
    }
    sim::DpGroupScheduler group(std::move(ranks), {});
    engine::ManualClock clock;
    FakeExecutor exec(&clock);
    const auto reqs = make_requests(2, 10, 20);
    group.add_request(reqs[0], 0);
    const StepPlan first = group.schedule(0.0);
    REQUIRE(first.seqs.size() == 1);
    REQUIRE(first.seqs[0].num_drafts_to_propose > 0);
    const engine::StepTicket ticket = exec.launch(first);
    // Rank 1 could start the new request at once, but that step would delay rank 0's speculating
    // sequence by a whole step: the group plans nothing until the drafting step commits.
    group.add_request(reqs[1], 1);
    CHECK(group.schedule(0.0).empty());
    group.commit(first, exec.wait(ticket), 0.0);
    const StepPlan next = group.schedule(0.0);
    REQUIRE(next.seqs.size() == 2);
    CHECK(next.seqs[0].request == reqs[0].id);
    CHECK(next.seqs[1].request == reqs[1].id);
}

namespace {

/// A 4-rank group with speculation, optionally planning on `pool`.
std::unique_ptr<sim::DpGroupScheduler> make_group(sim::WorkerPool* pool, bool prefix_cache = true) {
    std::vector<std::unique_ptr<Scheduler>> ranks;
    for (std::int32_t r = 0; r < 4; ++r) {
        SchedulerConfig cfg;
        cfg.dp_rank = r;
        cfg.num_speculative_tokens = 3;
        cfg.max_num_batched_tokens = 64;
        cfg.kv = tiny_kv(60, 16, 10);
        cfg.prefix_cache.enabled = prefix_cache;
        ranks.push_back(std::make_unique<Scheduler>(cfg));
    }
    auto group = std::make_unique<sim::DpGroupScheduler>(std::move(ranks),
                                                         std::vector<std::unique_ptr<DsparkVerifyAdapter>>{});
    group->set_worker_pool(pool);
    return group;
}

bool same_load(const DpRankLoad& a, const DpRankLoad& b) {
    return a.num_running_seqs == b.num_running_seqs && a.num_waiting_seqs == b.num_waiting_seqs &&
           a.num_pending_prefill_tokens == b.num_pending_prefill_tokens &&
           a.kv_free_fraction == b.kv_free_fraction && a.max_num_seqs == b.max_num_seqs;
}

/// Commits `plan` rank by rank through EarlyCommit, as the SimExecutor does on its workers, checking
/// that the loads a router reads meanwhile are those from before the commit.
CommitResult commit_early(sim::DpGroupScheduler& group, sim::WorkerPool& pool, const StepPlan& plan,
                          const StepOutcome& out, double now_s) {
    std::vector<DpRankLoad> before;
    for (std::int32_t r = 0; r < group.num_ranks(); ++r) before.push_back(group.rank_load(r));
    REQUIRE(group.begin_early_commit(plan.step_id, now_s));
    const auto R = static_cast<std::size_t>(group.num_ranks());
    std::vector<std::size_t> first(R + 1, plan.seqs.size());  // each rank's slice of the plan
    for (std::size_t i = plan.seqs.size(); i-- > 0;)
        first[static_cast<std::size_t>(plan.seqs[i].dp_rank)] = i;
    for (std::size_t r = R; r-- > 0;) first[r] = std::min(first[r], first[r + 1]);
    pool.start_async(R, [&](std::size_t r) {
        const std::size_t n = first[r + 1] - first[r];
        group.commit_rank_early(r, std::span<const SeqSchedule>(plan.seqs).subspan(first[r], n),
                                std::span<const SeqOutcome>(out.seqs).subspan(first[r], n));
    });
    pool.wait_async();
    for (std::int32_t r = 0; r < group.num_ranks(); ++r)
        CHECK(same_load(group.rank_load(r), before[static_cast<std::size_t>(r)]));
    return group.commit(plan, out, now_s);
}

/// Every plan and commit of a run as text, in order. `early`: commits go through EarlyCommit on
/// `pool` (the ranks then keep no prefix cache, as early commits require).
std::vector<std::string> run_group(sim::WorkerPool* pool, bool prefix_cache = true, bool early = false) {
    auto group = make_group(pool, prefix_cache);
    engine::ManualClock clock;
    FakeExecutor exec(&clock);
    // Accepted drafts vary with the request and its position, so ranks progress unevenly.
    exec.script = [](const StepPlan&, const SeqSchedule& s) {
        return testing::ScriptedSeq{
            .num_accepted_drafts =
                std::min(s.num_verify_tokens,
                         static_cast<std::int32_t>((s.request.value() + s.num_computed_tokens) % 3))};
    };
    const auto reqs = make_requests(24, 30, 40);
    for (std::size_t i = 0; i < reqs.size(); ++i)
        group->add_request(reqs[i], static_cast<std::int32_t>(i % 4));
    std::vector<std::string> log;
    for (int step = 0; step < 500 && group->has_unfinished(); ++step) {
        const StepPlan plan = group->schedule(clock.now_s());
        REQUIRE(!plan.empty());
        std::string line = "plan";
        for (const SeqSchedule& s : plan.seqs)
            line += " " + std::to_string(s.request.value()) + "@" + std::to_string(s.dp_rank) + ":" +
                    std::to_string(s.num_new_tokens) + "/" + std::to_string(s.num_verify_tokens);
        log.push_back(line);
        const StepOutcome out = exec.wait(exec.launch(plan));
        const CommitResult r = early ? commit_early(*group, *pool, plan, out, clock.now_s())
                                     : group->commit(plan, out, clock.now_s());
        line = "commit";
        for (const TokenProgress& p : r.progress)
            line += " " + std::to_string(p.request.value()) + "+" + std::to_string(p.num_new_output_tokens);
        for (const FinishedRequest& f : r.finished) line += " done" + std::to_string(f.request.value());
        log.push_back(line);
    }
    REQUIRE_FALSE(group->has_unfinished());
    return log;
}

}  // namespace

TEST_CASE("DpGroupScheduler: ranks planned and committed on worker threads give the same steps",
          "[sim][scheduler][parallel]") {
    const std::vector<std::string> serial = run_group(nullptr);
    for (const std::int32_t threads : {2, 3}) {
        sim::WorkerPool pool(threads);
        INFO("threads " << threads);
        CHECK(run_group(&pool) == serial);
    }
}

TEST_CASE("DpGroupScheduler: ranks committed early, as their outcomes are drawn, give the same steps",
          "[sim][scheduler][parallel]") {
    const std::vector<std::string> serial = run_group(nullptr, /*prefix_cache=*/false);
    for (const std::int32_t threads : {1, 2, 3}) {
        sim::WorkerPool pool(threads);
        INFO("threads " << threads);
        CHECK(run_group(&pool, /*prefix_cache=*/false, /*early=*/true) == serial);
    }
    // A rank with a prefix cache registers blocks at the commit time: no early commit then.
    sim::WorkerPool pool(2);
    auto group = make_group(&pool, /*prefix_cache=*/true);
    const auto reqs = make_requests(1, 30, 40);
    group->add_request(reqs[0], 0);
    const StepPlan plan = group->schedule(0.0);
    REQUIRE_FALSE(plan.empty());
    CHECK_FALSE(group->begin_early_commit(plan.step_id, 0.0));
    // Nor for a step that is not the oldest in flight.
    auto no_cache = make_group(&pool, /*prefix_cache=*/false);
    no_cache->add_request(reqs[0], 0);
    const StepPlan next = no_cache->schedule(0.0);
    REQUIRE_FALSE(next.empty());
    CHECK_FALSE(no_cache->begin_early_commit(next.step_id + 1, 0.0));
    CHECK(no_cache->begin_early_commit(next.step_id, 0.0));
    CHECK_FALSE(no_cache->begin_early_commit(next.step_id, 0.0));  // once per step
}
