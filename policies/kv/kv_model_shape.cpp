// KV byte accounting per V4 layer type (formulas from V4_SPEC.md §5.1-5.2).
#include "policies/kv/kv_model_shape.h"

namespace deepinfer {

double kv_bytes_per_token(const KvModelShape& s) {
    const double csa = static_cast<double>(s.head_dim + s.index_head_dim) / s.csa_compress_rate;
    const double hca = static_cast<double>(s.head_dim) / s.hca_compress_rate;
    return (s.num_csa_layers * csa + s.num_hca_layers * hca) * s.dtype_bytes;
}

double kv_bytes_per_block(const KvModelShape& s, std::int32_t block_tokens) {
    return kv_bytes_per_token(s) * block_tokens;
}

double kv_sliding_bytes_per_seq(const KvModelShape& s) {
    const int layers = s.num_swa_layers + s.num_csa_layers + s.num_hca_layers + s.num_mtp_layers;
    return static_cast<double>(layers) * s.sliding_window_tokens * s.head_dim * s.dtype_bytes;
}

double kv_compressor_bytes_per_seq(const KvModelShape& s) {
    const double d = s.head_dim;
    const double di = s.index_head_dim;
    if (s.online_compressor_state) {
        // Per channel a running max, normaliser and weighted sum (3 fp32 values); CSA keeps two
        // accumulators for the main entries and two for the indexer keys.
        const double csa = 2.0 * 3.0 * d + 2.0 * 3.0 * di;
        const double hca = 3.0 * d;
        return (s.num_csa_layers * csa + s.num_hca_layers * hca) * 4.0;
    }
    // HF layout: raw c and z of the open window (CSA windows are 2*head_dim wide since they overlap)
    // plus the stored "a" halves of the last complete window.
    const double m = s.csa_compress_rate;
    const double csa_main = (m - 1.0) * (2.0 * d + 2.0 * d) + m * d + m * d;
    const double csa_index = (m - 1.0) * (2.0 * di + 2.0 * di) + m * di + m * di;
    const double hca = (s.hca_compress_rate - 1.0) * (d + d);
    return (s.num_csa_layers * (csa_main + csa_index) + s.num_hca_layers * hca) * s.dtype_bytes;
}

double kv_fixed_bytes_per_seq(const KvModelShape& s) {
    return kv_sliding_bytes_per_seq(s) + kv_compressor_bytes_per_seq(s);
}

double kv_bytes_per_seq(const KvModelShape& s, std::int64_t num_tokens, std::int32_t block_tokens) {
    const std::int64_t blocks = (num_tokens + block_tokens - 1) / block_tokens;
    return kv_fixed_bytes_per_seq(s) + static_cast<double>(blocks) * kv_bytes_per_block(s, block_tokens);
}

}  // namespace deepinfer
