// ModelConfig parsing (HF deepseek_v4 config.json and hub-style keys) and validation.
#include "engine/model/config.h"

#include <filesystem>
#include <string>

namespace deepinfer::model {
namespace {

constexpr std::string_view kSliding = "sliding_attention";
constexpr std::string_view kCsa = "compressed_sparse_attention";
constexpr std::string_view kHca = "heavily_compressed_attention";

// Every key a transformers 5.17 deepseek_v4 config.json or the hub config may carry. Keys that do
// not change the math are accepted and ignored; anything else is an error (a typo must not pass).
const std::vector<std::string>& known_keys() {
    static const std::vector<std::string> keys = {"architectures",
                                                  "model_type",
                                                  "transformers_version",
                                                  "dtype",
                                                  "torch_dtype",
                                                  "_name_or_path",
                                                  "auto_map",
                                                  "attention_bias",
                                                  "attention_dropout",
                                                  "mlp_bias",
                                                  "bos_token_id",
                                                  "eos_token_id",
                                                  "pad_token_id",
                                                  "vocab_size",
                                                  "hidden_size",
                                                  "moe_intermediate_size",
                                                  "intermediate_size",
                                                  "num_hidden_layers",
                                                  "num_attention_heads",
                                                  "num_key_value_heads",
                                                  "head_dim",
                                                  "q_lora_rank",
                                                  "partial_rotary_factor",
                                                  "qk_rope_head_dim",
                                                  "num_experts_per_tok",
                                                  "n_routed_experts",
                                                  "num_local_experts",
                                                  "n_shared_experts",
                                                  "scoring_func",
                                                  "norm_topk_prob",
                                                  "routed_scaling_factor",
                                                  "max_position_embeddings",
                                                  "rope_theta",
                                                  "compress_rope_theta",
                                                  "rope_parameters",
                                                  "rope_scaling",
                                                  "layer_types",
                                                  "compress_rates",
                                                  "compress_rate_csa",
                                                  "compress_rate_hca",
                                                  "compress_ratios",
                                                  "mlp_layer_types",
                                                  "num_hash_layers",
                                                  "hc_mult",
                                                  "hc_sinkhorn_iters",
                                                  "hc_eps",
                                                  "swiglu_limit",
                                                  "sliding_window",
                                                  "o_groups",
                                                  "o_lora_rank",
                                                  "index_n_heads",
                                                  "index_head_dim",
                                                  "index_topk",
                                                  "num_nextn_predict_layers",
                                                  "output_router_logits",
                                                  "router_aux_loss_coef",
                                                  "router_jitter_noise",
                                                  "hidden_act",
                                                  "initializer_range",
                                                  "rms_norm_eps",
                                                  "use_cache",
                                                  "tie_word_embeddings",
                                                  "expert_dtype",
                                                  "topk_method",
                                                  "quantization_config",
                                                  "generation_config"};
    return keys;
}

[[noreturn]] void fail_field(const std::string& file, const std::string& field, const std::string& expected,
                             const std::string& got) {
    throw ConfigError(file, "/" + field, expected, got);
}

RopeConfig read_rope_block(const JsonReader& r, double default_theta) {
    r.allow_keys({"rope_type", "type", "rope_theta", "partial_rotary_factor", "factor",
                  "original_max_position_embeddings", "beta_fast", "beta_slow", "attention_factor",
                  "truncate", "mscale", "mscale_all_dim"});
    RopeConfig rope;
    rope.theta = r.get_double_or("rope_theta", default_theta, NumRange::positive());
    std::string type = r.has("rope_type")
                           ? r.at("rope_type").as_enum({"default", "yarn"})
                           : (r.has("type") ? r.at("type").as_enum({"default", "yarn"}) : "default");
    rope.yarn = type == "yarn";
    if (rope.yarn) {
        rope.factor = r.get_double("factor", NumRange::positive());
        rope.original_max_position_embeddings =
            r.get_int("original_max_position_embeddings", NumRange::at_least(1));
        // NOTE: HF treats 0/null beta as the default (`get("beta_fast") or 32`).
        rope.beta_fast = r.get_double_or("beta_fast", 32.0);
        rope.beta_slow = r.get_double_or("beta_slow", 1.0);
        if (rope.beta_fast == 0.0) rope.beta_fast = 32.0;
        if (rope.beta_slow == 0.0) rope.beta_slow = 1.0;
        rope.truncate = r.get_bool_or("truncate", true);
        // V4 forces attention_factor = 1 (no mscale on cos/sin); anything else is not V4 math.
        if (r.has("attention_factor")) {
            const double af = r.get_double("attention_factor");
            if (af != 1.0) r.at("attention_factor").fail("1.0 (DeepSeek-V4 applies no YaRN mscale)");
        }
        if (r.has("mscale") || r.has("mscale_all_dim"))
            r.fail("a YaRN block without mscale (not used by V4)");
    }
    return rope;
}

void read_rope(const JsonReader& r, ModelConfig& c) {
    const double theta_main = r.get_double_or("rope_theta", 10000.0, NumRange::positive());
    const double theta_compress = r.get_double_or("compress_rope_theta", 160000.0, NumRange::positive());
    c.rope_main = RopeConfig{.theta = theta_main};
    c.rope_compress = RopeConfig{.theta = theta_compress};
    std::optional<JsonReader> params = r.find("rope_parameters");
    if (params && params->is_null()) params.reset();
    if (params && params->has("main") && params->has("compress")) {
        params->allow_keys({"main", "compress"});
        c.rope_main = read_rope_block(params->at("main"), theta_main);
        c.rope_compress = read_rope_block(params->at("compress"), theta_compress);
        if (c.rope_main.yarn)
            params->at("main").fail("plain RoPE for the sliding layers (\"rope_type\": \"default\")");
        return;
    }
    // Flat form (HF before __post_init__, or the hub's rope_scaling): YaRN applies to "compress" only.
    std::optional<JsonReader> flat = params ? params : r.find("rope_scaling");
    if (flat && !flat->is_null()) {
        RopeConfig yarn = read_rope_block(*flat, theta_compress);
        yarn.theta = theta_compress;
        c.rope_compress = yarn;
    }
}

std::int64_t read_rope_head_dim(const JsonReader& r, std::int64_t head_dim) {
    std::optional<double> prf;
    if (auto v = r.find("partial_rotary_factor"); v && !v->is_null())
        prf = v->as_double(NumRange::between(0.0, 1.0));
    if (auto p = r.find("rope_parameters"); p && p->is_object()) {
        for (const char* key : {"main", "compress"}) {
            if (auto block = p->find(key); block && block->has("partial_rotary_factor")) {
                const double v = block->at("partial_rotary_factor").as_double(NumRange::between(0.0, 1.0));
                if (prf && *prf != v)
                    block->at("partial_rotary_factor")
                        .fail("the same partial_rotary_factor as the top level", std::to_string(v));
                prf = v;
            }
        }
    }
    std::optional<std::int64_t> rd;
    if (auto v = r.find("qk_rope_head_dim"); v && !v->is_null()) rd = v->as_int(NumRange::at_least(0));
    if (prf) {
        const auto from_prf = static_cast<std::int64_t>(static_cast<double>(head_dim) * *prf);
        if (rd && *rd != from_prf)
            r.at("qk_rope_head_dim")
                .fail("head_dim * partial_rotary_factor = " + std::to_string(from_prf), std::to_string(*rd));
        return from_prf;
    }
    if (rd) return *rd;
    return head_dim / 8;  // HF default partial_rotary_factor 64/512
}

void read_layer_types(const JsonReader& r, ModelConfig& c) {
    const auto n = static_cast<std::size_t>(c.num_layers);
    std::int64_t rate_csa = 4;
    std::int64_t rate_hca = 128;
    if (auto rates = r.find("compress_rates"); rates && !rates->is_null()) {
        rates->allow_keys({std::string(kCsa), std::string(kHca)});
        rate_csa = rates->get_int_or(kCsa, rate_csa, NumRange::at_least(1));
        rate_hca = rates->get_int_or(kHca, rate_hca, NumRange::at_least(1));
    }
    rate_csa = r.get_int_or("compress_rate_csa", rate_csa, NumRange::at_least(1));
    rate_hca = r.get_int_or("compress_rate_hca", rate_hca, NumRange::at_least(1));

    if (auto types = r.find("layer_types"); types && !types->is_null()) {
        if (types->size() != n)
            types->fail("an array of num_hidden_layers = " + std::to_string(n) + " layer types",
                        "an array of " + std::to_string(types->size()));
        for (std::size_t i = 0; i < n; ++i) {
            const std::string t = types->at(i).as_enum({kSliding, kCsa, kHca});
            if (t == kSliding) {
                c.layer_types.push_back(AttentionType::kSliding);
                c.compress_ratios.push_back(0);
            } else if (t == kCsa) {
                c.layer_types.push_back(AttentionType::kCsa);
                c.compress_ratios.push_back(rate_csa);
            } else {
                c.layer_types.push_back(AttentionType::kHca);
                c.compress_ratios.push_back(rate_hca);
            }
        }
        return;
    }
    if (auto ratios = r.find("compress_ratios"); ratios && !ratios->is_null()) {
        // Hub semantics (DeepSeek reference): 0 = sliding, 4 = CSA (overlap + indexer), any other
        // positive ratio = plain compressor (HCA). Entries past num_hidden_layers belong to MTP layers.
        if (ratios->size() < n)
            ratios->fail("at least num_hidden_layers = " + std::to_string(n) + " entries",
                         std::to_string(ratios->size()) + " entries");
        for (std::size_t i = 0; i < n; ++i) {
            const std::int64_t v = ratios->at(i).as_int(NumRange::at_least(0));
            c.compress_ratios.push_back(v);
            c.layer_types.push_back(v == 0 ? AttentionType::kSliding
                                           : (v == 4 ? AttentionType::kCsa : AttentionType::kHca));
        }
        return;
    }
    // NOTE: HF would silently default to a V4-Pro pattern here (V4_SPEC §9.9); we refuse instead.
    r.fail("a config with \"layer_types\" or \"compress_ratios\" (the attention schedule)", "neither");
}

void read_mlp_types(const JsonReader& r, ModelConfig& c) {
    const auto n = static_cast<std::size_t>(c.num_layers);
    if (auto types = r.find("mlp_layer_types"); types && !types->is_null()) {
        if (types->size() != n)
            types->fail("an array of num_hidden_layers = " + std::to_string(n) + " MLP layer types",
                        "an array of " + std::to_string(types->size()));
        for (std::size_t i = 0; i < n; ++i)
            c.mlp_types.push_back(types->at(i).as_enum({"hash_moe", "moe"}) == "hash_moe" ? MlpType::kHash
                                                                                          : MlpType::kScore);
        return;
    }
    const std::int64_t n_hash = r.get_int_or("num_hash_layers", 3, NumRange::at_least(0));
    for (std::size_t i = 0; i < n; ++i)
        c.mlp_types.push_back(static_cast<std::int64_t>(i) < n_hash ? MlpType::kHash : MlpType::kScore);
}

std::vector<std::int32_t> read_eos(const JsonReader& r) {
    std::vector<std::int32_t> out;
    auto v = r.find("eos_token_id");
    if (!v || v->is_null()) return out;
    if (v->is_array()) {
        for (std::size_t i = 0; i < v->size(); ++i)
            out.push_back(static_cast<std::int32_t>(v->at(i).as_int(NumRange::at_least(0))));
    } else {
        out.push_back(static_cast<std::int32_t>(v->as_int(NumRange::at_least(0))));
    }
    return out;
}

}  // namespace

std::string_view name(AttentionType t) {
    switch (t) {
        case AttentionType::kSliding:
            return kSliding;
        case AttentionType::kCsa:
            return kCsa;
        case AttentionType::kHca:
            return kHca;
    }
    return "?";
}

std::string_view name(MlpType t) { return t == MlpType::kHash ? "hash_moe" : "moe"; }

ModelConfig model_config_from_json(const JsonReader& r) {
    r.allow_keys(known_keys());
    if (auto mt = r.find("model_type"); mt) mt->as_enum({"deepseek_v4"});
    if (auto act = r.find("hidden_act"); act) act->as_enum({"silu"});
    ModelConfig c;
    c.source_file = r.file();
    const auto pos = NumRange::at_least(1);
    c.vocab_size = r.get_int("vocab_size", pos);
    c.hidden_size = r.get_int("hidden_size", pos);
    c.num_layers = r.get_int("num_hidden_layers", pos);
    c.num_heads = r.get_int("num_attention_heads", pos);
    if (auto kv = r.find("num_key_value_heads"); kv) kv->as_int(NumRange::between(1, 1));
    c.head_dim = r.get_int("head_dim", pos);
    c.rope_head_dim = read_rope_head_dim(r, c.head_dim);
    c.q_lora_rank = r.get_int("q_lora_rank", pos);
    c.o_groups = r.get_int("o_groups", pos);
    c.o_lora_rank = r.get_int("o_lora_rank", pos);
    c.sliding_window = r.get_int("sliding_window", pos);
    c.index_n_heads = r.get_int_or("index_n_heads", 64, pos);
    c.index_head_dim = r.get_int_or("index_head_dim", 128, pos);
    c.index_topk = r.get_int_or("index_topk", 512, pos);
    c.n_routed_experts = r.get_int(r.has("n_routed_experts") ? "n_routed_experts" : "num_local_experts", pos);
    c.num_experts_per_tok = r.get_int("num_experts_per_tok", pos);
    c.moe_intermediate_size =
        r.get_int(r.has("moe_intermediate_size") ? "moe_intermediate_size" : "intermediate_size", pos);
    // HF always builds exactly one shared expert (V4_SPEC §9.3).
    if (auto shared = r.find("n_shared_experts"); shared) shared->as_int(NumRange::between(1, 1));
    const std::string scoring = r.get_string_or("scoring_func", "sqrtsoftplus");
    if (scoring == "sqrtsoftplus")
        c.scoring_func = ScoringFunc::kSqrtSoftplus;
    else if (scoring == "sigmoid")
        c.scoring_func = ScoringFunc::kSigmoid;
    else
        r.at("scoring_func").fail("\"sqrtsoftplus\" or \"sigmoid\"");
    c.routed_scaling_factor = r.get_double_or("routed_scaling_factor", 1.0, NumRange::positive());
    c.swiglu_limit = r.get_double_or("swiglu_limit", 10.0, NumRange::positive());
    c.hc_mult = r.get_int("hc_mult", pos);
    c.hc_sinkhorn_iters = r.get_int("hc_sinkhorn_iters", pos);
    c.hc_eps = r.get_double_or("hc_eps", 1e-6, NumRange::non_negative());
    c.rms_norm_eps = r.get_double_or("rms_norm_eps", 1e-6, NumRange::non_negative());
    c.num_nextn_predict_layers = r.get_int_or("num_nextn_predict_layers", 0, NumRange::non_negative());
    c.tie_word_embeddings = r.get_bool_or("tie_word_embeddings", false);
    c.eos_token_ids = read_eos(r);
    read_rope(r, c);
    read_layer_types(r, c);
    read_mlp_types(r, c);
    validate(c);
    return c;
}

ModelConfig load_model_config(const std::string& path) {
    namespace fs = std::filesystem;
    std::string file = path;
    if (!fs::exists(path)) throw ConfigError(path, "no such model directory or config file");
    if (fs::is_directory(path)) {
        if (fs::exists(fs::path(path) / "config.json"))
            file = (fs::path(path) / "config.json").string();
        else if (fs::exists(fs::path(path) / "config.upstream.json"))
            file = (fs::path(path) / "config.upstream.json").string();
        else
            throw ConfigError(path, "expected a model directory with config.json, found none");
    }
    return model_config_from_json(JsonReader::parse_file(file));
}

void validate(const ModelConfig& c) {
    const std::string& f = c.source_file;
    auto n = [](std::int64_t v) { return std::to_string(v); };
    if (c.rope_head_dim <= 0 || c.rope_head_dim % 2 != 0 || c.rope_head_dim > c.head_dim)
        fail_field(f, "qk_rope_head_dim", "an even rotary width in [2, head_dim = " + n(c.head_dim) + "]",
                   n(c.rope_head_dim));
    if (c.num_heads % c.o_groups != 0)
        fail_field(f, "o_groups", "a divisor of num_attention_heads = " + n(c.num_heads), n(c.o_groups));
    if (c.num_experts_per_tok > c.n_routed_experts)
        fail_field(f, "num_experts_per_tok", "at most n_routed_experts = " + n(c.n_routed_experts),
                   n(c.num_experts_per_tok));
    if (static_cast<std::int64_t>(c.layer_types.size()) != c.num_layers ||
        static_cast<std::int64_t>(c.compress_ratios.size()) != c.num_layers)
        fail_field(f, "layer_types", n(c.num_layers) + " entries",
                   n(static_cast<std::int64_t>(c.layer_types.size())));
    if (static_cast<std::int64_t>(c.mlp_types.size()) != c.num_layers)
        fail_field(f, "mlp_layer_types", n(c.num_layers) + " entries",
                   n(static_cast<std::int64_t>(c.mlp_types.size())));
    bool any_csa = false;
    for (std::size_t i = 0; i < c.layer_types.size(); ++i) {
        const bool compressed = c.layer_types[i] != AttentionType::kSliding;
        if (compressed && c.compress_ratios[i] < 1)
            fail_field(f, "compress_ratios/" + std::to_string(i),
                       "a positive compression rate for a compressed layer", n(c.compress_ratios[i]));
        any_csa = any_csa || c.layer_types[i] == AttentionType::kCsa;
    }
    if (any_csa && (c.index_head_dim < c.rope_head_dim || c.index_head_dim % 2 != 0))
        fail_field(f, "index_head_dim", "an even width >= qk_rope_head_dim = " + n(c.rope_head_dim),
                   n(c.index_head_dim));
    if (c.rope_compress.yarn && c.rope_compress.original_max_position_embeddings < 1)
        fail_field(f, "rope_parameters/compress/original_max_position_embeddings", "a positive integer", "0");
    for (std::int32_t id : c.eos_token_ids)
        if (id >= c.vocab_size)
            fail_field(f, "eos_token_id", "an id below vocab_size = " + n(c.vocab_size), n(id));
}

}  // namespace deepinfer::model
