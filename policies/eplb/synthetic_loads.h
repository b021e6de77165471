// Synthetic expert-load matrices (Zipf-skewed or a few very hot experts, optionally drifting between
// windows) for tests, benchmarks and simulated expert load.
#pragma once

#include <cstdint>
#include <vector>

#include "policies/common/rng.h"
#include "policies/eplb/rebalance.h"

namespace deepinfer {

struct SyntheticLoadSpec {
    enum class Shape { kZipf, kHot };
    Shape shape = Shape::kZipf;
    std::int32_t num_layers = 43;
    std::int32_t num_experts = 256;
    /// Zipf exponent s: expert of popularity rank i gets weight 1 / (i + 1)^s.
    double zipf_exponent = 1.0;
    /// kHot: this many experts share hot_fraction of the load, the rest share the remainder evenly.
    std::int32_t num_hot = 4;
    double hot_fraction = 0.5;
    /// Tokens per layer per window (expected; each expert's count is Poisson around its share).
    double tokens_per_layer = 100000.0;
    /// Between consecutive windows, each layer swaps this fraction of adjacent popularity ranks.
    double drift = 0.0;
};

/// `num_windows` load matrices; window w + 1 drifts from window w. Each layer has its own random
/// popularity order. Same spec and rng state give the same loads on every platform.
std::vector<LoadMatrix> make_synthetic_loads(const SyntheticLoadSpec& spec, std::int32_t num_windows,
                                             Rng& rng);

}  // namespace deepinfer
