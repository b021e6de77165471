// SimpleScheduler: the first, simple StepScheduler. FCFS within priority, a token budget and a
// sequence cap, chunked prefill, async-safe placeholders; no KV-memory limit, no prefix cache and
// no speculative decoding. The full Scheduler (issue #3) replaces it behind the same interface.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "policies/common/json_reader.h"
#include "policies/scheduler/step_scheduler.h"

namespace deepinfer {

struct SimpleSchedulerConfig {
    /// Most tokens computed in one step (prompt chunks + decode tokens).
    std::int32_t max_num_batched_tokens = 8192;
    /// Most sequences in one step.
    std::int32_t max_num_seqs = 256;
    /// Longest prompt + output a request may reach; longer requests are rejected.
    std::int32_t max_model_len = 1 << 20;
};

SimpleSchedulerConfig simple_scheduler_config_from_json(const JsonReader& r);

class SimpleScheduler final : public StepScheduler {
public:
    explicit SimpleScheduler(SimpleSchedulerConfig config);

    void add_request(Request request) override;
    StepPlan schedule(double now_s) override;
    CommitResult commit(const StepPlan& plan, const StepOutcome& outcome, double now_s) override;
    std::vector<FinishedRequest> take_rejected() override;
    bool has_unfinished() const override;

    std::size_t num_waiting() const { return waiting_.size(); }
    std::size_t num_running() const { return running_.size(); }

private:
    struct Seq {
        Request request;
        std::int32_t num_computed_tokens = 0;
        std::int32_t num_output_tokens = 0;
        std::int32_t num_inflight_tokens = 0;
        /// In-flight steps that will sample (each is a placeholder for one output token).
        std::int32_t num_inflight_samples = 0;
        std::int32_t num_inflight_steps = 0;
        bool finished = false;
        bool announced = false;
        std::vector<std::int32_t> output_token_ids;
    };

    /// Schedules `seq` with at most `budget` tokens; returns the tokens used (0 = nothing to do).
    std::int32_t schedule_seq(Seq& seq, std::int32_t budget, StepPlan& plan);
    void finish(Seq& seq, FinishReason reason, CommitResult& result);

    SimpleSchedulerConfig config_;
    std::int64_t next_step_id_ = 0;
    std::uint64_t next_arrival_ = 0;
    /// Waiting requests keyed by (priority, arrival order).
    std::map<std::pair<std::int32_t, std::uint64_t>, Request> waiting_;
    /// Running sequences in admission order; finished ones are erased once nothing is in flight.
    std::deque<Seq> running_;
    std::vector<RequestId> released_;
    std::vector<FinishedRequest> rejected_;
};

}  // namespace deepinfer
