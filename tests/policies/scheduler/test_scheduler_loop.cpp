// Scheduler driven through engine::Instance with FakeExecutor: invariants over many seeds (budget,
// sequence cap, blocks, every request finishing or rejected with a reason), speculative decoding
// with scripted acceptance, async placeholders (decodes planned every step, stops discarding the
// placeholder step) and the async rule for drafts.
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "engine/core/instance.h"
#include "policies/common/rng.h"
#include "policies/scheduler/scheduler.h"
#include "tests/policies/scheduler/sched_test_util.h"
#include "tests/support/builders.h"
#include "tests/support/fake_executor.h"

using namespace deepinfer;
using deepinfer::testing::FakeExecutor;
using deepinfer::testing::make_requests;
using deepinfer::testing::tiny_kv;

namespace {

struct LoopRun {
    std::map<std::int64_t, FinishedRequest> finished;
    std::int64_t num_steps = 0;
    std::int64_t num_preempted = 0;
    std::int64_t num_hit_tokens = 0;
    std::int64_t num_replay_tokens = 0;
};

/// Random config + workload for `seed`, run to idle with checks at every launch and commit.
LoopRun run_random(std::uint64_t seed, std::map<std::int64_t, Request>& requests) {
    Rng rng(seed);
    SchedulerConfig cfg;
    cfg.max_num_batched_tokens = static_cast<std::int32_t>(rng.uniform_int(1, 300));
    cfg.max_num_seqs = static_cast<std::int32_t>(rng.uniform_int(1, 10));
    cfg.num_speculative_tokens = rng.bernoulli(0.5) ? static_cast<std::int32_t>(rng.uniform_int(1, 5)) : 0;
    cfg.kv = tiny_kv(static_cast<std::int32_t>(rng.uniform_int(4, 60)), 16, 10);
    cfg.prefix_cache.enabled = rng.bernoulli(0.7);
    cfg.prefix_cache.swa_replay_tokens = static_cast<std::int32_t>(rng.uniform_int(0, 40));
    cfg.prefix_cache.hbm_keeps_swa_state = rng.bernoulli(0.5);
    if (rng.bernoulli(0.5)) cfg.prefix_cache.host.capacity_bytes = 8 * 16 * 8;
    Scheduler sched(cfg);
    engine::ManualClock clock;
    FakeExecutor exec(&clock);
    const double p_stop = rng.bernoulli(0.3) ? 0.05 : 0.0;
    exec.script = [seed, p_stop](const StepPlan& plan, const SeqSchedule& s) {
        Rng r = Rng(seed).fork(static_cast<std::uint64_t>(plan.step_id) * 7919 +
                               static_cast<std::uint64_t>(s.request.value()));
        return testing::ScriptedSeq{.num_accepted_drafts = static_cast<std::int32_t>(r.uniform_int(0, 5)),
                                    .hit_stop = r.bernoulli(p_stop)};
    };
    LoopRun run;
    // Requests with a sampling step in flight that verifies or proposes drafts: never planned again
    // until it commits (placeholders stand for plain sampled tokens only).
    std::set<std::int64_t> drafts_in_flight;
    engine::InstanceHooks hooks;
    hooks.on_launch = [&](const StepPlan& plan, double) {
        REQUIRE(plan.num_tokens() <= cfg.max_num_batched_tokens);
        REQUIRE(static_cast<std::int32_t>(plan.seqs.size()) <= cfg.max_num_seqs);
        for (const SeqSchedule& s : plan.seqs) {
            REQUIRE(s.num_new_tokens >= 1);
            REQUIRE(s.num_verify_tokens <= cfg.num_speculative_tokens);
            REQUIRE(s.num_replay_tokens <= s.num_new_tokens);
            REQUIRE(drafts_in_flight.count(s.request.value()) == 0);
            if (s.samples && (s.num_verify_tokens > 0 || s.num_drafts_to_propose > 0))
                drafts_in_flight.insert(s.request.value());
            run.num_replay_tokens += s.num_replay_tokens;
        }
        run.num_preempted += static_cast<std::int64_t>(plan.preempted.size());
        run.num_hit_tokens += plan.stats.num_prefix_hit_tokens;
    };
    hooks.on_commit = [&](const StepPlan& plan, const StepOutcome&, const CommitResult&, double) {
        for (const SeqSchedule& s : plan.seqs)
            if (s.samples && (s.num_verify_tokens > 0 || s.num_drafts_to_propose > 0))
                drafts_in_flight.erase(s.request.value());
        sched.check_invariants();
        ++run.num_steps;
    };
    hooks.on_finished = [&](const FinishedRequest& f, double) {
        REQUIRE(run.finished.count(f.request.value()) == 0);
        run.finished[f.request.value()] = f;
    };
    engine::Instance inst("t", exec, clock, sched, nullptr, {.async_scheduling = rng.bernoulli(0.5)}, hooks);
    // Prompts share prefixes drawn from a few stems so the prefix cache gets hits.
    std::vector<std::vector<std::int32_t>> stems(3);
    for (auto& stem : stems)
        for (int t = 0; t < 96; ++t) stem.push_back(static_cast<std::int32_t>(rng.below(50)));
    const int n = static_cast<int>(rng.uniform_int(1, 25));
    for (int i = 0; i < n; ++i) {
        Request r = make_requests(1, 1, static_cast<std::int32_t>(rng.uniform_int(1, 30)), i)[0];
        const auto& stem = stems[rng.below(stems.size())];
        r.prompt_token_ids.assign(stem.begin(), stem.begin() + rng.uniform_int(0, 96));
        for (auto k = rng.uniform_int(1, 120); k > 0; --k)
            r.prompt_token_ids.push_back(static_cast<std::int32_t>(rng.below(50)));
        r.prompt_len_tokens = static_cast<std::int32_t>(r.prompt_token_ids.size());
        requests[i] = r;
        inst.add_request(r);
        if (rng.bernoulli(0.3)) inst.step();  // arrivals interleave with steps
    }
    inst.run_until_idle();
    REQUIRE(sched.pool().num_live_blocks() == 0);
    REQUIRE(sched.pool().num_seq_states() == 0);
    sched.check_invariants();
    return run;
}

}  // namespace

namespace {

struct SweepTotals {
    std::int64_t preempted = 0, hits = 0, replayed = 0, rejected = 0;
};

SweepTotals sweep(std::uint64_t first_seed, std::uint64_t num_seeds) {
    SweepTotals t;
    for (std::uint64_t seed = first_seed; seed < first_seed + num_seeds; ++seed) {
        INFO("seed " << seed);
        std::map<std::int64_t, Request> requests;
        const LoopRun run = run_random(seed, requests);
        REQUIRE(run.finished.size() == requests.size());
        for (const auto& [id, f] : run.finished) {
            const Request& r = requests.at(id);
            switch (f.reason) {
                case FinishReason::kLength:
                    REQUIRE(f.num_output_tokens == r.max_new_tokens);
                    break;
                case FinishReason::kStop:
                    REQUIRE(f.num_output_tokens <= r.max_new_tokens);
                    break;
                case FinishReason::kRejected:
                    REQUIRE_FALSE(f.detail.empty());
                    ++t.rejected;
                    break;
                case FinishReason::kAborted:
                    FAIL("nothing aborts here");
            }
            REQUIRE(f.output_token_ids.size() == static_cast<std::size_t>(f.num_output_tokens));
        }
        t.preempted += run.num_preempted;
        t.hits += run.num_hit_tokens;
        t.replayed += run.num_replay_tokens;
    }
    return t;
}

}  // namespace

TEST_CASE("Scheduler loop: every request finishes or is rejected with a reason; no block leaks (many seeds)",
          "[policies][scheduler]") {
    const SweepTotals t = sweep(0, 150);
    // The sweep exercises preemption, prefix hits, bounded replay and rejection.
    CHECK(t.preempted > 0);
    CHECK(t.hits > 0);
    CHECK(t.replayed > 0);
    CHECK(t.rejected > 0);
}

TEST_CASE("Scheduler loop: the invariant sweep holds over 5000 more seeds", "[policies][scheduler][.slow]") {
    sweep(1000, 5000);
}

TEST_CASE("Scheduler loop: accepted drafts produce the same outputs in fewer steps",
          "[policies][scheduler]") {
    auto run = [](std::int32_t spec, bool async) {
        SchedulerConfig cfg;
        cfg.max_num_batched_tokens = 512;
        cfg.num_speculative_tokens = spec;
        cfg.kv = tiny_kv(200, 16, 10);
        Scheduler sched(cfg);
        engine::ManualClock clock;
        FakeExecutor exec(&clock);
        exec.script = [](const StepPlan&, const SeqSchedule&) {
            return testing::ScriptedSeq{.num_accepted_drafts = 3};
        };
        std::int64_t outputs = 0;
        engine::InstanceHooks hooks;
        hooks.on_finished = [&](const FinishedRequest& f, double) {
            CHECK(f.reason == FinishReason::kLength);
            outputs += f.num_output_tokens;
        };
        engine::Instance inst("t", exec, clock, sched, nullptr, {.async_scheduling = async}, hooks);
        for (auto& r : make_requests(4, 40, 41)) inst.add_request(r);
        inst.run_until_idle();
        CHECK(outputs == 4 * 41);
        return inst.stats().num_steps_committed;
    };
    // Without drafts: 1 prompt step + 40 decode steps. With 3 of 3 accepted: 1 + 10 verify steps.
    CHECK(run(0, false) == 41);
    CHECK(run(3, false) == 11);
    // Async with drafts: a speculating sequence sits out the plan made while its sampling step is in
    // flight; with every sequence speculating the plan comes out empty and the loop commits first,
    // so the step count is the synchronous one (the overlap of planning and execution is lost).
    CHECK(run(3, true) == 11);
    CHECK(run(0, true) == 41);
}

TEST_CASE("Scheduler loop: with async scheduling a pure-decode batch is planned every step",
          "[policies][scheduler]") {
    SchedulerConfig cfg;
    cfg.kv = tiny_kv(20, 16, 10);
    Scheduler sched(cfg);
    engine::ManualClock clock;
    FakeExecutor exec(&clock);
    engine::InstanceHooks hooks;
    hooks.on_commit = [&](const StepPlan&, const StepOutcome&, const CommitResult&, double) {
        sched.check_invariants();
    };
    engine::Instance inst("t", exec, clock, sched, nullptr, {.async_scheduling = true}, hooks);
    for (auto& r : make_requests(2, 10, 4)) inst.add_request(r);
    inst.run_until_idle();
    // Step 0 = both prompts (samples token 1); steps 1..3 decode tokens 2..4 of both requests, each
    // planned on a placeholder before the previous step's outcome (as with the SimpleScheduler).
    const std::vector<std::string> expected = {"launch 0", "launch 1", "wait 0", "launch 2",
                                               "wait 1",   "launch 3", "wait 2", "wait 3"};
    REQUIRE(exec.log == expected);
    REQUIRE(exec.plans.size() == 4);
    for (std::size_t step = 1; step < 4; ++step) {
        const StepPlan& plan = exec.plans[step];
        REQUIRE(plan.seqs.size() == 2);
        for (std::size_t i = 0; i < 2; ++i) {
            CHECK(plan.seqs[i].request == RequestId(static_cast<std::int64_t>(i)));
            CHECK(plan.seqs[i].num_computed_tokens == 10 + static_cast<std::int32_t>(step) - 1);
            CHECK(plan.seqs[i].num_new_tokens == 1);
            CHECK(plan.seqs[i].samples);
        }
    }
    CHECK(inst.stats().num_finished == 2);
    CHECK(inst.stats().num_output_tokens == 8);
    CHECK(sched.pool().num_live_blocks() == 0);
}

TEST_CASE("Scheduler loop: a stop in step N discards the placeholder step N+1 and frees its block once",
          "[policies][scheduler]") {
    SchedulerConfig cfg;
    cfg.kv = tiny_kv(8, 4, 4);
    cfg.prefix_cache.enabled = false;
    Scheduler sched(cfg);
    engine::ManualClock clock;
    FakeExecutor exec(&clock);
    exec.script = [](const StepPlan& plan, const SeqSchedule&) {
        return testing::ScriptedSeq{.hit_stop = plan.step_id == 1,
                                    .token_id = static_cast<std::int32_t>(plan.step_id)};
    };
    std::vector<FinishedRequest> finished;
    std::vector<std::int32_t> live_after_commit;
    engine::InstanceHooks hooks;
    hooks.on_commit = [&](const StepPlan&, const StepOutcome&, const CommitResult&, double) {
        sched.check_invariants();
        live_after_commit.push_back(sched.pool().num_live_blocks());
    };
    hooks.on_finished = [&](const FinishedRequest& f, double) { finished.push_back(f); };
    engine::Instance inst("t", exec, clock, sched, nullptr, {.async_scheduling = true}, hooks);
    // Prompt 7 in 4-token blocks: step 0 computes tokens 0..6 (2 blocks), step 1 token 7, and the
    // placeholder step 2 token 8, which takes a third block.
    for (auto& r : make_requests(1, 7, 10)) inst.add_request(r);
    inst.run_until_idle();
    REQUIRE(exec.plans.size() == 3);
    CHECK(exec.plans[2].seqs.at(0).num_computed_tokens == 8);
    CHECK(exec.plans[2].seqs.at(0).block_ids.size() == 1);
    REQUIRE(finished.size() == 1);
    CHECK(finished[0].reason == FinishReason::kStop);
    CHECK(finished[0].num_output_tokens == 2);
    CHECK(finished[0].output_token_ids == std::vector<std::int32_t>{0, 1});
    // Step 0 commits after step 1 launched (2 blocks); step 1 commits after the placeholder step 2
    // took the third block: the request is finished but step 2 still uses its 3 blocks; they are
    // released once, when step 2 commits, and nothing else is launched.
    CHECK(live_after_commit == std::vector<std::int32_t>{2, 3, 0});
    CHECK(sched.pool().num_seq_states() == 0);
    CHECK(inst.stats().num_output_tokens == 2);
}

TEST_CASE("Scheduler loop: placeholders stop at max_new_tokens and follow only steps without drafts",
          "[policies][scheduler]") {
    auto run = [](std::int32_t spec, std::int32_t max_new) {
        SchedulerConfig cfg;
        cfg.num_speculative_tokens = spec;
        cfg.kv = tiny_kv(40, 16, 10);
        Scheduler sched(cfg);
        engine::ManualClock clock;
        FakeExecutor exec(&clock);
        engine::InstanceHooks hooks;
        hooks.on_commit = [&](const StepPlan&, const StepOutcome&, const CommitResult&, double) {
            sched.check_invariants();
        };
        hooks.on_finished = [&](const FinishedRequest& f, double) {
            CHECK(f.reason == FinishReason::kLength);
            CHECK(f.num_output_tokens == max_new);
        };
        engine::Instance inst("t", exec, clock, sched, nullptr, {.async_scheduling = true}, hooks);
        for (auto& r : make_requests(1, 10, max_new)) inst.add_request(r);
        inst.run_until_idle();
        CHECK(sched.pool().num_live_blocks() == 0);
        return exec.log;
    };
    using Log = std::vector<std::string>;
    // max_new_tokens 1: the prompt step produces the only token, so no placeholder step follows.
    CHECK(run(0, 1) == Log{"launch 0", "wait 0"});
    // Drafting on but max_new_tokens 2: the prompt step proposes no drafts (no room to verify them),
    // so the last token is planned on a placeholder.
    CHECK(run(3, 2) == Log{"launch 0", "launch 1", "wait 0", "wait 1"});
    // max_new_tokens 3: the prompt step proposes a draft, so step 1 waits for it and verifies it;
    // the fake rejects it, and step 2 (the last token) waits for step 1's accepted count.
    CHECK(run(3, 3) == Log{"launch 0", "wait 0", "launch 1", "wait 1", "launch 2", "wait 2"});
}

TEST_CASE(
    "Scheduler loop: while a step with drafts is in flight nothing is planned; arrivals join the next step",
    "[policies][scheduler]") {
    SchedulerConfig cfg;
    cfg.num_speculative_tokens = 3;
    cfg.kv = tiny_kv(40, 16, 10);
    Scheduler sched(cfg);
    engine::ManualClock clock;
    FakeExecutor exec(&clock);
    const auto reqs = make_requests(2, 10, 20);
    sched.add_request(reqs[0]);
    const StepPlan first = sched.schedule(0.0);
    REQUIRE(first.seqs.size() == 1);
    REQUIRE(first.seqs[0].num_drafts_to_propose > 0);  // the prompt step proposes drafts
    const engine::StepTicket ticket = exec.launch(first);
    CHECK(sched.draft_step_in_flight());
    // An arrival while that step runs is not planned into a step of its own (it would delay the
    // speculating sequence by a whole step).
    sched.add_request(reqs[1]);
    CHECK(sched.schedule(0.0).empty());
    sched.commit(first, exec.wait(ticket), 0.0);
    CHECK_FALSE(sched.draft_step_in_flight());
    const StepPlan next = sched.schedule(0.0);
    REQUIRE(next.seqs.size() == 2);
    CHECK(next.seqs[0].request == reqs[0].id);
    CHECK(next.seqs[1].request == reqs[1].id);
    sched.check_invariants();
}
