// Which policy objects an instance runs: one place to switch from the simple first versions to the
// full policies (policies/scheduler Scheduler, policies/eplb balancer) when they land.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "policies/eplb/balancer.h"
#include "policies/scheduler/step_scheduler.h"
#include "sim/config/sim_config.h"

namespace deepinfer::sim {

/// The scheduler named by `group.scheduler` ("simple").
std::unique_ptr<StepScheduler> make_scheduler(const InstanceGroupConfig& group);
/// What the balancer's cost rule weighs (BalancerConfig): bytes of one expert replica, the copy
/// bandwidth into one GPU, and the MoE seconds one more token costs the busiest GPU in one layer.
struct EplbCopyCost {
    std::int64_t expert_bytes = 0;
    double copy_bytes_per_s = 0;
    double s_per_token = 0;
};

/// Runs fn(i) for i in [0, n), possibly on several threads.
using ParallelFor = std::function<void(std::size_t n, const std::function<void(std::size_t)>& fn)>;

/// The expert balancer named by `group.eplb`, starting from `initial`; nullptr for "none".
/// `parallel_for` (may be empty) spreads its per-layer choices over threads.
std::unique_ptr<ExpertBalancer> make_balancer(const InstanceGroupConfig& group,
                                              const ExpertPlacement& initial, const EplbCopyCost& copy,
                                              ParallelFor parallel_for = {});

}  // namespace deepinfer::sim
