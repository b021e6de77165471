// Instance: the single-threaded engine loop shared by the real engine and the simulator:
//   plan(N+1) -> launch(N+1) -> wait(N) -> commit(N) -> EPLB observe / maybe re-place.
// It blocks only inside Executor::wait (and whatever the caller does between steps).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/clock.h"
#include "engine/core/executor.h"
#include "policies/eplb/balancer.h"
#include "policies/scheduler/step_scheduler.h"

namespace deepinfer::engine {

struct InstanceConfig {
    /// Plan step N+1 before waiting for step N (one step in flight ahead of the commit).
    bool async_scheduling = true;
};

/// Callbacks for results; all optional. Called from inside step().
struct InstanceHooks {
    std::function<void(const StepPlan&, double now_s)> on_launch;
    std::function<void(const StepPlan&, const StepOutcome&, const CommitResult&, double now_s)> on_commit;
    std::function<void(const FinishedRequest&, double now_s)> on_finished;
    std::function<void(const ExpertPlacement&, std::int64_t step_id)> on_placement;
};

struct InstanceStats {
    std::int64_t num_steps_launched = 0;
    std::int64_t num_steps_committed = 0;
    std::int64_t num_tokens_computed = 0;
    std::int64_t num_output_tokens = 0;
    std::int64_t num_finished = 0;
    std::int64_t num_rejected = 0;
    std::int64_t num_placements = 0;
};

class Instance {
public:
    /// `balancer` may be null (no EPLB). The referenced objects must outlive the Instance.
    Instance(std::string name, Executor& executor, Clock& clock, StepScheduler& scheduler,
             ExpertBalancer* balancer, InstanceConfig config = {}, InstanceHooks hooks = {});

    void add_request(Request request);
    /// One loop iteration. Returns false when it neither launched nor committed a step.
    bool step();
    /// Steps until no request is queued, running or in flight.
    void run_until_idle();

    bool has_work() const { return scheduler_.has_unfinished() || !inflight_.empty(); }
    std::size_t num_inflight() const { return inflight_.size(); }
    const InstanceStats& stats() const { return stats_; }
    const std::string& name() const { return name_; }

private:
    struct Inflight {
        StepPlan plan;
        StepTicket ticket;
    };
    void commit_oldest();
    void report_rejections();

    std::string name_;
    Executor& executor_;
    Clock& clock_;
    StepScheduler& scheduler_;
    ExpertBalancer* balancer_;
    InstanceConfig config_;
    InstanceHooks hooks_;
    std::deque<Inflight> inflight_;
    /// The outcome being committed, reused from step to step (Executor::wait_into).
    StepOutcome outcome_;
    InstanceStats stats_;
};

}  // namespace deepinfer::engine
