// `deepinfer generate` end to end: greedy ids as JSON equal HF's greedy decode of the golden
// prompt, the logits dump matches HF's logits, and bad input fails with one line.
#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/engine/cpu/v4_golden_support.h"
#include "tests/support/cli_runner.h"

using namespace deepinfer;

namespace {

// NOTE: strings are built with ostringstream: gcc 12 reports a -Wrestrict false positive for
// chains of std::string operator+.
template <typename... Parts>
std::string cat(const Parts&... parts) {
    std::ostringstream os;
    (os << ... << parts);
    return os.str();
}
}  // namespace

TEST_CASE("deepinfer generate: greedy ids and the logits dump match HF on the golden prompt",
          "[engine][cpu][v4][cli]") {
    const deepinfer::testing::GoldenTensors g("hc2w8");
    const std::vector<std::int32_t> ids = g.ints("input_ids");
    const std::vector<std::int32_t> ref = g.ints("decode.tokens");
    std::string list;
    for (std::int32_t t : ids) list += cat(list.empty() ? "" : ",", t);
    const std::string dump =
        (std::filesystem::temp_directory_path() / "deepinfer_cli_dump.safetensors").string();
    const testing::CliResult r = testing::run_deepinfer(cat(
        "generate --model ", deepinfer::testing::v4_golden_dir("hc2w8"), " --prompt-ids ", list,
        " --max-tokens ", ref.size(), " --temperature 0 --max-num-batched-tokens 16 --dump-logits ", dump));
    INFO(r.output);
    REQUIRE(r.status == 0);
    const nlohmann::json j = nlohmann::json::parse(r.output);
    CHECK(j.at("token_ids").get<std::vector<std::int32_t>>() == ref);
    CHECK(j.at("finish_reason") == "length");
    const model::SafetensorsFile f(dump);
    const model::TensorInfo* prompt = f.find("prompt_logits");
    const model::TensorInfo* steps = f.find("step_logits");
    REQUIRE(prompt != nullptr);
    REQUIRE(steps != nullptr);
    CHECK(prompt->shape == std::vector<std::int64_t>{static_cast<std::int64_t>(ids.size()), 512});
    CHECK(steps->shape == std::vector<std::int64_t>{static_cast<std::int64_t>(ref.size()), 512});
    std::vector<float> p(static_cast<std::size_t>(prompt->numel())),
        s(static_cast<std::size_t>(steps->numel()));
    model::convert_to_float(prompt->dtype, f.data(*prompt), p);
    model::convert_to_float(steps->dtype, f.data(*steps), s);
    const std::vector<float> ref_p = g.floats("logits"), ref_s = g.floats("decode.step_logits");
    CHECK(deepinfer::testing::rel_max_diff(p.data(), ref_p.data(), p.size()) < 1e-5);
    CHECK(deepinfer::testing::rel_max_diff(s.data(), ref_s.data(), s.size()) < 1e-5);
}

TEST_CASE("deepinfer generate: bad arguments and checkpoints fail with one line and exit 1",
          "[engine][cpu][v4][cli]") {
    const std::string model = deepinfer::testing::v4_golden_dir("hc2w8");
    for (const std::string& args : std::vector<std::string>{
             cat("generate --model ", model, " --prompt-ids 1,x"),
             cat("generate --model ", model, " --prompt-ids 1,9999"),
             "generate --model /nonexistent/dir --prompt-ids 1", "generate --prompt-ids 1"}) {
        const testing::CliResult r = testing::run_deepinfer(args);
        INFO(args << " -> " << r.output);
        CHECK(r.status == 1);
        CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
        CHECK(r.output.find("error") != std::string::npos);
    }
}
