// Tensor naming: every accepted spelling (hub names, HF-saved hybrid names, HF module names) maps
// to one canonical form, the hub (DeepSeek) name (V4_SPEC §2.2).
#pragma once

#include <string>
#include <string_view>

namespace deepinfer::model {

/// Canonical (hub) name of `name`. Accepted forms:
/// * hub names: `embed.weight`, `layers.3.attn.wq_a.weight`, `layers.3.attn.wq_a.scale`,
/// `mtp.0.e_proj.weight`;
/// * HF `save_pretrained` hybrids: a leading `model.`, `embed_tokens.weight`, `hc_head.hc_fn`,
///   `layers.N.attn.norm.weight` (= `attn.kv_norm.weight`, only directly under `attn.`);
/// * HF module names: `model.layers.N.self_attn.q_a_proj.weight`, `...weight_scale_inv` (= `.scale`),
///   stacked experts `mlp.experts.gate_up_proj` / `down_proj` -> `ffn.experts.gate_up_proj` /
///   `ffn.experts.down_proj` (split by the weight loader).
/// Names that match no rule are returned unchanged.
std::string canonical_tensor_name(std::string_view name);

}  // namespace deepinfer::model
