// The cluster's actors: the frontend (workload + router), one actor per instance running the
// engine/core Instance loop, one KV-handoff actor per prefill instance, and the fault injector
// (cluster_faults.cpp) when the config lists faults.
#pragma once

#include <deque>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "engine/core/instance.h"
#include "policies/cost/cost_model.h"
#include "policies/kv/kv_tier.h"
#include "policies/router/router.h"
#include "sim/config/sim_config.h"
#include "sim/outcome_model/outcome_models.h"
#include "sim/outcome_model/routing_model.h"
#include "sim/parallel/worker_pool.h"
#include "sim/platform/platform.h"
#include "sim/policy_factory.h"
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
            Rng rng, RunMetrics& metrics, bool record_timeline, bool progress, sg::ActorErrors& errors,
            std::int32_t threads = 1);
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
        // The engine (rebuilt, with empty caches, when the instance restarts after a fault).
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
        // Faults. `epoch` counts restarts: callbacks from an older engine are ignored.
        bool down = false;
        std::int32_t epoch = 0;
        /// GPU faults holding the instance down, and when it went down (seconds).
        std::int32_t num_down_faults = 0;
        double down_since_s = 0;
        /// Requests whose state (queued work or KV) lives on this instance, by id (only with faults).
        std::set<std::int64_t> resident;
        /// Per GPU rank: its scale-out NIC link is down.
        std::vector<bool> nic_down;
        /// The KV handoff in flight from this (prefill) instance.
        struct Handoff {
            std::int64_t request = -1;
            /// GPUs whose NICs carry the scale-out leg (a peer of the KV's GPU when its NIC is down).
            std::int32_t src_nic_gpu = -1;
            Node* dst = nullptr;
            std::int32_t dst_nic_gpu = -1;
            sg::sg4::CommPtr comm;
            bool canceled = false;
        } handoff;
        /// Engines replaced by a restart, kept alive while the actor may still be inside one.
        struct Retired {
            std::unique_ptr<EpLoadModel> ep;
            std::unique_ptr<StepScheduler> scheduler;
            std::unique_ptr<ExpertBalancer> balancer;
            std::unique_ptr<SimExecutor> executor;
            std::unique_ptr<engine::Instance> instance;
        };
        std::vector<Retired> retired;
    };
    /// What a fault did to one request so far (only with faults).
    struct RequestFaultState {
        /// Bumped when the request is taken off a failed instance: in-flight work of older attempts
        /// is dropped.
        std::int32_t attempt = 0;
        /// Output tokens delivered before the current prefill/decode attempt (0: none yet). A request
        /// resumed after d tokens is re-prefilled over prompt + d - 1 tokens and decodes the rest.
        std::int32_t delivered = 0;
        /// Output tokens the current decode attempt has produced (from commits).
        std::int32_t decode_progress = 0;
        /// The current attempt's prefill finished (its KV exists on the prefill instance).
        bool prefilled = false;
        bool touched = false;
    };
    struct TurnLater {
        bool operator()(const SimRequest& a, const SimRequest& b) const {
            return a.arrival_s != b.arrival_s ? a.arrival_s > b.arrival_s : a.id > b.id;
        }
    };

    std::unique_ptr<Node> make_node(InstanceRole role, std::int32_t index, const DomainHosts& hosts);
    /// Builds the node's engine (EP load model, scheduler, balancer, executor, Instance) for its epoch.
    void build_engine(Node& n);
    EplbCopyCost eplb_copy_cost(const InstanceGroupConfig& g) const;
    void frontend_loop();
    void instance_loop(Node& node);
    void transfer_loop(Node& node);
    void dispatch(SimRequest r);
    /// Routes a dispatched (or resumed) request to a prefill instance that is up; parks it when none is.
    void route_to_prefill(RequestId id);
    /// Prompt tokens the request's current prefill attempt computes (prompt + resumed output − 1).
    std::int32_t kv_prompt_tokens(RequestId id) const;
    /// Full scheduler: the router's view of a group's instances that are up.
    std::vector<InstanceLoad> loads(const std::vector<std::unique_ptr<Node>>& nodes) const;
    /// Prompt tokens of `q` an instance's DP rank could serve from its tiers (estimate for routing).
    /// The store's answers for one request's blocks (-1: not asked yet), shared by the ranks one
    /// routing decision weighs.
    struct StoreProbes {
        const KvTierIndex* store = nullptr;
        std::vector<std::int8_t> held;
    };
    std::int32_t cached_prompt_tokens(const Node& node, std::int32_t rank, const Request& q,
                                      StoreProbes& probes) const;
    /// Finished agent turn on a decode rank: its full blocks (prompt + output) go to the store.
    void write_back_to_store(Node& node, const RequestRecord& rec);
    std::unique_ptr<StepScheduler> make_full_scheduler(const InstanceGroupConfig& g, InstanceRole role);
    void on_prefill_finished(Node& node, const FinishedRequest& f, double now);
    void on_decode_finished(Node& node, const FinishedRequest& f, double now);
    // Faults (cluster_faults.cpp).
    void fault_loop();
    void inject(const FaultConfig& f);
    void repair(const FaultConfig& f);
    void fail_instance(Node& node);
    /// Cancels the in-flight handoff of prefill node `src` (its transfer actor retries or drops it).
    void cancel_handoff(Node& src);
    /// With faults: sends a handoff's KV, through a peer GPU's NIC where the GPU's own is down.
    /// Returns false when a fault canceled it.
    bool send_handoff(Node& src, RequestId id, std::int32_t src_gpu, Node& dst, std::int32_t dst_gpu,
                      double bytes);
    /// Re-dispatches parked requests and handoffs once an instance is back.
    void release_parked();
    Node& node_of(InstanceRole role, std::int32_t instance);
    RequestFaultState& fault_state(RequestId id);
    bool faults_on() const { return !config_.faults.empty(); }
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
    /// Threads for work that splits into independent parts (decode DP ranks); declared before the
    /// nodes, so it outlives their schedulers.
    std::unique_ptr<WorkerPool> pool_;
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
    /// The fault actor waits on these for its next event, and is woken when the run is done or stops.
    sg::sg4::MutexPtr fault_mutex_;
    sg::sg4::ConditionVariablePtr fault_cv_;
    double wall_start_ = 0;
    double last_progress_s_ = -1;
    // Faults.
    std::vector<RequestFaultState> fault_state_;
    /// Requests waiting for a prefill instance, and (prefill node, request, attempt) handoffs waiting
    /// for a decode instance, while every instance of the role is down.
    std::deque<std::int64_t> parked_prefill_;
    struct ParkedHandoff {
        Node* src = nullptr;
        std::int64_t request = -1;
        std::int32_t attempt = 0;
    };
    std::deque<ParkedHandoff> parked_handoffs_;
    std::int32_t store_nodes_down_ = 0;
};

}  // namespace deepinfer::sim
