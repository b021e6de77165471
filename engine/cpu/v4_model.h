// The DeepSeek-V4 forward pass on the CPU (Eigen, fp32): the numerical reference that matches
// Hugging Face transformers 5.17 (V4_SPEC §3–§8). Processes one sequence chunk at a time against a
// SeqCache, so prefill of any chunking, decode and draft verification are the same call.
// Deterministic choices: the indexer top-k and the router top-k break score ties by the lowest
// entry / expert index (HF's torch.topk order among ties is unspecified, V4_SPEC §9.4).
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/cpu/v4_cache.h"
#include "engine/model/config.h"
#include "engine/model/weights.h"

namespace deepinfer::cpu {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Receives named intermediates ("L3.attn_out" [T, D], "L1.indexer_topk" [T, k] ...) for
/// golden comparisons; names follow make_golden.py (V4_SPEC §11).
using StageSink = std::function<void(const std::string& name, const RowMat& value)>;

/// Inverse frequencies of one rotary table (rd/2 entries, fp32 like HF).
class RopeTable {
public:
    RopeTable() = default;
    RopeTable(const model::RopeConfig& rope, std::int64_t rope_dim);
    /// Rotates the last rope_dim channels of `v` (length `len`) at position `pos`; `inverse` uses -sin.
    void apply(float* v, std::int64_t len, std::int64_t pos, bool inverse = false) const;
    const std::vector<float>& inv_freq() const { return inv_freq_; }

private:
    std::vector<float> inv_freq_;
};

/// Output of one forward call over T tokens.
struct ForwardOutput {
    /// Logits for the requested rows ([T, V] when all rows were asked for, else [1, V] of the last).
    RowMat logits;
    /// Residual streams after the last block, [T, hc_mult * D] (the MTP block's input H).
    RowMat streams;
};

class V4Model {
public:
    V4Model(model::ModelConfig config, model::ModelWeights weights);

    const model::ModelConfig& config() const { return config_; }
    bool has_mtp() const { return weights_.mtp.has_value(); }
    /// Installs (or replaces) the MTP block, e.g. a random one for tests.
    void set_mtp(model::MtpWeights mtp) { weights_.mtp = std::move(mtp); }

    /// A fresh cache that can roll back up to `rollback_tokens` tokens.
    SeqCache new_cache(std::int64_t rollback_tokens) const;

    /// Runs `tokens` at positions cache.length.. and appends them to the cache. `all_logits`
    /// returns every row's logits, else only the last row's.
    ForwardOutput forward(SeqCache& cache, std::span<const std::int32_t> tokens, bool all_logits,
                          const StageSink* sink = nullptr) const;

    /// Runs the MTP block at positions cache.mtp_length..: row t pairs the streams `h.row(t)` of the
    /// token at that position with the embedding of `next_tokens[t]`; the logits of row t predict
    /// the token two positions ahead. Returns all rows' logits and the block's output streams.
    ForwardOutput mtp_forward(SeqCache& cache, const RowMat& h,
                              std::span<const std::int32_t> next_tokens) const;

private:
    struct HcMix;
    HcMix hc_pre(const RowMat& x, const model::Tensor& fn, const model::Tensor& base,
                 const model::Tensor& scale) const;
    void hc_post(RowMat& x, const HcMix& mix, const RowMat& y) const;
    void block_forward(const model::BlockWeights& b, const RopeTable& rope, LayerCache& cache,
                       std::int64_t p0, RowMat& x, std::span<const std::int32_t> tokens,
                       const std::string& tag, const StageSink* sink) const;
    RowMat attention(const model::BlockWeights& b, const RopeTable& rope, LayerCache& cache, std::int64_t p0,
                     const RowMat& xin, const std::string& tag, const StageSink* sink) const;
    void compress(const model::CompressorWeights& w, bool overlap, CompressorCache& cc, std::int64_t p0,
                  const RowMat& xin) const;
    std::vector<std::vector<std::int64_t>> indexer_select(const model::IndexerWeights& w,
                                                          const CompressorCache& keys, std::int64_t p0,
                                                          const RowMat& xin, const RowMat& qlat) const;
    RowMat moe(const model::BlockWeights& b, const RowMat& x, std::span<const std::int32_t> tokens,
               const std::string& tag, const StageSink* sink) const;
    RowMat head(const RowMat& streams, const model::Tensor& fn, const model::Tensor& base,
                const model::Tensor& scale, const model::Tensor& norm, bool all_rows,
                const StageSink* sink) const;
    LayerCache make_layer_cache(const model::BlockWeights& b, std::int64_t rollback) const;

    model::ModelConfig config_;
    model::ModelWeights weights_;
    RopeTable rope_main_;
    RopeTable rope_compress_;
};

}  // namespace deepinfer::cpu
