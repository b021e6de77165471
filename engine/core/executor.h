// The Executor interface: the one seam between the Instance loop and a backend (CUDA, CPU
// reference, SimGrid model). One virtual call per step.
#pragma once

#include <cstdint>
#include <string>

#include "policies/eplb/placement.h"
#include "policies/step_outcome.h"
#include "policies/step_plan.h"

namespace deepinfer::engine {

/// What a backend can do (ggml-style capability flags).
struct ExecutorCaps {
    bool supports_chunked_prefill = true;
    /// Largest StepPlan::num_tokens() the backend accepts (0 = no limit).
    std::int64_t max_batch_tokens = 0;
    /// Can propose draft tokens (MTP) and verify them.
    bool supports_mtp = false;
    std::int32_t max_draft_tokens = 0;
    /// apply_placement does something (false: the call is accepted and ignored).
    bool supports_expert_placement = false;
    /// Reports ExpertLoadSample in outcomes.
    bool reports_expert_load = false;
};

/// Handle of a launched step.
struct StepTicket {
    std::int64_t id = -1;
};

class Executor {
public:
    virtual ~Executor() = default;
    virtual std::string name() const = 0;
    virtual ExecutorCaps caps() const = 0;
    /// Starts executing `plan` and returns at once (never blocks on the step itself).
    virtual StepTicket launch(const StepPlan& plan) = 0;
    /// Blocks (through the backend: a CUDA event, a SimGrid activity) until the step is done.
    /// Tickets are waited in launch order.
    virtual StepOutcome wait(StepTicket ticket) = 0;
    /// wait(), writing into `out` (every field is overwritten). The Instance loop calls this with the
    /// same object every step, so an executor that overrides it can reuse the outcome's storage.
    virtual void wait_into(StepTicket ticket, StepOutcome& out) { out = wait(ticket); }
    /// Installs a new expert placement; takes effect from the next launched step.
    virtual void apply_placement(const ExpertPlacement& placement) = 0;
};

}  // namespace deepinfer::engine
