// DpGroupScheduler: merging the ranks' plans, splitting outcomes back.
#include "sim/scheduler/dp_group_scheduler.h"

#include "policies/common/check.h"

namespace deepinfer::sim {

DpGroupScheduler::DpGroupScheduler(std::vector<std::unique_ptr<Scheduler>> ranks,
                                   std::vector<std::unique_ptr<DsparkVerifyAdapter>> verify)
    : ranks_(std::move(ranks)), verify_(std::move(verify)) {
    DI_CHECK(!ranks_.empty(), "a DP group needs at least one rank");
    for (std::size_t r = 0; r < ranks_.size(); ++r)
        DI_CHECK(ranks_[r]->config().dp_rank == static_cast<std::int32_t>(r),
                 "rank " << r << " has dp_rank " << ranks_[r]->config().dp_rank);
}

void DpGroupScheduler::add_request(Request request) {
    std::size_t best = 0;
    auto load = [&](std::size_t r) { return ranks_[r]->num_running() + ranks_[r]->num_waiting(); };
    for (std::size_t r = 1; r < ranks_.size(); ++r)
        if (load(r) < load(best)) best = r;
    ranks_[best]->add_request(std::move(request));
}

void DpGroupScheduler::add_request(Request request, std::int32_t rank) {
    DI_CHECK(rank >= 0 && rank < num_ranks(), "DP rank " << rank << " of " << num_ranks());
    ranks_[static_cast<std::size_t>(rank)]->add_request(std::move(request));
}

StepPlan DpGroupScheduler::schedule(double now_s) {
    StepPlan merged;
    // The ranks step together: a step planned while one rank's speculating sequences wait on the
    // step in flight would delay them by a whole step (policies/scheduler/scheduler.h).
    for (const auto& rank : ranks_)
        if (rank->draft_step_in_flight()) return merged;
    Launched launched;
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
        // An idle rank has nothing to plan (its release notices wait for its next plan).
        if (!ranks_[r]->has_unfinished()) continue;
        StepPlan p = ranks_[r]->schedule(now_s);
        if (p.empty()) continue;  // the rank keeps its notices for its next non-empty plan
        launched.parts.push_back(
            Part{.rank = static_cast<std::int32_t>(r), .step_id = p.step_id, .num_seqs = p.seqs.size()});
        if (merged.seqs.empty()) {
            merged.seqs = std::move(p.seqs);
        } else {
            merged.seqs.insert(merged.seqs.end(), std::make_move_iterator(p.seqs.begin()),
                               std::make_move_iterator(p.seqs.end()));
        }
        merged.preempted.insert(merged.preempted.end(), p.preempted.begin(), p.preempted.end());
        merged.released.insert(merged.released.end(), p.released.begin(), p.released.end());
        merged.kv_transfers.insert(merged.kv_transfers.end(), p.kv_transfers.begin(), p.kv_transfers.end());
        PlanStats& s = merged.stats;
        s.num_preempted += p.stats.num_preempted;
        s.num_rejected += p.stats.num_rejected;
        s.num_prefix_hit_tokens += p.stats.num_prefix_hit_tokens;
        s.num_blocked_by_budget += p.stats.num_blocked_by_budget;
        s.num_blocked_by_kv += p.stats.num_blocked_by_kv;
        s.num_blocked_by_seq_cap += p.stats.num_blocked_by_seq_cap;
    }
    for (const auto& rank : ranks_) {
        merged.stats.num_running += static_cast<std::int32_t>(rank->num_running());
        merged.stats.num_waiting += static_cast<std::int32_t>(rank->num_waiting());
    }
    if (merged.seqs.empty()) return merged;
    merged.step_id = launched.step_id = next_step_id_++;
    launched_.push_back(std::move(launched));
    return merged;
}

CommitResult DpGroupScheduler::commit(const StepPlan& plan, const StepOutcome& outcome, double now_s) {
    DI_CHECK(!launched_.empty() && launched_.front().step_id == plan.step_id,
             "DP group commit of step " << plan.step_id << " out of launch order");
    DI_CHECK(outcome.seqs.size() == plan.seqs.size(),
             "outcome has " << outcome.seqs.size() << " sequences, plan " << plan.seqs.size());
    const Launched launched = std::move(launched_.front());
    launched_.pop_front();
    CommitResult result;
    std::size_t at = 0;
    // NOTE: the per-rank plan and outcome are scratch members: assigning into their existing
    // elements reuses the vectors' storage (confidences, token ids) from step to step.
    StepPlan& sub = sub_plan_;
    StepOutcome& sub_out = sub_outcome_;
    for (const Part& part : launched.parts) {
        DI_CHECK(at + part.num_seqs <= plan.seqs.size(),
                 "DP group plan of " << plan.seqs.size() << " sequences, parts past " << at);
        sub.step_id = part.step_id;
        sub.seqs.resize(part.num_seqs);
        sub_out.seqs.resize(part.num_seqs);
        sub_out.step_id = part.step_id;
        sub_out.start_s = outcome.start_s;
        sub_out.end_s = outcome.end_s;
        for (std::size_t k = 0; k < part.num_seqs; ++k) {
            const SeqSchedule& s = plan.seqs[at + k];
            // Commit reads counters only: the block table is not copied.
            SeqSchedule& d = sub.seqs[k];
            d.request = s.request;
            d.dp_rank = s.dp_rank;
            d.num_computed_tokens = s.num_computed_tokens;
            d.num_new_tokens = s.num_new_tokens;
            d.num_verify_tokens = s.num_verify_tokens;
            d.num_replay_tokens = s.num_replay_tokens;
            d.num_drafts_to_propose = s.num_drafts_to_propose;
            d.samples = s.samples;
            d.is_new = s.is_new;
            d.block_ids.clear();
            sub_out.seqs[k] = outcome.seqs[at + k];
        }
        at += part.num_seqs;
        CommitResult r = ranks_[static_cast<std::size_t>(part.rank)]->commit(sub, sub_out, now_s);
        if (result.progress.empty()) {
            result.progress = std::move(r.progress);
        } else {
            result.progress.insert(result.progress.end(), r.progress.begin(), r.progress.end());
        }
        if (result.finished.empty()) {
            result.finished = std::move(r.finished);
        } else {
            for (FinishedRequest& f : r.finished) result.finished.push_back(std::move(f));
        }
    }
    DI_CHECK(at == plan.seqs.size(), "DP group plan of " << plan.seqs.size() << " sequences, parts " << at);
    return result;
}

std::vector<FinishedRequest> DpGroupScheduler::take_rejected() {
    std::vector<FinishedRequest> out;
    for (const auto& rank : ranks_)
        for (FinishedRequest& f : rank->take_rejected()) out.push_back(std::move(f));
    return out;
}

bool DpGroupScheduler::has_unfinished() const {
    for (const auto& rank : ranks_)
        if (rank->has_unfinished()) return true;
    return false;
}

}  // namespace deepinfer::sim
