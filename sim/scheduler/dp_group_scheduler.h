// DpGroupScheduler: one instance's data-parallel attention ranks, each planned by its own
// policies/scheduler Scheduler (own KV pool and prefix cache), presented to the engine/core Instance
// loop as one StepScheduler whose plans are the ranks' plans side by side (one synchronised EP step).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "policies/dspark/dspark_verify_adapter.h"
#include "policies/router/router.h"
#include "policies/scheduler/scheduler.h"
#include "policies/scheduler/step_scheduler.h"
#include "sim/parallel/worker_pool.h"
#include "sim/scheduler/early_commit.h"

namespace deepinfer::sim {

class DpGroupScheduler final : public StepScheduler, public EarlyCommit {
public:
    /// `ranks[r]` plans DP rank r (its config's dp_rank must be r). `verify[r]` (may be empty or hold
    /// nulls) is the verify policy ranks[r] points to; owned here so that it outlives the rank.
    DpGroupScheduler(std::vector<std::unique_ptr<Scheduler>> ranks,
                     std::vector<std::unique_ptr<DsparkVerifyAdapter>> verify);

    /// Queues on the least loaded rank (fewest running + waiting; ties to the lower rank).
    void add_request(Request request) override;
    /// Queues on `rank` (the router's choice).
    void add_request(Request request, std::int32_t rank);
    StepPlan schedule(double now_s) override;
    CommitResult commit(const StepPlan& plan, const StepOutcome& outcome, double now_s) override;
    std::vector<FinishedRequest> take_rejected() override;
    bool has_unfinished() const override;

    /// Plans and commits the ranks on `pool`'s threads (null: on the caller's). Only for ranks that
    /// share nothing mutable (no shared store index); plans and commits are merged in rank order, so
    /// the results are the same for any thread count. `pool` must outlive the scheduler.
    void set_worker_pool(WorkerPool* pool) { pool_ = pool; }

    std::int32_t num_ranks() const { return static_cast<std::int32_t>(ranks_.size()); }
    /// The rank's scheduler (live state: not while a step is committed early, see rank_load).
    const Scheduler& rank(std::int32_t r) const { return *ranks_[static_cast<std::size_t>(r)]; }

    /// What a router weighs about the rank (its pending prefill tokens are the caller's to add);
    /// while a step is committed early, as it was when that commit began (which is what it stays
    /// until the Instance commits the step).
    DpRankLoad rank_load(std::int32_t r) const;

    /// EarlyCommit: only with a worker pool and when no rank keeps a prefix cache (a rank's commit
    /// then does not depend on the commit time).
    bool begin_early_commit(std::int64_t step_id, double now_s) override;
    void commit_rank_early(std::size_t rank, std::span<const SeqSchedule> seqs,
                           std::span<const SeqOutcome> outcomes) override;

private:
    struct Part {
        std::int32_t rank = 0;
        std::size_t num_seqs = 0;
    };
    struct Launched {
        std::int64_t step_id = -1;
        std::vector<Part> parts;
    };

    std::vector<std::unique_ptr<Scheduler>> ranks_;
    std::vector<std::unique_ptr<DsparkVerifyAdapter>> verify_;
    WorkerPool* pool_ = nullptr;
    std::deque<Launched> launched_;
    std::int64_t next_step_id_ = 0;
    // Scratch, one slot per rank (reused from step to step): schedule()'s plans and commit()'s results.
    std::vector<StepPlan> plans_;
    std::vector<CommitResult> results_;
    std::vector<std::int32_t> part_at_;  // per rank: its part of the step being committed, or -1
    std::vector<std::size_t> first_;     // per part: its offset into the plan
    /// Maps the parts of `launched` (the step being committed) to ranks and plan offsets.
    void index_parts(const Launched& launched);
    /// Commits rank r's slice of the step (its result slot's buffers are reused); a rank without a
    /// part gets empty results.
    void commit_rank(std::size_t r, std::span<const SeqSchedule> seqs, std::span<const SeqOutcome> outcomes,
                     double now_s);
    /// The step committed early (-1: none), the time it began, and the ranks' loads then.
    std::int64_t early_step_ = -1;
    double early_now_s_ = 0;
    std::vector<DpRankLoad> early_loads_;
};

}  // namespace deepinfer::sim
