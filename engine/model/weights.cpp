// Weight loading: dtype conversion, FP8/FP4 dequantisation, shape checks, completeness checks.
#include "engine/model/weights.h"

#include <cmath>
#include <cstring>
#include <set>
#include <sstream>

#include "policies/common/rng.h"

namespace deepinfer::model {
namespace {

std::string shape_str(const std::vector<std::int64_t>& s) {
    std::ostringstream os;
    os << "[";
    for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
    os << "]";
    return os.str();
}

[[noreturn]] void fail(const Checkpoint::Entry& e, const std::string& msg) {
    throw CheckpointError(e.file->path(), "tensor \"" + e.stored_name + "\": " + msg);
}

bool is_float_dtype(DType d) {
    return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16 || d == DType::kF64;
}

std::string scale_name(const std::string& weight_name) {
    const std::string suffix = ".weight";
    if (weight_name.size() > suffix.size() &&
        weight_name.compare(weight_name.size() - suffix.size(), suffix.size(), suffix) == 0)
        return weight_name.substr(0, weight_name.size() - suffix.size()) + ".scale";
    return weight_name + ".scale";
}

std::vector<float> load_scale(const Checkpoint& ckpt, const Checkpoint::Entry& weight,
                              const std::string& name, const std::vector<std::int64_t>& shape) {
    const Checkpoint::Entry* s = ckpt.find(name);
    if (s == nullptr)
        fail(weight, "quantised as " + std::string(model::name(weight.info->dtype)) + " but its scale \"" +
                         name + "\" is missing");
    if (s->info->shape != shape)
        fail(*s, "scale shape " + shape_str(s->info->shape) + ", expected " + shape_str(shape));
    if (s->info->dtype != DType::kF8E8M0 && !is_float_dtype(s->info->dtype))
        fail(*s, "scale dtype " + std::string(model::name(s->info->dtype)) +
                     ", expected F8_E8M0 or a float type");
    std::vector<float> out(static_cast<std::size_t>(s->info->numel()));
    convert_to_float(s->info->dtype, ckpt.data(*s), out);
    return out;
}

std::span<const std::uint8_t> as_u8(std::span<const std::byte> b) {
    return {reinterpret_cast<const std::uint8_t*>(b.data()), b.size()};
}

// Loads tensors by canonical name and remembers which were used.
class Loader {
public:
    Loader(const Checkpoint& ckpt, const LoadOptions& opt) : ckpt_(ckpt), opt_(opt) {}

    Tensor get(const std::string& name, std::vector<std::int64_t> shape) {
        used_.insert(name);
        used_.insert(scale_name(name));
        return load_tensor(ckpt_, name, shape, opt_);
    }
    bool has(const std::string& name) const { return ckpt_.find(name) != nullptr; }

    std::vector<std::int32_t> get_ids(const std::string& name, const std::vector<std::int64_t>& shape,
                                      std::int64_t bound) {
        used_.insert(name);
        const Checkpoint::Entry* e = ckpt_.find(name);
        if (e == nullptr)
            throw CheckpointError(ckpt_.path(),
                                  "missing tensor \"" + name + "\" (expected " + shape_str(shape) + ")");
        if (e->info->shape != shape)
            fail(*e, "shape " + shape_str(e->info->shape) + ", expected " + shape_str(shape));
        if (e->info->dtype != DType::kI32 && e->info->dtype != DType::kI64)
            fail(*e, "dtype " + std::string(model::name(e->info->dtype)) + ", expected I32 or I64");
        const auto bytes = ckpt_.data(*e);
        std::vector<std::int32_t> out(static_cast<std::size_t>(e->info->numel()));
        for (std::size_t i = 0; i < out.size(); ++i) {
            std::int64_t v = 0;
            if (e->info->dtype == DType::kI32) {
                std::int32_t x;
                std::memcpy(&x, bytes.data() + 4 * i, 4);
                v = x;
            } else {
                std::memcpy(&v, bytes.data() + 8 * i, 8);
            }
            if (v < 0 || v >= bound)
                fail(*e,
                     "entry " + std::to_string(v) + " is not an expert id below " + std::to_string(bound));
            out[i] = static_cast<std::int32_t>(v);
        }
        return out;
    }

    void check_all_used(bool mtp_loaded) const {
        for (const std::string& n : ckpt_.names()) {
            if (used_.count(n) != 0) continue;
            if (!mtp_loaded && n.rfind("mtp.", 0) == 0) continue;
            const Checkpoint::Entry* e = ckpt_.find(n);
            fail(*e, "unexpected tensor (\"" + n + "\" is not part of a model with " + e->file->path() +
                         "'s config; wrong config or layer count?)");
        }
    }

private:
    const Checkpoint& ckpt_;
    const LoadOptions& opt_;
    std::set<std::string> used_;
};

CompressorWeights load_compressor(Loader& ld, const std::string& p, std::int64_t dim, std::int64_t width,
                                  std::int64_t rate, std::int64_t hidden) {
    return CompressorWeights{.wkv = ld.get(p + "wkv.weight", {width, hidden}),
                             .wgate = ld.get(p + "wgate.weight", {width, hidden}),
                             .ape = ld.get(p + "ape", {rate, width}),
                             .norm = ld.get(p + "norm.weight", {dim})};
}

ExpertWeights load_expert(Loader& ld, const std::string& p, std::int64_t inter, std::int64_t hidden) {
    return ExpertWeights{.w1 = ld.get(p + "w1.weight", {inter, hidden}),
                         .w2 = ld.get(p + "w2.weight", {hidden, inter}),
                         .w3 = ld.get(p + "w3.weight", {inter, hidden})};
}

std::vector<ExpertWeights> load_experts(Loader& ld, const std::string& p, const ModelConfig& c) {
    const std::int64_t E = c.n_routed_experts, I = c.moe_intermediate_size, D = c.hidden_size;
    std::vector<ExpertWeights> out;
    // HF module form: stacked gate_up_proj [E, 2I, D] and down_proj [E, D, I].
    if (ld.has(p + "experts.gate_up_proj") || ld.has(p + "experts.down_proj")) {
        const Tensor gu = ld.get(p + "experts.gate_up_proj", {E, 2 * I, D});
        const Tensor dn = ld.get(p + "experts.down_proj", {E, D, I});
        for (std::int64_t e = 0; e < E; ++e) {
            ExpertWeights w;
            auto slice = [](const Tensor& t, std::int64_t offset, std::int64_t rows, std::int64_t cols) {
                Tensor s{.shape = {rows, cols}, .data = {}};
                s.data.assign(t.data.begin() + offset, t.data.begin() + offset + rows * cols);
                return s;
            };
            w.w1 = slice(gu, e * 2 * I * D, I, D);
            w.w3 = slice(gu, e * 2 * I * D + I * D, I, D);
            w.w2 = slice(dn, e * D * I, D, I);
            out.push_back(std::move(w));
        }
        return out;
    }
    for (std::int64_t e = 0; e < E; ++e)
        out.push_back(load_expert(ld, p + "experts." + std::to_string(e) + ".", I, D));
    return out;
}

BlockWeights load_block(Loader& ld, const std::string& p, const ModelConfig& c, AttentionType attention,
                        MlpType mlp, std::int64_t ratio) {
    const std::int64_t D = c.hidden_size, n = c.hc_mult, mix = (2 + n) * n, H = c.num_heads, Dh = c.head_dim;
    BlockWeights b;
    b.attention = attention;
    b.mlp = mlp;
    b.compress_ratio = ratio;
    b.attn_norm = ld.get(p + "attn_norm.weight", {D});
    b.ffn_norm = ld.get(p + "ffn_norm.weight", {D});
    b.hc_attn_fn = ld.get(p + "hc_attn_fn", {mix, n * D});
    b.hc_attn_base = ld.get(p + "hc_attn_base", {mix});
    b.hc_attn_scale = ld.get(p + "hc_attn_scale", {3});
    b.hc_ffn_fn = ld.get(p + "hc_ffn_fn", {mix, n * D});
    b.hc_ffn_base = ld.get(p + "hc_ffn_base", {mix});
    b.hc_ffn_scale = ld.get(p + "hc_ffn_scale", {3});
    b.wq_a = ld.get(p + "attn.wq_a.weight", {c.q_lora_rank, D});
    b.q_norm = ld.get(p + "attn.q_norm.weight", {c.q_lora_rank});
    b.wq_b = ld.get(p + "attn.wq_b.weight", {H * Dh, c.q_lora_rank});
    b.wkv = ld.get(p + "attn.wkv.weight", {Dh, D});
    b.kv_norm = ld.get(p + "attn.kv_norm.weight", {Dh});
    b.wo_a = ld.get(p + "attn.wo_a.weight", {c.o_groups * c.o_lora_rank, H * Dh / c.o_groups});
    b.wo_b = ld.get(p + "attn.wo_b.weight", {D, c.o_groups * c.o_lora_rank});
    b.attn_sink = ld.get(p + "attn.attn_sink", {H});
    if (attention != AttentionType::kSliding) {
        const std::int64_t width = attention == AttentionType::kCsa ? 2 * Dh : Dh;
        b.compressor = load_compressor(ld, p + "attn.compressor.", Dh, width, ratio, D);
    }
    if (attention == AttentionType::kCsa) {
        IndexerWeights ix;
        ix.compressor = load_compressor(ld, p + "attn.indexer.compressor.", c.index_head_dim,
                                        2 * c.index_head_dim, ratio, D);
        ix.wq_b = ld.get(p + "attn.indexer.wq_b.weight", {c.index_n_heads * c.index_head_dim, c.q_lora_rank});
        ix.weights_proj = ld.get(p + "attn.indexer.weights_proj.weight", {c.index_n_heads, D});
        b.indexer = std::move(ix);
    }
    b.gate = ld.get(p + "ffn.gate.weight", {c.n_routed_experts, D});
    if (mlp == MlpType::kHash) {
        // NOTE: HF zero-fills a missing tid2eid (all tokens -> expert 0); we refuse (V4_SPEC §9.6).
        b.tid2eid =
            ld.get_ids(p + "ffn.gate.tid2eid", {c.vocab_size, c.num_experts_per_tok}, c.n_routed_experts);
    } else {
        b.gate_bias = ld.get(p + "ffn.gate.bias", {c.n_routed_experts});
    }
    b.experts = load_experts(ld, p + "ffn.", c);
    b.shared = load_expert(ld, p + "ffn.shared_experts.", c.moe_intermediate_size, D);
    return b;
}

}  // namespace

std::int64_t Tensor::cols() const {
    std::int64_t n = 1;
    for (std::size_t i = 1; i < shape.size(); ++i) n *= shape[i];
    return n;
}

Tensor load_tensor(const Checkpoint& ckpt, const std::string& name, const std::vector<std::int64_t>& shape,
                   const LoadOptions& options) {
    const Checkpoint::Entry* e = ckpt.find(name);
    if (e == nullptr)
        throw CheckpointError(ckpt.path(),
                              "missing tensor \"" + name + "\" (expected " + shape_str(shape) + ")");
    const TensorInfo& info = *e->info;
    Tensor t;
    t.shape = shape;
    std::int64_t numel = 1;
    for (auto d : shape) numel *= d;
    t.data.resize(static_cast<std::size_t>(numel));
    if (is_float_dtype(info.dtype)) {
        if (info.shape != shape)
            fail(*e, "shape " + shape_str(info.shape) + ", expected " + shape_str(shape));
        convert_to_float(info.dtype, ckpt.data(*e), t.data);
        return t;
    }
    const std::string sname = scale_name(name);
    if (info.dtype == DType::kF8E4M3 && shape.size() == 2) {
        if (info.shape != shape)
            fail(*e, "shape " + shape_str(info.shape) + ", expected " + shape_str(shape));
        const std::int64_t blk = options.fp8_block;
        const auto scale =
            load_scale(ckpt, *e, sname, {(shape[0] + blk - 1) / blk, (shape[1] + blk - 1) / blk});
        dequant_fp8_block(as_u8(ckpt.data(*e)), scale, shape[0], shape[1], blk, t.data);
        return t;
    }
    if ((info.dtype == DType::kI8 || info.dtype == DType::kU8) && shape.size() == 2) {
        const std::int64_t g = options.fp4_group;
        if (shape[1] % g != 0 || info.shape != std::vector<std::int64_t>{shape[0], shape[1] / 2})
            fail(*e, "packed FP4 shape " + shape_str(info.shape) + ", expected " +
                         shape_str({shape[0], shape[1] / 2}));
        const auto scale = load_scale(ckpt, *e, sname, {shape[0], shape[1] / g});
        dequant_fp4(as_u8(ckpt.data(*e)), scale, shape[0], shape[1], g, t.data);
        return t;
    }
    fail(*e, "dtype " + std::string(model::name(info.dtype)) + " with shape " + shape_str(info.shape) +
                 " cannot hold a float tensor of shape " + shape_str(shape));
}

ModelWeights load_model_weights(const Checkpoint& ckpt, const ModelConfig& c, const LoadOptions& options) {
    Loader ld(ckpt, options);
    ModelWeights w;
    const std::int64_t D = c.hidden_size, n = c.hc_mult;
    w.embed = ld.get("embed.weight", {c.vocab_size, D});
    if (c.tie_word_embeddings && !ld.has("head.weight"))
        w.head = w.embed;
    else
        w.head = ld.get("head.weight", {c.vocab_size, D});
    w.norm = ld.get("norm.weight", {D});
    w.hc_head_fn = ld.get("hc_head_fn", {n, n * D});
    w.hc_head_base = ld.get("hc_head_base", {n});
    w.hc_head_scale = ld.get("hc_head_scale", {1});
    for (std::int64_t i = 0; i < c.num_layers; ++i) {
        const auto li = static_cast<std::size_t>(i);
        w.layers.push_back(load_block(ld, "layers." + std::to_string(i) + ".", c, c.layer_types[li],
                                      c.mlp_types[li], c.compress_ratios[li]));
    }
    const bool mtp = options.load_mtp && ld.has("mtp.0.e_proj.weight");
    if (mtp) {
        MtpWeights m;
        m.block = load_block(ld, "mtp.0.", c, AttentionType::kSliding, MlpType::kScore, 0);
        m.e_proj = ld.get("mtp.0.e_proj.weight", {D, D});
        m.h_proj = ld.get("mtp.0.h_proj.weight", {D, D});
        m.enorm = ld.get("mtp.0.enorm.weight", {D});
        m.hnorm = ld.get("mtp.0.hnorm.weight", {D});
        m.norm = ld.get("mtp.0.norm.weight", {D});
        m.hc_head_fn = ld.get("mtp.0.hc_head_fn", {n, n * D});
        m.hc_head_base = ld.get("mtp.0.hc_head_base", {n});
        m.hc_head_scale = ld.get("mtp.0.hc_head_scale", {1});
        w.mtp = std::move(m);
    }
    ld.check_all_used(mtp);
    return w;
}

namespace {

Tensor random_tensor(Rng& rng, std::vector<std::int64_t> shape, double mean, double stddev) {
    Tensor t;
    t.shape = std::move(shape);
    std::int64_t numel = 1;
    for (auto d : t.shape) numel *= d;
    t.data.resize(static_cast<std::size_t>(numel));
    for (float& v : t.data) v = static_cast<float>(rng.normal(mean, stddev));
    return t;
}

Tensor random_linear(Rng& rng, std::int64_t out, std::int64_t in) {
    return random_tensor(rng, {out, in}, 0.0, 1.0 / std::sqrt(static_cast<double>(in)));
}

}  // namespace

MtpWeights make_random_mtp_weights(const ModelConfig& c, std::uint64_t seed) {
    Rng rng = Rng(seed).fork("mtp");
    const std::int64_t D = c.hidden_size, n = c.hc_mult, mix = (2 + n) * n, H = c.num_heads, Dh = c.head_dim;
    const std::int64_t I = c.moe_intermediate_size, E = c.n_routed_experts;
    auto norm = [&](std::int64_t d) { return random_tensor(rng, {d}, 1.0, 0.1); };
    MtpWeights m;
    BlockWeights& b = m.block;
    b.attention = AttentionType::kSliding;
    b.mlp = MlpType::kScore;
    b.attn_norm = norm(D);
    b.ffn_norm = norm(D);
    b.hc_attn_fn = random_linear(rng, mix, n * D);
    b.hc_attn_base = random_tensor(rng, {mix}, 0.0, 0.5);
    b.hc_attn_scale = random_tensor(rng, {3}, 1.0, 0.2);
    b.hc_ffn_fn = random_linear(rng, mix, n * D);
    b.hc_ffn_base = random_tensor(rng, {mix}, 0.0, 0.5);
    b.hc_ffn_scale = random_tensor(rng, {3}, 1.0, 0.2);
    b.wq_a = random_linear(rng, c.q_lora_rank, D);
    b.q_norm = norm(c.q_lora_rank);
    b.wq_b = random_linear(rng, H * Dh, c.q_lora_rank);
    b.wkv = random_linear(rng, Dh, D);
    b.kv_norm = norm(Dh);
    b.wo_a = random_linear(rng, c.o_groups * c.o_lora_rank, H * Dh / c.o_groups);
    b.wo_b = random_linear(rng, D, c.o_groups * c.o_lora_rank);
    b.attn_sink = random_tensor(rng, {H}, 0.0, 1.0);
    b.gate = random_linear(rng, E, D);
    b.gate_bias = random_tensor(rng, {E}, 0.0, 0.1);
    for (std::int64_t e = 0; e < E; ++e)
        b.experts.push_back(
            ExpertWeights{random_linear(rng, I, D), random_linear(rng, D, I), random_linear(rng, I, D)});
    b.shared = ExpertWeights{random_linear(rng, I, D), random_linear(rng, D, I), random_linear(rng, I, D)};
    m.e_proj = random_linear(rng, D, D);
    m.h_proj = random_linear(rng, D, D);
    m.enorm = norm(D);
    m.hnorm = norm(D);
    m.norm = norm(D);
    m.hc_head_fn = random_linear(rng, n, n * D);
    m.hc_head_base = random_tensor(rng, {n}, 0.0, 0.5);
    m.hc_head_scale = random_tensor(rng, {1}, 1.0, 0.2);
    return m;
}

}  // namespace deepinfer::model
