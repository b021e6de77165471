// Roofline model of V4-Flash: per-operation FLOPs and bytes (V4_SPEC.md §5.2, §5.3, §10) and the
// derived op-group profiles (profiles/SCHEMA.md) they give on a GPU described by datasheet figures.
#pragma once

#include <string>

#include "policies/cost/profile.h"

namespace deepinfer::roofline {

// ---- V4-Flash sizes (V4_SPEC.md §10; "hub" = the checkpoint's F8/F4/BF16/F32 storage) ----------

/// Active parameters per decoded token, LM head included, embedding excluded (13.27 B).
double v4_active_params_per_token();
/// Parameters of one routed expert (3 x 4096 x 2048 = 25,165,824).
double v4_routed_expert_params();
/// Bytes of one routed expert in hub format (F4 values + one E8M0 scale per 32): 13.37 MB.
double v4_routed_expert_bytes_hub();
/// Bytes of every non-routed weight (LM head included, embedding and hash tables excluded) in hub
/// format: 7.77 GB.
double v4_dense_bytes_hub();
/// Dense (non-routed) parameters active per token, LM head excluded (it runs only on sampled rows).
double v4_dense_params_no_head();
/// LM head parameters (129280 x 4096).
double v4_lm_head_params();

/// Attention-core FLOPs of one query token in one layer over `num_keys` keys (QK^T and PV over the
/// shared K=V head): 4 * 64 * 512 * num_keys.
double attention_core_flops(double num_keys);
/// Keys one query at position `context` sees: SWA min(128, n); CSA min(128, n) + min(512, n/4);
/// HCA min(128, n) + n/128.
double swa_keys(double context);
double csa_keys(double context);
double hca_keys(double context);
/// Lightning-indexer scoring FLOPs for one query in one CSA layer: 2 * 64 * 128 * n/4.
double csa_indexer_flops(double context);
/// KV bytes one decode query reads in one layer (bf16 storage, §5.3): SWA 128 KiB; CSA 128 KiB +
/// 64 n + min(512, n/4) KiB; HCA 128 KiB + 8 n.
double swa_read_bytes(double context);
double csa_read_bytes(double context);
double hca_read_bytes(double context);
/// Growing KV cache per token of context, all layers (6880 B), and the bounded per-sequence state
/// (sliding windows of 43 layers + MTP: 5.5 MiB).
double kv_bytes_per_token();
double kv_bytes_per_sequence_fixed();
/// Expert-parallel traffic per token copy and MoE layer: fp8 hidden state out (4,096 B) plus the bf16
/// expert output back (8,192 B).
double ep_bytes_per_token_copy();

// ---- Hardware and efficiency --------------------------------------------------------------------

/// Datasheet figures of one GPU. Rates are dense (no sparsity).
struct HardwareSpec {
    /// Profile name written to the manifest ("h200-roofline").
    std::string profile_name;
    /// Human description written to every op-group file.
    std::string hardware;
    double hbm_bytes_per_s = 0;
    double bf16_flop_per_s = 0;
    double fp8_flop_per_s = 0;
    /// Per-GPU unidirectional scale-up bandwidth (NVLink).
    double nvlink_bytes_per_s = 0;
};

/// "h200" or "b200"; nullopt-free: throws ConfigError (file label "--hardware") otherwise.
HardwareSpec hardware_spec(const std::string& key);

/// Fractions of peak that kernels reach, and fixed per-kernel costs. Stated in every profile's notes.
struct Efficiency {
    double compute = 0.6;
    double memory = 0.8;
    double nvlink = 0.7;
    /// Fixed cost of one kernel launch sequence per op group and layer, microseconds.
    double launch_us = 4.0;
    /// Fixed latency of one dispatch + combine pair (two all-to-alls), microseconds.
    double ep_latency_us = 12.0;
    /// Fixed cost of the sampling kernels per step, microseconds.
    double sampling_floor_us = 15.0;
    /// Steps with more tokens than this are treated as prefill chunks whose tokens share KV reads.
    double decode_tokens_max = 256;
    /// Largest KV-read reuse factor of a prefill chunk (query tile size).
    double prefill_kv_reuse_max = 64;
};

// ---- Op-group times on one rank (microseconds) ---------------------------------------------------

double dense_us(const HardwareSpec& hw, const Efficiency& eff, double tokens);
double attention_us(const HardwareSpec& hw, const Efficiency& eff, const char* layer_type, double tokens,
                    double context);
double moe_experts_us(const HardwareSpec& hw, const Efficiency& eff, double token_expert_pairs,
                      double experts);
double sampling_us(const HardwareSpec& hw, const Efficiency& eff, double seqs);
double ep_dispatch_combine_us(const HardwareSpec& hw, const Efficiency& eff, double tokens);

/// Every op group of SCHEMA.md sampled on a fixed grid: kind=derived, method=roofline, notes stating
/// the assumptions. `date` and `build` are recorded as given.
ProfileSet derive_profile(const HardwareSpec& hw, const Efficiency& eff, const std::string& date,
                          const std::string& build);

}  // namespace deepinfer::roofline
