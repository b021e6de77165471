// EarlyCommit: the seam through which the SimExecutor commits a data-parallel step's ranks as soon as
// their outcomes are drawn, on worker threads while SimGrid runs the rest of the cluster, instead of
// after the step. DpGroupScheduler implements it; the Instance's commit of that step then only merges
// the ranks' results, which are the same as those of a commit after the step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "policies/step_plan.h"

namespace deepinfer::sim {

class EarlyCommit {
public:
    virtual ~EarlyCommit() = default;
    /// On the simulation thread, when the outcomes of step `step_id` are about to be drawn (at
    /// simulated time `now_s`): whether its ranks may be committed now. Until the Instance commits
    /// that step, nothing may read the ranks' live state (the implementation serves snapshots).
    virtual bool begin_early_commit(std::int64_t step_id, double now_s) = 0;
    /// On a worker thread, once for every rank after begin_early_commit returned true: `seqs` and
    /// `outcomes` are the rank's slice of the step (plan order; empty when the rank had no part).
    virtual void commit_rank_early(std::size_t rank, std::span<const SeqSchedule> seqs,
                                   std::span<const SeqOutcome> outcomes) = 0;
};

}  // namespace deepinfer::sim
