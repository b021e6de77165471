// FakeExecutor: replays scripted outcomes and records the order of calls, so loop and policy tests
// run on the CPU without a backend.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/clock.h"
#include "engine/core/executor.h"
#include "policies/common/check.h"

namespace deepinfer::testing {

/// What the script says about one sequence of one step.
struct ScriptedSeq {
    std::int32_t num_accepted_drafts = 0;
    bool hit_stop = false;
    std::int32_t token_id = 7;
};

class FakeExecutor final : public engine::Executor {
public:
    /// `step_time_s` advances `clock` on every wait (when a clock is given).
    explicit FakeExecutor(engine::ManualClock* clock = nullptr, double step_time_s = 0.01)
        : clock_(clock), step_time_s_(step_time_s) {}

    /// Decides each sampling sequence's outcome; default: no drafts accepted, no stop.
    std::function<ScriptedSeq(const StepPlan&, const SeqSchedule&)> script;
    /// Expert load reported with each step (empty by default).
    std::function<ExpertLoadSample(const StepPlan&)> expert_load;
    /// Confidences of the drafts a sampling sequence proposes (asked only when the plan asks for
    /// drafts; cut to num_drafts_to_propose). Unset: no confidences are reported.
    std::function<std::vector<float>(const StepPlan&, const SeqSchedule&)> draft_confidences;
    engine::ExecutorCaps capabilities{};

    std::string name() const override { return "fake"; }
    engine::ExecutorCaps caps() const override { return capabilities; }

    engine::StepTicket launch(const StepPlan& plan) override {
        log.push_back("launch " + std::to_string(plan.step_id));
        pending_.push_back(plan);
        plans.push_back(plan);
        return engine::StepTicket{plan.step_id};
    }

    StepOutcome wait(engine::StepTicket ticket) override {
        log.push_back("wait " + std::to_string(ticket.id));
        DI_CHECK(!pending_.empty() && pending_.front().step_id == ticket.id,
                 "FakeExecutor: wait out of order");
        const StepPlan plan = std::move(pending_.front());
        pending_.pop_front();
        StepOutcome out;
        out.step_id = plan.step_id;
        out.start_s = clock_ != nullptr ? clock_->now_s() : 0.0;
        if (clock_ != nullptr) clock_->advance(step_time_s_);
        out.end_s = clock_ != nullptr ? clock_->now_s() : 0.0;
        for (const SeqSchedule& s : plan.seqs) {
            SeqOutcome o{.request = s.request};
            if (s.samples) {
                const ScriptedSeq sc = script ? script(plan, s) : ScriptedSeq{};
                o.num_accepted_drafts = std::min(sc.num_accepted_drafts, s.num_verify_tokens);
                o.num_sampled = o.num_accepted_drafts + 1;
                o.token_ids.assign(static_cast<std::size_t>(o.num_sampled), sc.token_id);
                o.hit_stop = sc.hit_stop;
                if (draft_confidences && s.num_drafts_to_propose > 0 && !o.hit_stop) {
                    o.draft_confidences = draft_confidences(plan, s);
                    if (o.draft_confidences.size() > static_cast<std::size_t>(s.num_drafts_to_propose))
                        o.draft_confidences.resize(static_cast<std::size_t>(s.num_drafts_to_propose));
                }
            }
            out.seqs.push_back(std::move(o));
        }
        if (expert_load) out.expert_load = expert_load(plan);
        return out;
    }

    void apply_placement(const ExpertPlacement& placement) override {
        log.push_back("place " + std::to_string(placement.layers.size()));
        placements.push_back(placement);
    }

    std::vector<std::string> log;
    std::vector<StepPlan> plans;
    std::vector<ExpertPlacement> placements;

private:
    engine::ManualClock* clock_;
    double step_time_s_;
    std::deque<StepPlan> pending_;
};

}  // namespace deepinfer::testing
