// SimpleScheduler implementation.
#include "policies/scheduler/simple_scheduler.h"

#include <algorithm>

#include "policies/common/check.h"

namespace deepinfer {

std::string_view name(FinishReason r) {
    switch (r) {
        case FinishReason::kLength:
            return "length";
        case FinishReason::kStop:
            return "stop";
        case FinishReason::kRejected:
            return "rejected";
        case FinishReason::kAborted:
            return "aborted";
    }
    return "?";
}

SimpleSchedulerConfig simple_scheduler_config_from_json(const JsonReader& r) {
    r.allow_keys({"max_num_batched_tokens", "max_num_seqs", "max_model_len"});
    SimpleSchedulerConfig c;
    c.max_num_batched_tokens = static_cast<std::int32_t>(
        r.get_int_or("max_num_batched_tokens", c.max_num_batched_tokens, NumRange::between(1, 1 << 30)));
    c.max_num_seqs = static_cast<std::int32_t>(
        r.get_int_or("max_num_seqs", c.max_num_seqs, NumRange::between(1, 1 << 20)));
    c.max_model_len = static_cast<std::int32_t>(
        r.get_int_or("max_model_len", c.max_model_len, NumRange::between(1, 1 << 30)));
    return c;
}

SimpleScheduler::SimpleScheduler(SimpleSchedulerConfig config) : config_(config) {
    DI_CHECK(config_.max_num_batched_tokens > 0 && config_.max_num_seqs > 0, "bad SimpleSchedulerConfig");
}

void SimpleScheduler::add_request(Request request) {
    const std::int32_t prompt = request.prompt_len();
    auto reject = [&](std::string why) {
        rejected_.push_back(FinishedRequest{.request = request.id,
                                            .reason = FinishReason::kRejected,
                                            .detail = std::move(why),
                                            .num_prompt_tokens = prompt});
    };
    if (prompt <= 0) return reject("empty prompt");
    if (request.max_new_tokens <= 0) return reject("max_new_tokens must be positive");
    if (static_cast<std::int64_t>(prompt) + request.max_new_tokens > config_.max_model_len)
        return reject("prompt + max_new_tokens exceeds max_model_len " +
                      std::to_string(config_.max_model_len));
    waiting_.emplace(std::make_pair(request.priority, next_arrival_++), std::move(request));
}

std::int32_t SimpleScheduler::schedule_seq(Seq& seq, std::int32_t budget, StepPlan& plan) {
    if (seq.finished || budget <= 0) return 0;
    const std::int32_t outputs_expected = seq.num_output_tokens + seq.num_inflight_samples;
    if (outputs_expected >= seq.request.max_new_tokens) return 0;
    // Tokens whose ids are known (or will be once in-flight steps land, counting placeholders).
    const std::int32_t known = seq.request.prompt_len() + outputs_expected;
    const std::int32_t next = seq.num_computed_tokens + seq.num_inflight_tokens;
    const std::int32_t remaining = known - next;
    if (remaining <= 0) return 0;
    const std::int32_t n = std::min(remaining, budget);
    plan.seqs.push_back(SeqSchedule{.request = seq.request.id,
                                    .num_computed_tokens = next,
                                    .num_new_tokens = n,
                                    .samples = next + n == known,
                                    .is_new = !seq.announced});
    seq.announced = true;
    seq.num_inflight_tokens += n;
    seq.num_inflight_samples += plan.seqs.back().samples ? 1 : 0;
    seq.num_inflight_steps += 1;
    return n;
}

StepPlan SimpleScheduler::schedule(double /*now_s*/) {
    StepPlan plan;
    std::int32_t budget = config_.max_num_batched_tokens;
    for (Seq& seq : running_) {
        if (static_cast<std::int32_t>(plan.seqs.size()) >= config_.max_num_seqs) break;
        budget -= schedule_seq(seq, budget, plan);
    }
    auto active = static_cast<std::int32_t>(
        std::count_if(running_.begin(), running_.end(), [](const Seq& s) { return !s.finished; }));
    while (!waiting_.empty()) {
        if (active >= config_.max_num_seqs ||
            static_cast<std::int32_t>(plan.seqs.size()) >= config_.max_num_seqs) {
            plan.stats.num_blocked_by_seq_cap = static_cast<std::int32_t>(waiting_.size());
            break;
        }
        if (budget <= 0) {
            plan.stats.num_blocked_by_budget = static_cast<std::int32_t>(waiting_.size());
            break;
        }
        auto node = waiting_.extract(waiting_.begin());
        running_.push_back(Seq{.request = std::move(node.mapped())});
        // KV handed over by another instance (P/D disaggregation) is not recomputed.
        running_.back().num_computed_tokens = std::clamp(running_.back().request.num_handed_over_tokens, 0,
                                                         running_.back().request.prompt_len() - 1);
        ++active;
        budget -= schedule_seq(running_.back(), budget, plan);
    }
    plan.stats.num_running = active;
    plan.stats.num_waiting = static_cast<std::int32_t>(waiting_.size());
    plan.released = std::move(released_);
    released_.clear();
    if (!plan.empty()) plan.step_id = next_step_id_++;
    return plan;
}

void SimpleScheduler::finish(Seq& seq, FinishReason reason, CommitResult& result) {
    seq.finished = true;
    result.finished.push_back(FinishedRequest{.request = seq.request.id,
                                              .reason = reason,
                                              .num_prompt_tokens = seq.request.prompt_len(),
                                              .num_output_tokens = seq.num_output_tokens,
                                              .output_token_ids = seq.output_token_ids});
}

CommitResult SimpleScheduler::commit(const StepPlan& plan, const StepOutcome& outcome, double /*now_s*/) {
    DI_CHECK(outcome.seqs.size() == plan.seqs.size(),
             "outcome has " << outcome.seqs.size() << " sequences, plan " << plan.seqs.size());
    CommitResult result;
    // NOTE: plans list running sequences in running_ order, so the search resumes after the previous
    // match (linear per commit instead of quadratic for large batches), wrapping around once.
    auto cursor = running_.begin();
    for (std::size_t i = 0; i < plan.seqs.size(); ++i) {
        const SeqSchedule& s = plan.seqs[i];
        const SeqOutcome& o = outcome.seqs[i];
        DI_CHECK(o.request == s.request, "outcome order differs from plan order at " << i);
        auto match = [&](const Seq& q) { return q.request.id == s.request; };
        auto it = std::find_if(cursor, running_.end(), match);
        if (it == running_.end()) {
            it = std::find_if(running_.begin(), cursor, match);
            if (it == cursor) it = running_.end();
        }
        DI_CHECK(it != running_.end(), "commit for unknown request " << s.request);
        cursor = std::next(it);
        Seq& seq = *it;
        seq.num_inflight_tokens -= s.num_new_tokens;
        seq.num_inflight_samples -= s.samples ? 1 : 0;
        seq.num_inflight_steps -= 1;
        if (seq.finished) continue;  // a placeholder step scheduled before the request finished
        seq.num_computed_tokens += s.num_new_tokens;
        if (!s.samples) {
            result.progress.push_back(
                {.request = seq.request.id, .num_output_tokens = seq.num_output_tokens});
            continue;
        }
        const std::int32_t room = seq.request.max_new_tokens - seq.num_output_tokens;
        const std::int32_t produced = std::min(std::max(o.num_sampled, 0), room);
        seq.num_output_tokens += produced;
        for (std::int32_t k = 0; k < produced && k < static_cast<std::int32_t>(o.token_ids.size()); ++k)
            seq.output_token_ids.push_back(o.token_ids[static_cast<std::size_t>(k)]);
        result.progress.push_back({.request = seq.request.id,
                                   .num_new_output_tokens = produced,
                                   .num_output_tokens = seq.num_output_tokens});
        if (o.hit_stop)
            finish(seq, FinishReason::kStop, result);
        else if (seq.num_output_tokens >= seq.request.max_new_tokens)
            finish(seq, FinishReason::kLength, result);
    }
    // Drop finished sequences with nothing left in flight; executors hear of them in the next plan.
    for (auto it = running_.begin(); it != running_.end();) {
        if (it->finished && it->num_inflight_steps == 0) {
            released_.push_back(it->request.id);
            it = running_.erase(it);
        } else {
            ++it;
        }
    }
    return result;
}

std::vector<FinishedRequest> SimpleScheduler::take_rejected() {
    std::vector<FinishedRequest> out;
    out.swap(rejected_);
    return out;
}

bool SimpleScheduler::has_unfinished() const {
    if (!waiting_.empty()) return true;
    return std::any_of(running_.begin(), running_.end(),
                       [](const Seq& s) { return !s.finished || s.num_inflight_steps > 0; });
}

}  // namespace deepinfer
