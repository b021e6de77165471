// ModelConfig: HF and hub-style configs of the goldens parse to the same model; the V4-Flash hub
// config parses to its 43-layer schedule; inconsistent configs fail naming the file and field.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "engine/cpu/v4_model.h"
#include "engine/model/config.h"

using namespace deepinfer;
using namespace deepinfer::model;

namespace {

std::string golden(const std::string& name, const std::string& file) {
    return std::string(DEEPINFER_SOURCE_DIR) + "/tests/golden/v4/" + name + "/" + file;
}

nlohmann::json load_json(const std::string& path) { return JsonReader::parse_file(path).json(); }

ModelConfig parse(const nlohmann::json& j) {
    return model_config_from_json(JsonReader::from_json(j, "bad.json"));
}

// Expects a ConfigError whose one-line message names bad.json and `field`.
void expect_error(const nlohmann::json& j, const std::string& field) {
    INFO("field " << field);
    try {
        parse(j);
        FAIL("no error");
    } catch (const ConfigError& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK(what.find("bad.json") != std::string::npos);
        CHECK(what.find(field) != std::string::npos);
        CHECK(what.find('\n') == std::string::npos);
    }
}

}  // namespace

TEST_CASE("ModelConfig: HF config.json and hub-style config.upstream.json describe the same model",
          "[engine][model]") {
    for (const char* name : {"default", "seed7", "hc2w8"}) {
        INFO(name);
        const ModelConfig hf = load_model_config(golden(name, "config.json"));
        const ModelConfig hub = load_model_config(golden(name, "config.upstream.json"));
        CHECK(hf.layer_types == hub.layer_types);
        CHECK(hf.compress_ratios == hub.compress_ratios);
        CHECK(hf.mlp_types == hub.mlp_types);
        CHECK(hf.rope_head_dim == hub.rope_head_dim);
        CHECK(hf.rope_compress.yarn);
        CHECK(hub.rope_compress.yarn);
        CHECK(hf.rope_compress.factor == hub.rope_compress.factor);
        CHECK(hf.rope_compress.theta == hub.rope_compress.theta);
        CHECK(!hf.rope_main.yarn);
        CHECK(hf.hc_mult == hub.hc_mult);
        CHECK(hf.sliding_window == hub.sliding_window);
    }
    const ModelConfig d = load_model_config(golden("default", "config.json"));
    CHECK(d.layer_types == std::vector<AttentionType>{AttentionType::kSliding, AttentionType::kCsa,
                                                      AttentionType::kHca, AttentionType::kCsa,
                                                      AttentionType::kHca, AttentionType::kSliding});
    CHECK(d.compress_ratios == std::vector<std::int64_t>{0, 4, 16, 4, 16, 0});
    CHECK(d.rope_head_dim == 16);
    CHECK(d.swiglu_limit == 1.5);
}

TEST_CASE(
    "ModelConfig: the V4-Flash hub config gives 43 layers SWA,SWA,(CSA,HCA)x20,CSA and YaRN on compress",
    "[engine][model]") {
    nlohmann::json j = load_json(golden("default", "config.upstream.json"));
    j.update(nlohmann::json{
        {"vocab_size", 129280},
        {"hidden_size", 4096},
        {"num_hidden_layers", 43},
        {"num_attention_heads", 64},
        {"head_dim", 512},
        {"qk_rope_head_dim", 64},
        {"q_lora_rank", 1024},
        {"o_groups", 8},
        {"o_lora_rank", 1024},
        {"sliding_window", 128},
        {"index_n_heads", 64},
        {"index_head_dim", 128},
        {"index_topk", 512},
        {"n_routed_experts", 256},
        {"num_experts_per_tok", 6},
        {"moe_intermediate_size", 2048},
        {"num_hash_layers", 3},
        {"swiglu_limit", 10.0},
        {"eos_token_id", 1},
        {"expert_dtype", "fp4"},
        {"topk_method", "noaux_tc"},
        {"torch_dtype", "bfloat16"},
        {"quantization_config", {{"quant_method", "fp8"}, {"weight_block_size", {128, 128}}}}});
    std::vector<int> ratios = {0, 0};
    for (int i = 0; i < 20; ++i) ratios.insert(ratios.end(), {4, 128});
    ratios.insert(ratios.end(), {4, 0});
    j["compress_ratios"] = ratios;
    const ModelConfig c = parse(j);
    REQUIRE(c.num_layers == 43);
    CHECK(c.layer_types[0] == AttentionType::kSliding);
    CHECK(c.layer_types[1] == AttentionType::kSliding);
    for (int i = 2; i < 43; ++i)
        CHECK(c.layer_types[static_cast<std::size_t>(i)] ==
              (i % 2 == 0 ? AttentionType::kCsa : AttentionType::kHca));
    CHECK(c.mlp_types[2] == MlpType::kHash);
    CHECK(c.mlp_types[3] == MlpType::kScore);
    CHECK(c.eos_token_ids == std::vector<std::int32_t>{1});
    // YaRN table of V4_SPEC §3: pairs 0..15 unchanged, 25..31 divided by 16, pair 24 = 1.953125e-05.
    const cpu::RopeTable rope(c.rope_compress, c.rope_head_dim);
    const auto& inv = rope.inv_freq();
    REQUIRE(inv.size() == 32);
    CHECK(inv[24] == Approx(1.953125e-05).epsilon(1e-6));
    CHECK(inv[0] == 1.0f);
    CHECK(inv[31] == Approx(std::pow(160000.0, -62.0 / 64.0) / 16.0).epsilon(1e-6));
}

TEST_CASE("ModelConfig: inconsistent configs fail with one line naming the file and field",
          "[engine][model]") {
    const nlohmann::json good = load_json(golden("default", "config.json"));
    REQUIRE_NOTHROW(parse(good));
    auto with = [&](const std::string& key, nlohmann::json v) {
        nlohmann::json j = good;
        j[key] = std::move(v);
        return j;
    };
    expect_error(with("o_groups", 3), "o_groups");
    expect_error(with("num_experts_per_tok", 99), "num_experts_per_tok");
    expect_error(with("layer_types", {"sliding_attention"}), "layer_types");
    expect_error(with("mlp_layer_types", {"moe", "moe", "moe", "moe", "moe", "dense"}), "mlp_layer_types/5");
    expect_error(with("hidden_size", -4), "hidden_size");
    expect_error(with("num_key_value_heads", 2), "num_key_value_heads");
    expect_error(with("scoring_func", "softmax"), "scoring_func");
    expect_error(with("qk_rope_head_dim", 20), "qk_rope_head_dim");
    expect_error(with("hiden_size", 256), "hiden_size");  // typo: unknown key
    nlohmann::json no_schedule = good;
    no_schedule.erase("layer_types");
    expect_error(no_schedule, "compress_ratios");
    nlohmann::json bad_yarn = good;
    bad_yarn["rope_parameters"]["compress"]["attention_factor"] = 1.277;
    expect_error(bad_yarn, "attention_factor");
    nlohmann::json hub = load_json(golden("default", "config.upstream.json"));
    hub["compress_ratios"] = {0, 4};
    expect_error(hub, "compress_ratios");
}
