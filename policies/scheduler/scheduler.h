// Scheduler: the full StepScheduler. No phases: every sequence's computed-token counter catches up
// to its known tokens (prompt + outputs) under a token budget and a sequence cap. One mechanism
// covers chunked prefill, prefix-cache reuse (with SWA bounded replay) and speculative decoding.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "policies/common/json_reader.h"
#include "policies/kv/block_pool.h"
#include "policies/kv/prefix_cache.h"
#include "policies/scheduler/step_scheduler.h"
#include "policies/scheduler/verify_length_policy.h"

namespace deepinfer {

struct SchedulerConfig {
    /// Most tokens computed in one step (prompt chunks, decode tokens, verified drafts, replay).
    std::int32_t max_num_batched_tokens = 8192;
    /// Most sequences admitted at once (each holds a sequence state in the pool).
    std::int32_t max_num_seqs = 256;
    /// Longest prompt + output a request may reach; longer requests are rejected.
    std::int32_t max_model_len = 1 << 20;
    /// Drafts each sampling step asks the executor to propose (0 = no speculative decoding).
    std::int32_t num_speculative_tokens = 0;
    /// Data-parallel attention rank written into every SeqSchedule of this scheduler.
    std::int32_t dp_rank = 0;
    KvPoolConfig kv;
    PrefixCacheConfig prefix_cache;
};

/// Reads a SchedulerConfig; every key optional (defaults above), unknown keys rejected.
/// Keys: max_num_batched_tokens, max_num_seqs, max_model_len, num_speculative_tokens, dp_rank,
/// kv (see kv_pool_config_from_json), prefix_cache (see prefix_cache_config_from_json).
SchedulerConfig scheduler_config_from_json(const JsonReader& r);

/// Plans steps over a KvBlockPool and a PrefixCache it owns.
///
/// Per step: running sequences first, in admission order (a prompt chunk, or a decode token plus
/// the verify length chosen by the VerifyLengthPolicy), then waiting requests FCFS within priority
/// classes (prefix-cache match, then a prompt chunk). When a running sequence needs KV blocks that
/// are not there, the newest running sequences are preempted by recompute; preemption never picks
/// a sequence with a step in flight, and once a sequence is blocked it and every newer sequence sit
/// out the step (so they can be preempted at the next plan) and nothing is admitted.
///
/// Block tables: a SeqSchedule with is_new lists the whole table; otherwise the executor keeps the
/// first ceil(num_computed_tokens / block_tokens) blocks it holds for the sequence (dropping blocks
/// that a draft rollback released) and appends `block_ids`.
///
/// Async scheduling: a sequence with steps in flight is planned on placeholders. Each in-flight
/// sampling step counts as one expected output token, so a decoding sequence is planned for its
/// next token before the previous one is known (a pure-decode batch is planned every step). At
/// commit, a stop token or max_new_tokens in step N finishes the request and the outcome of every
/// later step already launched for it is discarded; its KV blocks (including a block taken for a
/// placeholder token) are released once, when its last in-flight step commits. Placeholders never
/// push a sequence past max_new_tokens (so never past max_model_len).
/// Drafts are the exception: while any step that verifies or proposes drafts is in flight the
/// Scheduler plans nothing (the Instance loop runs synchronously). A speculating sequence cannot be
/// planned before its step commits, because how many drafts are accepted (so the position of the
/// next token) and which drafts come next are unknown; and a step made of the other work alone
/// (prompt chunks, newly admitted sequences) would run between two steps of the speculating sequences
/// and delay each of them by a whole step, which costs about the same weight reads at any decode
/// batch, so that work joins the next full plan instead. Placeholder steps themselves never verify or
/// propose drafts (the proposal count only shrinks as outputs grow). Without speculation every step
/// pipelines.
///
/// P/D disaggregation: a request with num_handed_over_tokens starts at that position on its first
/// admission (the KV arrived with the handoff; blocks are allocated for it, nothing is replayed).
///
/// Drafts: an executor that reports neither draft ids nor confidences is taken to have proposed
/// exactly the num_drafts_to_propose the plan asked for.
class Scheduler final : public StepScheduler {
public:
    /// `verify` may be null (VerifyAllDrafts). `shared_store` may be null (the prefix cache keeps its
    /// own store index) or a distributed store index shared with other instances. Neither is owned;
    /// both must outlive the scheduler.
    explicit Scheduler(SchedulerConfig config, VerifyLengthPolicy* verify = nullptr,
                       KvTierIndex* shared_store = nullptr);

    void add_request(Request request) override;
    StepPlan schedule(double now_s) override;
    CommitResult commit(const StepPlan& plan, const StepOutcome& outcome, double now_s) override;
    /// The same for a step's sequences given directly (outcomes in plan order): a caller that
    /// merged several schedulers' plans into one step commits each one's slice without copying it.
    /// `result` is overwritten (its buffers are reused).
    void commit(std::span<const SeqSchedule> seqs, std::span<const SeqOutcome> outcomes, double now_s,
                CommitResult& result);
    std::vector<FinishedRequest> take_rejected() override;
    bool has_unfinished() const override { return num_live_seqs_ > 0; }

    std::size_t num_waiting() const { return waiting_.size(); }
    std::size_t num_running() const { return static_cast<std::size_t>(num_running_); }
    /// A launched step that verifies or proposes drafts has not been committed yet (schedule() then
    /// plans nothing; a DP group holds all its ranks back).
    bool draft_step_in_flight() const { return num_draft_seq_steps_in_flight_ > 0; }
    const SchedulerConfig& config() const { return config_; }
    const KvBlockPool& pool() const { return pool_; }
    const PrefixCache& prefix_cache() const { return cache_; }
    /// Computed-token counter / block-table size of a queued or running request (tests, reports).
    std::int32_t num_computed_tokens(RequestId r) const;
    std::int32_t num_blocks(RequestId r) const;
    /// Checks the pool and that every block reference is held by exactly the sequences that list
    /// it; throws InternalError otherwise.
    void check_invariants() const;

private:
    enum class State : std::uint8_t { kFree, kWaiting, kRunning, kFinished };
    struct Seq {
        Request request;
        std::vector<std::uint64_t> hashes;
        std::vector<BlockId> blocks;
        std::vector<std::int32_t> output_ids;
        std::vector<float> draft_confidences;
        std::uint64_t arrival = 0;
        State state = State::kFree;
        std::int32_t num_computed = 0;
        std::int32_t num_output = 0;
        std::int32_t num_inflight_tokens = 0;
        std::int32_t num_inflight_samples = 0;
        std::int32_t num_inflight_steps = 0;
        /// In-flight sampling steps that verify or propose drafts (none when schedule() plans).
        std::int32_t num_inflight_draft_steps = 0;
        std::int32_t num_registered_blocks = 0;
        std::int32_t replay_begin = 0;
        std::int32_t replay_end = 0;
        std::int32_t num_drafts_ready = 0;
        std::int32_t verify_choice = 0;
        bool announced = false;
        bool handoff_used = false;
    };
    enum class Fit : std::uint8_t { kScheduled, kIdle, kBlocked };
    enum class Victims : std::uint8_t { kFreed, kWaitForInflight, kNone };
    struct PassState {
        double now_s = 0.0;
        std::int32_t budget = 0;
        std::size_t victim_cursor = 0;
        bool kv_pressure = false;
    };

    std::int32_t blocks_for(std::int64_t tokens) const;
    void choose_verify_lengths(std::int32_t budget);
    /// Adds a running sequence's next prompt chunk to the verify context's view of the step.
    void note_prefill_chunk(const Seq& seq, std::int32_t next, std::int32_t known, std::int32_t budget,
                            VerifyContext& ctx) const;
    /// Adds the waiting requests the step could admit to the verify context.
    void note_waiting_admissible(std::int32_t budget, VerifyContext& ctx) const;
    void schedule_running(StepPlan& plan, PassState& pass);
    Fit schedule_running_seq(std::size_t pos, StepPlan& plan, PassState& pass);
    Victims preempt_for(std::size_t pos, std::int32_t need, StepPlan& plan, PassState& pass);
    void admit_waiting(StepPlan& plan, PassState& pass, double now_s);
    bool admit_one(std::uint32_t slot, StepPlan& plan, PassState& pass, double now_s);
    SeqSchedule& emit(Seq& seq, std::int32_t next, std::int32_t n, std::int32_t k,
                      std::size_t first_new_block, StepPlan& plan);
    void preempt(std::uint32_t slot, StepPlan& plan);
    void compact_running();
    void commit_seq(Seq& seq, const SeqSchedule& s, const SeqOutcome& o, double now_s, CommitResult& result);
    void register_full_blocks(Seq& seq, double now_s);
    void trim_blocks(Seq& seq);
    void finish(Seq& seq, FinishReason reason, CommitResult& result);
    void release(std::uint32_t slot);
    void reject(const Request& r, std::string why);

    SchedulerConfig config_;
    KvBlockPool pool_;
    PrefixCache cache_;
    VerifyAllDrafts default_verify_;
    VerifyLengthPolicy* verify_;
    std::int64_t next_step_id_ = 0;
    std::uint64_t next_arrival_ = 0;
    std::vector<Seq> slots_;
    std::vector<std::uint32_t> free_slots_;
    std::unordered_map<std::int64_t, std::uint32_t> index_;
    /// Waiting requests keyed by (priority, arrival order); preempted ones keep their key.
    std::map<std::pair<std::int32_t, std::uint64_t>, std::uint32_t> waiting_;
    /// Admitted sequences in admission order (stale entries dropped by compact_running).
    std::vector<std::uint32_t> running_;
    std::int32_t num_running_ = 0;
    std::int64_t num_live_seqs_ = 0;
    /// Sum over sequences of num_inflight_draft_steps.
    std::int64_t num_draft_seq_steps_in_flight_ = 0;
    std::vector<RequestId> released_;
    /// Preemptions decided in a plan that came out empty; reported with the next non-empty plan.
    std::vector<RequestId> preempted_;
    std::vector<FinishedRequest> rejected_;
    std::int32_t num_rejected_since_plan_ = 0;
    std::vector<KvTransfer> pending_transfers_;
    std::vector<DraftCandidate> candidates_;
    std::vector<std::uint32_t> candidate_slots_;
    std::vector<std::int32_t> verify_out_;
};

}  // namespace deepinfer
