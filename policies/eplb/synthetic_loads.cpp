// Synthetic expert loads: popularity weights by rank, a random rank order per layer, rank swaps
// between windows for drift, Poisson counts.
#include "policies/eplb/synthetic_loads.h"

#include <numeric>

#include "policies/common/check.h"

namespace deepinfer {
namespace {

std::vector<double> rank_weights(const SyntheticLoadSpec& spec) {
    const auto n = static_cast<std::size_t>(spec.num_experts);
    if (spec.shape == SyntheticLoadSpec::Shape::kZipf) return zipf_weights(n, spec.zipf_exponent);
    const auto hot = static_cast<std::size_t>(spec.num_hot);
    DI_CHECK(hot > 0 && hot < n, "num_hot must be in [1, experts)");
    std::vector<double> w(n, (1.0 - spec.hot_fraction) / static_cast<double>(n - hot));
    for (std::size_t i = 0; i < hot; ++i) w[i] = spec.hot_fraction / static_cast<double>(hot);
    return w;
}

}  // namespace

std::vector<LoadMatrix> make_synthetic_loads(const SyntheticLoadSpec& spec, std::int32_t num_windows,
                                             Rng& rng) {
    DI_CHECK(spec.num_layers > 0 && spec.num_experts > 1 && num_windows > 0, "bad synthetic load spec");
    const auto weights = rank_weights(spec);
    const double total_weight = std::accumulate(weights.begin(), weights.end(), 0.0);
    const auto n = static_cast<std::size_t>(spec.num_experts);
    // rank_to_expert[l][i]: the expert with popularity rank i in layer l (Fisher-Yates shuffle).
    std::vector<std::vector<std::int32_t>> rank_to_expert(static_cast<std::size_t>(spec.num_layers));
    for (auto& order : rank_to_expert) {
        order.resize(n);
        std::iota(order.begin(), order.end(), 0);
        for (std::size_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
    }
    std::vector<LoadMatrix> out;
    for (std::int32_t win = 0; win < num_windows; ++win) {
        if (win > 0 && spec.drift > 0.0)
            for (auto& order : rank_to_expert)
                for (std::size_t i = 0; i + 1 < n; ++i)
                    if (rng.bernoulli(spec.drift))
                        std::swap(order[i], order[i + 1 + rng.below(std::min<std::size_t>(8, n - 1 - i))]);
        LoadMatrix m{.num_layers = spec.num_layers, .num_experts = spec.num_experts, .tokens = {}};
        m.tokens.resize(static_cast<std::size_t>(spec.num_layers) * n);
        for (std::size_t l = 0; l < rank_to_expert.size(); ++l)
            for (std::size_t i = 0; i < n; ++i) {
                const double mean = spec.tokens_per_layer * weights[i] / total_weight;
                m.tokens[l * n + static_cast<std::size_t>(rank_to_expert[l][i])] =
                    static_cast<double>(rng.poisson(mean));
            }
        out.push_back(std::move(m));
    }
    return out;
}

}  // namespace deepinfer
