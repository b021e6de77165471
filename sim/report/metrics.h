// What a simulation run measured, and how it is written: summary.json, the per-request CSV, the
// Chrome/Perfetto timeline, the human summary.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/config/sim_config.h"
#include "sim/sim_executor.h"
#include "sim/workload/workload.h"

namespace deepinfer::sim {

enum class RequestStatus : std::uint8_t { kPending = 0, kCompleted, kRejected, kUnfinished };

struct RequestRecord {
    SimRequest request;
    std::int32_t prefill_instance = -1;
    std::int32_t decode_instance = -1;
    /// DP ranks (full scheduler) and the uncached prompt tokens the router charged to the prefill rank.
    std::int32_t prefill_rank = -1;
    std::int32_t decode_rank = -1;
    std::int32_t routed_uncached_tokens = 0;
    double first_token_s = -1;
    double handoff_done_s = -1;
    double finish_s = -1;
    std::int32_t output_tokens = 0;
    /// Prompt tokens not recomputed at the first prefill admission (prefix-cache hits minus SWA
    /// replay); -1 when the scheduler has no prefix cache.
    std::int32_t cached_tokens = -1;
    std::int32_t retries = 0;
    RequestStatus status = RequestStatus::kPending;
};

/// Per role (prefill / decode) totals over the measurement window.
struct RoleMetrics {
    std::int32_t num_gpus = 0;
    std::int64_t num_steps = 0;
    double window_tokens = 0;
    double window_output_tokens = 0;
    /// Steps ending in the window and the sequences they carried (all instances of the role).
    double window_steps = 0;
    double window_seqs = 0;
    double imbalance_weighted = 0;
    double imbalance_weight = 0;
    double busy_s = 0;
};

struct TimelineEvent {
    std::int32_t pid = 0;
    StepRecord step;
};

struct RunMetrics {
    double simulated_s = 0;
    double wall_s = 0;
    /// Threads the run used (RunOptions::threads); reported with the wall-clock fields.
    std::int32_t threads = 1;
    std::int64_t num_events = 0;
    RoleMetrics prefill;
    RoleMetrics decode;
    std::int64_t num_handoffs = 0;
    /// Expert re-placements applied (EPLB), all instances.
    std::int64_t num_placements = 0;
    /// Re-placements in effect and their weight copies (SimGrid transfers between an instance's GPUs).
    ExpertMoveStats expert_moves;
    /// WindowBalancer decisions per layer with the cost rule on: kept slots (split re-balanced),
    /// a few swaps, the new placement (summed over instances).
    std::int64_t eplb_layers_kept = 0;
    std::int64_t eplb_layers_swapped = 0;
    std::int64_t eplb_layers_new = 0;
    double handoff_bytes = 0;
    double handoff_time_s = 0;
    /// The full Scheduler ran (prefix cache, speculative decoding reported).
    bool full_scheduler = false;
    /// Whole run: SWA replay tokens, bytes read from host memory / the store into HBM, bytes the
    /// decode side wrote to the store (finished agent turns, erasure overhead included).
    double replay_tokens = 0;
    double tier_read_bytes = 0;
    double decode_store_write_bytes = 0;
    std::int64_t decode_store_blocks_written = 0;
    /// Speculative decoding over decode steps ending in the window.
    std::int64_t draft_seq_steps = 0;
    std::int64_t verified_drafts = 0;
    std::int64_t accepted_drafts = 0;
    /// Fault injection (summary "faults", present only when the config lists faults).
    struct Faults {
        std::int64_t injected = 0;
        std::int64_t repaired = 0;
        /// Request moves that kept their KV or had none yet: queued work re-routed, handoffs resent.
        std::int64_t requests_retried = 0;
        /// Request moves that lost KV (prefill done or decode under way) and were prefilled again.
        std::int64_t requests_reprefilled = 0;
        /// Requests a fault moved or held back (parked while every instance of a role was down).
        std::int64_t requests_affected = 0;
        /// Of those, the ones that did not complete (0 when every component recovers in time).
        std::int64_t requests_failed = 0;
        /// Prompt and output tokens whose KV was lost and had to be prefilled again.
        std::int64_t tokens_recomputed = 0;
        /// Blocks the KV store index dropped because a store-node failure lost them.
        std::int64_t store_blocks_lost = 0;
        /// Instance-seconds of downtime (GPU faults), up to the end of the run.
        double instance_down_s = 0;
    } faults;
    std::vector<RequestRecord> requests;
    std::vector<std::string> instance_names;
    std::vector<TimelineEvent> timeline;
    std::string profile_name;
    std::string profile_kind;
    std::string profile_method;
};

/// summary.json; wall-clock fields sit under "wall" (everything else is deterministic).
nlohmann::json make_summary(const SimConfig& config, const RunMetrics& m);
std::string make_requests_csv(const RunMetrics& m);
nlohmann::json make_timeline(const RunMetrics& m);
std::string make_human_summary(const nlohmann::json& summary);

/// Nearest-rank percentile of `values` (sorted copy); nullopt-free: 0 for an empty list.
double percentile(std::vector<double> values, double q);

}  // namespace deepinfer::sim
