// DpGroupScheduler: the ranks of one EP group step together, so no rank plans while another rank's
// step with drafts is in flight.
#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
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
std::unique_ptr<sim::DpGroupScheduler> make_group(sim::WorkerPool* pool) {
    std::vector<std::unique_ptr<Scheduler>> ranks;
    for (std::int32_t r = 0; r < 4; ++r) {
        SchedulerConfig cfg;
        cfg.dp_rank = r;
        cfg.num_speculative_tokens = 3;
        cfg.max_num_batched_tokens = 64;
        cfg.kv = tiny_kv(60, 16, 10);
        ranks.push_back(std::make_unique<Scheduler>(cfg));
    }
    auto group = std::make_unique<sim::DpGroupScheduler>(std::move(ranks),
                                                         std::vector<std::unique_ptr<DsparkVerifyAdapter>>{});
    group->set_worker_pool(pool);
    return group;
}

/// Every plan and commit of a run as text, in order.
std::vector<std::string> run_group(sim::WorkerPool* pool) {
    auto group = make_group(pool);
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
        const CommitResult r = group->commit(plan, exec.wait(exec.launch(plan)), clock.now_s());
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
