// Which policy objects an instance runs: one place to switch from the simple first versions to the
// full policies (policies/scheduler Scheduler, policies/eplb balancer) when they land.
#pragma once

#include <memory>

#include "policies/eplb/balancer.h"
#include "policies/scheduler/step_scheduler.h"
#include "sim/config/sim_config.h"

namespace deepinfer::sim {

/// The scheduler named by `group.scheduler` ("simple").
std::unique_ptr<StepScheduler> make_scheduler(const InstanceGroupConfig& group);
/// The expert balancer named by `group.eplb`, starting from `initial`; nullptr for "none".
std::unique_ptr<ExpertBalancer> make_balancer(const InstanceGroupConfig& group,
                                              const ExpertPlacement& initial);

}  // namespace deepinfer::sim
