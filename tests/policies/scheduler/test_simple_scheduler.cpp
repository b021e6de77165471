// SimpleScheduler: chunked prefill under a token budget, FCFS within priority, sequence cap.
#include <catch2/catch.hpp>

#include "policies/scheduler/simple_scheduler.h"
#include "tests/support/builders.h"

using namespace deepinfer;
using deepinfer::testing::make_requests;

namespace {
StepOutcome outcome_for(const StepPlan& plan) {
    StepOutcome o{.step_id = plan.step_id};
    for (const auto& s : plan.seqs)
        o.seqs.push_back(SeqOutcome{.request = s.request, .token_ids = s.samples ? std::vector<std::int32_t>{9} : std::vector<std::int32_t>{},
                                    .num_sampled = s.samples ? 1 : 0});
    return o;
}
}  // namespace

TEST_CASE("SimpleScheduler: a long prompt is chunked by the token budget (trace)", "[policies][scheduler]") {
    SimpleScheduler s({.max_num_batched_tokens = 100, .max_num_seqs = 4});
    for (auto& r : make_requests(2, 150, 2)) s.add_request(r);
    // step: (request, computed, new, samples) ...
    struct Row {
        std::int64_t req;
        std::int32_t computed;
        std::int32_t n;
        bool samples;
    };
    const std::vector<std::vector<Row>> expected = {
        {{0, 0, 100, false}},
        {{0, 100, 50, true}, {1, 0, 50, false}},
        {{0, 150, 1, true}, {1, 50, 99, false}},
        {{1, 149, 1, true}},
        {{1, 150, 1, true}},
    };
    for (const auto& rows : expected) {
        const StepPlan plan = s.schedule(0);
        REQUIRE(plan.seqs.size() == rows.size());
        for (std::size_t i = 0; i < rows.size(); ++i) {
            CHECK(plan.seqs[i].request.value() == rows[i].req);
            CHECK(plan.seqs[i].num_computed_tokens == rows[i].computed);
            CHECK(plan.seqs[i].num_new_tokens == rows[i].n);
            CHECK(plan.seqs[i].samples == rows[i].samples);
        }
        s.commit(plan, outcome_for(plan), 0);
    }
    CHECK_FALSE(s.has_unfinished());
}

TEST_CASE("SimpleScheduler: priority classes first, FCFS inside a class", "[policies][scheduler]") {
    SimpleScheduler s({.max_num_batched_tokens = 1000, .max_num_seqs = 2});
    auto reqs = make_requests(3, 10, 1);
    reqs[2].priority = -1;  // most urgent, arrived last
    for (auto& r : reqs) s.add_request(r);
    const StepPlan plan = s.schedule(0);
    REQUIRE(plan.seqs.size() == 2);
    CHECK(plan.seqs[0].request.value() == 2);
    CHECK(plan.seqs[1].request.value() == 0);
    CHECK(plan.stats.num_blocked_by_seq_cap == 1);
}

TEST_CASE("SimpleScheduler: config errors name the field", "[policies][scheduler]") {
    const auto r = JsonReader::parse_text(R"({"max_num_batched_tokens": -5})", "sched.json");
    CHECK_THROWS_WITH(simple_scheduler_config_from_json(r),
                      "sched.json: /max_num_batched_tokens: expected an integer in [1, 1073741824], got -5");
}
