// The seam between the Instance loop and scheduling policies: add requests, plan a step, commit
// an outcome. Implementations: SimpleScheduler (FCFS, no KV limit) and the full Scheduler.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policies/request.h"
#include "policies/step_outcome.h"
#include "policies/step_plan.h"

namespace deepinfer {

enum class FinishReason : std::uint8_t { kLength = 0, kStop, kRejected, kAborted };
std::string_view name(FinishReason r);

struct FinishedRequest {
    RequestId request{0};
    FinishReason reason = FinishReason::kLength;
    /// Human-readable cause for kRejected / kAborted (empty otherwise).
    std::string detail;
    std::int32_t num_prompt_tokens = 0;
    std::int32_t num_output_tokens = 0;
    /// Output token ids when the executor reported ids.
    std::vector<std::int32_t> output_token_ids;
};

/// Output progress of one request in one committed step.
struct TokenProgress {
    RequestId request{0};
    /// Output tokens this step added (0 for a non-final prefill chunk).
    std::int32_t num_new_output_tokens = 0;
    /// Output tokens so far, this step included.
    std::int32_t num_output_tokens = 0;
};

struct CommitResult {
    std::vector<TokenProgress> progress;
    std::vector<FinishedRequest> finished;
};

class StepScheduler {
public:
    virtual ~StepScheduler() = default;
    /// Queues a request. Requests that can never run are finished with kRejected at the next
    /// schedule() or commit(), never thrown.
    virtual void add_request(Request request) = 0;
    /// Plans the next step. May be called while earlier steps are still in flight (async
    /// scheduling): sequences then assume their in-flight steps produce their expected tokens and
    /// are reconciled at commit. An empty plan means nothing can run now.
    virtual StepPlan schedule(double now_s) = 0;
    /// Applies the outcome of a launched plan (in launch order).
    virtual CommitResult commit(const StepPlan& plan, const StepOutcome& outcome, double now_s) = 0;
    /// Requests rejected or aborted outside commit (e.g. at schedule time), since the last call.
    virtual std::vector<FinishedRequest> take_rejected() = 0;
    /// True while any request is queued, running or in flight.
    virtual bool has_unfinished() const = 0;
};

}  // namespace deepinfer
