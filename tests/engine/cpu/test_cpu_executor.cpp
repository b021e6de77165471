// The CPU executor and the offline LLM API: greedy generation through the Instance loop equals
// HF's greedy decode, sampling is seeded per sequence, stops work, cache rollback is exact, and
// speculative verification (MTP or forced drafts) never changes greedy output.
#include <catch2/catch.hpp>

#include "engine/cpu/llm.h"
#include "tests/engine/cpu/v4_golden_support.h"

using namespace deepinfer;
using deepinfer::testing::GoldenTensors;
using deepinfer::testing::rel_max_diff;

TEST_CASE("LLM: greedy generate through the scheduler equals HF greedy decode, logits within 1e-5",
          "[engine][cpu][v4][llm]") {
    for (const std::string& name : deepinfer::testing::v4_golden_names()) {
        INFO("golden " << name);
        auto model = deepinfer::testing::load_v4_golden_model(name);
        const GoldenTensors g(name);
        const std::vector<std::int32_t> ids = g.ints("input_ids");
        const std::vector<std::int32_t> ref = g.ints("decode.tokens");
        // A small token budget forces chunked prefill (chunks of 13) inside the Instance loop.
        cpu::LLM llm(model, cpu::LLMConfig{.max_num_batched_tokens = 13});
        cpu::SamplingParams sp{
            .temperature = 0.0, .max_tokens = static_cast<std::int32_t>(ref.size()), .return_logits = true};
        const auto outs = llm.generate({ids, {1, 2, 3}, ids}, sp);
        REQUIRE(outs.size() == 3);
        CHECK(outs[0].token_ids == ref);
        CHECK(outs[2].token_ids == ref);  // batch-invariant: same prompt, same output
        CHECK(outs[0].finish_reason == "length");
        const std::vector<float> logits = g.floats("logits");
        const std::vector<float> steps = g.floats("decode.step_logits");
        REQUIRE(outs[0].prompt_logits.size() == logits.size());
        REQUIRE(outs[0].step_logits.size() == steps.size());
        CHECK(rel_max_diff(outs[0].prompt_logits.data(), logits.data(), logits.size()) < 1e-5);
        CHECK(rel_max_diff(outs[0].step_logits.data(), steps.data(), steps.size()) < 1e-5);
    }
}

TEST_CASE("LLM: seeded sampling is reproducible and per-sequence; stop ids end a request",
          "[engine][cpu][v4][llm]") {
    auto model = deepinfer::testing::load_v4_golden_model("hc2w8");
    cpu::LLM llm(model, cpu::LLMConfig{.max_num_batched_tokens = 32});
    const std::vector<std::int32_t> prompt = {5, 9, 77, 300, 12, 8, 8, 41};
    cpu::SamplingParams sp{.temperature = 0.9, .top_p = 0.95, .top_k = 50, .max_tokens = 12, .seed = 1234};
    const auto a = llm.generate({prompt}, sp);
    const auto b = llm.generate({{3, 3, 3}, prompt, {7}}, sp);
    CHECK(a[0].token_ids.size() == 12);
    CHECK(a[0].token_ids == b[1].token_ids);
    sp.seed = 99;
    CHECK(llm.generate({prompt}, sp)[0].token_ids != a[0].token_ids);
    // Stop at the third token of the seeded run.
    sp.seed = 1234;
    sp.stop_token_ids = {a[0].token_ids[2]};
    const auto s = llm.generate({prompt}, sp);
    CHECK(s[0].finish_reason == "stop");
    REQUIRE(!s[0].token_ids.empty());
    CHECK(s[0].token_ids.back() == a[0].token_ids[2]);
    CHECK(s[0].token_ids.size() <= 3);
}

TEST_CASE("SeqCache: rolling back and recomputing gives bit-identical logits across window boundaries",
          "[engine][cpu][v4]") {
    auto model = deepinfer::testing::load_v4_golden_model("default");  // window 16, CSA 4, HCA 16
    const GoldenTensors g("default");
    const std::vector<std::int32_t> ids = g.ints("input_ids");
    for (std::int64_t rollback : {1, 2, 3, 5}) {
        for (std::int64_t cut : {12, 15, 16, 17, 31, 32, 33, 47}) {
            INFO("cut " << cut << " rollback " << rollback);
            cpu::SeqCache straight = model->new_cache(rollback);
            cpu::SeqCache rolled = model->new_cache(rollback);
            const std::span<const std::int32_t> all(ids);
            model->forward(straight, all.first(static_cast<std::size_t>(cut)), false);
            const auto ref = model->forward(straight, all.subspan(static_cast<std::size_t>(cut), 3), true);
            // Run past the cut with other tokens, roll back, then run the real tokens.
            model->forward(rolled, all.first(static_cast<std::size_t>(cut)), false);
            std::vector<std::int32_t> junk(static_cast<std::size_t>(rollback), 7);
            model->forward(rolled, junk, false);
            rolled.truncate(cut);
            const auto again = model->forward(rolled, all.subspan(static_cast<std::size_t>(cut), 3), true);
            CHECK(again.logits == ref.logits);
            CHECK(rolled.length == straight.length);
        }
    }
}

namespace {

struct SpecResult {
    std::vector<std::int32_t> tokens;
    std::int64_t proposed = 0;
    std::int64_t accepted = 0;
    std::vector<float> step_logits;
};

// Drives the executor with hand-made speculative plans: prefill, then verify steps of
// 1 + k tokens. `forced(step, k)` may replace the drafts to verify (nullopt = keep the MTP drafts).
SpecResult run_speculative(
    std::shared_ptr<const cpu::V4Model> model, const std::vector<std::int32_t>& prompt,
    std::int32_t num_tokens, std::int32_t num_drafts,
    const std::function<std::optional<std::vector<std::int32_t>>(std::size_t)>& forced) {
    cpu::CpuExecutor ex(model, cpu::CpuExecutorConfig{.max_draft_tokens = num_drafts});
    const RequestId id(1);
    ex.add_sequence(id, prompt, cpu::SamplingParams{.temperature = 0.0, .return_logits = true});
    std::int32_t computed = 0;
    std::int32_t new_tokens = static_cast<std::int32_t>(prompt.size());
    std::int32_t verify = 0;
    SpecResult r;
    for (std::int64_t step = 0; static_cast<std::int32_t>(r.tokens.size()) < num_tokens; ++step) {
        StepPlan plan;
        plan.step_id = step;
        plan.seqs.push_back(SeqSchedule{.request = id,
                                        .num_computed_tokens = computed,
                                        .num_new_tokens = new_tokens,
                                        .num_verify_tokens = verify,
                                        .num_drafts_to_propose = num_drafts,
                                        .samples = true});
        const StepOutcome out = ex.wait(ex.launch(plan));
        const SeqOutcome& o = out.seqs.at(0);
        REQUIRE(o.num_sampled == o.num_accepted_drafts + 1);
        r.tokens.insert(r.tokens.end(), o.token_ids.begin(), o.token_ids.end());
        computed += new_tokens - verify + o.num_accepted_drafts;
        std::vector<std::int32_t> drafts = o.draft_token_ids;
        if (auto f = forced(r.tokens.size())) {
            drafts = *f;
            ex.set_drafts(id, drafts);
        }
        verify = static_cast<std::int32_t>(drafts.size());
        new_tokens = 1 + verify;
    }
    const cpu::SequenceRecord& rec = ex.record(id);
    r.proposed = rec.num_drafts_proposed;
    r.accepted = rec.num_drafts_accepted;
    r.step_logits = rec.step_logits;
    r.tokens.resize(static_cast<std::size_t>(num_tokens));
    return r;
}

}  // namespace

TEST_CASE("MTP drafting: verification with rollback yields exactly the greedy tokens",
          "[engine][cpu][v4][mtp]") {
    for (const std::string& name : deepinfer::testing::v4_golden_names()) {
        INFO("golden " << name);
        auto base = deepinfer::testing::load_v4_golden_model(name);
        auto model = std::make_shared<cpu::V4Model>(*base);
        model->set_mtp(model::make_random_mtp_weights(model->config(), 17));  // the tiny golden ships no MTP
        const GoldenTensors g(name);
        const std::vector<std::int32_t> ids = g.ints("input_ids");
        const std::vector<std::int32_t> ref = g.ints("decode.tokens");
        const auto n = static_cast<std::int32_t>(ref.size());
        for (std::int32_t drafts : {1, 3}) {
            const SpecResult r =
                run_speculative(model, ids, n, drafts, [](std::size_t) { return std::nullopt; });
            CHECK(r.tokens == ref);
            CHECK(r.proposed > 0);
        }
        // Forced drafts: the next 3 greedy tokens with the last one wrong -> 2 accepted, 1 rolled back
        // per step, crossing compressor window boundaries.
        const auto forced = [&](std::size_t produced) -> std::optional<std::vector<std::int32_t>> {
            std::vector<std::int32_t> d;
            for (std::size_t j = produced; j < produced + 3 && j < ref.size(); ++j) d.push_back(ref[j]);
            if (!d.empty()) d.back() = (d.back() + 1) % 512;
            return d;
        };
        const SpecResult r = run_speculative(model, ids, n, 3, forced);
        CHECK(r.tokens == ref);
        CHECK(r.accepted > 0);
        const std::vector<float> steps = g.floats("decode.step_logits");
        REQUIRE(r.step_logits.size() >= steps.size());
        CHECK(rel_max_diff(r.step_logits.data(), steps.data(), steps.size()) < 1e-5);
    }
}
