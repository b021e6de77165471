// Workload generator implementation.
#include "sim/workload/workload.h"

#include <algorithm>
#include <cmath>

#include "policies/common/check.h"

namespace deepinfer::sim {

std::vector<std::uint64_t> prompt_block_hashes(const SimRequest& r, std::int32_t block_tokens) {
    std::vector<std::uint64_t> out;
    const std::int32_t n = r.prompt_tokens / block_tokens;
    out.reserve(static_cast<std::size_t>(n));
    const std::uint64_t owner =
        r.session_id != 0 ? (r.session_id << 1) : ((static_cast<std::uint64_t>(r.id.value()) << 1) | 1U);
    std::uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (std::int32_t i = 0; i < n; ++i) {
        const bool shared = (i + 1) * block_tokens <= r.shared_prefix_tokens;
        const std::uint64_t content =
            shared ? mix64(r.prefix_id * 0x100000001b3ULL + static_cast<std::uint64_t>(i))
                   : mix64(owner * 0xc2b2ae3d27d4eb4fULL + static_cast<std::uint64_t>(i));
        h = mix64(h ^ content);
        out.push_back(h);
    }
    return out;
}

ArrivalClock::ArrivalClock(const TrafficConfig& t, Rng rng) : t_(t), rng_(rng) {
    if (t_.arrival == ArrivalProcess::kBursty)
        state_end_ = rng_.exponential(t_.burst_fraction / (t_.burst_mean_s * (1 - t_.burst_fraction)));
}

double ArrivalClock::next() {
    switch (t_.arrival) {
        case ArrivalProcess::kPoisson:
            now_ += rng_.exponential(t_.rate_per_s);
            return now_;
        case ArrivalProcess::kBursty: {
            // Two-state Markov-modulated Poisson process with the configured mean rate.
            const double f = t_.burst_fraction;
            const double base = t_.rate_per_s / (1 - f + f * t_.burst_factor);
            for (;;) {
                const double rate = in_burst_ ? base * t_.burst_factor : base;
                const double dt = rng_.exponential(rate);
                if (now_ + dt < state_end_) return now_ += dt;
                now_ = state_end_;
                in_burst_ = !in_burst_;
                const double mean = in_burst_ ? t_.burst_mean_s : t_.burst_mean_s * (1 - f) / f;
                state_end_ = now_ + rng_.exponential(1.0 / mean);
            }
        }
        case ArrivalProcess::kDiurnal: {
            // Thinning of a Poisson process at the peak rate.
            const double peak = t_.rate_per_s * (1 + t_.diurnal_amplitude);
            for (;;) {
                now_ += rng_.exponential(peak);
                const double rate = t_.rate_per_s * (1 + t_.diurnal_amplitude *
                                                             std::sin(2 * M_PI * now_ / t_.diurnal_period_s));
                if (rng_.uniform01() * peak < rate) return now_;
            }
        }
    }
    return now_;
}

Workload::Workload(const WorkloadConfig& config, Rng rng) : config_(config) {
    for (std::size_t i = 0; i < config.traffic.size(); ++i) {
        const TrafficConfig& t = config.traffic[i];
        Stream s{.config = t,
                 .clock = ArrivalClock(t, rng.fork(1000 + i)),
                 .rng = rng.fork(2000 + i),
                 .next_s = 0,
                 .prefix_tokens = {}};
        for (std::int32_t k = 0; k < t.num_shared_prefixes; ++k)
            s.prefix_tokens.push_back(sample_length(t.shared_prefix, s.rng));
        s.next_s = s.clock.next();
        streams_.push_back(std::move(s));
    }
}

Workload::Workload(const WorkloadConfig& config, std::vector<SimRequest> trace)
    : config_(config), from_trace_(true), trace_(std::move(trace)) {
    std::stable_sort(trace_.begin(), trace_.end(),
                     [](const SimRequest& a, const SimRequest& b) { return a.arrival_s < b.arrival_s; });
    for (std::size_t i = 0; i < trace_.size(); ++i) trace_[i].id = RequestId(static_cast<std::int64_t>(i));
    next_id_ = static_cast<std::int64_t>(trace_.size());
}

std::int32_t Workload::sample_length(const LengthDist& d, Rng& rng) const {
    const double x = rng.lognormal(std::log(d.median), d.sigma);
    return static_cast<std::int32_t>(
        std::clamp(std::llround(x), static_cast<long long>(d.min), static_cast<long long>(d.max)));
}

std::optional<double> Workload::peek_arrival_s() const {
    if (from_trace_) {
        if (trace_pos_ < trace_.size()) return trace_[trace_pos_].arrival_s;
        return std::nullopt;
    }
    std::optional<double> best;
    for (const Stream& s : streams_)
        if (s.next_s < config_.duration_s && (!best || s.next_s < *best)) best = s.next_s;
    return best;
}

SimRequest Workload::pop_arrival() {
    if (from_trace_) {
        DI_CHECK(trace_pos_ < trace_.size(), "pop_arrival past the end of the trace");
        return trace_[trace_pos_++];
    }
    std::size_t best = streams_.size();
    for (std::size_t i = 0; i < streams_.size(); ++i)
        if (streams_[i].next_s < config_.duration_s &&
            (best == streams_.size() || streams_[i].next_s < streams_[best].next_s))
            best = i;
    DI_CHECK(best < streams_.size(), "pop_arrival with no arrival left");
    SimRequest r = make_first(best);
    streams_[best].next_s = streams_[best].clock.next();
    return r;
}

SimRequest Workload::make_first(std::size_t stream) {
    Stream& s = streams_[stream];
    SimRequest r;
    r.id = RequestId(next_id_++);
    r.arrival_s = s.next_s;
    r.traffic_class = s.config.traffic_class;
    if (!s.prefix_tokens.empty()) {
        const std::size_t k = s.rng.below(s.prefix_tokens.size());
        r.prefix_id = stream * 1000003ULL + k + 1;
        r.shared_prefix_tokens = s.prefix_tokens[k];
    }
    r.prompt_tokens = r.shared_prefix_tokens + sample_length(s.config.prompt, s.rng);
    r.output_tokens = sample_length(s.config.output, s.rng);
    if (s.config.traffic_class == TrafficClass::kAgent) {
        r.session_id = next_session_++;
        // Geometric number of turns with the configured mean (>= 1).
        const double p = 1.0 / s.config.mean_turns;
        std::int32_t turns = 1;
        while (turns < 10000 && !s.rng.bernoulli(p)) ++turns;
        sessions_.push_back(Session{.turns_left = turns - 1, .stream = stream});
    }
    return r;
}

std::optional<SimRequest> Workload::next_turn(const SimRequest& done, std::int32_t output_tokens,
                                              double finish_s) {
    // A trace lists every turn itself; generated sessions continue here.
    if (from_trace_ || done.session_id == 0 || output_tokens <= 0) return std::nullopt;
    Session& session = sessions_[static_cast<std::size_t>(done.session_id - 1)];
    if (session.turns_left <= 0) return std::nullopt;
    Stream& s = streams_[session.stream];
    SimRequest r = done;
    r.id = RequestId(next_id_++);
    r.turn = done.turn + 1;
    r.prompt_tokens = done.prompt_tokens + output_tokens + sample_length(s.config.tool_result, s.rng);
    r.output_tokens = sample_length(s.config.output, s.rng);
    r.arrival_s =
        finish_s + (s.config.tool_time_mean_s > 0 ? s.rng.exponential(1.0 / s.config.tool_time_mean_s) : 0.0);
    if (static_cast<std::int64_t>(r.prompt_tokens) + r.output_tokens > s.config.max_context_tokens)
        return std::nullopt;
    session.turns_left -= 1;
    return r;
}

}  // namespace deepinfer::sim
