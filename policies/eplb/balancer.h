// The seam between the Instance loop and expert-placement policies.
#pragma once

#include <cstdint>
#include <optional>

#include "policies/eplb/placement.h"
#include "policies/step_outcome.h"

namespace deepinfer {

/// Observes per-step expert loads and decides when to re-place experts.
class ExpertBalancer {
public:
    virtual ~ExpertBalancer() = default;
    /// Called once per committed step with that step's expert loads (may be empty).
    virtual void observe(std::int64_t step_id, const ExpertLoadSample& load) = 0;
    /// A new placement to apply after `step_id`, or nullopt to keep the current one.
    virtual std::optional<ExpertPlacement> maybe_replace(std::int64_t step_id) = 0;
};

}  // namespace deepinfer
