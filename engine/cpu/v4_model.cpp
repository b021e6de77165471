// DeepSeek-V4 forward pass (CPU reference): embedding, mHC, attention (sliding / CSA / HCA),
// MoE, HC head, and the MTP block. Formulas: V4_SPEC §3–§8.
#include "engine/cpu/v4_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "policies/common/check.h"

namespace deepinfer::cpu {
namespace {

using model::Tensor;
using ConstMap = Eigen::Map<const RowMat>;

ConstMap mat(const Tensor& t) { return ConstMap(t.data.data(), t.rows(), t.cols()); }

/// y = x W^T for a row-major weight [out, in].
RowMat linear(const RowMat& x, const Tensor& w) { return x * mat(w).transpose(); }

/// Row-wise RMSNorm of `len` values at `v` (weighted when `w` is given), statistics in double.
void rms_inplace(float* v, std::int64_t len, const float* w, double eps) {
    double ss = 0.0;
    for (std::int64_t i = 0; i < len; ++i) ss += static_cast<double>(v[i]) * v[i];
    const auto inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(len) + eps));
    for (std::int64_t i = 0; i < len; ++i) v[i] = w != nullptr ? w[i] * (v[i] * inv) : v[i] * inv;
}

void rms_rows(RowMat& x, const Tensor* w, double eps) {
    for (Eigen::Index r = 0; r < x.rows(); ++r)
        rms_inplace(x.row(r).data(), x.cols(), w ? w->data.data() : nullptr, eps);
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

/// Sorted-by-score selection: the `k` best of `candidates` by (score desc, index asc).
std::vector<std::int64_t> top_k(std::vector<std::int64_t> candidates, const std::vector<float>& score,
                                std::size_t k) {
    k = std::min(k, candidates.size());
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(k),
                      candidates.end(), [&](std::int64_t a, std::int64_t b) {
                          const float sa = score[static_cast<std::size_t>(a)],
                                      sb = score[static_cast<std::size_t>(b)];
                          return sa != sb ? sa > sb : a < b;
                      });
    candidates.resize(k);
    return candidates;
}

void emit(const StageSink* sink, const std::string& name, const RowMat& value) {
    if (sink != nullptr && *sink) (*sink)(name, value);
}

}  // namespace

// ------------------------------------------------------------------------------------------------
RopeTable::RopeTable(const model::RopeConfig& rope, std::int64_t rope_dim) {
    const std::int64_t half = rope_dim / 2;
    inv_freq_.resize(static_cast<std::size_t>(half));
    // NOTE: follows HF's fp32 arithmetic: pos_freq = theta ** (2i / rd) in fp32, inv = 1 / pos_freq.
    for (std::int64_t i = 0; i < half; ++i) {
        const float expo = static_cast<float>(2 * i) / static_cast<float>(rope_dim);
        const auto pos_freq = static_cast<float>(std::pow(rope.theta, static_cast<double>(expo)));
        const float extra = 1.0f / pos_freq;
        if (!rope.yarn) {
            inv_freq_[static_cast<std::size_t>(i)] = extra;
            continue;
        }
        const float inter = 1.0f / (static_cast<float>(rope.factor) * pos_freq);
        auto corr = [&](double rotations) {
            return static_cast<double>(rope_dim) *
                   std::log(static_cast<double>(rope.original_max_position_embeddings) /
                            (rotations * 2.0 * M_PI)) /
                   (2.0 * std::log(rope.theta));
        };
        double low = corr(rope.beta_fast), high = corr(rope.beta_slow);
        if (rope.truncate) {
            low = std::floor(low);
            high = std::ceil(high);
        }
        low = std::max(low, 0.0);
        high = std::min(high, static_cast<double>(rope_dim - 1));
        if (low == high) high += 0.001;
        const float ramp = std::clamp(
            (static_cast<float>(i) - static_cast<float>(low)) / static_cast<float>(high - low), 0.0f, 1.0f);
        const float extra_factor = 1.0f - ramp;
        inv_freq_[static_cast<std::size_t>(i)] = inter * (1.0f - extra_factor) + extra * extra_factor;
    }
}

void RopeTable::apply(float* v, std::int64_t len, std::int64_t pos, bool inverse) const {
    const auto half = static_cast<std::int64_t>(inv_freq_.size());
    float* r = v + len - 2 * half;
    for (std::int64_t i = 0; i < half; ++i) {
        const float phi = static_cast<float>(pos) * inv_freq_[static_cast<std::size_t>(i)];
        const float c = std::cos(phi);
        const float s = inverse ? -std::sin(phi) : std::sin(phi);
        const float x0 = r[2 * i], x1 = r[2 * i + 1];
        r[2 * i] = x0 * c - x1 * s;
        r[2 * i + 1] = x1 * c + x0 * s;
    }
}

// ------------------------------------------------------------------------------------------------
struct V4Model::HcMix {
    RowMat post;       ///< [T, n]
    RowMat comb;       ///< [T, n*n], C[i][j] at i*n+j
    RowMat collapsed;  ///< [T, D]
};

V4Model::V4Model(model::ModelConfig config, model::ModelWeights weights)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      rope_main_(config_.rope_main, config_.rope_head_dim),
      rope_compress_(config_.rope_compress, config_.rope_head_dim) {
    DI_CHECK(static_cast<std::int64_t>(weights_.layers.size()) == config_.num_layers,
             "weights/config layer count");
}

LayerCache V4Model::make_layer_cache(const model::BlockWeights& b, std::int64_t rollback) const {
    LayerCache lc;
    lc.kv = TokenRing(config_.sliding_window - 1 + rollback, config_.head_dim);
    const std::int64_t m = b.compress_ratio;
    if (b.compressor) {
        const std::int64_t width = b.compressor->wkv.rows();
        lc.compressor = CompressorCache{
            .raw = TokenRing(2 * m + rollback, 2 * width), .entries = {}, .dim = config_.head_dim, .rate = m};
    }
    if (b.indexer) {
        const std::int64_t width = b.indexer->compressor.wkv.rows();
        lc.indexer = CompressorCache{.raw = TokenRing(2 * m + rollback, 2 * width),
                                     .entries = {},
                                     .dim = config_.index_head_dim,
                                     .rate = m};
    }
    return lc;
}

SeqCache V4Model::new_cache(std::int64_t rollback_tokens) const {
    const std::int64_t r = std::max<std::int64_t>(rollback_tokens, 1);
    SeqCache c;
    c.rollback_horizon = r;
    for (const auto& b : weights_.layers) c.layers.push_back(make_layer_cache(b, r));
    if (weights_.mtp) c.mtp = make_layer_cache(weights_.mtp->block, r);
    return c;
}

V4Model::HcMix V4Model::hc_pre(const RowMat& x, const Tensor& fn, const Tensor& base,
                               const Tensor& scale) const {
    const std::int64_t n = config_.hc_mult, D = config_.hidden_size, T = x.rows();
    const auto eps = static_cast<float>(config_.hc_eps);
    RowMat flat = x;
    rms_rows(flat, nullptr, config_.rms_norm_eps);
    const RowMat m = linear(flat, fn);
    const float* b = base.data.data();
    const float* s = scale.data.data();
    HcMix mix{RowMat(T, n), RowMat(T, n * n), RowMat::Zero(T, D)};
    for (std::int64_t t = 0; t < T; ++t) {
        for (std::int64_t i = 0; i < n; ++i) {
            const float pre = sigmoid(m(t, i) * s[0] + b[i]) + eps;
            mix.post(t, i) = 2.0f * sigmoid(m(t, n + i) * s[1] + b[n + i]);
            mix.collapsed.row(t) += pre * x.row(t).segment(i * D, D);
        }
        Eigen::Map<RowMat> c(mix.comb.row(t).data(), n, n);
        for (std::int64_t i = 0; i < n; ++i) {
            for (std::int64_t j = 0; j < n; ++j)
                c(i, j) = m(t, 2 * n + i * n + j) * s[2] + b[2 * n + i * n + j];
            const float mx = c.row(i).maxCoeff();
            c.row(i) = (c.row(i).array() - mx).exp().matrix();
            c.row(i) /= c.row(i).sum();
        }
        c.array() += eps;
        auto col_norm = [&] {
            for (std::int64_t j = 0; j < n; ++j) c.col(j) /= (c.col(j).sum() + eps);
        };
        col_norm();
        for (std::int64_t it = 1; it < config_.hc_sinkhorn_iters; ++it) {
            for (std::int64_t i = 0; i < n; ++i) c.row(i) /= (c.row(i).sum() + eps);
            col_norm();
        }
    }
    return mix;
}

void V4Model::hc_post(RowMat& x, const HcMix& mix, const RowMat& y) const {
    const std::int64_t n = config_.hc_mult, D = config_.hidden_size;
    RowMat out(x.rows(), x.cols());
    for (Eigen::Index t = 0; t < x.rows(); ++t) {
        for (std::int64_t j = 0; j < n; ++j) {
            Eigen::RowVectorXf acc = mix.post(t, j) * y.row(t);
            for (std::int64_t i = 0; i < n; ++i) acc += mix.comb(t, i * n + j) * x.row(t).segment(i * D, D);
            out.row(t).segment(j * D, D) = acc;
        }
    }
    x = std::move(out);
}

// ------------------------------------------------------------------------------------------------
void V4Model::compress(const model::CompressorWeights& w, bool overlap, CompressorCache& cc, std::int64_t p0,
                       const RowMat& xin) const {
    const RowMat c = linear(xin, w.wkv);
    const RowMat z = linear(xin, w.wgate);
    const std::int64_t width = c.cols(), dim = cc.dim, m = cc.rate;
    DI_CHECK(width == (overlap ? 2 * dim : dim), "compressor width " << width << " for dim " << dim);
    std::vector<float> row(static_cast<std::size_t>(2 * width));
    std::vector<float> logit(static_cast<std::size_t>(2 * m)), val(static_cast<std::size_t>(2 * m));
    for (Eigen::Index t = 0; t < xin.rows(); ++t) {
        const std::int64_t pos = p0 + t;
        DI_CHECK(cc.raw.end() == pos, "compressor ring at " << cc.raw.end() << ", token at " << pos);
        std::copy(c.row(t).data(), c.row(t).data() + width, row.begin());
        std::copy(z.row(t).data(), z.row(t).data() + width, row.begin() + width);
        cc.raw.push(row.data());
        if ((pos + 1) % m != 0) continue;
        // Window wi closes: softmax-gated pooling per channel (V4_SPEC §4.4/4.5).
        const std::int64_t wi = pos / m;
        std::vector<float> entry(static_cast<std::size_t>(dim));
        for (std::int64_t d = 0; d < dim; ++d) {
            std::size_t k = 0;
            if (overlap && wi >= 1) {  // "a" halves of window wi-1 (slots 0..m-1)
                for (std::int64_t r = 0; r < m; ++r, ++k) {
                    const float* raw = cc.raw.row((wi - 1) * m + r);
                    val[k] = raw[d];
                    logit[k] = raw[width + d] + w.ape.data[static_cast<std::size_t>(r * width + d)];
                }
            }
            const std::int64_t off = overlap ? dim : 0;  // "b" halves (CSA) or the whole row (HCA)
            for (std::int64_t r = 0; r < m; ++r, ++k) {
                const float* raw = cc.raw.row(wi * m + r);
                val[k] = raw[off + d];
                logit[k] = raw[width + off + d] + w.ape.data[static_cast<std::size_t>(r * width + off + d)];
            }
            const float mx = *std::max_element(logit.begin(), logit.begin() + static_cast<std::ptrdiff_t>(k));
            float denom = 0.0f;
            for (std::size_t i = 0; i < k; ++i) denom += std::exp(logit[i] - mx);
            float acc = 0.0f;
            for (std::size_t i = 0; i < k; ++i) acc += val[i] * (std::exp(logit[i] - mx) / denom);
            entry[static_cast<std::size_t>(d)] = acc;
        }
        rms_inplace(entry.data(), dim, w.norm.data.data(), config_.rms_norm_eps);
        rope_compress_.apply(entry.data(), dim, wi * m);
        cc.entries.insert(cc.entries.end(), entry.begin(), entry.end());
    }
}

std::vector<std::vector<std::int64_t>> V4Model::indexer_select(const model::IndexerWeights& w,
                                                               const CompressorCache& keys, std::int64_t p0,
                                                               const RowMat& xin, const RowMat& qlat) const {
    const std::int64_t Hi = config_.index_n_heads, Di = config_.index_head_dim, T = xin.rows();
    RowMat q = linear(qlat, w.wq_b);
    RowMat weights =
        linear(xin, w.weights_proj) * static_cast<float>(1.0 / std::sqrt(static_cast<double>(Hi)));
    const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(Di)));
    const std::int64_t n_entries = keys.num_entries();
    const ConstMap k(keys.entries.data(), n_entries, Di);
    std::vector<std::vector<std::int64_t>> picks(static_cast<std::size_t>(T));
    for (std::int64_t t = 0; t < T; ++t) {
        const std::int64_t pos = p0 + t;
        for (std::int64_t h = 0; h < Hi; ++h) rope_compress_.apply(q.row(t).data() + h * Di, Di, pos);
        const std::int64_t valid = std::min(n_entries, (pos + 1) / keys.rate);
        if (valid == 0) continue;
        const ConstMap qt(q.row(t).data(), Hi, Di);
        const RowMat s =
            ((qt * k.topRows(valid).transpose()).array().max(0.0f) * scale).matrix();  // [Hi, valid]
        std::vector<float> score(static_cast<std::size_t>(valid), 0.0f);
        for (std::int64_t e = 0; e < valid; ++e) {
            float acc = 0.0f;
            for (std::int64_t h = 0; h < Hi; ++h) acc += s(h, e) * weights(t, h);
            score[static_cast<std::size_t>(e)] = acc;
        }
        std::vector<std::int64_t> cand(static_cast<std::size_t>(valid));
        std::iota(cand.begin(), cand.end(), 0);
        // NOTE: ties (e.g. entries whose ReLU scores are all zero) go to the lowest entry index.
        picks[static_cast<std::size_t>(t)] =
            top_k(std::move(cand), score, static_cast<std::size_t>(config_.index_topk));
    }
    return picks;
}

RowMat V4Model::attention(const model::BlockWeights& b, const RopeTable& rope, LayerCache& cache,
                          std::int64_t p0, const RowMat& xin, const std::string& tag,
                          const StageSink* sink) const {
    const std::int64_t T = xin.rows(), H = config_.num_heads, Dh = config_.head_dim,
                       W = config_.sliding_window;
    const double eps = config_.rms_norm_eps;
    RowMat qlat = linear(xin, b.wq_a);
    rms_rows(qlat, &b.q_norm, eps);
    emit(sink, tag + ".q_residual", qlat);
    RowMat q = linear(qlat, b.wq_b);
    RowMat kv = linear(xin, b.wkv);
    rms_rows(kv, &b.kv_norm, eps);
    emit(sink, tag + ".kv_prerope", kv);
    for (std::int64_t t = 0; t < T; ++t) {
        for (std::int64_t h = 0; h < H; ++h) {
            float* qh = q.row(t).data() + h * Dh;
            rms_inplace(qh, Dh, nullptr, eps);
            rope.apply(qh, Dh, p0 + t);
        }
        rope.apply(kv.row(t).data(), Dh, p0 + t);
    }
    std::vector<std::vector<std::int64_t>> selected;
    if (b.compressor) {
        compress(*b.compressor, b.attention == model::AttentionType::kCsa, *cache.compressor, p0, xin);
        emit(sink, tag + ".compressed_kv",
             ConstMap(cache.compressor->entries.data(), cache.compressor->num_entries(), Dh));
    }
    if (b.indexer) {
        compress(b.indexer->compressor, true, *cache.indexer, p0, xin);
        selected = indexer_select(*b.indexer, *cache.indexer, p0, xin, qlat);
        if (sink != nullptr) {
            const std::int64_t k = std::min(config_.index_topk, cache.indexer->num_entries());
            RowMat topk = RowMat::Constant(T, k, -1.0f);
            for (std::int64_t t = 0; t < T; ++t) {
                auto s = selected[static_cast<std::size_t>(t)];
                s.resize(static_cast<std::size_t>(k), -1);  // HF: -1 marks an unused slot, sorted ascending
                std::sort(s.begin(), s.end());
                for (std::size_t i = 0; i < s.size(); ++i)
                    topk(t, static_cast<Eigen::Index>(i)) = static_cast<float>(s[i]);
            }
            emit(sink, tag + ".indexer_topk", topk);
        }
    }
    const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(Dh)));
    RowMat o(T, H * Dh);
    RowMat keys;
    for (std::int64_t t = 0; t < T; ++t) {
        const std::int64_t pos = p0 + t;
        // Candidate keys: sliding window (cached rows, then this chunk's rows), then compressed entries.
        std::vector<const float*> rows;
        for (std::int64_t s = std::max<std::int64_t>(0, pos - W + 1); s <= pos; ++s)
            rows.push_back(s < p0 ? cache.kv.row(s) : kv.row(s - p0).data());
        if (b.compressor) {
            const CompressorCache& cc = *cache.compressor;
            if (b.indexer) {
                for (std::int64_t e : selected[static_cast<std::size_t>(t)])
                    rows.push_back(cc.entries.data() + e * Dh);
            } else {
                const std::int64_t visible = std::min(cc.num_entries(), (pos + 1) / cc.rate);
                for (std::int64_t e = 0; e < visible; ++e) rows.push_back(cc.entries.data() + e * Dh);
            }
        }
        keys.resize(static_cast<Eigen::Index>(rows.size()), Dh);
        for (std::size_t r = 0; r < rows.size(); ++r)
            keys.row(static_cast<Eigen::Index>(r)) = Eigen::Map<const Eigen::RowVectorXf>(rows[r], Dh);
        const ConstMap qt(q.row(t).data(), H, Dh);
        RowMat logits = (qt * keys.transpose()) * scale;  // [H, nk]
        for (std::int64_t h = 0; h < H; ++h) {
            const float sink_h = b.attn_sink.data[static_cast<std::size_t>(h)];
            const float mx = std::max(logits.row(h).maxCoeff(), sink_h);
            logits.row(h) = (logits.row(h).array() - mx).exp().matrix();
            const float denom = logits.row(h).sum() + std::exp(sink_h - mx);
            logits.row(h) /= denom;
        }
        Eigen::Map<RowMat> ot(o.row(t).data(), H, Dh);
        ot = logits * keys;
        for (std::int64_t h = 0; h < H; ++h) rope.apply(o.row(t).data() + h * Dh, Dh, pos, /*inverse=*/true);
    }
    for (std::int64_t t = 0; t < T; ++t) cache.kv.push(kv.row(t).data());
    // Grouped output projection: group g = heads g*H/G.., through rows g*R..(g+1)*R of wo_a.
    const std::int64_t G = config_.o_groups, R = config_.o_lora_rank, S = H * Dh / G;
    const ConstMap woa = mat(b.wo_a);
    RowMat u(T, G * R);
    for (std::int64_t g = 0; g < G; ++g)
        u.middleCols(g * R, R) = o.middleCols(g * S, S) * woa.middleRows(g * R, R).transpose();
    return linear(u, b.wo_b);
}

RowMat V4Model::moe(const model::BlockWeights& b, const RowMat& x, std::span<const std::int32_t> tokens,
                    const std::string& tag, const StageSink* sink) const {
    const std::int64_t T = x.rows(), E = config_.n_routed_experts, k = config_.num_experts_per_tok;
    const auto limit = static_cast<float>(config_.swiglu_limit);
    const RowMat logits = linear(x, b.gate);
    auto ffn = [&](const model::ExpertWeights& e, const RowMat& xt) {
        RowMat g = linear(xt, e.w1).cwiseMin(limit);
        const RowMat up = linear(xt, e.w3).cwiseMax(-limit).cwiseMin(limit);
        g = (g.array() / (1.0f + (-g.array()).exp()) * up.array()).matrix();
        return linear(g, e.w2);
    };
    RowMat out(T, x.cols());
    RowMat indices(T, k), weights(T, k);
    for (std::int64_t t = 0; t < T; ++t) {
        std::vector<float> score(static_cast<std::size_t>(E)), biased(static_cast<std::size_t>(E));
        for (std::int64_t e = 0; e < E; ++e) {
            const float l = logits(t, e);
            score[static_cast<std::size_t>(e)] =
                config_.scoring_func == model::ScoringFunc::kSigmoid ? sigmoid(l) : std::sqrt(softplus(l));
            biased[static_cast<std::size_t>(e)] =
                score[static_cast<std::size_t>(e)] +
                (b.gate_bias.data.empty() ? 0.0f : b.gate_bias.data[static_cast<std::size_t>(e)]);
        }
        std::vector<std::int64_t> sel;
        if (b.mlp == model::MlpType::kHash) {
            const std::int32_t tok = tokens[static_cast<std::size_t>(t)];
            for (std::int64_t j = 0; j < k; ++j)
                sel.push_back(b.tid2eid[static_cast<std::size_t>(tok * k + j)]);
        } else {
            std::vector<std::int64_t> cand(static_cast<std::size_t>(E));
            std::iota(cand.begin(), cand.end(), 0);
            sel = top_k(std::move(cand), biased, static_cast<std::size_t>(k));  // ties: lowest expert id
        }
        float sum = 0.0f;
        for (std::int64_t e : sel) sum += score[static_cast<std::size_t>(e)];
        std::sort(sel.begin(), sel.end());  // HF accumulates experts in ascending id order
        const RowMat xt = x.row(t);
        RowMat routed = RowMat::Zero(1, x.cols());
        for (std::size_t j = 0; j < sel.size(); ++j) {
            const float g = score[static_cast<std::size_t>(sel[j])] / (sum + 1e-20f) *
                            static_cast<float>(config_.routed_scaling_factor);
            routed += ffn(b.experts[static_cast<std::size_t>(sel[j])], xt) * g;
            indices(t, static_cast<Eigen::Index>(j)) = static_cast<float>(sel[j]);
            weights(t, static_cast<Eigen::Index>(j)) = g;
        }
        out.row(t) = routed + ffn(b.shared, xt);
    }
    emit(sink, tag + ".router_indices", indices);
    emit(sink, tag + ".router_weights", weights);
    return out;
}

void V4Model::block_forward(const model::BlockWeights& b, const RopeTable& rope, LayerCache& cache,
                            std::int64_t p0, RowMat& x, std::span<const std::int32_t> tokens,
                            const std::string& tag, const StageSink* sink) const {
    const double eps = config_.rms_norm_eps;
    const HcMix a = hc_pre(x, b.hc_attn_fn, b.hc_attn_base, b.hc_attn_scale);
    RowMat xin = a.collapsed;
    rms_rows(xin, &b.attn_norm, eps);
    emit(sink, tag + ".attn_in", xin);
    const RowMat attn = attention(b, rope, cache, p0, xin, tag, sink);
    emit(sink, tag + ".attn_out", attn);
    hc_post(x, a, attn);
    const HcMix f = hc_pre(x, b.hc_ffn_fn, b.hc_ffn_base, b.hc_ffn_scale);
    RowMat xm = f.collapsed;
    rms_rows(xm, &b.ffn_norm, eps);
    emit(sink, tag + ".mlp_in", xm);
    const RowMat mlp = moe(b, xm, tokens, tag, sink);
    emit(sink, tag + ".mlp_out", mlp);
    hc_post(x, f, mlp);
    emit(sink, tag + ".out", x);
}

RowMat V4Model::head(const RowMat& streams, const Tensor& fn, const Tensor& base, const Tensor& scale,
                     const Tensor& norm, bool all_rows, const StageSink* sink) const {
    const std::int64_t n = config_.hc_mult, D = config_.hidden_size;
    const RowMat x = all_rows ? streams : RowMat(streams.bottomRows(1));
    RowMat flat = x;
    rms_rows(flat, nullptr, config_.rms_norm_eps);
    const RowMat mixes = linear(flat, fn);
    RowMat h = RowMat::Zero(x.rows(), D);
    for (Eigen::Index t = 0; t < x.rows(); ++t)
        for (std::int64_t i = 0; i < n; ++i) {
            const float pre = sigmoid(mixes(t, i) * scale.data[0] + base.data[static_cast<std::size_t>(i)]) +
                              static_cast<float>(config_.hc_eps);
            h.row(t) += pre * x.row(t).segment(i * D, D);
        }
    emit(sink, "hc_head_out", h);
    rms_rows(h, &norm, config_.rms_norm_eps);
    emit(sink, "final_norm_out", h);
    return linear(h, weights_.head);
}

ForwardOutput V4Model::forward(SeqCache& cache, std::span<const std::int32_t> tokens, bool all_logits,
                               const StageSink* sink) const {
    const auto T = static_cast<std::int64_t>(tokens.size());
    DI_CHECK(T > 0, "forward of an empty chunk");
    const std::int64_t n = config_.hc_mult, D = config_.hidden_size, p0 = cache.length;
    RowMat x(T, n * D);
    RowMat emb(T, D);
    for (std::int64_t t = 0; t < T; ++t) {
        const std::int32_t tok = tokens[static_cast<std::size_t>(t)];
        DI_CHECK(tok >= 0 && tok < config_.vocab_size, "token id " << tok << " outside the vocabulary");
        emb.row(t) = mat(weights_.embed).row(tok);
        for (std::int64_t i = 0; i < n; ++i) x.row(t).segment(i * D, D) = emb.row(t);
    }
    emit(sink, "embed", emb);
    for (std::int64_t l = 0; l < config_.num_layers; ++l) {
        const auto li = static_cast<std::size_t>(l);
        std::string tag = "L";
        tag += std::to_string(l);  // NOTE: not "L" + to_string(l): gcc 12 -Wrestrict false positive
        block_forward(weights_.layers[li], config_.is_compressed(l) ? rope_compress_ : rope_main_,
                      cache.layers[li], p0, x, tokens, tag, sink);
    }
    cache.length += T;
    ForwardOutput out;
    out.logits = head(x, weights_.hc_head_fn, weights_.hc_head_base, weights_.hc_head_scale, weights_.norm,
                      all_logits, sink);
    out.streams = std::move(x);
    return out;
}

ForwardOutput V4Model::mtp_forward(SeqCache& cache, const RowMat& h,
                                   std::span<const std::int32_t> next_tokens) const {
    DI_CHECK(weights_.mtp.has_value(), "mtp_forward without MTP weights");
    const model::MtpWeights& m = *weights_.mtp;
    const auto T = static_cast<std::int64_t>(next_tokens.size());
    const std::int64_t n = config_.hc_mult, D = config_.hidden_size;
    DI_CHECK(h.rows() == T && h.cols() == n * D, "mtp_forward input shape");
    RowMat e(T, D);
    for (std::int64_t t = 0; t < T; ++t)
        e.row(t) = mat(weights_.embed).row(next_tokens[static_cast<std::size_t>(t)]);
    rms_rows(e, &m.enorm, config_.rms_norm_eps);
    const RowMat ep = linear(e, m.e_proj);
    RowMat x(T, n * D);
    for (std::int64_t i = 0; i < n; ++i) {
        RowMat hi = h.middleCols(i * D, D);
        rms_rows(hi, &m.hnorm, config_.rms_norm_eps);
        x.middleCols(i * D, D) = ep + linear(hi, m.h_proj);
    }
    block_forward(m.block, rope_main_, cache.mtp, cache.mtp_length, x, next_tokens, "mtp", nullptr);
    cache.mtp_length += T;
    ForwardOutput out;
    out.logits = head(x, m.hc_head_fn, m.hc_head_base, m.hc_head_scale, m.norm, true, nullptr);
    out.streams = std::move(x);
    return out;
}

}  // namespace deepinfer::cpu
