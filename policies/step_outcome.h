// StepOutcome: what an executor reports back for one step. Plain data.
#pragma once

#include <cstdint>
#include <vector>

#include "policies/common/ids.h"

namespace deepinfer {

/// Tokens routed to each logical expert in one step: `tokens[layer * num_experts + expert]`.
/// Empty (num_layers == 0) when the executor does not report expert load.
struct ExpertLoadSample {
    std::int32_t num_layers = 0;
    std::int32_t num_experts = 0;
    std::vector<std::int64_t> tokens;

    bool empty() const { return num_layers == 0; }
    std::int64_t at(std::int32_t layer, std::int32_t expert) const {
        return tokens[static_cast<std::size_t>(layer) * num_experts + expert];
    }
};

struct SeqOutcome {
    RequestId request{0};
    /// Tokens produced by the step: accepted drafts then the bonus token. Empty when the step did not
    /// sample. The simulator may report counts only (`num_sampled`) and leave ids empty.
    std::vector<std::int32_t> token_ids;
    /// Number of tokens produced (== token_ids.size() when ids are given).
    std::int32_t num_sampled = 0;
    /// Of the verified drafts, how many were accepted.
    std::int32_t num_accepted_drafts = 0;
    /// A stop token (EOS or a user stop id) was produced: the request is finished.
    bool hit_stop = false;
    /// Drafts proposed for the next step and the confidence head's acceptance estimate for each.
    std::vector<std::int32_t> draft_token_ids;
    std::vector<float> draft_confidences;
};

struct StepOutcome {
    std::int64_t step_id = -1;
    /// One entry per plan sequence, in plan order.
    std::vector<SeqOutcome> seqs;
    /// Executor-side time of the step (start and end on the Instance's Clock).
    double start_s = 0.0;
    double end_s = 0.0;
    ExpertLoadSample expert_load;
};

}  // namespace deepinfer
