// Instance loop implementation.
#include "engine/core/instance.h"

#include "policies/common/check.h"
#include "policies/common/log.h"

namespace deepinfer::engine {

Instance::Instance(std::string name, Executor& executor, Clock& clock, StepScheduler& scheduler,
                   ExpertBalancer* balancer, InstanceConfig config, InstanceHooks hooks)
    : name_(std::move(name)),
      executor_(executor),
      clock_(clock),
      scheduler_(scheduler),
      balancer_(balancer),
      config_(config),
      hooks_(std::move(hooks)) {}

void Instance::add_request(Request request) { scheduler_.add_request(std::move(request)); }

void Instance::report_rejections() {
    for (const FinishedRequest& f : scheduler_.take_rejected()) {
        ++stats_.num_rejected;
        DI_LOG(kCore, kDebug,
               name_ << ": request " << f.request << " " << deepinfer::name(f.reason) << ": " << f.detail);
        if (hooks_.on_finished) hooks_.on_finished(f, clock_.now_s());
    }
}

bool Instance::step() {
    // Plan and launch the next step unless the loop is synchronous and a step is still in flight.
    bool launched = false;
    if (config_.async_scheduling || inflight_.empty()) {
        StepPlan plan = scheduler_.schedule(clock_.now_s());
        report_rejections();
        if (!plan.empty()) {
            DI_CHECK(executor_.caps().max_batch_tokens == 0 ||
                         plan.num_tokens() <= executor_.caps().max_batch_tokens,
                     name_ << ": plan has " << plan.num_tokens() << " tokens, executor accepts "
                           << executor_.caps().max_batch_tokens);
            if (hooks_.on_launch) hooks_.on_launch(plan, clock_.now_s());
            const StepTicket ticket = executor_.launch(plan);
            stats_.num_tokens_computed += plan.num_tokens();
            ++stats_.num_steps_launched;
            inflight_.push_back(Inflight{std::move(plan), ticket});
            launched = true;
        }
    }
    // Commit the oldest step: always when more than one is in flight, and when nothing new launched.
    const std::size_t keep_in_flight = (config_.async_scheduling && launched) ? 1 : 0;
    bool committed = false;
    if (inflight_.size() > keep_in_flight) {
        commit_oldest();
        committed = true;
    }
    return launched || committed;
}

void Instance::commit_oldest() {
    Inflight done = std::move(inflight_.front());
    inflight_.pop_front();
    executor_.wait_into(done.ticket, outcome_);
    const StepOutcome& outcome = outcome_;
    DI_CHECK(outcome.step_id == done.plan.step_id,
             name_ << ": executor returned step " << outcome.step_id << " for " << done.plan.step_id);
    const double now = clock_.now_s();
    const CommitResult result = scheduler_.commit(done.plan, outcome, now);
    ++stats_.num_steps_committed;
    for (const auto& p : result.progress) stats_.num_output_tokens += p.num_new_output_tokens;
    if (hooks_.on_commit) hooks_.on_commit(done.plan, outcome, result, now);
    for (const FinishedRequest& f : result.finished) {
        ++stats_.num_finished;
        if (hooks_.on_finished) hooks_.on_finished(f, now);
    }
    report_rejections();
    if (balancer_ != nullptr) {
        balancer_->observe(outcome.step_id, outcome.expert_load);
        if (auto placement = balancer_->maybe_replace(outcome.step_id)) {
            executor_.apply_placement(*placement);
            ++stats_.num_placements;
            if (hooks_.on_placement) hooks_.on_placement(*placement, outcome.step_id);
        }
    }
}

void Instance::run_until_idle() {
    while (has_work()) {
        if (!step() && scheduler_.has_unfinished()) {
            // Nothing could be launched and nothing is in flight, yet requests remain: a scheduler
            // that can make no progress would spin forever.
            DI_CHECK(
                false,
                name_ << ": scheduler has unfinished requests but planned nothing with nothing in flight");
        }
    }
    report_rejections();
}

}  // namespace deepinfer::engine
