// Tensor-name canonicalisation tables (HF module names and HF-saved hybrids -> hub names).
#include "engine/model/tensor_names.h"

#include <cctype>
#include <utility>

namespace deepinfer::model {
namespace {

struct Rename {
    std::string_view from;
    std::string_view to;
};

// HF module path -> hub module path (inside `layers.N.` / `mtp.N.`), for modules whose leaf is
// `weight` (or `weight_scale_inv` / `scale` for quantised linears).
constexpr Rename kModules[] = {
    {"input_layernorm", "attn_norm"},
    {"post_attention_layernorm", "ffn_norm"},
    {"self_attn.q_a_proj", "attn.wq_a"},
    {"self_attn.q_a_norm", "attn.q_norm"},
    {"self_attn.q_b_proj", "attn.wq_b"},
    {"self_attn.kv_proj", "attn.wkv"},
    {"self_attn.kv_norm", "attn.kv_norm"},
    {"self_attn.o_a_proj", "attn.wo_a"},
    {"self_attn.o_b_proj", "attn.wo_b"},
    {"self_attn.compressor.kv_proj", "attn.compressor.wkv"},
    {"self_attn.compressor.gate_proj", "attn.compressor.wgate"},
    {"self_attn.compressor.kv_norm", "attn.compressor.norm"},
    {"self_attn.compressor.indexer.kv_proj", "attn.indexer.compressor.wkv"},
    {"self_attn.compressor.indexer.gate_proj", "attn.indexer.compressor.wgate"},
    {"self_attn.compressor.indexer.kv_norm", "attn.indexer.compressor.norm"},
    {"self_attn.compressor.indexer.q_b_proj", "attn.indexer.wq_b"},
    {"self_attn.compressor.indexer.scorer.weights_proj", "attn.indexer.weights_proj"},
    {"mlp.gate", "ffn.gate"},
    {"mlp.shared_experts.gate_proj", "ffn.shared_experts.w1"},
    {"mlp.shared_experts.up_proj", "ffn.shared_experts.w3"},
    {"mlp.shared_experts.down_proj", "ffn.shared_experts.w2"},
    // HF-saved hybrid: the generic `.norm.` rule reversed gives `attn.norm` for the kv_norm.
    {"attn.norm", "attn.kv_norm"},
};

// Whole per-layer names that are not `<module>.weight`.
constexpr Rename kLeaves[] = {
    {"attn_hc.fn", "hc_attn_fn"},
    {"attn_hc.base", "hc_attn_base"},
    {"attn_hc.scale", "hc_attn_scale"},
    {"ffn_hc.fn", "hc_ffn_fn"},
    {"ffn_hc.base", "hc_ffn_base"},
    {"ffn_hc.scale", "hc_ffn_scale"},
    {"self_attn.sinks", "attn.attn_sink"},
    {"self_attn.compressor.position_bias", "attn.compressor.ape"},
    {"self_attn.compressor.indexer.position_bias", "attn.indexer.compressor.ape"},
    {"mlp.gate.e_score_correction_bias", "ffn.gate.bias"},
    {"mlp.gate.tid2eid", "ffn.gate.tid2eid"},
    {"mlp.experts.gate_up_proj", "ffn.experts.gate_up_proj"},
    {"mlp.experts.down_proj", "ffn.experts.down_proj"},
};

constexpr Rename kGlobals[] = {
    {"embed_tokens.weight", "embed.weight"}, {"lm_head.weight", "head.weight"},
    {"hc_head.hc_fn", "hc_head_fn"},         {"hc_head.hc_base", "hc_head_base"},
    {"hc_head.hc_scale", "hc_head_scale"},
};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Splits "layers.12.rest" / "mtp.0.rest" into ("layers.12.", "rest"); empty prefix otherwise.
std::pair<std::string_view, std::string_view> split_block(std::string_view s) {
    for (std::string_view head : {std::string_view("layers."), std::string_view("mtp.")}) {
        if (!starts_with(s, head)) continue;
        std::size_t i = head.size();
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0) ++i;
        if (i == head.size() || i >= s.size() || s[i] != '.') return {{}, s};
        return {s.substr(0, i + 1), s.substr(i + 1)};
    }
    return {{}, s};
}

std::string canonical_rest(std::string_view rest) {
    for (const auto& r : kLeaves)
        if (rest == r.from) return std::string(r.to);
    // <module>.<leaf> with leaf weight / weight_scale_inv / scale.
    for (std::string_view leaf :
         {std::string_view(".weight"), std::string_view(".weight_scale_inv"), std::string_view(".scale")}) {
        if (rest.size() <= leaf.size() || rest.substr(rest.size() - leaf.size()) != leaf) continue;
        const std::string_view module = rest.substr(0, rest.size() - leaf.size());
        const std::string_view out_leaf = leaf == ".weight" ? ".weight" : ".scale";
        for (const auto& r : kModules)
            if (module == r.from) return std::string(r.to) + std::string(out_leaf);
        return std::string(module) + std::string(out_leaf);
    }
    return std::string(rest);
}

}  // namespace

std::string canonical_tensor_name(std::string_view name) {
    std::string_view s = name;
    if (starts_with(s, "model.")) s.remove_prefix(6);
    for (const auto& g : kGlobals)
        if (s == g.from) return std::string(g.to);
    auto [prefix, rest] = split_block(s);
    if (prefix.empty()) return std::string(s);
    return std::string(prefix) + canonical_rest(rest);
}

}  // namespace deepinfer::model
