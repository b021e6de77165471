// Scheduler: exact trace tables (chunking, preemption order, SWA bounded replay), rejections,
// speculative-decoding rollback.
#include <catch2/catch.hpp>
#include <map>

#include "policies/common/rng.h"
#include "policies/scheduler/scheduler.h"
#include "tests/policies/scheduler/sched_test_util.h"
#include "tests/support/builders.h"

using namespace deepinfer;
using deepinfer::testing::make_requests;
using deepinfer::testing::plain_outcome;
using deepinfer::testing::tiny_kv;

namespace {
struct Row {
    std::int64_t req;
    std::int32_t computed;
    std::int32_t n;
    bool samples;
    std::size_t num_block_ids;
};

void check_rows(const StepPlan& plan, const std::vector<Row>& rows) {
    REQUIRE(plan.seqs.size() == rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        INFO("step " << plan.step_id << " row " << i);
        CHECK(plan.seqs[i].request.value() == rows[i].req);
        CHECK(plan.seqs[i].num_computed_tokens == rows[i].computed);
        CHECK(plan.seqs[i].num_new_tokens == rows[i].n);
        CHECK(plan.seqs[i].samples == rows[i].samples);
        CHECK(plan.seqs[i].block_ids.size() == rows[i].num_block_ids);
    }
}

SchedulerConfig small_config(std::int32_t budget, std::int32_t num_blocks, std::int32_t block_tokens = 16) {
    SchedulerConfig c;
    c.max_num_batched_tokens = budget;
    c.max_num_seqs = 8;
    c.kv = tiny_kv(num_blocks, block_tokens);
    c.prefix_cache.enabled = false;
    return c;
}
}  // namespace

TEST_CASE("Scheduler: a long prompt is chunked by the token budget (trace)", "[policies][scheduler]") {
    Scheduler s(small_config(40, 64));
    for (auto& r : make_requests(2, 50, 2)) s.add_request(r);
    // (request, computed, new, samples, block ids listed): 16-token blocks.
    const std::vector<std::vector<Row>> expected = {
        {{0, 0, 40, false, 3}},
        {{0, 40, 10, true, 1}, {1, 0, 30, false, 2}},
        {{0, 50, 1, true, 0}, {1, 30, 20, true, 2}},
        {{1, 50, 1, true, 0}},
    };
    for (const auto& rows : expected) {
        const StepPlan plan = s.schedule(0);
        check_rows(plan, rows);
        CHECK(plan.num_tokens() <= 40);
        s.commit(plan, plain_outcome(plan), 0);
        s.check_invariants();
    }
    CHECK_FALSE(s.has_unfinished());
    CHECK(s.pool().num_live_blocks() == 0);
    CHECK(s.pool().num_seq_states() == 0);
}

TEST_CASE("Scheduler: KV exhaustion preempts the newest sequence, then the blocked one itself (trace)",
          "[policies][scheduler]") {
    // 7 blocks of 16 tokens; three 16-token prompts decoding 40 tokens each.
    Scheduler s(small_config(1000, 7));
    for (auto& r : make_requests(3, 16, 40)) s.add_request(r);
    std::vector<std::pair<std::int64_t, std::int64_t>> preemptions;  // (step, request)
    std::map<std::int64_t, std::int32_t> outputs;
    for (int step = 0; step < 500 && s.has_unfinished(); ++step) {
        const StepPlan plan = s.schedule(0);
        for (RequestId r : plan.preempted) preemptions.emplace_back(plan.step_id, r.value());
        if (plan.step_id == 17) {
            // r0 takes the last free block; r1 needs one too: r2 (newest) is preempted for it.
            check_rows(plan, {{0, 32, 1, true, 1}, {1, 32, 1, true, 1}});
            CHECK(plan.stats.num_blocked_by_kv == 1);
        }
        if (plan.step_id == 33) check_rows(plan, {{0, 48, 1, true, 1}});
        const CommitResult res = s.commit(plan, plain_outcome(plan), 0);
        for (const auto& f : res.finished) outputs[f.request.value()] = f.num_output_tokens;
        s.check_invariants();
    }
    // Step 33: r1 needs a block, nothing newer is running, so r1 preempts itself.
    const std::vector<std::pair<std::int64_t, std::int64_t>> want = {{17, 2}, {33, 1}};
    CHECK(preemptions == want);
    CHECK(outputs == std::map<std::int64_t, std::int32_t>{{0, 40}, {1, 40}, {2, 40}});
    CHECK(s.pool().num_live_blocks() == 0);
}

TEST_CASE(
    "Scheduler: a prefix served from the store replays the last 140 tokens; from HBM it does not (trace)",
    "[policies][scheduler]") {
    SchedulerConfig cfg;
    cfg.max_num_batched_tokens = 64;
    cfg.kv = tiny_kv(64, 128);
    cfg.prefix_cache.store.capacity_bytes = 1e9;
    KvTierIndex store(1000, cfg.prefix_cache.store_ttl_s);
    Scheduler first(cfg, nullptr, &store);
    Scheduler second(cfg, nullptr, &store);
    auto reqs = make_requests(3, 300, 1);
    for (std::int32_t t = 256; t < 300; ++t) reqs[1].prompt_token_ids[static_cast<std::size_t>(t)] = 5000 + t;
    // The first instance computes request 0: its two full blocks go to the shared store.
    first.add_request(reqs[0]);
    std::int32_t written = 0;
    while (first.has_unfinished()) {
        const StepPlan p = first.schedule(1.0);
        for (const auto& t : p.kv_transfers) written += t.to == KvTier::kStore ? t.num_tokens : 0;
        first.commit(p, plain_outcome(p), 1.0);
    }
    StepPlan tail = first.schedule(1.0);  // nothing to run: the write-backs stay queued for the next plan
    CHECK(tail.empty());
    CHECK(store.size() == 2);
    // The second instance gets request 1 (same first 256 tokens): a store hit with bounded replay.
    second.add_request(reqs[1]);
    struct ReplayRow {
        std::int32_t computed, n, replay;
        bool samples;
    };
    const std::vector<ReplayRow> want = {{116, 64, 64, false}, {180, 64, 64, false}, {244, 56, 12, true}};
    for (std::size_t i = 0; i < want.size(); ++i) {
        const StepPlan p = second.schedule(2.0);
        REQUIRE(p.seqs.size() == 1);
        CHECK(p.seqs[0].num_computed_tokens == want[i].computed);
        CHECK(p.seqs[0].num_new_tokens == want[i].n);
        CHECK(p.seqs[0].num_replay_tokens == want[i].replay);
        CHECK(p.seqs[0].samples == want[i].samples);
        if (i == 0) {
            CHECK(p.stats.num_prefix_hit_tokens == 256);
            REQUIRE(p.kv_transfers.size() == 1);
            CHECK(p.kv_transfers[0].from == KvTier::kStore);
            CHECK(p.kv_transfers[0].num_tokens == 256);
            CHECK(p.seqs[0].block_ids.size() == 2);
        }
        second.commit(p, plain_outcome(p), 2.0);
    }
    CHECK_FALSE(second.has_unfinished());
    // Request 2 (same as request 0) now hits the second instance's HBM: no replay, no transfer.
    second.add_request(reqs[2]);
    const StepPlan p = second.schedule(3.0);
    REQUIRE(p.seqs.size() == 1);
    CHECK(p.seqs[0].num_computed_tokens == 256);
    CHECK(p.seqs[0].num_new_tokens == 44);
    CHECK(p.seqs[0].num_replay_tokens == 0);
    CHECK(p.stats.num_prefix_hit_tokens == 256);
    for (const auto& t : p.kv_transfers) CHECK(t.from == KvTier::kHbm);
    second.check_invariants();
}

TEST_CASE("Scheduler: requests that can never run are rejected with a reason", "[policies][scheduler]") {
    SchedulerConfig cfg = small_config(64, 10);
    cfg.max_model_len = 1000;
    Scheduler s(cfg);
    auto reqs = make_requests(5, 100, 10);
    reqs[0].prompt_token_ids.clear();
    reqs[0].prompt_len_tokens = 0;
    reqs[1].max_new_tokens = 0;
    reqs[2].max_new_tokens = 950;          // over max_model_len
    reqs[3].max_new_tokens = 80;           // 180 tokens = 12 blocks > 10
    reqs[4].prompt_block_hashes = {1, 2};  // 100 tokens have 6 full blocks
    for (auto& r : reqs) s.add_request(r);
    s.add_request(make_requests(1, 10, 1, 7)[0]);
    s.add_request(make_requests(1, 10, 1, 7)[0]);  // duplicate id
    const auto rej = s.take_rejected();
    REQUIRE(rej.size() == 6);
    const std::vector<std::string> words = {"empty",     "max_new_tokens",      "max_model_len",
                                            "KV blocks", "prompt_block_hashes", "duplicate"};
    for (std::size_t i = 0; i < rej.size(); ++i) {
        CHECK(rej[i].reason == FinishReason::kRejected);
        CHECK(rej[i].detail.find(words[i]) != std::string::npos);
    }
    CHECK(s.num_waiting() == 1);
    CHECK(s.schedule(0).stats.num_rejected == 6);
}

TEST_CASE("Scheduler: rejected drafts roll back the counter and the blocks they took",
          "[policies][scheduler]") {
    SchedulerConfig cfg = small_config(100, 8);
    cfg.num_speculative_tokens = 5;
    Scheduler s(cfg);
    s.add_request(make_requests(1, 12, 20)[0]);
    StepPlan p = s.schedule(0);
    REQUIRE(p.seqs[0].num_drafts_to_propose == 5);
    s.commit(p, plain_outcome(p), 0);  // drafts not reported: the 5 asked for are assumed proposed
    CHECK(s.num_computed_tokens(RequestId(0)) == 12);
    CHECK(s.num_blocks(RequestId(0)) == 1);
    p = s.schedule(0);
    REQUIRE(p.seqs.size() == 1);
    CHECK(p.seqs[0].num_computed_tokens == 12);
    CHECK(p.seqs[0].num_new_tokens == 6);
    CHECK(p.seqs[0].num_verify_tokens == 5);
    CHECK(s.num_blocks(RequestId(0)) == 2);  // positions 12..17 cross into block 1
    CHECK(s.pool().num_live_blocks() == 2);
    StepOutcome o = plain_outcome(p);  // nothing accepted: only the bonus token
    s.commit(p, o, 0);
    CHECK(s.num_computed_tokens(RequestId(0)) == 13);
    CHECK(s.num_blocks(RequestId(0)) == 1);
    CHECK(s.pool().num_live_blocks() == 1);
    // Next step: accept 3 of 5.
    p = s.schedule(0);
    CHECK(p.seqs[0].num_computed_tokens == 13);
    CHECK(p.seqs[0].num_verify_tokens == 5);
    CHECK(p.seqs[0].block_ids.size() == 1);
    o = plain_outcome(p);
    o.seqs[0].num_accepted_drafts = 3;
    o.seqs[0].num_sampled = 4;
    o.seqs[0].token_ids = {9, 9, 9, 9};
    const CommitResult r = s.commit(p, o, 0);
    CHECK(r.progress[0].num_new_output_tokens == 4);
    CHECK(s.num_computed_tokens(RequestId(0)) == 17);  // 12 prompt + 1 + 1 + 3 accepted
    CHECK(s.num_blocks(RequestId(0)) == 2);
    s.check_invariants();
}

TEST_CASE("Scheduler: a verify policy chooses per-sequence verify lengths from draft confidences",
          "[policies][scheduler]") {
    // Verifies drafts while the confidence stays >= 0.5.
    struct Threshold final : VerifyLengthPolicy {
        std::int32_t calls = 0;
        void choose(const VerifyContext& ctx, std::span<const DraftCandidate> c,
                    std::span<std::int32_t> out) override {
            ++calls;
            CHECK(ctx.num_running == 2);
            CHECK(ctx.num_decode_seqs == 2);
            for (std::size_t i = 0; i < c.size(); ++i) {
                std::int32_t k = 0;
                while (k < c[i].max_verify && k < static_cast<std::int32_t>(c[i].confidences.size()) &&
                       c[i].confidences[static_cast<std::size_t>(k)] >= 0.5f)
                    ++k;
                out[i] = k;
                CHECK(c[i].num_context_tokens == 8);
            }
        }
    } policy;
    SchedulerConfig cfg = small_config(100, 16);
    cfg.num_speculative_tokens = 4;
    Scheduler s(cfg, &policy);
    for (auto& r : make_requests(2, 8, 10)) s.add_request(r);
    StepPlan p = s.schedule(0);
    StepOutcome o = plain_outcome(p);
    o.seqs[0].draft_confidences = {0.9f, 0.8f, 0.2f, 0.9f};
    o.seqs[1].draft_confidences = {0.1f, 0.9f};  // proposed only 2
    s.commit(p, o, 0);
    p = s.schedule(0);
    REQUIRE(p.seqs.size() == 2);
    CHECK(policy.calls == 1);
    CHECK(p.seqs[0].num_verify_tokens == 2);
    CHECK(p.seqs[0].num_new_tokens == 3);
    CHECK(p.seqs[1].num_verify_tokens == 0);
    CHECK(p.seqs[1].num_new_tokens == 1);
}

TEST_CASE("Scheduler: draft rollback restores exact token and block counts (many seeds)",
          "[policies][scheduler]") {
    for (std::uint64_t seed = 0; seed < 50; ++seed) {
        Rng rng(seed);
        SchedulerConfig cfg = small_config(static_cast<std::int32_t>(rng.uniform_int(8, 200)), 200);
        cfg.num_speculative_tokens = static_cast<std::int32_t>(rng.uniform_int(1, 7));
        Scheduler s(cfg);
        std::map<std::int64_t, std::int32_t> prompt, outputs;
        for (int i = 0; i < 6; ++i) {
            Request r = make_requests(1, static_cast<std::int32_t>(rng.uniform_int(1, 60)),
                                      static_cast<std::int32_t>(rng.uniform_int(1, 40)), i)[0];
            prompt[i] = r.prompt_len();
            outputs[i] = 0;
            s.add_request(r);
        }
        while (s.has_unfinished()) {
            const StepPlan p = s.schedule(0);
            REQUIRE_FALSE(p.empty());
            StepOutcome o = plain_outcome(p);
            for (std::size_t i = 0; i < p.seqs.size(); ++i) {
                if (!p.seqs[i].samples) continue;
                const auto a = static_cast<std::int32_t>(rng.uniform_int(0, p.seqs[i].num_verify_tokens));
                o.seqs[i].num_accepted_drafts = a;
                o.seqs[i].num_sampled = a + 1;
                o.seqs[i].token_ids.assign(static_cast<std::size_t>(a + 1), 9);
                // Sometimes report fewer drafts (with confidences) than asked for.
                if (rng.bernoulli(0.3))
                    o.seqs[i].draft_confidences.assign(
                        static_cast<std::size_t>(rng.uniform_int(0, p.seqs[i].num_drafts_to_propose)), 0.5f);
            }
            const CommitResult res = s.commit(p, o, 0);
            for (const auto& pr : res.progress) {
                outputs[pr.request.value()] = pr.num_output_tokens;
                bool done = false;
                for (const auto& f : res.finished) done = done || f.request == pr.request;
                if (done || pr.num_new_output_tokens == 0) continue;
                // A sampled sequence has every known token but the last one in its cache, and exactly
                // the blocks those tokens need.
                const std::int32_t computed = s.num_computed_tokens(pr.request);
                REQUIRE(computed == prompt[pr.request.value()] + pr.num_output_tokens - 1);
                REQUIRE(s.num_blocks(pr.request) == (computed + 15) / 16);
            }
            s.check_invariants();
        }
        REQUIRE(s.pool().num_live_blocks() == 0);
    }
}

TEST_CASE("Scheduler: KV handed over by a prefill instance is not recomputed", "[policies][scheduler]") {
    Scheduler s(small_config(1000, 16));
    Request r = make_requests(1, 100, 3)[0];
    r.num_handed_over_tokens = 100;  // clamped to 99: the last prompt token is computed here
    s.add_request(r);
    const StepPlan p = s.schedule(0);
    REQUIRE(p.seqs.size() == 1);
    CHECK(p.seqs[0].num_computed_tokens == 99);
    CHECK(p.seqs[0].num_new_tokens == 1);
    CHECK(p.seqs[0].samples);
    CHECK(p.seqs[0].block_ids.size() == 7);  // the handed-over KV needs its blocks
    s.commit(p, plain_outcome(p), 0);
    s.check_invariants();
}

TEST_CASE("Scheduler: priority classes first, FCFS inside a class, sequence cap respected",
          "[policies][scheduler]") {
    SchedulerConfig cfg = small_config(1000, 64);
    cfg.max_num_seqs = 2;
    Scheduler s(cfg);
    auto reqs = make_requests(3, 10, 1);
    reqs[2].priority = -1;  // most urgent, arrived last
    for (auto& r : reqs) s.add_request(r);
    const StepPlan plan = s.schedule(0);
    REQUIRE(plan.seqs.size() == 2);
    CHECK(plan.seqs[0].request.value() == 2);
    CHECK(plan.seqs[1].request.value() == 0);
    CHECK(plan.stats.num_blocked_by_seq_cap == 1);
    CHECK(plan.stats.num_running == 2);
    CHECK(plan.stats.num_waiting == 1);
}

TEST_CASE("Scheduler: drafts are verified only as far as free blocks allow; nobody is preempted for them",
          "[policies][scheduler]") {
    SchedulerConfig cfg = small_config(100, 2);
    cfg.num_speculative_tokens = 5;
    Scheduler s(cfg);
    s.add_request(make_requests(1, 14, 18, 0)[0]);
    s.add_request(make_requests(1, 10, 20, 1)[0]);
    StepPlan p = s.schedule(0);
    REQUIRE(p.seqs.size() == 2);  // both prompts fit in one block each: the pool is full
    s.commit(p, plain_outcome(p), 0);
    p = s.schedule(0);
    REQUIRE(p.seqs.size() == 2);
    CHECK(p.preempted.empty());
    // Request 0 sits at position 14: only positions 14 and 15 fit in its block (1 draft verified).
    CHECK(p.seqs[0].num_verify_tokens == 1);
    CHECK(p.seqs[1].num_verify_tokens == 5);  // positions 10..15
    CHECK(p.num_tokens() == 2 + 6);
}
