// SimExecutor implementation.
#include "sim/sim_executor.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <utility>

#include "policies/common/check.h"
#include "policies/cost/roofline.h"
#include "policies/eplb/moves.h"
#include "sim/platform/platform.h"

namespace deepinfer::sim {
namespace {

/// Joins the worker pool's asynchronous batch (a step's draws, which reference its Pending and its
/// outcome). wait() joins and rethrows a draw's exception; the destructor, reached without wait()
/// only when a SimGrid wait threw, joins and drops it (that first exception is the one reported).
class AsyncDraws {
public:
    explicit AsyncDraws(WorkerPool* pool) : pool_(pool) {}
    AsyncDraws(const AsyncDraws&) = delete;
    AsyncDraws& operator=(const AsyncDraws&) = delete;
    ~AsyncDraws() {
        if (pool_ == nullptr) return;
        try {
            pool_->wait_async();
        } catch (...) {  // NOLINT(bugprone-empty-catch): see above
        }
    }
    void wait() {
        if (WorkerPool* pool = std::exchange(pool_, nullptr)) pool->wait_async();
    }

private:
    WorkerPool* pool_;
};

}  // namespace

SimExecutor::SimExecutor(SimExecutorSetup setup, const CostModel& cost, EpLoadModel& ep,
                         DraftAcceptance& acceptance, Rng rng, std::function<void(const StepRecord&)> on_step)
    : setup_(std::move(setup)),
      cost_(cost),
      ep_(ep),
      acceptance_(acceptance),
      rng_(rng),
      on_step_(std::move(on_step)) {
    DI_CHECK(!setup_.gpus.empty(), setup_.name << ": an instance needs at least one GPU");
    const std::size_t R = setup_.gpus.size();
    if (setup_.dspark_acceptance) {
        const Rng dspark = rng_.fork("dspark");
        for (std::size_t r = 0; r < R; ++r)
            dspark_.push_back(std::make_unique<AcceptanceModel>(*setup_.dspark_acceptance, dspark.fork(r)));
        draws_.resize(R);
    }
    rank_tokens_.resize(R);
    rank_context_.resize(R);
    rank_seqs_.resize(R);
    rank_sampled_.resize(R);
}

engine::ExecutorCaps SimExecutor::caps() const {
    return engine::ExecutorCaps{.supports_chunked_prefill = true,
                                .max_batch_tokens = 0,
                                .supports_mtp = true,
                                .max_draft_tokens = 16,
                                .supports_expert_placement = true,
                                .reports_expert_load = setup_.report_expert_load};
}

StepShape SimExecutor::rank_shape(const StepPlan& plan, double now_s, EpStepLoad& load,
                                  std::size_t* busiest_out) {
    const std::size_t R = setup_.gpus.size();
    std::fill(rank_tokens_.begin(), rank_tokens_.end(), 0);
    std::fill(rank_context_.begin(), rank_context_.end(), 0.0);
    std::fill(rank_seqs_.begin(), rank_seqs_.end(), 0);
    std::fill(rank_sampled_.begin(), rank_sampled_.end(), 0);
    const bool planned_ranks =
        std::any_of(plan.seqs.begin(), plan.seqs.end(), [](const SeqSchedule& s) { return s.dp_rank != 0; });
    // NOTE: a scheduler that assigns no DP ranks (SimpleScheduler) gets its sequences spread over the
    // ranks greedily by tokens (least-loaded first); the step waits for the busiest rank.
    using Slot = std::pair<std::int64_t, std::size_t>;
    std::priority_queue<Slot, std::vector<Slot>, std::greater<>> least;
    if (!planned_ranks)
        for (std::size_t r = 0; r < R; ++r) least.emplace(0, r);
    std::int64_t total_tokens = 0;
    for (const SeqSchedule& s : plan.seqs) {
        std::size_t r = 0;
        if (planned_ranks) {
            r = static_cast<std::size_t>(s.dp_rank) % R;
        } else {
            r = least.top().second;
            least.pop();
            least.emplace(rank_tokens_[r] + s.num_new_tokens, r);
        }
        rank_tokens_[r] += s.num_new_tokens;
        rank_seqs_[r] += 1;
        rank_sampled_[r] += s.samples ? 1 : 0;
        rank_context_[r] +=
            static_cast<double>(s.num_new_tokens) * (s.num_computed_tokens + (s.num_new_tokens + 1) / 2.0);
        total_tokens += s.num_new_tokens;
    }
    std::size_t busiest = 0;
    for (std::size_t r = 1; r < R; ++r)
        if (rank_tokens_[r] > rank_tokens_[busiest] ||
            (rank_tokens_[r] == rank_tokens_[busiest] && rank_context_[r] > rank_context_[busiest]))
            busiest = r;
    if (busiest_out != nullptr) *busiest_out = busiest;
    StepShape shape;
    shape.num_tokens = static_cast<double>(rank_tokens_[busiest]);
    shape.num_seqs = rank_seqs_[busiest];
    shape.num_sampled = rank_sampled_[busiest];
    shape.mean_context = shape.num_tokens > 0 ? rank_context_[busiest] / shape.num_tokens : 0;
    load = ep_.step_load(static_cast<double>(total_tokens), now_s);
    shape.moe_tokens_per_rank = load.busiest_rank_pairs;
    shape.moe_experts_per_rank = load.busiest_rank_experts;
    shape.ep_tokens = R > 1 ? load.busiest_rank_pairs * (1.0 - 1.0 / static_cast<double>(R)) : 0.0;
    return shape;
}

void SimExecutor::charge_transfers(const StepPlan& plan, Pending& p) {
    const std::size_t R = setup_.gpus.size();
    for (const KvTransfer& t : plan.kv_transfers) {
        const double bytes = t.num_bytes > 0 ? t.num_bytes : t.num_tokens * roofline::kv_bytes_per_token();
        auto rank = static_cast<std::int32_t>(static_cast<std::size_t>(t.request.value()) % R);
        if (t.from == KvTier::kStore || t.to == KvTier::kStore)
            if (setup_.nic_down != nullptr) rank = nic_gpu(*setup_.nic_down, rank);
        sg::sg4::Host* gpu = setup_.gpus[static_cast<std::size_t>(rank)];
        auto tier_host = [&](KvTier tier) -> sg::sg4::Host* {
            if (tier == KvTier::kStore && !setup_.store_nodes.empty())
                return setup_
                    .store_nodes[static_cast<std::size_t>(t.request.value()) % setup_.store_nodes.size()];
            if (tier == KvTier::kHost && !setup_.host_memory.empty()) return setup_.host_memory.front();
            return nullptr;
        };
        if (t.to == KvTier::kHbm) {  // a read the step needs before it can compute
            if (sg::sg4::Host* src = tier_host(t.from); src != nullptr) {
                p.reads.push_back(sg::transfer_async(src, gpu, bytes));
                p.read_bytes += bytes;
            }
        } else if (sg::sg4::Host* dst = tier_host(t.to);
                   dst != nullptr) {  // a write-back: off the critical path
            const double amp = t.to == KvTier::kStore ? setup_.store_write_amplification : 1.0;
            writes_.start(gpu, dst, bytes * amp);
        }
    }
}

engine::StepTicket SimExecutor::launch(const StepPlan& plan) {
    const double now = sg::now_s();
    poll_moves();  // a re-placement whose copies have landed takes effect from this step on
    EpStepLoad load;
    std::size_t busiest = 0;
    const StepShape shape = rank_shape(plan, now, load, &busiest);
    Pending p;
    p.step_id = plan.step_id;
    p.record.cost = cost_.step_cost(shape);
    const std::size_t R = setup_.gpus.size();
    if (setup_.ep_traffic_simgrid && shape.ep_tokens > 0 && R > 1) {
        const double floor_s = cost_.ep_comm_s(1.0);
        p.ep_bytes = shape.ep_tokens * roofline::ep_bytes_per_token_copy() * cost_.model().num_moe_layers;
        p.ep_src = busiest;
        p.ep_dst = (busiest + 1 + static_cast<std::size_t>(plan.step_id) % (R - 1)) % R;
        p.record.cost.ep_comm_s = floor_s;  // the transfer's time is added when it ends
    }
    p.duration_s = p.record.cost.total_s();
    p.record.num_tokens = plan.num_tokens();
    p.record.num_seqs = static_cast<std::int32_t>(plan.seqs.size());
    p.record.imbalance_max_mean = load.imbalance_max_mean;
    // NOTE: a notice carries no rank: every rank's map forgets the request (a few per step).
    for (FlatHashMap64<DraftDraw>& draws : draws_) {
        for (RequestId r : plan.released) draws.erase(static_cast<std::uint64_t>(r.value()));
        for (RequestId r : plan.preempted) draws.erase(static_cast<std::uint64_t>(r.value()));
    }
    p.seqs.reserve(plan.seqs.size());
    for (const SeqSchedule& s : plan.seqs) {
        p.seqs.push_back(SeqSchedule{.request = s.request,
                                     .dp_rank = s.dp_rank,
                                     .num_new_tokens = s.num_new_tokens,
                                     .num_verify_tokens = s.num_verify_tokens,
                                     .num_drafts_to_propose = s.num_drafts_to_propose,
                                     .samples = s.samples});
        p.record.num_sampled += s.samples ? 1 : 0;
        p.record.num_replay_tokens += s.num_replay_tokens;
    }
    charge_transfers(plan, p);
    p.record.read_bytes = p.read_bytes;
    pending_.push_back(std::move(p));
    // One step at a time per instance: a step launched while another runs starts when it ends.
    if (pending_.size() == 1) start(pending_.front());
    return engine::StepTicket{plan.step_id};
}

void SimExecutor::start(Pending& p) {
    p.record.start_s = sg::now_s();
    for (const auto& c : p.reads) c->wait();  // KV reads before compute
    p.exec = setup_.gpus.front()->exec_async(p.duration_s * setup_.host_speed_flops);
    p.started = true;
}

StepOutcome SimExecutor::wait(engine::StepTicket ticket) {
    StepOutcome out;
    wait_into(ticket, out);
    return out;
}

void SimExecutor::draw_outcomes(const Pending& p, std::size_t begin, std::size_t end, StepOutcome& out,
                                DraftCounts& counts) {
    for (std::size_t i = begin; i < end; ++i) {
        const SeqSchedule& s = p.seqs[i];
        SeqOutcome& o = out.seqs[i];
        o.request = s.request;
        o.token_ids.clear();
        o.num_sampled = 0;
        o.num_accepted_drafts = 0;
        o.hit_stop = false;
        o.draft_token_ids.clear();
        o.draft_confidences.clear();
        if (s.samples && !dspark_.empty()) {
            const auto rank = static_cast<std::size_t>(s.dp_rank) % dspark_.size();
            FlatHashMap64<DraftDraw>& draws = draws_[rank];
            // The drafts this step verifies were drawn when the previous step proposed them.
            const auto key = static_cast<std::uint64_t>(s.request.value());
            DraftDraw* prev = draws.find(key);
            if (prev != nullptr) {
                o.num_accepted_drafts = prev->accepted(s.num_verify_tokens);
                ++counts.seqs;
                counts.verified += s.num_verify_tokens;
                counts.accepted += o.num_accepted_drafts;
            }
            o.num_sampled = o.num_accepted_drafts + 1;
            if (s.num_drafts_to_propose > 0) {
                // The new drafts replace the verified ones in place (no erase and re-insert).
                const DraftDraw d = dspark_[rank]->draw();
                const std::int32_t n = std::min(s.num_drafts_to_propose, d.num_drafts);
                o.draft_confidences.assign(d.confidence.begin(), d.confidence.begin() + n);
                if (prev != nullptr)
                    *prev = d;
                else
                    draws.insert(key, d);
            } else if (prev != nullptr) {
                draws.erase(key);
            }
        } else if (s.samples) {
            o.num_accepted_drafts = s.num_verify_tokens > 0 ? acceptance_.accepted(s, rng_) : 0;
            o.num_sampled = o.num_accepted_drafts + 1;
            if (s.num_verify_tokens > 0) {
                ++counts.seqs;
                counts.verified += s.num_verify_tokens;
                counts.accepted += o.num_accepted_drafts;
            }
        }
    }
}

void SimExecutor::wait_into(engine::StepTicket ticket, StepOutcome& out) {
    DI_CHECK(!pending_.empty() && pending_.front().step_id == ticket.id,
             setup_.name << ": wait(" << ticket.id << ") out of launch order");
    Pending& p = pending_.front();
    if (!p.started) start(p);
    out.seqs.resize(p.seqs.size());
    // With the DSpark model each DP rank draws from its own stream, in plan order. When the plan lists
    // the ranks' runs of sequences rank by rank (as DpGroupScheduler does), the runs are drawn on the
    // worker threads while SimGrid runs the other actors up to the step's end: the draws do not
    // depend on when it ends. Any other order is drawn in one pass, with the same results.
    const std::size_t R = dspark_.size();
    bool by_rank = R > 1 && setup_.pool != nullptr;
    for (std::size_t i = 1; by_rank && i < p.seqs.size(); ++i)
        by_rank = p.seqs[i - 1].dp_rank <= p.seqs[i].dp_rank;
    by_rank = by_rank && !p.seqs.empty() && p.seqs.front().dp_rank >= 0 &&
              static_cast<std::size_t>(p.seqs.back().dp_rank) < R;
    DraftCounts counts;
    if (by_rank) {
        rank_begin_.assign(R + 1, p.seqs.size());
        for (std::size_t i = p.seqs.size(); i-- > 0;)
            rank_begin_[static_cast<std::size_t>(p.seqs[i].dp_rank) % R] = i;
        for (std::size_t r = R; r-- > 0;) rank_begin_[r] = std::min(rank_begin_[r], rank_begin_[r + 1]);
        rank_counts_.assign(R, DraftCounts{});
        // Each rank is then committed right away on the same worker (EarlyCommit), so that the
        // Instance's commit after the step only merges.
        EarlyCommit* early =
            setup_.early_commit != nullptr && setup_.early_commit->begin_early_commit(p.step_id, sg::now_s())
                ? setup_.early_commit
                : nullptr;
        setup_.pool->start_async(R, [this, &p, &out, early](std::size_t r) {
            const std::size_t begin = rank_begin_[r];
            const std::size_t n = rank_begin_[r + 1] - begin;
            draw_outcomes(p, begin, begin + n, out, rank_counts_[r]);
            if (early != nullptr)
                early->commit_rank_early(r, std::span<const SeqSchedule>(p.seqs).subspan(begin, n),
                                         std::span<const SeqOutcome>(out.seqs).subspan(begin, n));
        });
    }
    {
        // The draws read `p` and write `out`: they are joined before either can go, also when a
        // SimGrid wait throws (an actor killed at the end of the run).
        AsyncDraws joined{by_rank ? setup_.pool : nullptr};
        p.exec->wait();
        if (p.ep_bytes > 0) {
            const double t0 = sg::now_s();
            sg::transfer_async(setup_.gpus[p.ep_src], setup_.gpus[p.ep_dst], p.ep_bytes)->wait();
            p.record.cost.ep_comm_s += sg::now_s() - t0;
        }
        joined.wait();
    }
    if (by_rank) {
        for (const DraftCounts& c : rank_counts_) {
            counts.seqs += c.seqs;
            counts.verified += c.verified;
            counts.accepted += c.accepted;
        }
    } else {
        draw_outcomes(p, 0, p.seqs.size(), out, counts);
    }
    p.record.end_s = sg::now_s();
    out.step_id = p.step_id;
    out.start_s = p.record.start_s;
    out.end_s = p.record.end_s;
    p.record.num_draft_seqs += counts.seqs;
    p.record.num_verified_drafts += counts.verified;
    p.record.num_accepted_drafts += counts.accepted;
    out.expert_load.num_layers = 0;
    out.expert_load.num_experts = 0;
    out.expert_load.tokens.clear();
    if (setup_.report_expert_load) {
        // NOTE: loads are expectations, linear in tokens: reporting the sum of the last
        // kExpertLoadEvery steps once (and empty samples in between) keeps every window average
        // exact while the per-step cost stays O(1) on average.
        load_tokens_ += static_cast<double>(p.record.num_tokens);
        if (++load_steps_ >= kExpertLoadEvery) {
            out.expert_load = ep_.expected_sample(load_tokens_);
            load_tokens_ = 0;
            load_steps_ = 0;
        }
    }
    const StepRecord record = p.record;
    pending_.pop_front();
    if (!pending_.empty()) start(pending_.front());
    if (on_step_) on_step_(record);
}

void SimExecutor::apply_placement(const ExpertPlacement& placement) {
    if (setup_.expert_bytes <= 0) {
        ep_.set_placement(placement);
        ++move_stats_.applied;
        return;
    }
    if (moving_)
        queued_ = placement;
    else
        start_moves(placement);
}

void SimExecutor::start_moves(ExpertPlacement target) {
    const MovePlan plan = plan_moves(ep_.placement(), target, setup_.expert_bytes);
    // NOTE: one transfer per receiving GPU carrying all its inbound bytes, sent from the GPU that sends
    // it the most (ties: lowest rank). Per-pair transfers (up to R·(R−1) concurrent flows, ~4,000 on
    // EP64) made SimGrid's bandwidth sharing the largest cost of a light-load run; per receiver the
    // copy time is its inbound bytes over its link, the usual bound of an all-to-all copy.
    const std::size_t R = setup_.gpus.size();
    std::vector<double> into(R, 0.0);
    std::vector<std::map<std::size_t, double>> from(R);
    for (const ExpertMove& m : plan.moves) {
        if (m.src_gpu == m.dst_gpu) continue;
        const auto dst = static_cast<std::size_t>(m.dst_gpu.value()) % R;
        into[dst] += static_cast<double>(m.bytes);
        from[dst][static_cast<std::size_t>(m.src_gpu.value()) % R] += static_cast<double>(m.bytes);
    }
    move_comms_.clear();
    moves_landed_ = 0;
    move_requested_s_ = sg::now_s();
    for (std::size_t dst = 0; dst < R; ++dst) {
        if (into[dst] <= 0) continue;
        std::size_t src = 0;
        double most = 0;
        for (const auto& [s, bytes] : from[dst])  // in rank order: ties keep the lowest rank
            if (bytes > most) {
                most = bytes;
                src = s;
            }
        move_comms_.push_back(sg::transfer_async(setup_.gpus[src], setup_.gpus[dst], into[dst]));
        move_stats_.bytes += into[dst];
    }
    moving_ = std::move(target);
    poll_moves();
}

void SimExecutor::poll_moves() {
    if (!moving_) return;
    while (moves_landed_ < move_comms_.size() && move_comms_[moves_landed_]->test()) ++moves_landed_;
    if (moves_landed_ < move_comms_.size()) return;
    ep_.set_placement(std::move(*moving_));
    moving_.reset();
    move_comms_.clear();
    ++move_stats_.applied;
    move_stats_.copy_s += sg::now_s() - move_requested_s_;
    if (queued_) {
        ExpertPlacement next = std::move(*queued_);
        queued_.reset();
        start_moves(std::move(next));
    }
}

}  // namespace deepinfer::sim
