// The cluster's actors: the frontend (workload + router), one actor per instance running the
// engine/core Instance loop, and one KV-handoff actor per prefill instance.
#pragma once

#include <deque>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "engine/core/instance.h"
#include "policies/cost/cost_model.h"
#include "policies/kv/kv_tier.h"
#include "policies/router/router.h"
#include "sim/config/sim_config.h"
#include "sim/outcome_model/outcome_models.h"
#include "sim/outcome_model/routing_model.h"
#include "sim/platform/platform.h"
#include "sim/report/metrics.h"
#include "sim/scheduler/dp_group_scheduler.h"
#include "sim/sg_compat.h"
#include "sim/sim_clock.h"
#include "sim/sim_executor.h"
#include "sim/workload/workload.h"

namespace deepinfer::sim {

class Cluster {
public:
    Cluster(const SimConfig& config, const Platform& platform, const CostModel& cost, Workload& workload,
            Rng rng, RunMetrics& metrics, bool record_timeline, bool progress, sg::ActorErrors& errors);
    /// Creates every actor (call before Engine::run).
    void start();
    /// Marks requests still in flight as unfinished (after Engine::run).
    void finish();

private:
    struct Node {
        std::string name;
        InstanceRole role = InstanceRole::kPrefill;
        std::int32_t index = 0;
        std::int32_t pid = 0;
        DomainHosts hosts;
        std::unique_ptr<EpLoadModel> ep;
        std::unique_ptr<StepScheduler> scheduler;
        /// The scheduler when it is the full one (one policies Scheduler per DP rank), else null.
        DpGroupScheduler* group = nullptr;
        /// Full scheduler: prompt tokens routed to each DP rank and not prefilled yet (router load).
        std::vector<std::int64_t> rank_pending_tokens;
        std::unique_ptr<ExpertBalancer> balancer;
        std::unique_ptr<SimExecutor> executor;
        std::unique_ptr<engine::Instance> instance;
        struct Queued {
            Request request;
            /// DP rank chosen by the router (-1: the scheduler picks).
            std::int32_t rank = -1;
        };
        std::deque<Queued> inbox;
        sg::sg4::ActorPtr actor;
        bool idle = false;
        /// Prompt tokens (prefill) or sequences (decode) routed here and not yet finished.
        double outstanding = 0;
        // KV handoff queue (prefill nodes).
        std::deque<RequestId> outbox;
        sg::sg4::ActorPtr transfer_actor;
        bool transfer_idle = false;
    };
    struct TurnLater {
        bool operator()(const SimRequest& a, const SimRequest& b) const {
            return a.arrival_s != b.arrival_s ? a.arrival_s > b.arrival_s : a.id > b.id;
        }
    };

    std::unique_ptr<Node> make_node(InstanceRole role, std::int32_t index, const DomainHosts& hosts);
    void frontend_loop();
    void instance_loop(Node& node);
    void transfer_loop(Node& node);
    void dispatch(SimRequest r);
    /// Full scheduler: the router's view of a group's instances.
    std::vector<InstanceLoad> loads(const std::vector<std::unique_ptr<Node>>& nodes) const;
    /// Prompt tokens of `q` an instance's DP rank could serve from its tiers (estimate for routing).
    std::int32_t cached_prompt_tokens(const Node& node, std::int32_t rank, const Request& q) const;
    /// Finished agent turn on a decode rank: its full blocks (prompt + output) go to the store.
    void write_back_to_store(Node& node, const RequestRecord& rec);
    std::unique_ptr<StepScheduler> make_full_scheduler(const InstanceGroupConfig& g, InstanceRole role);
    void on_prefill_finished(Node& node, const FinishedRequest& f, double now);
    void on_decode_finished(Node& node, const FinishedRequest& f, double now);
    void complete(RequestRecord& rec, double now);
    void on_step(Node& node, const StepRecord& s);
    void wake(Node& node);
    void wake_transfer(Node& node);
    void wake_all();
    /// Error path: every actor leaves its loop at its next check.
    void abort_all();
    void progress_tick();
    RequestRecord& record(RequestId id);

    const SimConfig& config_;
    const Platform& platform_;
    const CostModel& cost_;
    Workload& workload_;
    Rng rng_;
    RunMetrics& metrics_;
    bool record_timeline_;
    bool progress_;
    sg::ActorErrors& errors_;
    SimClock clock_;
    RoutingModel routing_;
    FixedRateAcceptance acceptance_;
    Router router_;
    /// The distributed KV store's index, shared by every prefill rank (full scheduler).
    std::unique_ptr<KvTierIndex> store_;
    sg::BackgroundTransfers store_writes_;
    double kv_bytes_per_block_ = 0;
    std::vector<std::unique_ptr<Node>> prefill_;
    std::vector<std::unique_ptr<Node>> decode_;
    std::priority_queue<SimRequest, std::vector<SimRequest>, TurnLater> turns_;
    std::int64_t outstanding_ = 0;
    bool done_ = false;
    bool stop_ = false;
    sg::sg4::MutexPtr mutex_;
    sg::sg4::ConditionVariablePtr cv_;
    double wall_start_ = 0;
    double last_progress_s_ = -1;
};

}  // namespace deepinfer::sim
