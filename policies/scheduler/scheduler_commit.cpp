// Scheduler: admission checks, committing outcomes (draft rollback, prefix-cache registration),
// finishing and releasing sequences, invariant checks.
#include <algorithm>
#include <map>

#include "policies/common/check.h"
#include "policies/scheduler/scheduler.h"

namespace deepinfer {

void Scheduler::reject(const Request& r, std::string why) {
    rejected_.push_back(FinishedRequest{.request = r.id,
                                        .reason = FinishReason::kRejected,
                                        .detail = std::move(why),
                                        .num_prompt_tokens = r.prompt_len()});
    ++num_rejected_since_plan_;
}

void Scheduler::add_request(Request request) {
    const std::int32_t prompt = request.prompt_len();
    const std::int32_t bt = pool_.block_tokens();
    if (prompt <= 0) return reject(request, "empty prompt");
    if (request.max_new_tokens <= 0) return reject(request, "max_new_tokens must be positive");
    if (static_cast<std::int64_t>(prompt) + request.max_new_tokens > config_.max_model_len)
        return reject(request, "prompt + max_new_tokens exceeds max_model_len " +
                                   std::to_string(config_.max_model_len));
    if (index_.count(request.id.value()) != 0) return reject(request, "duplicate request id");
    if (!request.prompt_block_hashes.empty() &&
        static_cast<std::int32_t>(request.prompt_block_hashes.size()) != prompt / bt)
        return reject(request, "prompt_block_hashes has " +
                                   std::to_string(request.prompt_block_hashes.size()) +
                                   " entries, expected one per full " + std::to_string(bt) +
                                   "-token block (" + std::to_string(prompt / bt) + ")");
    const std::int32_t need = blocks_for(static_cast<std::int64_t>(prompt) + request.max_new_tokens);
    if (need > pool_.max_blocks_per_seq())
        return reject(request, "needs " + std::to_string(need) +
                                   " KV blocks plus its sequence state; the KV pool holds " +
                                   std::to_string(std::max(pool_.max_blocks_per_seq(), 0)) +
                                   " for one sequence");
    std::uint32_t slot;
    if (!free_slots_.empty()) {
        slot = free_slots_.back();
        free_slots_.pop_back();
    } else {
        slot = static_cast<std::uint32_t>(slots_.size());
        slots_.emplace_back();
    }
    Seq& seq = slots_[slot];
    seq = Seq{};
    if (cache_.enabled()) seq.hashes = PrefixCache::block_hashes(request, bt);
    seq.request = std::move(request);
    seq.arrival = next_arrival_++;
    seq.state = State::kWaiting;
    index_.emplace(seq.request.id.value(), slot);
    waiting_.emplace(std::make_pair(seq.request.priority, seq.arrival), slot);
    ++num_live_seqs_;
}

CommitResult Scheduler::commit(const StepPlan& plan, const StepOutcome& outcome, double now_s) {
    DI_CHECK(outcome.seqs.size() == plan.seqs.size(),
             "outcome has " << outcome.seqs.size() << " sequences, plan " << plan.seqs.size());
    CommitResult result;
    commit(plan.seqs, outcome.seqs, now_s, result);
    return result;
}

void Scheduler::commit(std::span<const SeqSchedule> seqs, std::span<const SeqOutcome> outcomes, double now_s,
                       CommitResult& result) {
    DI_CHECK(outcomes.size() == seqs.size(),
             "outcome has " << outcomes.size() << " sequences, plan " << seqs.size());
    result.progress.clear();
    result.finished.clear();
    result.progress.reserve(seqs.size());
    for (std::size_t i = 0; i < seqs.size(); ++i) {
        const SeqSchedule& s = seqs[i];
        const SeqOutcome& o = outcomes[i];
        DI_CHECK(o.request == s.request, "outcome order differs from plan order at " << i);
        const auto it = index_.find(s.request.value());
        DI_CHECK(it != index_.end(), "commit for unknown request " << s.request);
        const std::uint32_t slot = it->second;
        Seq& seq = slots_[slot];
        seq.num_inflight_tokens -= s.num_new_tokens;
        seq.num_inflight_samples -= s.samples ? 1 : 0;
        seq.num_inflight_steps -= 1;
        const bool drafts = s.samples && (s.num_verify_tokens > 0 || s.num_drafts_to_propose > 0);
        seq.num_inflight_draft_steps -= drafts ? 1 : 0;
        num_draft_seq_steps_in_flight_ -= drafts ? 1 : 0;
        if (seq.state == State::kFinished) {
            // A placeholder step planned before the request finished: its work is discarded.
            if (seq.num_inflight_steps == 0) release(slot);
            continue;
        }
        DI_CHECK(seq.state == State::kRunning, "commit for request " << s.request << " that is not running");
        commit_seq(seq, s, o, now_s, result);
        if (seq.state == State::kFinished && seq.num_inflight_steps == 0) release(slot);
    }
}

void Scheduler::commit_seq(Seq& seq, const SeqSchedule& s, const SeqOutcome& o, double now_s,
                           CommitResult& result) {
    if (!s.samples) {
        seq.num_computed += s.num_new_tokens;
        register_full_blocks(seq, now_s);
        result.progress.push_back({.request = seq.request.id, .num_output_tokens = seq.num_output});
        return;
    }
    const std::int32_t k = s.num_verify_tokens;
    const std::int32_t accepted = std::clamp(o.num_accepted_drafts, 0, k);
    DI_CHECK(o.num_sampled >= 1 && o.num_sampled <= accepted + 1,
             "request " << seq.request.id << ": sampled " << o.num_sampled << " tokens with " << accepted
                        << " accepted drafts");
    DI_CHECK(accepted == k || seq.num_inflight_steps == 0, "draft rollback under a later in-flight step");
    // The last known token and the accepted drafts are now in the cache; rejected drafts roll back.
    seq.num_computed += s.num_new_tokens - (k - accepted);
    if (accepted < k) trim_blocks(seq);
    const std::int32_t produced = std::min(o.num_sampled, seq.request.max_new_tokens - seq.num_output);
    const auto ids = std::min<std::size_t>(static_cast<std::size_t>(produced), o.token_ids.size());
    seq.output_ids.insert(seq.output_ids.end(), o.token_ids.begin(),
                          o.token_ids.begin() + static_cast<std::ptrdiff_t>(ids));
    seq.num_output += produced;
    if (s.num_drafts_to_propose > 0) {
        std::size_t ready = static_cast<std::size_t>(s.num_drafts_to_propose);
        if (!o.draft_confidences.empty())
            ready = std::min(ready, o.draft_confidences.size());
        else if (!o.draft_token_ids.empty())
            ready = std::min(ready, o.draft_token_ids.size());
        seq.num_drafts_ready = static_cast<std::int32_t>(ready);
        seq.draft_confidences.assign(o.draft_confidences.begin(),
                                     o.draft_confidences.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                                       ready, o.draft_confidences.size())));
    } else {
        seq.num_drafts_ready = 0;
    }
    register_full_blocks(seq, now_s);
    result.progress.push_back(
        {.request = seq.request.id, .num_new_output_tokens = produced, .num_output_tokens = seq.num_output});
    if (o.hit_stop)
        finish(seq, FinishReason::kStop, result);
    else if (seq.num_output >= seq.request.max_new_tokens)
        finish(seq, FinishReason::kLength, result);
}

void Scheduler::register_full_blocks(Seq& seq, double now_s) {
    if (!cache_.enabled()) return;
    const std::int32_t full = std::min(seq.num_computed, seq.request.prompt_len()) / pool_.block_tokens();
    const std::int32_t limit = std::min(full, static_cast<std::int32_t>(seq.hashes.size()));
    for (std::int32_t i = seq.num_registered_blocks; i < limit; ++i)
        cache_.on_block_computed(seq.blocks[static_cast<std::size_t>(i)],
                                 seq.hashes[static_cast<std::size_t>(i)], seq.request.id,
                                 seq.request.traffic_class, now_s, pending_transfers_);
    seq.num_registered_blocks = std::max(seq.num_registered_blocks, limit);
}

void Scheduler::trim_blocks(Seq& seq) {
    const auto keep = static_cast<std::size_t>(blocks_for(seq.num_computed + seq.num_inflight_tokens));
    while (seq.blocks.size() > keep) {
        pool_.release(seq.blocks.back());
        seq.blocks.pop_back();
    }
}

void Scheduler::finish(Seq& seq, FinishReason reason, CommitResult& result) {
    seq.state = State::kFinished;
    --num_running_;
    result.finished.push_back(FinishedRequest{.request = seq.request.id,
                                              .reason = reason,
                                              .num_prompt_tokens = seq.request.prompt_len(),
                                              .num_output_tokens = seq.num_output,
                                              .output_token_ids = seq.output_ids});
}

void Scheduler::release(std::uint32_t slot) {
    Seq& seq = slots_[slot];
    DI_CHECK(seq.state == State::kFinished && seq.num_inflight_steps == 0,
             "releasing request " << seq.request.id);
    // Reverse order: a sequence's last blocks are the least likely to be shared, so they sit at the
    // cold end of the LRU and are evicted first.
    for (auto it = seq.blocks.rbegin(); it != seq.blocks.rend(); ++it) pool_.release(*it);
    seq.blocks.clear();
    pool_.remove_seq_state();
    released_.push_back(seq.request.id);
    index_.erase(seq.request.id.value());
    seq.state = State::kFree;
    free_slots_.push_back(slot);
    --num_live_seqs_;
}

std::vector<FinishedRequest> Scheduler::take_rejected() {
    std::vector<FinishedRequest> out;
    out.swap(rejected_);
    return out;
}

std::int32_t Scheduler::num_computed_tokens(RequestId r) const {
    const auto it = index_.find(r.value());
    DI_CHECK(it != index_.end(), "unknown request " << r);
    return slots_[it->second].num_computed;
}

std::int32_t Scheduler::num_blocks(RequestId r) const {
    const auto it = index_.find(r.value());
    DI_CHECK(it != index_.end(), "unknown request " << r);
    return static_cast<std::int32_t>(slots_[it->second].blocks.size());
}

void Scheduler::check_invariants() const {
    pool_.check_invariants();
    std::map<std::int32_t, std::int32_t> refs;
    std::int32_t running = 0;
    std::int32_t states = 0;
    std::int64_t draft_steps = 0;
    for (const Seq& seq : slots_) {
        if (seq.state == State::kFree) continue;
        draft_steps += seq.num_inflight_draft_steps;
        running += seq.state == State::kRunning ? 1 : 0;
        states += (seq.state == State::kRunning || seq.state == State::kFinished) ? 1 : 0;
        if (seq.state == State::kWaiting) DI_CHECK(seq.blocks.empty(), "waiting request holds blocks");
        DI_CHECK(static_cast<std::int32_t>(seq.blocks.size()) >=
                     blocks_for(seq.num_computed + seq.num_inflight_tokens),
                 "request " << seq.request.id << " computes past its block table");
        // Placeholders (in-flight sampling steps) never count past max_new_tokens.
        DI_CHECK(seq.num_inflight_draft_steps >= 0 &&
                     seq.num_inflight_draft_steps <= seq.num_inflight_samples &&
                     seq.num_inflight_samples <= seq.num_inflight_steps &&
                     seq.num_output + seq.num_inflight_samples <= seq.request.max_new_tokens &&
                     seq.num_computed + seq.num_inflight_tokens <=
                         seq.request.prompt_len() + seq.request.max_new_tokens,
                 "request " << seq.request.id << ": " << seq.num_output << " outputs + "
                            << seq.num_inflight_samples << " in flight, max " << seq.request.max_new_tokens);
        for (BlockId b : seq.blocks) ++refs[b.value()];
    }
    DI_CHECK(running == num_running_, "running " << running << " vs " << num_running_);
    DI_CHECK(draft_steps == num_draft_seq_steps_in_flight_,
             "draft steps in flight " << draft_steps << " vs " << num_draft_seq_steps_in_flight_);
    DI_CHECK(states == pool_.num_seq_states(),
             "sequence states " << states << " vs pool " << pool_.num_seq_states());
    for (std::int32_t b = 0; b < pool_.num_blocks_total(); ++b) {
        const auto it = refs.find(b);
        const std::int32_t want = it == refs.end() ? 0 : it->second;
        DI_CHECK(pool_.ref_count(BlockId(b)) == want,
                 "block " << b << " has ref " << pool_.ref_count(BlockId(b)) << ", sequences hold " << want);
    }
}

}  // namespace deepinfer
