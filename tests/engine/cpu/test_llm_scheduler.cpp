// The offline LLM on the full Scheduler: greedy output with MTP speculation (1 and 3 drafts; fixed,
// threshold and dynamic verification) equals plain greedy decoding on the goldens, KV pressure
// (preemption by recompute) does not change tokens, and the CPU path keeps the prefix cache off.
#include <catch2/catch.hpp>

#include "engine/core/clock.h"
#include "engine/core/instance.h"
#include "engine/cpu/llm.h"
#include "engine/model/weights.h"
#include "policies/kv/block_pool.h"
#include "policies/scheduler/scheduler.h"
#include "tests/engine/cpu/v4_golden_support.h"

using namespace deepinfer;
using deepinfer::testing::GoldenTensors;

namespace {

/// The golden model with random MTP weights (the tiny goldens ship none).
std::shared_ptr<const cpu::V4Model> golden_with_mtp(const std::string& name) {
    auto base = deepinfer::testing::load_v4_golden_model(name);
    auto model = std::make_shared<cpu::V4Model>(*base);
    model->set_mtp(model::make_random_mtp_weights(model->config(), 17));
    return model;
}

std::string h200_profile() { return std::string(DEEPINFER_SOURCE_DIR) + "/profiles/h200-roofline"; }

}  // namespace

TEST_CASE("LLM: full Scheduler with MTP speculation yields exactly the plain greedy tokens on the goldens",
          "[engine][cpu][v4][llm][integ]") {
    for (const std::string name : {"default", "seed7"}) {
        auto model = golden_with_mtp(name);
        const GoldenTensors g(name);
        const std::vector<std::int32_t> ids = g.ints("input_ids");
        const std::vector<std::int32_t> ref = g.ints("decode.tokens");
        const std::vector<std::int32_t> other = {5, 9, 77, 300, 12, 8, 8, 41, 100, 3, 3};
        const cpu::SamplingParams sp{.temperature = 0.0, .max_tokens = static_cast<std::int32_t>(ref.size())};
        // Plain greedy through the same scheduler, no speculation.
        cpu::LLM plain(model, cpu::LLMConfig{.max_num_batched_tokens = 24});
        const auto base = plain.generate({ids, other}, sp);
        REQUIRE(base[0].token_ids == ref);
        for (const std::int32_t drafts : {1, 3}) {
            for (const VerifyPolicyKind kind :
                 {VerifyPolicyKind::kFixed, VerifyPolicyKind::kThreshold, VerifyPolicyKind::kDynamic}) {
                INFO("golden " << name << ", " << drafts << " drafts, verify " << deepinfer::name(kind));
                cpu::LLMConfig c{.max_num_batched_tokens = 24, .num_speculative_tokens = drafts};
                c.verify_policy = kind;
                c.verify_threshold = 0.0;  // verify every draft with a non-zero confidence
                if (kind == VerifyPolicyKind::kDynamic) c.cost_profile_dir = h200_profile();
                cpu::LLM llm(model, c);
                CHECK(llm.verify_policy() == kind);
                CHECK(llm.notes().empty());
                const auto outs = llm.generate({ids, other}, sp);
                CHECK(outs[0].token_ids == ref);
                CHECK(outs[1].token_ids == base[1].token_ids);
                CHECK(outs[0].finish_reason == "length");
                CHECK(outs[0].num_drafts_proposed > 0);
                // On the H200 roofline the tiny model's steps sit on the latency floor: every draft
                // with a non-zero confidence is free to verify, so dynamic verifies as fixed does.
                CHECK(outs[0].num_drafts_verified > 0);
                CHECK(outs[0].num_drafts_accepted <= outs[0].num_drafts_verified);
            }
        }
    }
}

TEST_CASE("LLM: dynamic verification without a cost model falls back to fixed and says so",
          "[engine][cpu][v4][llm][integ]") {
    auto model = golden_with_mtp("default");
    cpu::LLMConfig c{.num_speculative_tokens = 2};
    c.verify_policy = VerifyPolicyKind::kDynamic;
    cpu::LLM llm(model, c);
    CHECK(llm.verify_policy() == VerifyPolicyKind::kFixed);
    REQUIRE(llm.notes().size() == 1);
    CHECK_THAT(llm.notes()[0], Catch::Contains("dynamic needs a cost model"));
    c.num_speculative_tokens = 8;
    CHECK_THROWS_WITH(cpu::LLM(model, c), Catch::Contains("/num_speculative_tokens"));
    c.num_speculative_tokens = 2;
    c.cost_profile_dir = "/nonexistent/profile";
    CHECK_THROWS(cpu::LLM(model, c));
}

TEST_CASE("LLM: a KV pool too small for every sequence preempts by recompute and keeps the greedy tokens",
          "[engine][cpu][v4][llm][integ]") {
    auto model = golden_with_mtp("default");
    const GoldenTensors g("default");
    std::vector<std::int32_t> prompt = g.ints("input_ids");  // 50 tokens -> 120
    while (prompt.size() < 120) prompt.push_back(prompt[prompt.size() - 50]);
    std::vector<std::int32_t> prompt2 = prompt;
    prompt2[3] = (prompt2[3] + 1) % 512;
    const cpu::SamplingParams sp{.temperature = 0.0, .max_tokens = 20};  // both cross into block 2
    cpu::LLM roomy(model, cpu::LLMConfig{.max_num_batched_tokens = 64});
    const auto ref = roomy.generate({prompt, prompt2}, sp);

    for (const std::int32_t drafts : {0, 3}) {
        INFO(drafts << " drafts");
        // Room for two sequence states and three 128-token blocks: the second sequence to need its
        // second block finds none and is preempted.
        SchedulerConfig sc;
        sc.max_num_batched_tokens = 64;
        sc.num_speculative_tokens = drafts;
        sc.prefix_cache.enabled = false;
        sc.kv.shape = cpu::kv_model_shape_of(model->config(), drafts > 0 ? 1 : 0);
        const KvBlockPool probe(sc.kv);
        sc.kv.capacity_bytes = 2 * probe.fixed_bytes_per_seq() + 3 * probe.bytes_per_block() + 1;
        Scheduler sched(sc);
        cpu::CpuExecutor exec(model, cpu::CpuExecutorConfig{.max_draft_tokens = drafts});
        engine::SteadyClock clock;
        std::int64_t preempted = 0;
        engine::InstanceHooks hooks;
        hooks.on_launch = [&](const StepPlan& p, double) {
            preempted += static_cast<std::int64_t>(p.preempted.size());
            sched.check_invariants();
        };
        engine::Instance inst("t", exec, clock, sched, nullptr, {}, hooks);
        const std::vector<std::vector<std::int32_t>> prompts = {prompt, prompt2};
        for (std::size_t i = 0; i < prompts.size(); ++i) {
            const RequestId id(static_cast<std::int64_t>(i));
            exec.add_sequence(id, prompts[i], sp);
            inst.add_request(Request{.id = id,
                                     .prompt_token_ids = prompts[i],
                                     .prompt_len_tokens = static_cast<std::int32_t>(prompts[i].size()),
                                     .max_new_tokens = sp.max_tokens});
        }
        inst.run_until_idle();
        CHECK(preempted > 0);
        for (std::size_t i = 0; i < prompts.size(); ++i) {
            const cpu::SequenceRecord r = exec.take_record(RequestId(static_cast<std::int64_t>(i)));
            std::vector<std::int32_t> out = r.outputs;
            out.resize(std::min(out.size(), static_cast<std::size_t>(sp.max_tokens)));
            CHECK(out == ref[i].token_ids);
        }
    }
}

TEST_CASE("LLM: two requests sharing a prefix get the tokens each gets alone (prefix cache off on the CPU)",
          "[engine][cpu][v4][llm][integ]") {
    auto model = golden_with_mtp("seed7");
    const GoldenTensors g("seed7");
    std::vector<std::int32_t> shared = g.ints("input_ids");  // 70 tokens -> 200: a full shared block
    while (shared.size() < 200) shared.push_back(shared[shared.size() - 70]);
    std::vector<std::int32_t> a = shared, b = shared;
    a.push_back(11);
    b.push_back(12);
    const cpu::SamplingParams sp{.temperature = 0.0, .max_tokens = 8};
    cpu::LLM llm(model, cpu::LLMConfig{.max_num_batched_tokens = 256});
    const auto together = llm.generate({a, b}, sp);
    CHECK(together[0].token_ids == llm.generate({a}, sp)[0].token_ids);
    CHECK(together[1].token_ids == llm.generate({b}, sp)[0].token_ids);
    // A scheduler with the prefix cache on would start the second request past its first block; the
    // CPU executor refuses such a plan with a one-line error instead of computing from a wrong cache.
    cpu::LLMConfig c{.max_num_batched_tokens = 256, .max_num_seqs = 1};
    c.make_scheduler = [&](const cpu::LLMConfig&) {
        SchedulerConfig sc;
        sc.max_num_batched_tokens = 256;
        sc.max_num_seqs = 1;
        sc.kv.shape = cpu::kv_model_shape_of(model->config(), 0);
        sc.kv.capacity_bytes = 1 << 30;
        return std::make_unique<Scheduler>(sc);
    };
    cpu::LLM cached(model, c);
    CHECK_THROWS_WITH(cached.generate({a, b}, sp), Catch::Contains("/prefix_cache/enabled"));
}
