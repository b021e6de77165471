// CpuExecutor: the V4 CPU reference as an engine::Executor. Runs each StepPlan sequence through
// V4Model against its own cache: prompt chunks, decode, MTP drafting (num_drafts_to_propose) and
// verification of earlier drafts (num_verify_tokens) with rollback of the rejected ones.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "engine/core/executor.h"
#include "engine/cpu/sampling.h"
#include "engine/cpu/v4_model.h"

namespace deepinfer::cpu {

struct CpuExecutorConfig {
    /// Drafts the MTP block may propose per step (0 = no drafting). Needs MTP weights.
    std::int32_t max_draft_tokens = 0;
    /// Seed for sequences whose SamplingParams carry none (mixed with the request id).
    std::uint64_t seed = 0;
};

/// What one sequence produced, kept until take_record().
struct SequenceRecord {
    std::vector<std::int32_t> prompt;
    /// Output tokens (accepted drafts and bonus tokens), in order.
    std::vector<std::int32_t> outputs;
    /// With SamplingParams::return_logits: [prompt_len, vocab] and [outputs, vocab], row-major.
    std::vector<float> prompt_logits;
    std::vector<float> step_logits;
    std::int64_t num_drafts_proposed = 0;
    /// Drafts the plans asked to verify (SeqSchedule::num_verify_tokens summed).
    std::int64_t num_drafts_verified = 0;
    std::int64_t num_drafts_accepted = 0;
};

/// Draft confidences: with num_drafts_to_propose > 0 a sampling step reports, next to each MTP
/// draft (SeqOutcome::draft_token_ids), SeqOutcome::draft_confidences[i] = the MTP head's softmax
/// probability of draft i given the drafts before it. That is the estimate DSpark's verify policies
/// use for "draft i is accepted if drafts 0..i-1 were": exact for greedy acceptance only if the MTP
/// head predicts the main model's argmax as well as it predicts the data (a jointly trained head is
/// roughly calibrated; the random MTP weights of the tests are not), and never read by the executor
/// itself.
class CpuExecutor final : public engine::Executor {
public:
    CpuExecutor(std::shared_ptr<const V4Model> model, CpuExecutorConfig config = {});

    /// Registers a sequence before its request reaches the scheduler (the plan carries ids only).
    void add_sequence(RequestId id, std::vector<std::int32_t> prompt, SamplingParams sampling);
    /// The record of a sequence (also after it was released); throws for an unknown id.
    const SequenceRecord& record(RequestId id) const;
    /// Replaces the drafts a later step verifies (an external drafter, or tests forcing a
    /// particular accept/reject pattern). Takes effect for the next step of `id`.
    void set_drafts(RequestId id, std::vector<std::int32_t> drafts);
    SequenceRecord take_record(RequestId id);

    std::string name() const override { return "cpu-reference"; }
    engine::ExecutorCaps caps() const override;
    /// Queues the plan; the work happens in wait() (launch never blocks).
    engine::StepTicket launch(const StepPlan& plan) override;
    StepOutcome wait(engine::StepTicket ticket) override;
    /// The CPU reference holds every expert: placements are accepted and ignored.
    void apply_placement(const ExpertPlacement&) override {}

private:
    struct Seq {
        std::uint64_t seed = 0;
        SamplingParams sampling;
        SeqCache cache;
        /// Prompt then accepted outputs: the id of every position up to the next one to compute.
        std::vector<std::int32_t> tokens;
        /// Drafts proposed by the last step (verified by a later step's num_verify_tokens).
        std::vector<std::int32_t> drafts;
        SequenceRecord record;
    };

    SeqOutcome run_seq(const SeqSchedule& s);
    /// Samples the produced tokens of a step; returns how many drafts were accepted.
    std::int32_t sample_outputs(Seq& q, const SeqSchedule& s, const ForwardOutput& out, SeqOutcome& o);
    /// Feeds the MTP block the positions it has not seen yet (up to cache.length) and drafts.
    void update_mtp_and_draft(Seq& q, const SeqSchedule& s, const ForwardOutput& out, SeqOutcome& o);
    bool is_stop(const Seq& q, std::int32_t token) const;

    std::shared_ptr<const V4Model> model_;
    CpuExecutorConfig config_;
    std::map<RequestId, Seq> seqs_;
    std::map<RequestId, SequenceRecord> finished_records_;
    std::deque<std::pair<engine::StepTicket, StepPlan>> queued_;
    std::int64_t next_ticket_ = 0;
};

}  // namespace deepinfer::cpu
