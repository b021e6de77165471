// V4 weights in float32, loaded from a Checkpoint (dequantised on load) and checked against the
// ModelConfig: shapes, dtypes, missing and unexpected tensors (V4_SPEC §2).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/checkpoint.h"
#include "engine/model/config.h"

namespace deepinfer::model {

/// A dense float32 tensor, row-major.
struct Tensor {
    std::vector<std::int64_t> shape;
    std::vector<float> data;

    std::int64_t numel() const { return static_cast<std::int64_t>(data.size()); }
    std::int64_t rows() const { return shape.empty() ? 0 : shape[0]; }
    /// Product of all but the first dimension (1 for vectors).
    std::int64_t cols() const;
};

/// SwiGLU expert: gate w1 [I, D], down w2 [D, I], up w3 [I, D].
struct ExpertWeights {
    Tensor w1, w2, w3;
};

/// A compressor (CSA: width 2*dim, HCA: width dim) at head width `dim`.
struct CompressorWeights {
    Tensor wkv, wgate;  ///< [width, D]
    Tensor ape;         ///< [rate, width]
    Tensor norm;        ///< [dim]
};

struct IndexerWeights {
    CompressorWeights compressor;  ///< at index_head_dim, overlapping
    Tensor wq_b;                   ///< [Hi * Di, q_lora_rank]
    Tensor weights_proj;           ///< [Hi, D]
};

/// One decoder block (a main layer or the MTP block).
struct BlockWeights {
    AttentionType attention = AttentionType::kSliding;
    MlpType mlp = MlpType::kScore;
    std::int64_t compress_ratio = 0;

    Tensor attn_norm, ffn_norm;
    Tensor hc_attn_fn, hc_attn_base, hc_attn_scale;  ///< [(2+n)n, nD], [(2+n)n], [3]
    Tensor hc_ffn_fn, hc_ffn_base, hc_ffn_scale;
    Tensor wq_a, q_norm, wq_b, wkv, kv_norm, wo_a, wo_b, attn_sink;
    std::optional<CompressorWeights> compressor;
    std::optional<IndexerWeights> indexer;
    Tensor gate;       ///< router [E, D]
    Tensor gate_bias;  ///< selection bias [E] (score layers only)
    /// Hash layers: expert ids, row-major [vocab, num_experts_per_tok].
    std::vector<std::int32_t> tid2eid;
    std::vector<ExpertWeights> experts;
    ExpertWeights shared;
};

/// The MTP block (V4_SPEC §8): a sliding-window block plus its input projections and HC head.
struct MtpWeights {
    BlockWeights block;
    Tensor e_proj, h_proj;                           ///< [D, D]
    Tensor enorm, hnorm, norm;                       ///< [D]
    Tensor hc_head_fn, hc_head_base, hc_head_scale;  ///< [n, nD], [n], [1]
};

struct ModelWeights {
    Tensor embed;  ///< [V, D]
    Tensor head;   ///< [V, D]
    Tensor norm;   ///< [D]
    Tensor hc_head_fn, hc_head_base, hc_head_scale;
    std::vector<BlockWeights> layers;
    std::optional<MtpWeights> mtp;
};

struct LoadOptions {
    /// Load `mtp.0.*` when the checkpoint has it (an MTP block that is present must be complete).
    bool load_mtp = true;
    /// FP8 block edge (hub: 128).
    std::int64_t fp8_block = 128;
    /// FP4 scale group (hub: 32 input elements per scale).
    std::int64_t fp4_group = 32;
};

/// Loads and checks every tensor. Throws CheckpointError naming the file and tensor for a missing,
/// mis-shaped, wrongly typed or unexpected tensor.
ModelWeights load_model_weights(const Checkpoint& ckpt, const ModelConfig& config,
                                const LoadOptions& options = {});

/// Loads one float tensor by canonical name, dequantising F8 (with `<module>.scale`) and packed
/// FP4 (I8/U8 [r, c/2] with `.scale` [r, c/group]); checks the shape. Exposed for tests.
Tensor load_tensor(const Checkpoint& ckpt, const std::string& name, const std::vector<std::int64_t>& shape,
                   const LoadOptions& options = {});

/// A randomly initialised MTP block of the right shapes (unit-scale, like the golden tiny model),
/// for testing drafting mechanics on checkpoints that ship none. Deterministic in `seed`.
MtpWeights make_random_mtp_weights(const ModelConfig& config, std::uint64_t seed);

}  // namespace deepinfer::model
