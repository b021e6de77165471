// DpGroupScheduler: the ranks of one EP group step together, so no rank plans while another rank's
// step with drafts is in flight.
#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "engine/core/clock.h"
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
