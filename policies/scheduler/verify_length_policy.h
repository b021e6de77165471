// VerifyLengthPolicy: the hook through which the scheduler asks how many of each sequence's draft
// tokens to verify in the next step (speculative decoding). DSpark's policies implement it through
// DsparkVerifyAdapter (policies/dspark/dspark_verify_adapter.h); VerifyAllDrafts is the default.
#pragma once

#include <cstdint>
#include <span>

#include "policies/common/ids.h"

namespace deepinfer {

/// One running sequence with drafts ready for its next step.
struct DraftCandidate {
    RequestId request{0};
    /// Drafts the executor proposed in the sequence's previous step.
    std::int32_t num_drafts = 0;
    /// Most drafts the scheduler can verify (output room left, max_new_tokens); <= num_drafts.
    std::int32_t max_verify = 0;
    /// Tokens already in the sequence's cache (the position of its next token).
    std::int32_t num_context_tokens = 0;
    /// Confidence-head acceptance estimates, one per draft in order (SeqOutcome::draft_confidences
    /// of the previous step). Empty when the executor reported none.
    std::span<const float> confidences;
};

/// Batch-level context for the decision.
struct VerifyContext {
    /// Running sequences (candidates or not) and the step's token budget.
    std::int32_t num_running = 0;
    std::int32_t token_budget = 0;
    /// Running sequences whose next step is a decode (the candidates among them); each computes at
    /// least one token besides any verified drafts.
    std::int32_t num_decode_seqs = 0;

    // The step's other work as far as it is known when verify lengths are chosen (before the
    // running sequences are planned and before any waiting request is admitted). Filled by the
    // Scheduler; a policy that ignores them behaves as before.

    /// Σ over the decode sequences of the position of the token each computes (its context), tokens.
    std::int64_t decode_context_tokens = 0;
    /// Running sequences mid-prompt (chunked prefill, replay, recompute after preemption) that the
    /// step would continue, and the tokens their next chunks hold (each chunk capped at the budget,
    /// the sum not capped: the Scheduler serves running sequences in admission order until the
    /// budget runs out).
    std::int32_t num_prefill_seqs = 0;
    std::int64_t num_prefill_tokens = 0;
    /// Σ over those chunk tokens of their positions (tokens): their mean context is this divided by
    /// num_prefill_tokens.
    double prefill_context_tokens = 0;
    /// Of num_prefill_seqs: chunks that reach the last known token and sample.
    std::int32_t num_prefill_samples = 0;
    /// Waiting requests the step could admit after the running ones, in admission order, counted
    /// until the free sequence slots or the token budget run out, and the tokens they still have to
    /// compute (prompt, plus outputs for a preempted request). Prefix-cache hits are not subtracted
    /// (matching them is the admission's job), so this is an upper bound.
    std::int32_t num_waiting_admissible = 0;
    std::int64_t num_waiting_admissible_tokens = 0;
};

class VerifyLengthPolicy {
public:
    virtual ~VerifyLengthPolicy() = default;
    /// Writes a verify length for each candidate into `out` (same order and size), each in
    /// [0, candidates[i].max_verify]. The scheduler may still shorten them to fit the token budget.
    virtual void choose(const VerifyContext& ctx, std::span<const DraftCandidate> candidates,
                        std::span<std::int32_t> out) = 0;
};

/// Verifies every draft, up to `max_verify_tokens` per sequence.
class VerifyAllDrafts final : public VerifyLengthPolicy {
public:
    explicit VerifyAllDrafts(std::int32_t max_verify_tokens = 1 << 30)
        : max_verify_tokens_(max_verify_tokens) {}
    void choose(const VerifyContext&, std::span<const DraftCandidate> candidates,
                std::span<std::int32_t> out) override {
        for (std::size_t i = 0; i < candidates.size(); ++i)
            out[i] =
                candidates[i].max_verify < max_verify_tokens_ ? candidates[i].max_verify : max_verify_tokens_;
    }

private:
    std::int32_t max_verify_tokens_;
};

}  // namespace deepinfer
