// Sampling parameters (vLLM-shaped) and the token sampler: greedy, temperature, top-k, top-p, with
// one random draw per output position from the sequence's own seed (batch- and
// speculation-invariant).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace deepinfer::cpu {

struct SamplingParams {
    /// 0 = greedy (argmax, lowest id on ties).
    double temperature = 1.0;
    /// Nucleus mass in (0, 1]; 1 = off.
    double top_p = 1.0;
    /// Keep the k most likely tokens; 0 (or negative) = off.
    std::int32_t top_k = 0;
    /// Most output tokens.
    std::int32_t max_tokens = 16;
    /// Stop after producing any of these (the stop token is included in the output).
    std::vector<std::int32_t> stop_token_ids;
    /// Do not stop at the model's eos_token_id.
    bool ignore_eos = false;
    /// Per-sequence seed; unset = derived from the LLM seed and the request id.
    std::optional<std::uint64_t> seed;
    /// Return the logits of every prompt position and of every sampled token (float32).
    bool return_logits = false;
};

/// Samples one token from `logits` with the draw for output position `position` of a sequence
/// seeded `seed`: Rng(seed).fork(position). Greedy ignores the draw.
std::int32_t sample_token(std::span<const float> logits, const SamplingParams& params, std::uint64_t seed,
                          std::int64_t position);

/// Index of the largest logit (lowest index on ties).
std::int32_t argmax(std::span<const float> logits);

}  // namespace deepinfer::cpu
