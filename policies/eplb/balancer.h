// The seam between the Instance loop and expert-placement policies.
#pragma once

#include <cstdint>
#include <optional>

#include "policies/eplb/placement.h"
#include "policies/step_outcome.h"

namespace deepinfer {

/// What a balancer's decisions did so far (all zero for one that does not count them).
struct BalancerStats {
    std::int64_t num_steps_observed = 0;
    std::int64_t num_decisions = 0;
    std::int64_t num_replacements = 0;
    /// Decisions where the gain did not pay for the copies.
    std::int64_t num_skipped = 0;
    /// Cost rule on, summed over decisions: layers kept on their slots (only their router split
    /// re-balanced) and layers changed by a few move-aware rounds instead of the new placement.
    std::int64_t num_layers_kept = 0;
    std::int64_t num_layers_swapped = 0;
    /// ... and layers that took the freshly computed placement.
    std::int64_t num_layers_new = 0;
    double last_gain_s = 0.0;
    double last_cost_s = 0.0;
};

/// Observes per-step expert loads and decides when to re-place experts.
class ExpertBalancer {
public:
    virtual ~ExpertBalancer() = default;
    /// Called once per committed step with that step's expert loads (may be empty).
    virtual void observe(std::int64_t step_id, const ExpertLoadSample& load) = 0;
    /// A new placement to apply after `step_id`, or nullopt to keep the current one.
    virtual std::optional<ExpertPlacement> maybe_replace(std::int64_t step_id) = 0;
    /// Counters of the decisions so far (default: none counted).
    virtual BalancerStats stats() const { return {}; }
};

}  // namespace deepinfer
