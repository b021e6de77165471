// Rng and distributions: xoshiro256**, splitmix64 seeding, Box-Muller, PTRS Poisson, alias tables.
#include "policies/common/rng.h"

#include <cmath>
#include <numbers>

#include "policies/common/check.h"

namespace deepinfer {
namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

__extension__ typedef unsigned __int128 uint128_t;

double log_factorial(std::int64_t k) { return std::lgamma(static_cast<double>(k) + 1.0); }

}  // namespace

std::uint64_t mix64(std::uint64_t x) {
    std::uint64_t s = x;
    return splitmix64(s);
}

std::uint64_t fnv1a64(std::string_view bytes) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : bytes) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return h;
}

Rng::Rng(std::uint64_t seed) : seed_(seed) {
    std::uint64_t state = seed;
    for (auto& s : s_) s = splitmix64(state);
}

Rng Rng::fork(std::string_view purpose) const { return Rng(mix64(seed_ ^ fnv1a64(purpose))); }

Rng Rng::fork(std::uint64_t label) const { return Rng(mix64(seed_ + 0x632be59bd9b4e019ULL * (label + 1))); }

std::uint64_t Rng::below(std::uint64_t n) {
    DI_CHECK(n > 0, "Rng::below(0)");
    uint128_t m = static_cast<uint128_t>(next_u64()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
        const std::uint64_t threshold = (0 - n) % n;
        while (low < threshold) {
            m = static_cast<uint128_t>(next_u64()) * n;
            low = static_cast<std::uint64_t>(m);
        }
    }
    return static_cast<std::uint64_t>(m >> 64);
}

std::int64_t Rng::uniform_int(std::int64_t lo, std::int64_t hi) {
    DI_CHECK(lo <= hi, "uniform_int(" << lo << ", " << hi << ")");
    const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
    if (span == 0) return static_cast<std::int64_t>(next_u64());  // the full 64-bit range
    return lo + static_cast<std::int64_t>(below(span));
}

double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }

bool Rng::bernoulli(double p) { return uniform01() < p; }

double Rng::normal() {
    // 1 - u is in (0, 1], so the log is finite.
    const double u1 = 1.0 - uniform01();
    const double u2 = uniform01();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double Rng::normal(double mean, double stddev) { return mean + stddev * normal(); }

double Rng::lognormal(double mu, double sigma) { return std::exp(normal(mu, sigma)); }

double Rng::exponential(double rate) {
    DI_CHECK(rate > 0, "exponential rate " << rate);
    return -std::log(1.0 - uniform01()) / rate;
}

std::int64_t Rng::poisson(double mean) {
    DI_CHECK(mean >= 0 && std::isfinite(mean), "poisson mean " << mean);
    if (mean == 0) return 0;
    if (mean < 30) {
        // Inversion by sequential search.
        double p = std::exp(-mean);
        double cdf = p;
        const double u = uniform01();
        std::int64_t k = 0;
        while (u > cdf && k < 1000) {
            ++k;
            p *= mean / static_cast<double>(k);
            cdf += p;
        }
        return k;
    }
    // PTRS (Hormann 1993, "The transformed rejection method for generating Poisson random variables").
    const double slam = std::sqrt(mean);
    const double loglam = std::log(mean);
    const double b = 0.931 + 2.53 * slam;
    const double a = -0.059 + 0.02483 * b;
    const double invalpha = 1.1239 + 1.1328 / (b - 3.4);
    const double vr = 0.9277 - 3.6224 / (b - 2);
    while (true) {
        const double u = uniform01() - 0.5;
        const double v = uniform01();
        const double us = 0.5 - std::fabs(u);
        const auto k = static_cast<std::int64_t>(std::floor((2 * a / us + b) * u + mean + 0.43));
        if (us >= 0.07 && v <= vr) return k;
        if (k < 0 || (us < 0.013 && v > us)) continue;
        if (std::log(v) + std::log(invalpha) - std::log(a / (us * us) + b) <=
            -mean + static_cast<double>(k) * loglam - log_factorial(k))
            return k;
    }
}

double Rng::gamma(double shape) {
    DI_CHECK(shape > 0, "gamma shape " << shape);
    if (shape < 1) {
        const double u = 1.0 - uniform01();
        return gamma(shape + 1.0) * std::pow(u, 1.0 / shape);
    }
    const double d = shape - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9.0 * d);
    while (true) {
        double x;
        double v;
        do {
            x = normal();
            v = 1.0 + c * x;
        } while (v <= 0);
        v = v * v * v;
        const double u = 1.0 - uniform01();
        if (u < 1 - 0.0331 * x * x * x * x) return d * v;
        if (std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) return d * v;
    }
}

double Rng::beta(double a, double b) {
    const double x = gamma(a);
    const double y = gamma(b);
    return x / (x + y);
}

DiscreteDistribution::DiscreteDistribution(std::span<const double> weights)
    : prob_(weights.size()), alias_(weights.size()) {
    const std::size_t n = weights.size();
    DI_CHECK(n > 0, "DiscreteDistribution needs at least one weight");
    double total = 0;
    for (double w : weights) {
        DI_CHECK(std::isfinite(w) && w >= 0, "DiscreteDistribution weight " << w);
        total += w;
    }
    DI_CHECK(total > 0, "DiscreteDistribution weights are all zero");
    std::vector<double> scaled(n);
    std::vector<std::uint32_t> small;
    std::vector<std::uint32_t> large;
    for (std::size_t i = 0; i < n; ++i) {
        scaled[i] = weights[i] * static_cast<double>(n) / total;
        (scaled[i] < 1.0 ? small : large).push_back(static_cast<std::uint32_t>(i));
    }
    while (!small.empty() && !large.empty()) {
        const std::uint32_t s = small.back();
        small.pop_back();
        const std::uint32_t l = large.back();
        prob_[s] = scaled[s];
        alias_[s] = l;
        scaled[l] = (scaled[l] + scaled[s]) - 1.0;
        if (scaled[l] < 1.0) {
            large.pop_back();
            small.push_back(l);
        }
    }
    for (std::uint32_t i : large) prob_[i] = 1.0, alias_[i] = i;
    for (std::uint32_t i : small) prob_[i] = 1.0, alias_[i] = i;
}

std::size_t DiscreteDistribution::sample(Rng& rng) const {
    const std::size_t i = rng.below(prob_.size());
    return rng.uniform01() < prob_[i] ? i : alias_[i];
}

std::vector<double> zipf_weights(std::size_t n, double exponent) {
    std::vector<double> w(n);
    for (std::size_t i = 0; i < n; ++i) w[i] = 1.0 / std::pow(static_cast<double>(i + 1), exponent);
    return w;
}

}  // namespace deepinfer
