// V4-Flash FLOP/byte formulas and the roofline-derived op-group profiles.
#include "policies/cost/roofline.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "policies/common/check.h"

namespace deepinfer::roofline {
namespace {

// V4-Flash shape (V4_SPEC.md §1, §10.1).
constexpr double kLayers = 43, kCsaLayers = 21, kHcaLayers = 20, kScoreLayers = 40;
constexpr double kHidden = 4096, kVocab = 129280;
constexpr double kWindow = 128, kCsaTopK = 512, kCsaRate = 4, kHcaRate = 128;
constexpr double kHeads = 64, kHeadDim = 512, kIndexHeads = 64, kIndexDim = 128;
constexpr double kTopK = 6;

// Parameter counts per layer (V4_SPEC.md §2.1, §10.1).
constexpr double kAttnF8 = 1024.0 * 4096 + 32768.0 * 1024 + 512.0 * 4096 + 8192.0 * 4096 + 4096.0 * 8192;
constexpr double kAttnBf16 = 1024 + 512;  // q_a_norm, kv_norm
constexpr double kAttnF32 = 64;           // sinks
constexpr double kCsaCompBf16 = 2 * 1024.0 * 4096 + 512, kCsaCompF32 = 4 * 1024.0;
constexpr double kCsaIdxBf16 = 2 * 256.0 * 4096 + 128 + 64.0 * 4096, kCsaIdxF8 = 8192.0 * 1024,
                 kCsaIdxF32 = 4 * 256.0;
constexpr double kHcaCompBf16 = 2 * 512.0 * 4096 + 512, kHcaCompF32 = 128 * 512.0;
constexpr double kRouterBf16 = 256 * 4096.0, kRouterBiasF32 = 256;
constexpr double kSharedF8 = 3 * 2048.0 * 4096;
constexpr double kMhcF32 = 2 * (24 * 16384.0 + 24 + 3);
constexpr double kBlockNormBf16 = 2 * 4096.0;
constexpr double kFinalBf16 = 4096, kFinalF32 = 4 * 16384.0 + 4 + 1;
constexpr double kExpertParams = 3 * 4096.0 * 2048;

/// F8 weights carry one E8M0 byte per 128x128 block.
constexpr double f8_bytes(double n) { return n * (1.0 + 1.0 / 16384.0); }

double dense_params_with_head() {
    return kLayers * (kAttnF8 + kAttnBf16 + kAttnF32 + kRouterBf16 + kSharedF8 + kMhcF32 + kBlockNormBf16) +
           kCsaLayers * (kCsaCompBf16 + kCsaCompF32 + kCsaIdxBf16 + kCsaIdxF8 + kCsaIdxF32) +
           kHcaLayers * (kHcaCompBf16 + kHcaCompF32) + kScoreLayers * kRouterBiasF32 + kVocab * kHidden +
           kFinalBf16 + kFinalF32;
}

double roof_us(double bytes, double bytes_per_s, double flops, double flop_per_s) {
    return std::max(bytes / bytes_per_s, flops / flop_per_s) * 1e6;
}

std::vector<double> pow2_grid(double lo, double hi) {
    std::vector<double> v;
    for (double x = lo; x <= hi; x *= 2) v.push_back(x);
    return v;
}

}  // namespace

double v4_routed_expert_params() { return kExpertParams; }
double v4_routed_expert_bytes_hub() { return kExpertParams / 2 + kExpertParams / 32; }
double v4_lm_head_params() { return kVocab * kHidden; }
double v4_active_params_per_token() { return dense_params_with_head() + kLayers * kTopK * kExpertParams; }
double v4_dense_params_no_head() { return dense_params_with_head() - v4_lm_head_params(); }

double v4_dense_bytes_hub() {
    return kLayers * (f8_bytes(kAttnF8) + 2 * kAttnBf16 + 4 * kAttnF32 + 2 * kRouterBf16 +
                      f8_bytes(kSharedF8) + 4 * kMhcF32 + 2 * kBlockNormBf16) +
           kCsaLayers *
               (2 * kCsaCompBf16 + 4 * kCsaCompF32 + 2 * kCsaIdxBf16 + f8_bytes(kCsaIdxF8) + 4 * kCsaIdxF32) +
           kHcaLayers * (2 * kHcaCompBf16 + 4 * kHcaCompF32) + kScoreLayers * 4 * kRouterBiasF32 +
           2 * kVocab * kHidden + 2 * kFinalBf16 + 4 * kFinalF32;
}

double attention_core_flops(double num_keys) { return 4 * kHeads * kHeadDim * num_keys; }
double swa_keys(double n) { return std::min(kWindow, std::max(n, 1.0)); }
double csa_keys(double n) { return swa_keys(n) + std::min(kCsaTopK, n / kCsaRate); }
double hca_keys(double n) { return swa_keys(n) + n / kHcaRate; }
double csa_indexer_flops(double n) { return 2 * kIndexHeads * kIndexDim * n / kCsaRate; }
double swa_read_bytes(double n) { return swa_keys(n) * kHeadDim * 2; }
double csa_read_bytes(double n) {
    return swa_read_bytes(n) + 64 * n + std::min(kCsaTopK, n / kCsaRate) * 1024;
}
double hca_read_bytes(double n) { return swa_read_bytes(n) + 8 * n; }
double kv_bytes_per_token() { return kCsaLayers * 320 + kHcaLayers * 8; }
double kv_bytes_per_sequence_fixed() { return (kLayers + 1) * kWindow * kHeadDim * 2; }

HardwareSpec hardware_spec(const std::string& key) {
    if (key == "h200")
        return {.profile_name = "h200-roofline",
                .hardware =
                    "NVIDIA H200 SXM 141GB (datasheet: 4.8 TB/s HBM3e, 989 TFLOP/s dense bf16, "
                    "1979 TFLOP/s dense fp8, NVLink 900 GB/s)",
                .hbm_bytes_per_s = 4.8e12,
                .bf16_flop_per_s = 989e12,
                .fp8_flop_per_s = 1979e12,
                .nvlink_bytes_per_s = 900e9};
    if (key == "b200")
        return {.profile_name = "b200-roofline",
                .hardware =
                    "NVIDIA B200 (SM100; datasheet: 8 TB/s HBM3e, 2250 TFLOP/s dense bf16, "
                    "4500 TFLOP/s dense fp8, NVLink 1.8 TB/s)",
                .hbm_bytes_per_s = 8e12,
                .bf16_flop_per_s = 2250e12,
                .fp8_flop_per_s = 4500e12,
                .nvlink_bytes_per_s = 1.8e12};
    throw ConfigError("--hardware", "", "h200 or b200", "\"" + key + "\"");
}

double dense_us(const HardwareSpec& hw, const Efficiency& eff, double tokens) {
    const double flops = 2 * v4_dense_params_no_head() * tokens;
    const double bytes = v4_dense_bytes_hub() + tokens * kHidden * 2 * kLayers * 4;  // weights + activations
    return roof_us(bytes, hw.hbm_bytes_per_s * eff.memory, flops, hw.fp8_flop_per_s * eff.compute) +
           kLayers * eff.launch_us;
}

double attention_us(const HardwareSpec& hw, const Efficiency& eff, const char* layer_type, double tokens,
                    double context) {
    const std::string t = layer_type;
    double flops_per_token = 0, read_per_token = 0;
    if (t == "swa") {
        flops_per_token = attention_core_flops(swa_keys(context));
        read_per_token = swa_read_bytes(context);
    } else if (t == "csa") {
        flops_per_token = attention_core_flops(csa_keys(context)) + csa_indexer_flops(context);
        read_per_token = csa_read_bytes(context);
    } else {
        DI_CHECK(t == "hca", "unknown attention type " << t);
        flops_per_token = attention_core_flops(hca_keys(context));
        read_per_token = hca_read_bytes(context);
    }
    // NOTE: decode-sized steps are one sequence per token (every token reads its own KV); larger steps
    // are prefill chunks whose query tiles share the KV they read.
    const double reuse = tokens <= eff.decode_tokens_max
                             ? 1.0
                             : std::min(eff.prefill_kv_reuse_max, tokens / eff.decode_tokens_max);
    return roof_us(tokens * read_per_token / reuse, hw.hbm_bytes_per_s * eff.memory, tokens * flops_per_token,
                   hw.bf16_flop_per_s * eff.compute) +
           eff.launch_us;
}

double moe_experts_us(const HardwareSpec& hw, const Efficiency& eff, double pairs, double experts) {
    const double bytes =
        experts * v4_routed_expert_bytes_hub() + pairs * kHidden * 3;  // weights + fp8 in / bf16 out
    const double flops = 2 * kExpertParams * pairs;
    return roof_us(bytes, hw.hbm_bytes_per_s * eff.memory, flops, hw.fp8_flop_per_s * eff.compute) +
           eff.launch_us;
}

double sampling_us(const HardwareSpec& hw, const Efficiency& eff, double seqs) {
    const double flops = 2 * v4_lm_head_params() * seqs;
    const double bytes = seqs * kVocab * 4 * 2;  // fp32 logits written then read by the sampler
    return roof_us(bytes, hw.hbm_bytes_per_s * eff.memory, flops, hw.bf16_flop_per_s * eff.compute) +
           eff.sampling_floor_us;
}

double ep_bytes_per_token_copy() { return kHidden * 1 + kHidden * 2; }  // fp8 dispatch + bf16 combine

double ep_dispatch_combine_us(const HardwareSpec& hw, const Efficiency& eff, double tokens) {
    const double bytes = tokens * ep_bytes_per_token_copy();
    return bytes / (hw.nvlink_bytes_per_s * eff.nvlink) * 1e6 + eff.ep_latency_us;
}

ProfileSet derive_profile(const HardwareSpec& hw, const Efficiency& eff, const std::string& date,
                          const std::string& build) {
    std::ostringstream notes;
    notes
        << "Roofline: time = max(bytes / (peak bandwidth x " << eff.memory << "), FLOPs / (peak rate x "
        << eff.compute
        << ")) + fixed costs, from V4-Flash per-operation FLOPs and bytes (V4_SPEC.md 5.2, 5.3, 10) "
        << "in hub storage formats. Weight matmuls and routed experts at the dense fp8 rate (F4 experts are "
        << "dequantised to fp8; no FP4 tensor-core rate assumed), attention and indexer at the bf16 rate, KV "
           "cache "
        << "bf16. Fixed costs: " << eff.launch_us << " us per layer and op group, " << eff.ep_latency_us
        << " us per dispatch+combine, " << eff.sampling_floor_us << " us sampling. Steps of more than "
        << eff.decode_tokens_max << " tokens are prefill chunks sharing KV reads (reuse up to "
        << eff.prefill_kv_reuse_max << "x). EP traffic over NVLink at " << eff.nvlink
        << " of peak: 4096 B fp8 out + 8192 B bf16 back per token copy. Dense includes the LM head weight "
           "read; "
        << "LM head FLOPs are charged to sampling. Not measured: replace with the profiler's curves.";
    const ProfileMeta meta{.hardware = hw.hardware,
                           .kind = "derived",
                           .method = "roofline",
                           .date = date,
                           .build = build,
                           .notes = notes.str()};
    ProfileSet set;
    set.name = hw.profile_name;
    auto add1 = [&](const char* group, const char* axis, std::vector<double> grid, auto fn) {
        std::vector<double> t;
        for (double x : grid) t.push_back(fn(x));
        set.groups.emplace(group,
                           OpGroupProfile{.op_group = group,
                                          .meta = meta,
                                          .curve = Curve({CurveAxis{axis, std::move(grid)}}, std::move(t))});
    };
    auto add2 = [&](const char* group, const char* ax, std::vector<double> gx, const char* ay,
                    std::vector<double> gy, auto fn) {
        std::vector<double> t;
        for (double x : gx)
            for (double y : gy) t.push_back(fn(x, y));
        set.groups.emplace(
            group, OpGroupProfile{.op_group = group,
                                  .meta = meta,
                                  .curve = Curve({CurveAxis{ax, std::move(gx)}, CurveAxis{ay, std::move(gy)}},
                                                 std::move(t))});
    };
    const auto tokens = pow2_grid(1, 65536);
    auto context = pow2_grid(16, 1048576);
    context.insert(context.begin(), 1);
    add1("dense", "tokens", tokens, [&](double x) { return dense_us(hw, eff, x); });
    const std::pair<const char*, const char*> attention_groups[] = {
        {"attention_swa", "swa"}, {"attention_csa", "csa"}, {"attention_hca", "hca"}};
    for (const auto& [group, type] : attention_groups)
        add2(group, "tokens", tokens, "context", context,
             [&, type = type](double x, double y) { return attention_us(hw, eff, type, x, y); });
    add2("moe_experts", "tokens", pow2_grid(1, 262144), "experts", pow2_grid(1, 256),
         [&](double x, double y) { return moe_experts_us(hw, eff, x, y); });
    add1("sampling", "seqs", pow2_grid(1, 16384), [&](double x) { return sampling_us(hw, eff, x); });
    add1("ep_dispatch_combine", "tokens", pow2_grid(1, 262144),
         [&](double x) { return ep_dispatch_combine_us(hw, eff, x); });
    return set;
}

}  // namespace deepinfer::roofline
