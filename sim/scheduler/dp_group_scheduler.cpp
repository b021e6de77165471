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
    const std::size_t R = ranks_.size();
    plans_.resize(R);
    auto plan_rank = [&](std::size_t r) {
        // An idle rank has nothing to plan (its release notices wait for its next plan).
        plans_[r] = ranks_[r]->has_unfinished() ? ranks_[r]->schedule(now_s) : StepPlan{};
    };
    if (pool_ != nullptr)
        pool_->run(R, plan_rank);
    else
        for (std::size_t r = 0; r < R; ++r) plan_rank(r);
    Launched launched;
    std::size_t num_seqs = 0;
    for (const StepPlan& p : plans_) num_seqs += p.seqs.size();
    merged.seqs.reserve(num_seqs);
    // NOTE: the ranks' plans are copied, not moved: each stays in its slot and is freed by the thread
    // that planned it (see WorkerPool::run).
    for (std::size_t r = 0; r < R; ++r) {
        const StepPlan& p = plans_[r];
        if (p.empty()) continue;  // the rank keeps its notices for its next non-empty plan
        launched.parts.push_back(Part{.rank = static_cast<std::int32_t>(r), .num_seqs = p.seqs.size()});
        merged.seqs.insert(merged.seqs.end(), p.seqs.begin(), p.seqs.end());
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

void DpGroupScheduler::index_parts(const Launched& launched) {
    part_at_.assign(ranks_.size(), -1);
    first_.assign(launched.parts.size() + 1, 0);  // parts' offsets into the plan
    for (std::size_t i = 0; i < launched.parts.size(); ++i) {
        part_at_[static_cast<std::size_t>(launched.parts[i].rank)] = static_cast<std::int32_t>(i);
        first_[i + 1] = first_[i] + launched.parts[i].num_seqs;
    }
    results_.resize(ranks_.size());
}

DpRankLoad DpGroupScheduler::rank_load(std::int32_t r) const {
    if (early_step_ >= 0) return early_loads_[static_cast<std::size_t>(r)];
    const Scheduler& s = *ranks_[static_cast<std::size_t>(r)];
    const KvBlockPool& pool = s.pool();
    return DpRankLoad{
        .num_running_seqs = static_cast<std::int32_t>(s.num_running()),
        .num_waiting_seqs = static_cast<std::int32_t>(s.num_waiting()),
        .kv_free_fraction = pool.num_blocks_total() > 0
                                ? static_cast<double>(pool.num_allocatable_blocks()) / pool.num_blocks_total()
                                : 0.0,
        .max_num_seqs = s.config().max_num_seqs};
}

void DpGroupScheduler::commit_rank(std::size_t r, std::span<const SeqSchedule> seqs,
                                   std::span<const SeqOutcome> outcomes, double now_s) {
    if (part_at_[r] < 0) {
        results_[r].progress.clear();
        results_[r].finished.clear();
        return;
    }
    ranks_[r]->commit(seqs, outcomes, now_s, results_[r]);
}

bool DpGroupScheduler::begin_early_commit(std::int64_t step_id, double now_s) {
    if (pool_ == nullptr || early_step_ >= 0 || launched_.empty() || launched_.front().step_id != step_id)
        return false;
    for (const auto& rank : ranks_)
        if (rank->prefix_cache().enabled()) return false;
    early_loads_.resize(ranks_.size());
    for (std::size_t r = 0; r < ranks_.size(); ++r) early_loads_[r] = rank_load(static_cast<std::int32_t>(r));
    index_parts(launched_.front());
    early_step_ = step_id;
    early_now_s_ = now_s;
    return true;
}

void DpGroupScheduler::commit_rank_early(std::size_t r, std::span<const SeqSchedule> seqs,
                                         std::span<const SeqOutcome> outcomes) {
    DI_CHECK(early_step_ >= 0 && r < ranks_.size(), "early commit of rank " << r << " outside a step");
    const std::int32_t part = part_at_[r];
    const std::size_t n = part < 0 ? 0 : launched_.front().parts[static_cast<std::size_t>(part)].num_seqs;
    DI_CHECK(seqs.size() == n && outcomes.size() == n,
             "early commit of rank " << r << ": " << seqs.size() << " sequences, its part has " << n);
    // NOTE: no rank keeps a prefix cache (begin_early_commit), so the commit time is not read.
    commit_rank(r, seqs, outcomes, early_now_s_);
}

CommitResult DpGroupScheduler::commit(const StepPlan& plan, const StepOutcome& outcome, double now_s) {
    DI_CHECK(!launched_.empty() && launched_.front().step_id == plan.step_id,
             "DP group commit of step " << plan.step_id << " out of launch order");
    DI_CHECK(outcome.seqs.size() == plan.seqs.size(),
             "outcome has " << outcome.seqs.size() << " sequences, plan " << plan.seqs.size());
    const Launched launched = std::move(launched_.front());
    launched_.pop_front();
    const bool early = early_step_ == plan.step_id;  // the ranks were committed as their outcomes were drawn
    if (early)
        early_step_ = -1;
    else
        index_parts(launched);
    DI_CHECK(first_.back() == plan.seqs.size(),
             "DP group plan of " << plan.seqs.size() << " sequences, parts " << first_.back());
    if (!early) {
        const std::span<const SeqSchedule> seqs(plan.seqs);
        const std::span<const SeqOutcome> outcomes(outcome.seqs);
        // Tasks are per rank (not per part) so that a rank's scratch stays on one thread.
        auto commit_slice = [&](std::size_t r) {
            const std::int32_t part = part_at_[r];
            const std::size_t at = part < 0 ? 0 : first_[static_cast<std::size_t>(part)];
            const std::size_t n = part < 0 ? 0 : launched.parts[static_cast<std::size_t>(part)].num_seqs;
            commit_rank(r, seqs.subspan(at, n), outcomes.subspan(at, n), now_s);
        };
        if (pool_ != nullptr)
            pool_->run(ranks_.size(), commit_slice);
        else
            for (std::size_t r = 0; r < ranks_.size(); ++r) commit_slice(r);
    }
    CommitResult result;
    for (const Part& part : launched.parts) {  // rank order; copied, see schedule()
        const CommitResult& r = results_[static_cast<std::size_t>(part.rank)];
        result.progress.insert(result.progress.end(), r.progress.begin(), r.progress.end());
        result.finished.insert(result.finished.end(), r.finished.begin(), r.finished.end());
    }
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
