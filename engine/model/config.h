// DeepSeek-V4 model configuration: parsed from a Hugging Face `config.json` (deepseek_v4) or a
// hub-style config (legacy keys compress_ratios, num_hash_layers, qk_rope_head_dim, rope_scaling),
// validated, with every error naming the file and the field (V4_SPEC §1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policies/common/json_reader.h"

namespace deepinfer::model {

/// Attention type of one layer (V4_SPEC §4.3–4.6).
enum class AttentionType : std::uint8_t {
    kSliding = 0,  ///< sliding window only ("sliding_attention", hub ratio 0)
    kCsa = 1,      ///< + overlapping compressor and Lightning indexer ("compressed_sparse_attention")
    kHca = 2,      ///< + non-overlapping compressor, all entries ("heavily_compressed_attention")
};
/// Router of one MoE layer.
enum class MlpType : std::uint8_t {
    kHash = 0,   ///< fixed token-id -> experts table (tid2eid)
    kScore = 1,  ///< top-k of router scores + selection bias
};
/// Router score function `s = f(logit)`.
enum class ScoringFunc : std::uint8_t { kSqrtSoftplus = 0, kSigmoid = 1 };

std::string_view name(AttentionType t);
std::string_view name(MlpType t);

/// One RoPE table: plain (`yarn == false`) or YaRN-scaled inverse frequencies.
struct RopeConfig {
    double theta = 10000.0;
    bool yarn = false;
    double factor = 1.0;
    std::int64_t original_max_position_embeddings = 0;
    double beta_fast = 32.0;
    double beta_slow = 1.0;
    /// floor/ceil the YaRN correction range (HF default true).
    bool truncate = true;
};

struct ModelConfig {
    /// File the config was read from (used in error messages of later stages).
    std::string source_file;

    std::int64_t vocab_size = 0;
    std::int64_t hidden_size = 0;    ///< D
    std::int64_t num_layers = 0;     ///< L (MTP layers not counted)
    std::int64_t num_heads = 0;      ///< query heads H
    std::int64_t head_dim = 0;       ///< Dh, for q, shared K=V and the attention output
    std::int64_t rope_head_dim = 0;  ///< rd: rotary channels at the end of each head (and of indexer heads)
    std::int64_t q_lora_rank = 0;
    std::int64_t o_groups = 0;
    std::int64_t o_lora_rank = 0;
    std::int64_t sliding_window = 0;  ///< W: keys t-W+1..t

    std::vector<AttentionType> layer_types;
    /// Compression rate per layer (0 for sliding layers).
    std::vector<std::int64_t> compress_ratios;

    std::int64_t index_n_heads = 0;
    std::int64_t index_head_dim = 0;
    std::int64_t index_topk = 0;

    std::int64_t n_routed_experts = 0;
    std::int64_t num_experts_per_tok = 0;
    std::int64_t moe_intermediate_size = 0;
    std::vector<MlpType> mlp_types;
    ScoringFunc scoring_func = ScoringFunc::kSqrtSoftplus;
    double routed_scaling_factor = 1.0;
    double swiglu_limit = 10.0;  ///< SwiGLU clamp: gate <= limit, |up| <= limit

    std::int64_t hc_mult = 0;
    std::int64_t hc_sinkhorn_iters = 0;
    double hc_eps = 1e-6;
    double rms_norm_eps = 1e-6;

    RopeConfig rope_main;      ///< sliding layers (and the MTP block)
    RopeConfig rope_compress;  ///< CSA and HCA layers (all of their rotary uses)

    std::int64_t num_nextn_predict_layers = 0;
    bool tie_word_embeddings = false;
    /// Stop ids from `eos_token_id` (int or list; empty when null).
    std::vector<std::int32_t> eos_token_ids;

    bool is_compressed(std::int64_t layer) const {
        return layer_types[static_cast<std::size_t>(layer)] != AttentionType::kSliding;
    }
    const RopeConfig& rope_for(std::int64_t layer) const {
        return is_compressed(layer) ? rope_compress : rope_main;
    }
};

/// Parses and validates a config document (HF or hub style, detected per key). Throws ConfigError
/// naming `reader.file()` and the JSON pointer of the offending field.
ModelConfig model_config_from_json(const JsonReader& reader);

/// Reads `path`: a config file, or a directory holding `config.json` (else `config.upstream.json`).
ModelConfig load_model_config(const std::string& path);

/// Checks cross-field consistency (also run by model_config_from_json); throws ConfigError naming
/// `c.source_file` and the field.
void validate(const ModelConfig& c);

}  // namespace deepinfer::model
