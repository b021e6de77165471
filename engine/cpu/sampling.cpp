// Token sampler: temperature / top-k / top-p over softmax probabilities in double, ties by id.
#include "engine/cpu/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "policies/common/check.h"
#include "policies/common/rng.h"

namespace deepinfer::cpu {

std::int32_t argmax(std::span<const float> logits) {
    DI_CHECK(!logits.empty(), "argmax of no logits");
    std::size_t best = 0;
    for (std::size_t i = 1; i < logits.size(); ++i)
        if (logits[i] > logits[best]) best = i;
    return static_cast<std::int32_t>(best);
}

std::int32_t sample_token(std::span<const float> logits, const SamplingParams& p, std::uint64_t seed,
                          std::int64_t position) {
    if (p.temperature <= 0.0) return argmax(logits);
    // Candidates ordered by logit (desc), then id (asc): the order of top-k, top-p and the draw.
    std::vector<std::int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::stable_sort(ids.begin(), ids.end(), [&](std::int32_t a, std::int32_t b) {
        return logits[static_cast<std::size_t>(a)] > logits[static_cast<std::size_t>(b)];
    });
    if (p.top_k > 0 && static_cast<std::size_t>(p.top_k) < ids.size())
        ids.resize(static_cast<std::size_t>(p.top_k));
    const double mx = logits[static_cast<std::size_t>(ids.front())];
    std::vector<double> prob(ids.size());
    double total = 0.0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        prob[i] = std::exp((logits[static_cast<std::size_t>(ids[i])] - mx) / p.temperature);
        total += prob[i];
    }
    if (p.top_p < 1.0) {
        double cum = 0.0;
        std::size_t keep = 0;
        while (keep < ids.size()) {
            cum += prob[keep] / total;
            ++keep;
            if (cum >= p.top_p) break;
        }
        ids.resize(keep);
        prob.resize(keep);
        total = std::accumulate(prob.begin(), prob.end(), 0.0);
    }
    Rng rng = Rng(seed).fork(static_cast<std::uint64_t>(position));
    const double u = rng.uniform01() * total;
    double cum = 0.0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        cum += prob[i];
        if (u < cum) return ids[i];
    }
    return ids.back();
}

}  // namespace deepinfer::cpu
