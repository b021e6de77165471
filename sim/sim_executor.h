// SimExecutor: the engine Executor inside SimGrid. launch() turns a StepPlan into time with the
// CostModel (busiest data-parallel rank + busiest expert-parallel rank under the current placement)
// and starts it as an Exec on the instance's lead GPU host; wait() waits on it. Outcomes come from
// seeded models (draft acceptance, expert loads).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/executor.h"
#include "policies/common/flat_hash_map.h"
#include "policies/common/rng.h"
#include "policies/cost/cost_model.h"
#include "sim/outcome_model/acceptance_model.h"
#include "sim/outcome_model/outcome_models.h"
#include "sim/outcome_model/routing_model.h"
#include "sim/parallel/worker_pool.h"
#include "sim/scheduler/early_commit.h"
#include "sim/sg_compat.h"

namespace deepinfer::sim {

/// Expert re-placements an executor carried out (copies as SimGrid transfers).
struct ExpertMoveStats {
    std::int64_t applied = 0;
    /// Bytes copied between GPUs (a replica already on its GPU costs nothing).
    double bytes = 0;
    /// Sum over applied re-placements of request-to-effect time, seconds.
    double copy_s = 0;
};

/// What the executor reports about every finished step (reports, timeline).
struct StepRecord {
    double start_s = 0;
    double end_s = 0;
    std::int64_t num_tokens = 0;
    std::int32_t num_seqs = 0;
    std::int32_t num_sampled = 0;
    double imbalance_max_mean = 1;
    /// Prompt tokens recomputed for SWA bounded replay; bytes read from host memory / the store.
    std::int64_t num_replay_tokens = 0;
    double read_bytes = 0;
    /// Speculative decoding: sampling sequence-steps that had drafts to verify, the drafts verified
    /// and accepted in them.
    std::int32_t num_draft_seqs = 0;
    std::int64_t num_verified_drafts = 0;
    std::int64_t num_accepted_drafts = 0;
    StepCost cost;
};

struct SimExecutorSetup {
    std::string name;
    /// GPUs of the instance (attention DP width == EP width); [0] runs the steps.
    std::vector<sg::sg4::Host*> gpus;
    /// Flop/s of the hosts (steps are Execs of duration * speed flops).
    double host_speed_flops = 1e9;
    /// Store nodes and host memory for KvTransfer entries of a plan (may be empty).
    std::vector<sg::sg4::Host*> store_nodes;
    std::vector<sg::sg4::Host*> host_memory;
    double store_write_amplification = 1.2;
    /// Scale-out NICs of `gpus` that are down (fault injection; may be null): store traffic of such
    /// a GPU goes through the next peer's NIC (nic_gpu in sim/platform/platform.h).
    const std::vector<bool>* nic_down = nullptr;
    /// Produce ExpertLoadSample in outcomes (only when an ExpertBalancer listens).
    bool report_expert_load = false;
    /// Expert-parallel traffic as a SimGrid communication (see Pending::ep_bytes); false: the
    /// profile's ep_dispatch_combine curve alone.
    bool ep_traffic_simgrid = false;
    /// Weight bytes of one expert replica in one layer: a re-placement's copies (policies/eplb/moves.h)
    /// run as SimGrid transfers between the instance's GPUs (one per receiving GPU, carrying all its
    /// inbound bytes) and the new placement takes effect when the last one lands. 0: placements take
    /// effect at once.
    std::int64_t expert_bytes = 0;
    /// Draft confidences and acceptances from the DSpark acceptance model (else `acceptance`, which
    /// reports no confidences). Each DP rank draws from its own stream.
    std::optional<AcceptanceModelConfig> dspark_acceptance;
    /// Threads for the DP ranks' DSpark outcome draws (may be null: the caller's thread), which run
    /// on the workers while the step runs in simulated time (WorkerPool::start_async). Results are
    /// the same for any thread count. Must outlive the executor.
    WorkerPool* pool = nullptr;
    /// The instance's DP scheduler, to commit each rank right after its draws on the workers (may be
    /// null: the Instance commits after the step). Only with `pool` and the DSpark model.
    EarlyCommit* early_commit = nullptr;
};

class SimExecutor final : public engine::Executor {
public:
    SimExecutor(SimExecutorSetup setup, const CostModel& cost, EpLoadModel& ep, DraftAcceptance& acceptance,
                Rng rng, std::function<void(const StepRecord&)> on_step);

    std::string name() const override { return setup_.name; }
    engine::ExecutorCaps caps() const override;
    engine::StepTicket launch(const StepPlan& plan) override;
    StepOutcome wait(engine::StepTicket ticket) override;
    void wait_into(engine::StepTicket ticket, StepOutcome& out) override;
    void apply_placement(const ExpertPlacement& placement) override;

    /// The StepShape of the busiest DP rank for `plan`, with MoE fields from the EP load model.
    /// `busiest` (optional) receives that rank's index.
    const ExpertMoveStats& move_stats() const { return move_stats_; }

    StepShape rank_shape(const StepPlan& plan, double now_s, EpStepLoad& load,
                         std::size_t* busiest = nullptr);

private:
    struct Pending {
        std::int64_t step_id = -1;
        /// Compute time on the Exec (with EP traffic on SimGrid: the cost model's total minus its
        /// ep_comm_s, plus the curve's floor n_moe · ep_dispatch_combine(1 token)).
        double duration_s = 0;
        double read_bytes = 0;
        /// Expert-parallel traffic of the step, sent after the compute from the busiest rank's GPU to
        /// a peer of its scale-up domain (rotating with the step): the busiest rank's off-rank token
        /// copies × ep_bytes_per_token_copy × n_moe. The step ends when it arrives. 0: none.
        double ep_bytes = 0;
        std::size_t ep_src = 0;
        std::size_t ep_dst = 0;
        std::vector<SeqSchedule> seqs;  // only fields the outcome needs (no block tables)
        StepRecord record;
        sg::sg4::ExecPtr exec;
        std::vector<sg::sg4::CommPtr> reads;
        bool started = false;
    };
    void start(Pending& p);
    /// Starts the copies from the placement in effect to `target` (applies it at once when none
    /// crosses GPUs).
    void start_moves(ExpertPlacement target);
    /// Applies the placement being copied once its last transfer has landed; starts the queued one.
    void poll_moves();
    void charge_transfers(const StepPlan& plan, Pending& p);
    /// Fills out.seqs[begin, end) (one DP rank's sequences, or all of them without the DSpark model)
    /// and adds their draft counts to `counts`.
    struct DraftCounts {
        std::int32_t seqs = 0;
        std::int64_t verified = 0;
        std::int64_t accepted = 0;
    };
    void draw_outcomes(const Pending& p, std::size_t begin, std::size_t end, StepOutcome& out,
                       DraftCounts& counts);

    SimExecutorSetup setup_;
    const CostModel& cost_;
    EpLoadModel& ep_;
    DraftAcceptance& acceptance_;
    Rng rng_;
    /// Per DP rank: the DSpark acceptance model (empty without it) and the drafts proposed by a
    /// sequence's last sampling step, waiting for the step that verifies them (by request id; lookup
    /// only, never iterated).
    std::vector<std::unique_ptr<AcceptanceModel>> dspark_;
    std::vector<FlatHashMap64<DraftDraw>> draws_;
    // Scratch for wait_into: per rank, where its sequences start in the step and its draft counts.
    std::vector<std::size_t> rank_begin_;
    std::vector<DraftCounts> rank_counts_;
    sg::BackgroundTransfers writes_;
    std::function<void(const StepRecord&)> on_step_;
    std::deque<Pending> pending_;
    std::vector<std::int64_t> rank_tokens_;
    std::vector<double> rank_context_;
    std::vector<std::int32_t> rank_seqs_, rank_sampled_;
    /// Re-placement in flight: its target, its transfers (landed ones before `moves_landed_`), when
    /// it was requested; the newest placement requested meanwhile (intermediate ones are dropped).
    std::optional<ExpertPlacement> moving_;
    std::vector<sg::sg4::CommPtr> move_comms_;
    std::size_t moves_landed_ = 0;
    double move_requested_s_ = 0;
    std::optional<ExpertPlacement> queued_;
    ExpertMoveStats move_stats_;
    static constexpr std::int32_t kExpertLoadEvery = 64;
    double load_tokens_ = 0;
    std::int32_t load_steps_ = 0;
};

}  // namespace deepinfer::sim
