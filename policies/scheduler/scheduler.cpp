// Scheduler: planning a step (running sequences, verify lengths, preemption, admission).
#include "policies/scheduler/scheduler.h"

#include <algorithm>

#include "policies/common/check.h"

namespace deepinfer {

Scheduler::Scheduler(SchedulerConfig config, VerifyLengthPolicy* verify, KvTierIndex* shared_store)
    : config_(config),
      pool_(config.kv),
      cache_(config.prefix_cache, pool_, shared_store),
      verify_(verify != nullptr ? verify : &default_verify_) {
    DI_CHECK(config_.max_num_batched_tokens > 0 && config_.max_num_seqs > 0 && config_.max_model_len > 0,
             "bad SchedulerConfig");
    DI_CHECK(config_.num_speculative_tokens >= 0,
             "num_speculative_tokens=" << config_.num_speculative_tokens);
}

std::int32_t Scheduler::blocks_for(std::int64_t tokens) const {
    const std::int64_t bt = pool_.block_tokens();
    return static_cast<std::int32_t>((tokens + bt - 1) / bt);
}

StepPlan Scheduler::schedule(double now_s) {
    StepPlan plan;
    if (draft_step_in_flight()) return plan;  // see "Async scheduling" in scheduler.h
    plan.kv_transfers = std::move(pending_transfers_);
    pending_transfers_.clear();
    plan.preempted = std::move(preempted_);
    preempted_.clear();
    plan.seqs.reserve(static_cast<std::size_t>(std::min<std::int64_t>(
        config_.max_num_seqs, static_cast<std::int64_t>(running_.size() + waiting_.size()))));
    cache_.expire(now_s);
    compact_running();
    PassState pass{.now_s = now_s, .budget = config_.max_num_batched_tokens};
    if (config_.num_speculative_tokens > 0) choose_verify_lengths(pass.budget);
    schedule_running(plan, pass);
    compact_running();
    admit_waiting(plan, pass, now_s);

    plan.released = std::move(released_);
    released_.clear();
    plan.stats.num_running = num_running_;
    plan.stats.num_waiting = static_cast<std::int32_t>(waiting_.size());
    plan.stats.num_preempted = static_cast<std::int32_t>(plan.preempted.size());
    plan.stats.num_rejected = num_rejected_since_plan_;
    num_rejected_since_plan_ = 0;
    if (plan.empty()) {
        // Nobody launches an empty plan: keep its notices for the next one.
        released_ = std::move(plan.released);
        preempted_ = std::move(plan.preempted);
        pending_transfers_ = std::move(plan.kv_transfers);
        plan.released.clear();
        plan.preempted.clear();
        plan.kv_transfers.clear();
        return plan;
    }
    plan.step_id = next_step_id_++;
    return plan;
}

void Scheduler::compact_running() {
    std::erase_if(running_, [&](std::uint32_t slot) { return slots_[slot].state != State::kRunning; });
}

void Scheduler::choose_verify_lengths(std::int32_t budget) {
    candidates_.clear();
    candidate_slots_.clear();
    VerifyContext ctx{.num_running = num_running_, .token_budget = budget};
    for (std::uint32_t slot : running_) {
        Seq& seq = slots_[slot];
        seq.verify_choice = 0;
        if (seq.state != State::kRunning) continue;
        const std::int32_t expected_out = seq.num_output + seq.num_inflight_samples;
        if (expected_out >= seq.request.max_new_tokens) continue;
        const std::int32_t known = seq.request.prompt_len() + expected_out;
        const std::int32_t next = seq.num_computed + seq.num_inflight_tokens;
        if (next != known - 1) {
            note_prefill_chunk(seq, next, known, budget, ctx);
            continue;
        }
        // A decode token (on a placeholder when a plain sampling step is in flight: it has no drafts).
        ++ctx.num_decode_seqs;
        ctx.decode_context_tokens += next;
        if (seq.num_inflight_samples > 0 || seq.num_drafts_ready == 0) continue;
        const std::int32_t max_verify =
            std::min(seq.num_drafts_ready, seq.request.max_new_tokens - seq.num_output - 1);
        if (max_verify <= 0) continue;
        candidates_.push_back(DraftCandidate{.request = seq.request.id,
                                             .num_drafts = seq.num_drafts_ready,
                                             .max_verify = max_verify,
                                             .num_context_tokens = known - 1,
                                             .confidences = seq.draft_confidences});
        candidate_slots_.push_back(slot);
    }
    if (candidates_.empty()) return;
    note_waiting_admissible(budget, ctx);
    verify_out_.assign(candidates_.size(), 0);
    verify_->choose(ctx, candidates_, verify_out_);
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
        const std::int32_t k = verify_out_[i];
        DI_CHECK(k >= 0 && k <= candidates_[i].max_verify,
                 "verify policy chose " << k << " for request " << candidates_[i].request << ", max "
                                        << candidates_[i].max_verify);
        slots_[candidate_slots_[i]].verify_choice = k;
    }
}

void Scheduler::note_prefill_chunk(const Seq& seq, std::int32_t next, std::int32_t known, std::int32_t budget,
                                   VerifyContext& ctx) const {
    if (seq.num_output >= seq.request.max_new_tokens) return;
    const std::int32_t remaining = known - next;
    if (remaining <= 0) return;
    const std::int64_t n = std::min(remaining, budget);
    ++ctx.num_prefill_seqs;
    ctx.num_prefill_tokens += n;
    // Positions next .. next + n - 1.
    ctx.prefill_context_tokens += static_cast<double>(n) * next + static_cast<double>(n) * (n - 1) / 2.0;
    if (n == remaining) ++ctx.num_prefill_samples;
}

void Scheduler::note_waiting_admissible(std::int32_t budget, VerifyContext& ctx) const {
    // Bounded scan: stops once the free sequence slots or the budget are used up.
    std::int32_t slots_left = config_.max_num_seqs - num_running_;
    for (const auto& [key, slot] : waiting_) {
        if (slots_left <= 0 || ctx.num_waiting_admissible_tokens >= budget) break;
        const Seq& seq = slots_[slot];
        const std::int32_t known = seq.request.prompt_len() + seq.num_output;
        const std::int32_t handed =
            seq.handoff_used ? 0 : std::clamp(seq.request.num_handed_over_tokens, 0, known - 1);
        ++ctx.num_waiting_admissible;
        ctx.num_waiting_admissible_tokens += std::max(1, known - std::max(seq.num_computed, handed));
        --slots_left;
    }
}

void Scheduler::schedule_running(StepPlan& plan, PassState& pass) {
    pass.victim_cursor = running_.size();
    for (std::size_t pos = 0; pos < running_.size(); ++pos) {
        if (slots_[running_[pos]].state != State::kRunning) continue;  // preempted in this pass
        if (pass.budget <= 0) break;
        if (schedule_running_seq(pos, plan, pass) == Fit::kBlocked) {
            // This sequence and every newer one sit out the step (so they can be preempted next time).
            pass.kv_pressure = true;
            break;
        }
    }
}

Scheduler::Fit Scheduler::schedule_running_seq(std::size_t pos, StepPlan& plan, PassState& pass) {
    const std::uint32_t slot = running_[pos];
    Seq& seq = slots_[slot];
    const std::int32_t expected_out = seq.num_output + seq.num_inflight_samples;
    if (expected_out >= seq.request.max_new_tokens) return Fit::kIdle;
    const std::int32_t known = seq.request.prompt_len() + expected_out;
    const std::int32_t next = seq.num_computed + seq.num_inflight_tokens;
    const std::int32_t remaining = known - next;
    if (remaining <= 0) return Fit::kIdle;
    std::int32_t k = 0;
    std::int32_t n = std::min(remaining, pass.budget);
    if (remaining == 1) {
        k = std::min(seq.verify_choice, pass.budget - 1);
        n = 1 + k;
    }
    seq.verify_choice = 0;
    const auto held = static_cast<std::int32_t>(seq.blocks.size());
    // Drafts are speculative: verify fewer of them rather than preempt anyone for their blocks.
    while (k > 0 && blocks_for(next + n) > held && !pool_.can_allocate(blocks_for(next + n) - held)) {
        --k;
        --n;
    }
    const std::int32_t need = blocks_for(next + n) - held;
    if (need > 0 && !pool_.can_allocate(need)) {
        const Victims v = preempt_for(pos, need, plan, pass);
        if (v != Victims::kFreed) {
            if (v == Victims::kNone && seq.num_inflight_steps == 0) preempt(slot, plan);
            return Fit::kBlocked;
        }
    }
    const std::size_t first_new = seq.blocks.size();
    if (need > 0) {
        pool_.allocate(need, seq.blocks);
        cache_.demote_evicted(seq.request.id, pass.now_s, plan.kv_transfers);
    }
    emit(seq, next, n, k, first_new, plan);
    pass.budget -= n;
    return Fit::kScheduled;
}

Scheduler::Victims Scheduler::preempt_for(std::size_t pos, std::int32_t need, StepPlan& plan,
                                          PassState& pass) {
    bool waited = false;
    while (!pool_.can_allocate(need)) {
        if (pass.victim_cursor <= pos + 1) return waited ? Victims::kWaitForInflight : Victims::kNone;
        const std::uint32_t victim = running_[--pass.victim_cursor];
        const Seq& v = slots_[victim];
        if (v.state != State::kRunning) continue;
        if (v.num_inflight_steps > 0) {
            waited = true;  // its blocks are in use by a launched step
            continue;
        }
        preempt(victim, plan);
    }
    return Victims::kFreed;
}

void Scheduler::preempt(std::uint32_t slot, StepPlan& plan) {
    Seq& seq = slots_[slot];
    DI_CHECK(seq.state == State::kRunning && seq.num_inflight_steps == 0,
             "preempting request " << seq.request.id);
    for (auto it = seq.blocks.rbegin(); it != seq.blocks.rend(); ++it) pool_.release(*it);
    seq.blocks.clear();
    pool_.remove_seq_state();
    seq.num_computed = 0;
    seq.num_registered_blocks = 0;
    seq.replay_begin = seq.replay_end = 0;
    seq.num_drafts_ready = 0;
    seq.verify_choice = 0;
    seq.announced = false;
    seq.state = State::kWaiting;
    --num_running_;
    waiting_.emplace(std::make_pair(seq.request.priority, seq.arrival), slot);
    plan.preempted.push_back(seq.request.id);
}

void Scheduler::admit_waiting(StepPlan& plan, PassState& pass, double now_s) {
    while (!waiting_.empty()) {
        const auto num_waiting = static_cast<std::int32_t>(waiting_.size());
        if (pass.kv_pressure) {
            plan.stats.num_blocked_by_kv = num_waiting;
            return;
        }
        if (num_running_ >= config_.max_num_seqs) {
            plan.stats.num_blocked_by_seq_cap = num_waiting;
            return;
        }
        if (pass.budget <= 0) {
            plan.stats.num_blocked_by_budget = num_waiting;
            return;
        }
        const auto head = waiting_.begin();
        if (!admit_one(head->second, plan, pass, now_s)) {
            plan.stats.num_blocked_by_kv = num_waiting;
            return;
        }
        waiting_.erase(head);
    }
}

bool Scheduler::admit_one(std::uint32_t slot, StepPlan& plan, PassState& pass, double now_s) {
    Seq& seq = slots_[slot];
    const std::int32_t bt = pool_.block_tokens();
    const std::int32_t known = seq.request.prompt_len() + seq.num_output;
    // KV handed over by a prefill instance (P/D) is used once, on first admission; after a
    // preemption the request recomputes (with whatever the prefix cache holds).
    const std::int32_t handed =
        seq.handoff_used ? 0 : std::clamp(seq.request.num_handed_over_tokens, 0, known - 1);
    // Keep at least one token to compute so the step samples.
    const std::int32_t max_hit_blocks = handed > 0 ? 0 : (known - 1) / bt;
    const PrefixMatch m = cache_.match(seq.hashes, max_hit_blocks, now_s);
    const std::int32_t hit_tokens = m.num_blocks * bt;
    const std::int32_t start = handed > 0 ? handed : hit_tokens - m.num_replay_tokens;
    const std::int32_t n = std::min(known - start, pass.budget);
    const std::int32_t need_new = std::max(0, blocks_for(start + n) - m.num_blocks);
    if (!pool_.can_allocate(m.num_pool_blocks() + need_new, 1)) return false;
    // Order matters: take the hits before allocating (allocation evicts unreferenced cached blocks).
    cache_.acquire(m, seq.hashes, seq.request.id, seq.request.traffic_class, now_s, seq.blocks,
                   plan.kv_transfers);
    pool_.allocate(need_new, seq.blocks);
    pool_.add_seq_state();
    cache_.demote_evicted(seq.request.id, now_s, plan.kv_transfers);
    seq.handoff_used = true;
    seq.num_computed = start;
    seq.num_registered_blocks = m.num_blocks;
    seq.replay_begin = start;
    seq.replay_end = hit_tokens;
    seq.state = State::kRunning;
    ++num_running_;
    running_.push_back(slot);
    plan.stats.num_prefix_hit_tokens += hit_tokens;
    emit(seq, start, n, 0, 0, plan);
    pass.budget -= n;
    return true;
}

SeqSchedule& Scheduler::emit(Seq& seq, std::int32_t next, std::int32_t n, std::int32_t k,
                             std::size_t first_new_block, StepPlan& plan) {
    const std::int32_t expected_out = seq.num_output + seq.num_inflight_samples;
    const std::int32_t known = seq.request.prompt_len() + expected_out;
    const bool samples = next + n - k == known;
    const std::int32_t replay =
        std::max(0, std::min(next + n, seq.replay_end) - std::max(next, seq.replay_begin));
    std::int32_t propose = 0;
    if (samples && config_.num_speculative_tokens > 0)
        propose =
            std::clamp(seq.request.max_new_tokens - expected_out - 2, 0, config_.num_speculative_tokens);
    SeqSchedule& s = plan.seqs.emplace_back();
    s.request = seq.request.id;
    s.dp_rank = config_.dp_rank;
    s.num_computed_tokens = next;
    s.num_new_tokens = n;
    s.num_verify_tokens = k;
    s.num_replay_tokens = replay;
    s.num_drafts_to_propose = propose;
    s.samples = samples;
    s.is_new = !seq.announced;
    const std::size_t from = seq.announced ? first_new_block : 0;
    s.block_ids.assign(seq.blocks.begin() + static_cast<std::ptrdiff_t>(from), seq.blocks.end());
    seq.announced = true;
    seq.num_inflight_tokens += n;
    seq.num_inflight_samples += samples ? 1 : 0;
    seq.num_inflight_steps += 1;
    const bool drafts = samples && (k > 0 || propose > 0);
    seq.num_inflight_draft_steps += drafts ? 1 : 0;
    num_draft_seq_steps_in_flight_ += drafts ? 1 : 0;
    if (samples) seq.num_drafts_ready = 0;  // verified now, or stale after this step
    return s;
}

}  // namespace deepinfer
