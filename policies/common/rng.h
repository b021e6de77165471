// Seeded random numbers with our own distributions, so that the same seed gives the same bytes
// with any C++ standard library (std:: distributions differ between libstdc++ and libc++).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace deepinfer {

/// xoshiro256** seeded through splitmix64. Cheap to copy; one stream per purpose (see `fork`).
/// NOTE: the floating-point distributions use std::log/exp/cos/sqrt; results are byte-identical
/// on every platform whose libm rounds these the same way (glibc on x86-64 and aarch64 does).
class Rng {
public:
    explicit Rng(std::uint64_t seed);

    /// An independent stream derived from this generator's seed and a purpose label
    /// (e.g. rng.fork("acceptance")); does not advance this generator.
    [[nodiscard]] Rng fork(std::string_view purpose) const;
    /// Same, with an integer label (e.g. one stream per request or per instance).
    [[nodiscard]] Rng fork(std::uint64_t label) const;

    std::uint64_t next_u64();
    /// Uniform integer in [0, n); n > 0. Unbiased (Lemire's method with rejection).
    std::uint64_t below(std::uint64_t n);
    /// Uniform integer in [lo, hi] inclusive.
    std::int64_t uniform_int(std::int64_t lo, std::int64_t hi);
    /// Uniform double in [0, 1) with 53 random bits.
    double uniform01();
    double uniform(double lo, double hi);
    bool bernoulli(double p);
    /// Standard normal (Box-Muller, one value per call: no hidden cached state).
    double normal();
    double normal(double mean, double stddev);
    double lognormal(double mu, double sigma);
    /// Exponential with the given rate (mean 1/rate); rate > 0.
    double exponential(double rate);
    /// Poisson with the given mean (>= 0): inversion for small means, PTRS rejection above 30.
    std::int64_t poisson(double mean);
    /// Gamma(shape, scale=1) by Marsaglia-Tsang; shape > 0.
    double gamma(double shape);
    /// Beta(a, b) from two gammas.
    double beta(double a, double b);

    std::uint64_t seed() const { return seed_; }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

    std::uint64_t seed_;
    std::uint64_t s_[4];
};

// Inline: the simulator draws several per sequence-step.
inline std::uint64_t Rng::next_u64() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
}

inline double Rng::uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

/// Samples an index with probability proportional to its weight (Walker/Vose alias table).
/// Construction O(n), sampling O(1). Weights must be finite, >= 0, and not all zero.
class DiscreteDistribution {
public:
    explicit DiscreteDistribution(std::span<const double> weights);
    std::size_t sample(Rng& rng) const;
    std::size_t size() const { return prob_.size(); }

private:
    std::vector<double> prob_;
    std::vector<std::uint32_t> alias_;
};

/// Zipf weights over n ranks: w_i = 1 / (i+1)^exponent, i = 0..n-1 (not normalised).
std::vector<double> zipf_weights(std::size_t n, double exponent);

/// 64-bit mixing hash (splitmix64 finaliser); stable across platforms.
std::uint64_t mix64(std::uint64_t x);
/// FNV-1a over bytes; stable across platforms.
std::uint64_t fnv1a64(std::string_view bytes);

}  // namespace deepinfer
