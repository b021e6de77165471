// Helpers for Scheduler / KV tests: a tiny KV model whose pool holds an exact number of blocks, and
// outcomes built from plans.
#pragma once

#include <cstdint>
#include <vector>

#include "policies/kv/block_pool.h"
#include "policies/scheduler/scheduler.h"
#include "policies/step_outcome.h"
#include "policies/step_plan.h"

namespace deepinfer::testing {

/// A model whose bounded per-sequence state is 12 bytes and whose block is block_tokens * 8 bytes,
/// so a pool of `num_blocks` blocks holds exactly that many blocks next to up to `max_seq_states`
/// sequence states.
inline KvPoolConfig tiny_kv(std::int32_t num_blocks, std::int32_t block_tokens = 16,
                            std::int32_t max_seq_states = 8) {
    KvPoolConfig c;
    c.block_tokens = block_tokens;
    c.shape = KvModelShape{.num_swa_layers = 0,
                           .num_csa_layers = 0,
                           .num_hca_layers = 1,
                           .num_mtp_layers = 0,
                           .head_dim = 1,
                           .index_head_dim = 0,
                           .csa_compress_rate = 4,
                           .hca_compress_rate = 1,
                           .sliding_window_tokens = 0,
                           .dtype_bytes = 8,
                           .online_compressor_state = true};
    c.capacity_bytes = static_cast<double>(num_blocks) * block_tokens * 8 + 12.0 * max_seq_states + 1;
    return c;
}

/// Outcome of `plan` where every sampling sequence yields one token (id 9) and no drafts are accepted.
inline StepOutcome plain_outcome(const StepPlan& plan) {
    StepOutcome o{.step_id = plan.step_id};
    for (const SeqSchedule& s : plan.seqs) {
        SeqOutcome so{.request = s.request};
        if (s.samples) {
            so.token_ids = {9};
            so.num_sampled = 1;
        }
        o.seqs.push_back(std::move(so));
    }
    return o;
}

}  // namespace deepinfer::testing
