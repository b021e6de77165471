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
#include "policies/scheduler/scheduler.h"
#include "policies/scheduler/step_scheduler.h"
#include "sim/parallel/worker_pool.h"

namespace deepinfer::sim {

class DpGroupScheduler final : public StepScheduler {
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
    const Scheduler& rank(std::int32_t r) const { return *ranks_[static_cast<std::size_t>(r)]; }

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
};

}  // namespace deepinfer::sim
