// Policy factory: the real policies, never sim-specific forks.
#include "sim/policy_factory.h"

#include "policies/eplb/window_balancer.h"
#include "policies/scheduler/simple_scheduler.h"

namespace deepinfer::sim {

std::unique_ptr<StepScheduler> make_scheduler(const InstanceGroupConfig& group) {
    // "simple" only: "full" (one policies Scheduler per attention-DP rank) is built by
    // Cluster::make_full_scheduler, which needs the platform (HBM per GPU, shared store tier).
    return std::make_unique<SimpleScheduler>(group.scheduler_config);
}

std::unique_ptr<ExpertBalancer> make_balancer(const InstanceGroupConfig& group,
                                              const ExpertPlacement& initial, const EplbCopyCost& copy,
                                              ParallelFor parallel_for) {
    if (group.eplb != "window") return nullptr;
    BalancerConfig c;
    c.window_steps = group.eplb_window_steps;
    c.period_steps = group.eplb_period_steps;
    c.placement.num_gpus = group.ep_size;
    c.placement.redundant_per_gpu = group.redundant_experts_per_gpu;
    c.expert_bytes = copy.expert_bytes;
    c.copy_bytes_per_s = copy.copy_bytes_per_s;
    c.s_per_token = copy.s_per_token;
    c.parallel_for = std::move(parallel_for);
    return std::make_unique<WindowBalancer>(c, initial);
}

}  // namespace deepinfer::sim
