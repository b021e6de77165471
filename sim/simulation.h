// Runs one simulation: builds the platform, starts the actors (workload/router, prefill and decode
// instances, KV handoff), runs SimGrid, and returns what was measured.
// NOTE: SimGrid supports one Engine per process: call run_simulation once per process.
#pragma once

#include <cstdint>
#include <optional>

#include "sim/config/sim_config.h"
#include "sim/report/metrics.h"

namespace deepinfer::sim {

struct RunOptions {
    /// Overrides config.seed when set.
    std::optional<std::uint64_t> seed;
    bool record_timeline = false;
    /// Print a progress bar with simulated time and ETA on stderr.
    bool progress = false;
    /// Threads for the parts of a step that are independent (decode DP ranks). Results are the same
    /// for every count.
    std::int32_t threads = 1;
};

RunMetrics run_simulation(const SimConfig& config, const RunOptions& options);

}  // namespace deepinfer::sim
