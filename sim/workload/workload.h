// Workload generation: chat requests and agent sessions (every turn resends the whole history,
// tool calls in between, long shared prefixes), Poisson/bursty/diurnal arrivals, JSONL trace replay.
// Pure and seeded: no SimGrid here, so it is unit-testable and the same seed gives the same requests.
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "policies/common/rng.h"
#include "policies/request.h"
#include "sim/config/sim_config.h"

namespace deepinfer::sim {

/// A request as the workload knows it (what the router turns into a policies Request).
struct SimRequest {
    RequestId id{0};
    double arrival_s = 0;
    TrafficClass traffic_class = TrafficClass::kChat;
    std::int32_t prompt_tokens = 0;
    std::int32_t output_tokens = 1;
    /// 0 = not part of a session.
    std::uint64_t session_id = 0;
    /// Turn index inside its session (0 for chat).
    std::int32_t turn = 0;
    /// Tokens at the start of the prompt shared with other requests (system prompt, tool defs).
    std::int32_t shared_prefix_tokens = 0;
    /// Which shared prefix (same id = same tokens).
    std::uint64_t prefix_id = 0;
};

/// Chained content hashes of the prompt's full 128-token blocks: blocks inside the shared prefix hash
/// by (prefix_id, index), later blocks by (session or request, index), so identical prefixes (and a
/// session's growing history) produce identical chains.
std::vector<std::uint64_t> prompt_block_hashes(const SimRequest& r, std::int32_t block_tokens = 128);

/// The arrival-time sequence of one traffic stream.
class ArrivalClock {
public:
    ArrivalClock(const TrafficConfig& t, Rng rng);
    /// The next arrival time after the previous one.
    double next();

private:
    TrafficConfig t_;
    Rng rng_;
    double now_ = 0;
    bool in_burst_ = false;
    double state_end_ = 0;
};

class Workload {
public:
    /// Generated traffic (config.traffic) with arrivals in [0, duration_s).
    Workload(const WorkloadConfig& config, Rng rng);
    /// Replayed trace (already parsed).
    Workload(const WorkloadConfig& config, std::vector<SimRequest> trace);

    /// Time of the next open-loop arrival (chat request or new session), or nullopt when none is left.
    std::optional<double> peek_arrival_s() const;
    /// Pops that arrival.
    SimRequest pop_arrival();
    /// A finished turn's follow-up: the session's next turn arriving after the tool call, or nullopt
    /// when the session ends (or the turn was rejected).
    std::optional<SimRequest> next_turn(const SimRequest& done, std::int32_t output_tokens, double finish_s);

    std::int64_t num_generated() const { return next_id_; }

private:
    struct Stream {
        TrafficConfig config;
        ArrivalClock clock;
        Rng rng;
        double next_s;
        std::vector<std::int32_t> prefix_tokens;
    };
    struct Session {
        std::int32_t turns_left = 0;
        std::size_t stream = 0;
    };
    std::int32_t sample_length(const LengthDist& d, Rng& rng) const;
    SimRequest make_first(std::size_t stream);

    WorkloadConfig config_;
    bool from_trace_ = false;
    std::vector<Stream> streams_;
    std::vector<SimRequest> trace_;
    std::size_t trace_pos_ = 0;
    std::int64_t next_id_ = 0;
    std::uint64_t next_session_ = 1;
    std::vector<Session> sessions_;  // indexed by session_id - 1
};

/// Reads a JSONL trace (sim/workload/TRACE_FORMAT.md). Errors are TraceError "<file>:N: /<field>: ...".
std::vector<SimRequest> read_trace_jsonl(const std::string& path);

}  // namespace deepinfer::sim
