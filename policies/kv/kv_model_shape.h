// KV memory per sequence for the three V4 attention layer types (V4_SPEC.md §5.1-5.3): what grows
// with context (CSA and HCA compressed entries) and what is bounded per sequence (sliding windows,
// compressor buffers). The block pool and the router size memory with these functions.
#pragma once

#include <cstdint>

#include "policies/common/json_reader.h"

namespace deepinfer {

/// The attention-cache shape of a V4-family model. Defaults are V4-Flash with bf16 storage.
struct KvModelShape {
    /// Sliding-window-only layers (V4-Flash: layers 0 and 1).
    std::int32_t num_swa_layers = 2;
    /// Compressed sparse attention layers (rate `csa_compress_rate`, with a lightning indexer).
    std::int32_t num_csa_layers = 21;
    /// Heavily compressed attention layers (rate `hca_compress_rate`).
    std::int32_t num_hca_layers = 20;
    /// MTP layers: each keeps a sliding window like an SWA layer (0 when drafting is off).
    std::int32_t num_mtp_layers = 1;
    /// Width of K=V and of compressed entries (elements).
    std::int32_t head_dim = 512;
    /// Width of the CSA indexer keys (elements).
    std::int32_t index_head_dim = 128;
    std::int32_t csa_compress_rate = 4;
    std::int32_t hca_compress_rate = 128;
    /// Tokens of sliding K=V every layer keeps (the window W).
    std::int32_t sliding_window_tokens = 128;
    /// Bytes per stored element (2 = bf16, 4 = fp32).
    std::int32_t dtype_bytes = 2;
    /// Compressor buffers as online softmax accumulators in fp32 (§5.1 "equivalent smaller state")
    /// instead of HF's raw window buffers.
    bool online_compressor_state = false;
};

/// Reads a KvModelShape; every key optional (V4-Flash defaults), unknown keys rejected. Keys are the
/// field names above.
KvModelShape kv_model_shape_from_json(const JsonReader& r);

/// Bytes of cache that grow with every token of context: CSA entries + indexer keys at 1/rate,
/// HCA entries at 1/rate. V4-Flash bf16: 21 x 320 + 20 x 8 = 6880 B/token.
double kv_bytes_per_token(const KvModelShape& shape);
/// Bytes held by one `block_tokens`-token page of compressed entries over all layers.
double kv_bytes_per_block(const KvModelShape& shape, std::int32_t block_tokens);
/// Bytes of sliding windows (every layer, MTP included) per sequence.
double kv_sliding_bytes_per_seq(const KvModelShape& shape);
/// Bytes of CSA/HCA compressor, indexer and overlap buffers per sequence (upper bound, HF layout,
/// or the fp32 online accumulators).
double kv_compressor_bytes_per_seq(const KvModelShape& shape);
/// Bounded per-sequence state: sliding windows + compressor buffers. V4-Flash bf16, HF layout:
/// 5.5 MiB + 5.47 MiB.
double kv_fixed_bytes_per_seq(const KvModelShape& shape);
/// Whole cache of one sequence holding `num_tokens` tokens of context in `block_tokens` pages
/// (the last page counted whole).
double kv_bytes_per_seq(const KvModelShape& shape, std::int64_t num_tokens, std::int32_t block_tokens);

}  // namespace deepinfer
