// The CPU reference executor reproduces Hugging Face's fp32 golden outputs for tiny V4 models:
// full-prompt logits, per-stage intermediates, chunked prefill, cached decode and greedy tokens.
#include <catch2/catch.hpp>
#include <map>

#include "tests/engine/cpu/v4_golden_support.h"

using namespace deepinfer;
using deepinfer::testing::GoldenTensors;
using deepinfer::testing::rel_max_diff;

namespace {

constexpr double kTol = 1e-5;

/// Indexer picks and router choices: discrete stages compared exactly, not within a tolerance.
bool is_discrete_stage(const std::string& key) {
    return key.find("indexer_topk") != std::string::npos || key.find("router_indices") != std::string::npos;
}

struct PromptRun {
    cpu::ForwardOutput out;
    std::map<std::string, cpu::RowMat> stages;
};

/// The whole prompt through a fresh cache, with every stage's intermediate recorded.
PromptRun run_prompt_with_stages(const cpu::V4Model& model, const std::vector<std::int32_t>& ids) {
    PromptRun run;
    const cpu::StageSink sink = [&](const std::string& k, const cpu::RowMat& v) { run.stages[k] = v; };
    cpu::SeqCache cache = model.new_cache(1);
    run.out = model.forward(cache, ids, /*all_logits=*/true, &sink);
    return run;
}

}  // namespace

TEST_CASE("V4 CPU reference: full-prompt logits match HF fp32 within 1e-5 relative",
          "[engine][cpu][model][v4]") {
    for (const std::string& name : deepinfer::testing::v4_golden_names()) {
        INFO("golden " << name);
        auto model = deepinfer::testing::load_v4_golden_model(name);
        const GoldenTensors g(name);
        const PromptRun run = run_prompt_with_stages(*model, g.ints("input_ids"));
        const cpu::ForwardOutput& out = run.out;
        // Per-stage report first, to localise a mismatch.
        for (const auto& [key, value] : run.stages) {
            if (!g.has(key) || is_discrete_stage(key)) continue;
            const std::vector<float> ref = g.floats(key);
            if (ref.size() != static_cast<std::size_t>(value.size())) {
                FAIL_CHECK("stage " << key << " has " << value.size() << " values, golden " << ref.size());
                continue;
            }
            const double d = rel_max_diff(value.data(), ref.data(), ref.size());
            INFO("stage " << key << " rel diff " << d);
            CHECK(d < kTol);
        }
        const std::vector<float> ref = g.floats("logits");
        REQUIRE(static_cast<std::size_t>(out.logits.size()) == ref.size());
        const double d = rel_max_diff(out.logits.data(), ref.data(), ref.size());
        WARN(name << ": full-prompt logits rel diff " << d);
        CHECK(d < kTol);
    }
}

namespace {

std::int32_t argmax_row(const cpu::RowMat& logits, Eigen::Index row) {
    Eigen::Index best = 0;
    for (Eigen::Index j = 1; j < logits.cols(); ++j)
        if (logits(row, j) > logits(row, best)) best = j;
    return static_cast<std::int32_t>(best);
}

// Runs `ids` through a fresh cache in chunks of the given sizes (the last chunk takes the rest);
// returns the stacked logits.
cpu::RowMat chunked_logits(const cpu::V4Model& model, const std::vector<std::int32_t>& ids,
                           std::vector<std::size_t> sizes) {
    cpu::SeqCache cache = model.new_cache(1);
    cpu::RowMat all(static_cast<Eigen::Index>(ids.size()), model.config().vocab_size);
    std::size_t pos = 0, i = 0;
    while (pos < ids.size()) {
        const std::size_t n = std::min(i < sizes.size() ? sizes[i] : ids.size(), ids.size() - pos);
        const auto out = model.forward(cache, std::span<const std::int32_t>(ids).subspan(pos, n), true);
        all.middleRows(static_cast<Eigen::Index>(pos), static_cast<Eigen::Index>(n)) = out.logits;
        pos += n;
        ++i;
    }
    return all;
}

}  // namespace

TEST_CASE("V4 CPU reference: indexer top-k and router choices equal HF's exactly",
          "[engine][cpu][model][v4]") {
    for (const std::string& name : deepinfer::testing::v4_golden_names()) {
        INFO("golden " << name);
        auto model = deepinfer::testing::load_v4_golden_model(name);
        const GoldenTensors g(name);
        const PromptRun run = run_prompt_with_stages(*model, g.ints("input_ids"));
        int compared = 0;
        for (const auto& [key, value] : run.stages) {
            if (!is_discrete_stage(key) || !g.has(key)) continue;
            const std::vector<float> ref = g.floats(key);
            REQUIRE(ref.size() == static_cast<std::size_t>(value.size()));
            for (std::size_t i = 0; i < ref.size(); ++i) {
                INFO(key << "[" << i << "]");
                REQUIRE(value.data()[i] == ref[i]);
            }
            ++compared;
        }
        CHECK(compared >= 2);
    }
}

TEST_CASE("V4 CPU reference: chunked prefill of any chunking matches HF within 1e-5",
          "[engine][cpu][model][v4]") {
    for (const std::string& name : deepinfer::testing::v4_golden_names()) {
        INFO("golden " << name);
        auto model = deepinfer::testing::load_v4_golden_model(name);
        const GoldenTensors g(name);
        const std::vector<std::int32_t> ids = g.ints("input_ids");
        const std::vector<float> full = g.floats("logits");
        const std::vector<float> hf_chunked = g.floats("chunked.logits");
        // HF's own chunking (21 / 7 / rest), then token-by-token and a few odd chunkings.
        const cpu::RowMat ours = chunked_logits(*model, ids, {21, 7});
        CHECK(rel_max_diff(ours.data(), hf_chunked.data(), hf_chunked.size()) < kTol);
        for (const std::vector<std::size_t>& sizes :
             {std::vector<std::size_t>(ids.size(), 1), std::vector<std::size_t>{3, 5, 7, 11},
              std::vector<std::size_t>{16, 1, 2, 31}}) {
            const cpu::RowMat c = chunked_logits(*model, ids, sizes);
            const double d = rel_max_diff(c.data(), full.data(), full.size());
            INFO("first chunk " << sizes.front() << ": rel diff " << d);
            CHECK(d < kTol);
        }
    }
}

TEST_CASE("V4 CPU reference: cached greedy decode reproduces HF's step logits and tokens",
          "[engine][cpu][model][v4]") {
    for (const std::string& name : deepinfer::testing::v4_golden_names()) {
        INFO("golden " << name);
        auto model = deepinfer::testing::load_v4_golden_model(name);
        const GoldenTensors g(name);
        const std::vector<std::int32_t> ids = g.ints("input_ids");
        const std::vector<std::int32_t> ref_tokens = g.ints("decode.tokens");
        const std::vector<float> ref_steps = g.floats("decode.step_logits");
        const auto V = static_cast<std::size_t>(model->config().vocab_size);
        cpu::SeqCache cache = model->new_cache(1);
        cpu::ForwardOutput out = model->forward(cache, ids, false);
        std::vector<std::int32_t> tokens;
        double worst = 0.0;
        for (std::size_t j = 0; j < ref_tokens.size(); ++j) {
            const double d = rel_max_diff(out.logits.data(), ref_steps.data() + j * V, V);
            worst = std::max(worst, d);
            INFO("step " << j << " rel diff " << d);
            CHECK(d < kTol);
            tokens.push_back(argmax_row(out.logits, 0));
            if (j + 1 < ref_tokens.size())
                out = model->forward(cache, std::span<const std::int32_t>(&tokens.back(), 1), false);
        }
        WARN(name << ": worst decode-step rel diff " << worst);
        CHECK(tokens == ref_tokens);
        const std::vector<std::int32_t> gen = g.ints("generate.tokens");
        CHECK(std::vector<std::int32_t>(gen.begin() + static_cast<std::ptrdiff_t>(ids.size()), gen.end()) ==
              tokens);
    }
}
