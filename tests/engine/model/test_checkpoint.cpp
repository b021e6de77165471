// Safetensors parsing, dtype conversions and dequantisers on hand-made values, checkpoint naming
// (hub / HF-saved / HF module names), sharding, and the errors for broken checkpoints.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/model/checkpoint.h"
#include "engine/model/config.h"
#include "engine/model/safetensors.h"
#include "engine/model/tensor_names.h"
#include "engine/model/weights.h"

using namespace deepinfer;
using namespace deepinfer::model;
namespace fs = std::filesystem;

namespace {

std::string golden_dir(const std::string& name) {
    return std::string(DEEPINFER_SOURCE_DIR) + "/tests/golden/v4/" + name;
}

fs::path temp_dir(const std::string& tag) {
    const fs::path p = fs::temp_directory_path() / ("deepinfer_ckpt_" + tag);
    fs::remove_all(p);
    fs::create_directories(p);
    return p;
}

std::vector<std::byte> header_file(const std::string& header, std::size_t data_bytes) {
    std::vector<std::byte> out(8 + header.size() + data_bytes);
    const std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i)
        out[static_cast<std::size_t>(i)] = static_cast<std::byte>((n >> (8 * i)) & 0xff);
    std::memcpy(out.data() + 8, header.data(), header.size());
    return out;
}

// Expects CheckpointError with a one-line message containing every needle.
void expect_bad(const std::vector<std::byte>& bytes, std::vector<std::string> needles) {
    try {
        parse_safetensors_header(bytes, "bad.safetensors");
        FAIL("accepted");
    } catch (const CheckpointError& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK(what.find('\n') == std::string::npos);
        CHECK(what.find("bad.safetensors") != std::string::npos);
        for (const auto& n : needles) CHECK(what.find(n) != std::string::npos);
    }
}

TensorToWrite raw_tensor(std::string name, DType d, std::vector<std::int64_t> shape,
                         std::vector<std::uint8_t> bytes) {
    TensorToWrite t{.name = std::move(name), .dtype = d, .shape = std::move(shape)};
    for (auto b : bytes) t.bytes.push_back(static_cast<std::byte>(b));
    return t;
}

// Copies every tensor of a golden checkpoint under another name (and, optionally, dtype).
std::vector<TensorToWrite> golden_tensors(const std::string& name,
                                          const std::function<std::string(const std::string&)>& rename) {
    const SafetensorsFile f(golden_dir(name) + "/model.safetensors");
    std::vector<TensorToWrite> out;
    for (const TensorInfo& t : f.tensors()) {
        const auto d = f.data(t);
        TensorToWrite w{
            .name = rename(t.name), .dtype = t.dtype, .shape = t.shape, .bytes = {d.begin(), d.end()}};
        out.push_back(std::move(w));
    }
    return out;
}

bool same_weights(const ModelWeights& a, const ModelWeights& b) {
    if (a.layers.size() != b.layers.size() || a.embed.data != b.embed.data || a.head.data != b.head.data)
        return false;
    for (std::size_t l = 0; l < a.layers.size(); ++l) {
        const auto &x = a.layers[l], &y = b.layers[l];
        if (x.wkv.data != y.wkv.data || x.kv_norm.data != y.kv_norm.data || x.tid2eid != y.tid2eid ||
            x.experts.back().w2.data != y.experts.back().w2.data || x.hc_ffn_fn.data != y.hc_ffn_fn.data)
            return false;
        if (x.indexer.has_value() != y.indexer.has_value()) return false;
        if (x.indexer && x.indexer->weights_proj.data != y.indexer->weights_proj.data) return false;
    }
    return true;
}

}  // namespace

TEST_CASE("dtype: conversions of hand-made bit patterns", "[engine][model]") {
    CHECK(bf16_to_float(0x3f80) == 1.0f);
    CHECK(bf16_to_float(0xc040) == -3.0f);
    CHECK(f16_to_float(0x3c00) == 1.0f);
    CHECK(f16_to_float(0x0001) == std::ldexp(1.0f, -24));
    CHECK(f16_to_float(0xc500) == -5.0f);
    CHECK(e4m3_to_float(0x38) == 1.0f);
    CHECK(e4m3_to_float(0xb8) == -1.0f);
    CHECK(e4m3_to_float(0x7e) == 448.0f);
    CHECK(e4m3_to_float(0x01) == std::ldexp(1.0f, -9));
    CHECK(e4m3_to_float(0x07) == std::ldexp(7.0f, -9));  // largest subnormal
    CHECK(e4m3_to_float(0x0f) == 1.875f / 64.0f);
    CHECK(e4m3_to_float(0x3c) == 1.5f);
    CHECK(std::isnan(e4m3_to_float(0x7f)));
    CHECK(e8m0_to_float(127) == 1.0f);
    CHECK(e8m0_to_float(130) == 8.0f);
    CHECK(e8m0_to_float(120) == std::ldexp(1.0f, -7));
    CHECK(std::isnan(e8m0_to_float(255)));
    const float table[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    for (std::uint8_t i = 0; i < 8; ++i) {
        CHECK(e2m1_to_float(i) == table[i]);
        CHECK(e2m1_to_float(static_cast<std::uint8_t>(i | 8)) == -table[i]);
    }
}

TEST_CASE("dequant: FP8 128x128-block and FP4 per-32 scales on hand-made values", "[engine][model]") {
    // FP8, block 2: a 3x3 weight of 1.0 (0x38) and -1.5 (0xbc) with 2x2 block scales 2^k.
    const std::vector<std::uint8_t> w = {0x38, 0x38, 0xbc, 0x38, 0x38, 0xbc, 0xbc, 0xbc, 0x38};
    const std::vector<float> scale = {1.0f, 2.0f, 4.0f, 0.5f};  // blocks (0,0) (0,1) (1,0) (1,1)
    std::vector<float> out(9);
    dequant_fp8_block(w, scale, 3, 3, 2, out);
    CHECK(out == std::vector<float>{1.0f, 1.0f, -3.0f, 1.0f, 1.0f, -3.0f, -6.0f, -6.0f, 0.5f});
    // FP4, group 2: row 0 bytes 0x21 (elements 0.5, 1.0) and 0x9f (6.0 * -1? low nibble 0xf = -6, high 0x9 =
    // -0.5).
    const std::vector<std::uint8_t> packed = {0x21, 0x9f, 0x70, 0x08};
    const std::vector<float> s4 = {1.0f, 2.0f, 0.25f, 4.0f};  // [2 rows, 4/2 groups]
    std::vector<float> o4(8);
    dequant_fp4(packed, s4, 2, 4, 2, o4);
    CHECK(o4 == std::vector<float>{0.5f, 1.0f, -12.0f, -1.0f, 0.0f, 1.5f, -0.0f, 0.0f});
}

TEST_CASE("safetensors: round trip and rejection of malformed headers", "[engine][model]") {
    const std::vector<float> a = {1, 2, 3, 4, 5, 6};
    const std::vector<std::int32_t> b = {7, -8};
    const auto bytes =
        serialize_safetensors({make_f32_tensor("a", {2, 3}, a), make_i32_tensor("b", {2}, b)}, {{"k", "v"}});
    const SafetensorsHeader h = parse_safetensors_header(bytes, "ok.safetensors");
    REQUIRE(h.tensors.size() == 2);
    CHECK(h.tensors[0].name == "a");
    CHECK(h.tensors[0].shape == std::vector<std::int64_t>{2, 3});
    CHECK(h.metadata.at("k") == "v");

    expect_bad(std::vector<std::byte>(bytes.begin(), bytes.end() - 4), {"\"b\"", "truncated"});
    expect_bad(std::vector<std::byte>(bytes.begin(), bytes.begin() + 5), {"too short"});
    auto overflow = bytes;
    overflow[3] = std::byte{0x7f};
    expect_bad(overflow, {"header length"});
    expect_bad(
        header_file(
            R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
            12),
        {"overlaps"});
    expect_bad(header_file(R"({"x":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", 8),
               {"\"x\"", "dtype"});
    expect_bad(header_file(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
               {"\"x\"", "does not match"});
    expect_bad(
        header_file(
            R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
            8),
        {"twice"});
    expect_bad(header_file(R"({"x":{"dtype":"F32","shape":[[[[[1]]]]],"data_offsets":[0,4]}})", 4),
               {"nests"});
    expect_bad(
        header_file(
            R"({"x":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})", 8),
        {"\"x\""});
    expect_bad(header_file("{not json", 0), {"JSON"});
}

TEST_CASE("Checkpoint: hub names, HF-saved hybrid names and HF module names canonicalise alike",
          "[engine][model]") {
    CHECK(canonical_tensor_name("model.embed_tokens.weight") == "embed.weight");
    CHECK(canonical_tensor_name("lm_head.weight") == "head.weight");
    CHECK(canonical_tensor_name("model.hc_head.hc_fn") == "hc_head_fn");
    CHECK(canonical_tensor_name("model.layers.3.attn.norm.weight") == "layers.3.attn.kv_norm.weight");
    CHECK(canonical_tensor_name("model.layers.3.attn.compressor.norm.weight") ==
          "layers.3.attn.compressor.norm.weight");
    CHECK(canonical_tensor_name("model.layers.3.self_attn.compressor.indexer.scorer.weights_proj.weight") ==
          "layers.3.attn.indexer.weights_proj.weight");
    CHECK(canonical_tensor_name("model.layers.0.self_attn.q_a_proj.weight_scale_inv") ==
          "layers.0.attn.wq_a.scale");
    CHECK(canonical_tensor_name("model.layers.0.mlp.gate.e_score_correction_bias") ==
          "layers.0.ffn.gate.bias");
    CHECK(canonical_tensor_name("model.layers.0.ffn_hc.base") == "layers.0.hc_ffn_base");
    CHECK(canonical_tensor_name("layers.9.ffn.experts.7.w2.weight") == "layers.9.ffn.experts.7.w2.weight");
    CHECK(canonical_tensor_name("mtp.0.e_proj.weight") == "mtp.0.e_proj.weight");

    const ModelConfig config = load_model_config(golden_dir("default") + "/config.json");
    const ModelWeights reference = load_model_weights(Checkpoint::open(golden_dir("default")), config);
    // Hub names with int32 tid2eid, as in upstream/model.safetensors.
    const fs::path dir = temp_dir("hub");
    auto hub = golden_tensors("default", [](const std::string& n) { return canonical_tensor_name(n); });
    for (auto& t : hub) {
        if (t.name.find("tid2eid") == std::string::npos) continue;
        std::vector<std::int32_t> v(t.bytes.size() / 8);
        for (std::size_t i = 0; i < v.size(); ++i)
            std::memcpy(&v[i], t.bytes.data() + 8 * i, 4);  // little endian, small ids
        t = make_i32_tensor(t.name, t.shape, v);
    }
    write_safetensors((dir / "model.safetensors").string(), hub);
    CHECK(same_weights(load_model_weights(Checkpoint::open(dir.string()), config), reference));

    // Sharded: two files plus model.safetensors.index.json.
    const fs::path sdir = temp_dir("sharded");
    const auto all = golden_tensors("default", [](const std::string& n) { return n; });
    std::vector<TensorToWrite> s1(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(all.size() / 2));
    std::vector<TensorToWrite> s2(all.begin() + static_cast<std::ptrdiff_t>(all.size() / 2), all.end());
    write_safetensors((sdir / "model-00001-of-00002.safetensors").string(), s1);
    write_safetensors((sdir / "model-00002-of-00002.safetensors").string(), s2);
    nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
    for (const auto& t : s1) index["weight_map"][t.name] = "model-00001-of-00002.safetensors";
    for (const auto& t : s2) index["weight_map"][t.name] = "model-00002-of-00002.safetensors";
    std::ofstream(sdir / "model.safetensors.index.json") << index.dump();
    CHECK(same_weights(load_model_weights(Checkpoint::open(sdir.string()), config), reference));
    // A shard that lost a tensor listed in the index.
    write_safetensors((sdir / "model-00002-of-00002.safetensors").string(),
                      std::vector<TensorToWrite>(s2.begin() + 1, s2.end()));
    try {
        Checkpoint::open(sdir.string());
        FAIL("accepted");
    } catch (const CheckpointError& e) {
        CHECK(std::string(e.what()).find(s2.front().name) != std::string::npos);
        CHECK(std::string(e.what()).find("model-00002-of-00002.safetensors") != std::string::npos);
    }
}

TEST_CASE("Checkpoint: missing, mis-shaped, mistyped and unexpected tensors fail naming tensor and file",
          "[engine][model]") {
    const ModelConfig config = load_model_config(golden_dir("default") + "/config.json");
    auto expect_load_error = [&](const std::vector<TensorToWrite>& tensors, const std::string& needle) {
        const fs::path dir = temp_dir("broken");
        write_safetensors((dir / "model.safetensors").string(), tensors);
        try {
            load_model_weights(Checkpoint::open(dir.string()), config);
            FAIL("accepted");
        } catch (const CheckpointError& e) {
            const std::string what = e.what();
            INFO(what);
            CHECK(what.find(needle) != std::string::npos);
            CHECK(what.find("model.safetensors") != std::string::npos);
            CHECK(what.find('\n') == std::string::npos);
        }
    };
    auto all = golden_tensors("default", [](const std::string& n) { return n; });
    auto missing = all;
    missing.erase(std::find_if(missing.begin(), missing.end(),
                               [](const auto& t) { return t.name == "model.layers.2.attn.wkv.weight"; }));
    expect_load_error(missing, "layers.2.attn.wkv.weight");
    auto no_hash = all;
    no_hash.erase(std::find_if(no_hash.begin(), no_hash.end(),
                               [](const auto& t) { return t.name.find("tid2eid") != std::string::npos; }));
    expect_load_error(no_hash, "tid2eid");
    auto shaped = all;
    for (auto& t : shaped)
        if (t.name == "model.layers.1.attn.attn_sink")
            t = make_f32_tensor(t.name, {5}, std::vector<float>(5, 0.0f));
    expect_load_error(shaped, "model.layers.1.attn.attn_sink");
    auto typed = all;
    for (auto& t : typed)
        if (t.name == "model.norm.weight")
            t = make_i32_tensor(t.name, t.shape, std::vector<std::int32_t>(256, 1));
    expect_load_error(typed, "model.norm.weight");
    auto extra = all;
    extra.push_back(make_f32_tensor("model.layers.6.attn.wkv.weight", {1}, std::vector<float>{1.0f}));
    expect_load_error(extra, "model.layers.6.attn.wkv.weight");
}

TEST_CASE("Checkpoint: FP8 block-scaled and FP4 expert tensors are dequantised on load", "[engine][model]") {
    const ModelConfig config = load_model_config(golden_dir("default") + "/config.json");
    auto all = golden_tensors("default", [](const std::string& n) { return canonical_tensor_name(n); });
    // wq_a of layer 0 [64, 256] as FP8 with [1, 2] block scales (block 128 after padding: ceil(64/128) = 1).
    std::vector<std::uint8_t> codes(64 * 256);
    for (std::size_t i = 0; i < codes.size(); ++i)
        codes[i] = static_cast<std::uint8_t>((i * 37) % 0x7f);  // no NaN code
    // layer 0 expert 3 w1 [32, 256] as FP4: [32, 128] bytes + [32, 8] E8M0 scales.
    std::vector<std::uint8_t> packed(32 * 128), scales(32 * 8);
    for (std::size_t i = 0; i < packed.size(); ++i) packed[i] = static_cast<std::uint8_t>((i * 29) & 0xff);
    for (std::size_t i = 0; i < scales.size(); ++i) scales[i] = static_cast<std::uint8_t>(120 + i % 9);
    for (auto& t : all) {
        if (t.name == "layers.0.attn.wq_a.weight") t = raw_tensor(t.name, DType::kF8E4M3, {64, 256}, codes);
        if (t.name == "layers.0.ffn.experts.3.w1.weight")
            t = raw_tensor(t.name, DType::kI8, {32, 128}, packed);
    }
    all.push_back(raw_tensor("layers.0.attn.wq_a.scale", DType::kF8E8M0, {1, 2}, {127, 129}));
    all.push_back(raw_tensor("layers.0.ffn.experts.3.w1.scale", DType::kF8E8M0, {32, 8}, scales));
    const fs::path dir = temp_dir("quant");
    write_safetensors((dir / "model.safetensors").string(), all);
    const ModelWeights w = load_model_weights(Checkpoint::open(dir.string()), config);
    const auto& wq = w.layers[0].wq_a.data;
    CHECK(wq[0] == e4m3_to_float(codes[0]));
    CHECK(wq[130] == e4m3_to_float(codes[130]) * 4.0f);  // second column block, scale 2^2
    CHECK(wq[255 * 0 + 5] == e4m3_to_float(codes[5]));
    const auto& w1 = w.layers[0].experts[3].w1.data;
    // row 1, element 65: byte 1*128 + 32 high nibble, scale [1][65/32 = 2].
    CHECK(w1[256 + 65] ==
          e2m1_to_float(static_cast<std::uint8_t>(packed[128 + 32] >> 4)) * e8m0_to_float(scales[8 + 2]));
    CHECK(w1[0] == e2m1_to_float(static_cast<std::uint8_t>(packed[0] & 0xf)) * e8m0_to_float(scales[0]));
    // A quantised weight without its scale is refused.
    all.pop_back();
    write_safetensors((dir / "model.safetensors").string(), all);
    CHECK_THROWS_WITH(load_model_weights(Checkpoint::open(dir.string()), config),
                      Catch::Contains("layers.0.ffn.experts.3.w1.scale"));
}
