// Instance: loop ordering (plan N+1 -> launch -> wait N -> commit -> EPLB), sync mode, hooks.
#include <catch2/catch.hpp>
#include <map>

#include "engine/core/instance.h"
#include "policies/common/rng.h"
#include "policies/scheduler/simple_scheduler.h"
#include "tests/support/builders.h"
#include "tests/support/fake_executor.h"

using namespace deepinfer;
using deepinfer::testing::FakeExecutor;
using deepinfer::testing::make_requests;

namespace {

/// Records observe / maybe_replace calls into the executor's log and re-places every `period` steps.
class LoggingBalancer final : public ExpertBalancer {
public:
    LoggingBalancer(std::vector<std::string>& log, int period) : log_(log), period_(period) {}
    void observe(std::int64_t step_id, const ExpertLoadSample& load) override {
        log_.push_back("observe " + std::to_string(step_id));
        total_tokens += load.tokens.empty() ? 0 : load.tokens[0];
    }
    std::optional<ExpertPlacement> maybe_replace(std::int64_t step_id) override {
        if ((step_id + 1) % period_ != 0) return std::nullopt;
        return make_identity_placement(1, 4, 2);
    }
    std::int64_t total_tokens = 0;

private:
    std::vector<std::string>& log_;
    int period_;
};

}  // namespace

TEST_CASE("Instance: async loop launches step N+1 before waiting for step N", "[engine][core]") {
    engine::ManualClock clock;
    FakeExecutor exec(&clock);
    SimpleScheduler sched({.max_num_batched_tokens = 64, .max_num_seqs = 8});
    LoggingBalancer balancer(exec.log, 1000);
    engine::Instance inst("test", exec, clock, sched, &balancer);
    for (auto& r : make_requests(1, 10, 3)) inst.add_request(r);
    inst.run_until_idle();
    // Step 0 = prompt (samples token 1); steps 1,2 = decode of tokens 2,3. Step 1 is planned with a
    // placeholder before step 0's outcome; step 2 likewise before step 1's.
    const std::vector<std::string> expected = {"launch 0",  "launch 1", "wait 0", "observe 0", "launch 2",
                                               "wait 1",    "observe 1", "wait 2", "observe 2"};
    REQUIRE(exec.log == expected);
    REQUIRE(inst.stats().num_finished == 1);
    REQUIRE(inst.stats().num_output_tokens == 3);
}

TEST_CASE("Instance: sync loop waits for each step before planning the next", "[engine][core]") {
    engine::ManualClock clock;
    FakeExecutor exec(&clock);
    SimpleScheduler sched({.max_num_batched_tokens = 64, .max_num_seqs = 8});
    engine::Instance inst("test", exec, clock, sched, nullptr, {.async_scheduling = false});
    for (auto& r : make_requests(1, 10, 3)) inst.add_request(r);
    inst.run_until_idle();
    const std::vector<std::string> expected = {"launch 0", "wait 0", "launch 1", "wait 1", "launch 2", "wait 2"};
    REQUIRE(exec.log == expected);
}

TEST_CASE("Instance: a stop token ends the request; the placeholder step is discarded", "[engine][core]") {
    engine::ManualClock clock;
    FakeExecutor exec(&clock);
    exec.script = [](const StepPlan& plan, const SeqSchedule&) {
        return testing::ScriptedSeq{.hit_stop = plan.step_id == 1};
    };
    SimpleScheduler sched({.max_num_batched_tokens = 64, .max_num_seqs = 8});
    std::vector<FinishedRequest> finished;
    engine::InstanceHooks hooks;
    hooks.on_finished = [&](const FinishedRequest& f, double) { finished.push_back(f); };
    engine::Instance inst("test", exec, clock, sched, nullptr, {}, hooks);
    for (auto& r : make_requests(1, 5, 10)) inst.add_request(r);
    inst.run_until_idle();
    REQUIRE(finished.size() == 1);
    CHECK(finished[0].reason == FinishReason::kStop);
    CHECK(finished[0].num_output_tokens == 2);
    // Step 2 was planned before step 1's stop was known; it ran but its token was discarded.
    CHECK(exec.plans.size() == 3);
    CHECK(finished[0].output_token_ids == std::vector<std::int32_t>{7, 7});
}

TEST_CASE("Instance: EPLB observes every committed step and placements reach the executor", "[engine][core]") {
    engine::ManualClock clock;
    FakeExecutor exec(&clock);
    exec.expert_load = [](const StepPlan& plan) {
        ExpertLoadSample s{.num_layers = 1, .num_experts = 4, .tokens = {plan.num_tokens(), 0, 0, 0}};
        return s;
    };
    SimpleScheduler sched({.max_num_batched_tokens = 16, .max_num_seqs = 8});
    LoggingBalancer balancer(exec.log, 2);
    engine::Instance inst("test", exec, clock, sched, &balancer);
    for (auto& r : make_requests(3, 20, 5)) inst.add_request(r);
    inst.run_until_idle();
    REQUIRE(balancer.total_tokens == inst.stats().num_tokens_computed);
    REQUIRE(exec.placements.size() == static_cast<std::size_t>(inst.stats().num_steps_committed / 2));
    // Each placement follows the observe of an odd step.
    for (std::size_t i = 0; i < exec.log.size(); ++i)
        if (exec.log[i].rfind("place", 0) == 0) REQUIRE(exec.log[i - 1].rfind("observe", 0) == 0);
}

TEST_CASE("Instance: rejected requests are reported through the hook", "[engine][core]") {
    engine::ManualClock clock;
    FakeExecutor exec(&clock);
    SimpleScheduler sched({.max_num_batched_tokens = 64, .max_num_seqs = 8, .max_model_len = 16});
    std::vector<FinishedRequest> finished;
    engine::InstanceHooks hooks;
    hooks.on_finished = [&](const FinishedRequest& f, double) { finished.push_back(f); };
    engine::Instance inst("test", exec, clock, sched, nullptr, {}, hooks);
    for (auto& r : make_requests(1, 15, 4)) inst.add_request(r);
    inst.run_until_idle();
    REQUIRE(finished.size() == 1);
    CHECK(finished[0].reason == FinishReason::kRejected);
    CHECK(finished[0].detail.find("max_model_len") != std::string::npos);
    CHECK(exec.plans.empty());
}

TEST_CASE("Instance: every request finishes with exactly max_new_tokens over many seeds", "[engine][core]") {
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
        Rng rng(seed);
        engine::ManualClock clock;
        FakeExecutor exec(&clock);
        const auto budget = static_cast<std::int32_t>(rng.uniform_int(1, 100));
        SimpleScheduler sched({.max_num_batched_tokens = budget, .max_num_seqs = static_cast<std::int32_t>(rng.uniform_int(1, 16))});
        std::map<std::int64_t, std::int32_t> want;
        std::map<std::int64_t, std::int32_t> got;
        engine::InstanceHooks hooks;
        hooks.on_launch = [&](const StepPlan& plan, double) { REQUIRE(plan.num_tokens() <= budget); };
        hooks.on_finished = [&](const FinishedRequest& f, double) { got[f.request.value()] = f.num_output_tokens; };
        engine::Instance inst("test", exec, clock, sched, nullptr, {.async_scheduling = rng.bernoulli(0.5)}, hooks);
        const int n = static_cast<int>(rng.uniform_int(1, 30));
        for (int i = 0; i < n; ++i) {
            auto r = make_requests(1, static_cast<std::int32_t>(rng.uniform_int(1, 300)),
                                   static_cast<std::int32_t>(rng.uniform_int(1, 20)), i)[0];
            want[i] = r.max_new_tokens;
            inst.add_request(r);
        }
        inst.run_until_idle();
        REQUIRE(got == want);
    }
}
