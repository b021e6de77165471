// StepPlan: what the scheduler decided for one engine step. Produced by policies, consumed by an
// Executor (CUDA, CPU or SimGrid). Plain data only.
// NOTE: STYLE.md places step_plan.h under engine/core, but policies produce it and may not include
// engine/; so the plan and the outcome live here, at the root of policies/.
#pragma once

#include <cstdint>
#include <vector>

#include "policies/common/ids.h"

namespace deepinfer {

/// Where KV data moves as part of a step (prefix-cache tiers, P/D handoff).
enum class KvTier : std::uint8_t { kHbm = 0, kHost = 1, kStore = 2 };

/// One KV movement the executor must perform (or the simulator must charge) for this step.
struct KvTransfer {
    RequestId request{0};
    KvTier from = KvTier::kHbm;
    KvTier to = KvTier::kHbm;
    std::int32_t num_tokens = 0;
    double num_bytes = 0.0;
};

/// One sequence's work in a step. "No phases": the step computes `num_new_tokens` tokens starting at
/// position `num_computed_tokens`; a prompt chunk, a decode token, verified drafts and a bounded
/// replay are all the same mechanism.
struct SeqSchedule {
    RequestId request{0};
    /// Data-parallel attention rank that holds this sequence's KV.
    std::int32_t dp_rank = 0;
    /// Tokens whose KV exists before the step (prefix-cache hits included).
    std::int32_t num_computed_tokens = 0;
    /// Tokens computed in this step (>= 1).
    std::int32_t num_new_tokens = 0;
    /// Of num_new_tokens: draft tokens verified in this step (DSpark verify length).
    std::int32_t num_verify_tokens = 0;
    /// Of num_new_tokens: tokens recomputed only to rebuild the sliding-window state after a
    /// prefix hit served from a tier that does not hold it (SWA bounded replay).
    std::int32_t num_replay_tokens = 0;
    /// Draft tokens the executor should propose for the next step (0 = no drafting).
    std::int32_t num_drafts_to_propose = 0;
    /// The step reaches the sequence's last known token and samples (false for a non-final chunk).
    bool samples = false;
    /// First time this sequence appears since admission or resumption: `block_ids` is its whole
    /// block table. Otherwise `block_ids` only lists the blocks appended in this step.
    bool is_new = false;
    std::vector<BlockId> block_ids;
};

/// Counters a plan carries so reports can say why the batch looks as it does.
struct PlanStats {
    std::int32_t num_running = 0;
    std::int32_t num_waiting = 0;
    std::int32_t num_preempted = 0;
    std::int32_t num_rejected = 0;
    std::int32_t num_prefix_hit_tokens = 0;
    /// Waiting requests not admitted because the token budget ran out / KV blocks ran out / the
    /// sequence cap was reached.
    std::int32_t num_blocked_by_budget = 0;
    std::int32_t num_blocked_by_kv = 0;
    std::int32_t num_blocked_by_seq_cap = 0;
};

struct StepPlan {
    std::int64_t step_id = -1;
    std::vector<SeqSchedule> seqs;
    /// Sequences whose KV was dropped in this step (preemption by recompute).
    std::vector<RequestId> preempted;
    /// Sequences the scheduler finished or aborted since the last plan: executors drop their state.
    std::vector<RequestId> released;
    std::vector<KvTransfer> kv_transfers;
    PlanStats stats;

    bool empty() const { return seqs.empty(); }
    std::int64_t num_tokens() const {
        std::int64_t n = 0;
        for (const auto& s : seqs) n += s.num_new_tokens;
        return n;
    }
};

}  // namespace deepinfer
