// Cluster actors: frontend (workload + router), instance loops, KV handoff.
#include "sim/actors/cluster.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "policies/common/check.h"
#include "policies/common/units.h"
#include "policies/cost/roofline.h"
#include "policies/kv/kv_model_shape.h"
#include "sim/policy_factory.h"

namespace deepinfer::sim {
namespace {

double wall_now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Cluster::Cluster(const SimConfig& config, const Platform& platform, const CostModel& cost, Workload& workload,
                 Rng rng, RunMetrics& metrics, bool record_timeline, bool progress, sg::ActorErrors& errors,
                 std::int32_t threads)
    : config_(config),
      platform_(platform),
      cost_(cost),
      workload_(workload),
      rng_(rng),
      metrics_(metrics),
      record_timeline_(record_timeline),
      progress_(progress),
      errors_(errors),
      pool_(std::make_unique<WorkerPool>(threads)),
      routing_(config.routing, config.model, rng.fork("routing")),
      acceptance_(config.acceptance.fixed_rate),
      router_(config.router) {
    const SchedulerConfig& pf = config.prefill.full_config;
    kv_bytes_per_block_ = kv_bytes_per_block(pf.kv.shape, pf.kv.block_tokens);
    if (config.prefill.scheduler == "full") {
        const KvStoreConfig& k = config.platform.kv_store;
        // Logical capacity: erasure coding stores (data + parity) / data bytes per byte.
        const auto blocks =
            static_cast<std::int64_t>(k.capacity_bytes / k.write_amplification() / kv_bytes_per_block_);
        store_ = std::make_unique<KvTierIndex>(
            blocks, std::array<double, kNumTrafficClasses>{k.ttl_s[0], k.ttl_s[1]});
        metrics_.full_scheduler = true;
    }
    for (std::size_t i = 0; i < platform.prefill.size(); ++i)
        prefill_.push_back(
            make_node(InstanceRole::kPrefill, static_cast<std::int32_t>(i), platform.prefill[i]));
    for (std::size_t i = 0; i < platform.decode.size(); ++i)
        decode_.push_back(make_node(InstanceRole::kDecode, static_cast<std::int32_t>(i), platform.decode[i]));
    metrics_.prefill.num_gpus = config.prefill.num_instances * config.prefill.gpus_per_instance;
    metrics_.decode.num_gpus = config.decode.num_instances * config.decode.gpus_per_instance;
}

std::unique_ptr<Cluster::Node> Cluster::make_node(InstanceRole role, std::int32_t index,
                                                  const DomainHosts& hosts) {
    auto n = std::make_unique<Node>();
    n->name = hosts.name;
    n->role = role;
    n->index = index;
    n->pid = static_cast<std::int32_t>(metrics_.instance_names.size());
    metrics_.instance_names.push_back(n->name);
    n->hosts = hosts;
    n->nic_down.assign(hosts.gpus.size(), false);
    build_engine(*n);
    return n;
}

EplbCopyCost Cluster::eplb_copy_cost(const InstanceGroupConfig& g) const {
    // NOTE: the marginal MoE time per token copy on one GPU, from the profile's moe_experts curve
    // between half and all of a rank's token budget (top-k copies each) with its slots active.
    const double budget = g.scheduler == "full"
                              ? g.full_config.max_num_batched_tokens
                              : static_cast<double>(g.scheduler_config.max_num_batched_tokens) / g.ep_size;
    const double pairs = std::max(2.0, budget * config_.model.top_k);
    const double slots =
        static_cast<double>(config_.model.num_experts) / g.ep_size + g.redundant_experts_per_gpu;
    auto moe_s = [&](double p) {
        return cost_
                   .step_cost(
                       StepShape{.num_tokens = 1, .moe_tokens_per_rank = p, .moe_experts_per_rank = slots})
                   .moe_s /
               config_.model.num_moe_layers;
    };
    return EplbCopyCost{.expert_bytes = static_cast<std::int64_t>(roofline::v4_routed_expert_bytes_hub()),
                        .copy_bytes_per_s = config_.platform.scale_up.bandwidth_bytes_per_s,
                        .s_per_token = std::max(0.0, (moe_s(pairs) - moe_s(pairs / 2)) / (pairs / 2))};
}

void Cluster::build_engine(Node& n) {
    const InstanceRole role = n.role;
    const InstanceGroupConfig& g = role == InstanceRole::kPrefill ? config_.prefill : config_.decode;
    const ExpertPlacement initial = make_static_placement(
        config_.model.num_moe_layers, config_.model.num_experts, g.ep_size, g.redundant_experts_per_gpu);
    n.ep = std::make_unique<EpLoadModel>(routing_, initial);
    if (g.scheduler == "full") {
        n.scheduler = make_full_scheduler(g, role);
        n.group = static_cast<DpGroupScheduler*>(n.scheduler.get());
        // Decode ranks share nothing mutable (no store index, see make_full_scheduler), so they plan
        // and commit on the worker threads; prefill ranks share the store and stay on this one.
        if (role == InstanceRole::kDecode) n.group->set_worker_pool(pool_.get());
        n.rank_pending_tokens.assign(static_cast<std::size_t>(n.group->num_ranks()), 0);
    } else {
        n.scheduler = make_scheduler(g);
    }
    const EplbCopyCost copy_cost = eplb_copy_cost(g);
    n.balancer =
        make_balancer(g, initial, copy_cost,
                      [pool = pool_.get()](std::size_t k, const std::function<void(std::size_t)>& fn) {
                          pool->run(k, fn);
                      });
    Node* raw = &n;
    const std::int32_t epoch = n.epoch;
    // A restarted engine draws its own outcome stream (the first keeps the original one).
    const std::string rng_name = epoch == 0 ? n.name : n.name + "#restart" + std::to_string(epoch);
    n.executor = std::make_unique<SimExecutor>(
        SimExecutorSetup{
            .name = n.name,
            .gpus = n.hosts.gpus,
            .host_speed_flops = platform_.gpu_speed_flops,
            .store_nodes = platform_.store_nodes,
            .host_memory = n.hosts.host_memory,
            .store_write_amplification = config_.platform.kv_store.write_amplification(),
            .nic_down = &n.nic_down,
            .report_expert_load = n.balancer != nullptr,
            .ep_traffic_simgrid = config_.platform.scale_up.ep_traffic == EpTraffic::kSimGrid,
            .expert_bytes = copy_cost.expert_bytes,
            .dspark_acceptance = config_.acceptance.model == "dspark"
                                     ? std::optional<AcceptanceModelConfig>(config_.acceptance.dspark)
                                     : std::nullopt,
            .pool = role == InstanceRole::kDecode ? pool_.get() : nullptr,
            // NOTE: not with faults: the fault injector reads and changes instances at any time.
            .early_commit = role == InstanceRole::kDecode && !faults_on() ? n.group : nullptr},
        cost_, *n.ep, acceptance_, rng_.fork(rng_name), [this, raw, epoch](const StepRecord& s) {
            if (raw->epoch == epoch) on_step(*raw, s);
        });
    engine::InstanceHooks hooks;
    if (role == InstanceRole::kPrefill) {
        hooks.on_finished = [this, raw, epoch](const FinishedRequest& f, double now) {
            if (raw->epoch == epoch) on_prefill_finished(*raw, f, now);
        };
        if (g.scheduler == "full")
            hooks.on_launch = [this, raw, epoch](const StepPlan& plan, double) {
                if (raw->epoch != epoch) return;
                // The first admission of a request says how much of its prompt the cache served.
                for (const SeqSchedule& s : plan.seqs)
                    if (s.is_new) {
                        RequestRecord& rec = record(s.request);
                        if (rec.cached_tokens < 0) rec.cached_tokens = s.num_computed_tokens;
                    }
            };
    } else {
        hooks.on_finished = [this, raw, epoch](const FinishedRequest& f, double now) {
            if (raw->epoch == epoch) on_decode_finished(*raw, f, now);
        };
        hooks.on_commit = [this, raw, epoch](const StepPlan&, const StepOutcome& o, const CommitResult& r,
                                             double now) {
            if (raw->epoch != epoch) return;
            if (faults_on())
                for (const TokenProgress& p : r.progress)
                    fault_state(p.request).decode_progress = p.num_output_tokens;
            if (o.end_s < config_.workload.warmup_s || now > config_.workload.duration_s) return;
            for (const TokenProgress& p : r.progress)
                metrics_.decode.window_output_tokens += p.num_new_output_tokens;
        };
    }
    n.instance = std::make_unique<engine::Instance>(
        n.name, *n.executor, clock_, *n.scheduler, n.balancer.get(),
        engine::InstanceConfig{.async_scheduling = g.async_scheduling}, std::move(hooks));
}

std::unique_ptr<StepScheduler> Cluster::make_full_scheduler(const InstanceGroupConfig& g, InstanceRole role) {
    const char* field =
        role == InstanceRole::kPrefill ? "/prefill/hbm_gib_per_gpu" : "/decode/hbm_gib_per_gpu";
    // Weights per GPU: dense (non-routed) weights replicated on every attention-DP rank, plus this GPU's
    // expert slots (hub format: FP4 experts, FP8 dense).
    const double slots =
        static_cast<double>(config_.model.num_experts) / g.ep_size + g.redundant_experts_per_gpu;
    const double weights = roofline::v4_dense_bytes_hub() +
                           slots * config_.model.num_moe_layers * roofline::v4_routed_expert_bytes_hub();
    const double kv_bytes = g.hbm_gib_per_gpu * units::kGiB - weights - g.reserve_gib_per_gpu * units::kGiB;
    if (!g.kv_capacity_given && kv_bytes <= 0)
        throw ConfigError(config_.file, field, "more HBM than the weights per GPU plus the reserve",
                          std::to_string(g.hbm_gib_per_gpu));
    const bool spec = g.full_config.num_speculative_tokens > 0;
    DsparkAdapterConfig vc = g.verify;
    // The MoE shape of one rank's tokens under EP (the verify policy prices verified tokens with it).
    if (vc.moe_pairs_per_token <= 0) vc.moe_pairs_per_token = config_.model.top_k;
    if (vc.ep_tokens_per_token <= 0 && g.ep_size > 1)
        vc.ep_tokens_per_token = vc.moe_pairs_per_token * (1.0 - 1.0 / g.ep_size);
    if (vc.num_local_experts <= 0 && g.ep_size > 1)
        vc.num_local_experts = config_.model.num_experts / g.ep_size + g.redundant_experts_per_gpu;
    std::vector<std::unique_ptr<Scheduler>> ranks;
    std::vector<std::unique_ptr<DsparkVerifyAdapter>> verify;
    for (std::int32_t r = 0; r < g.gpus_per_instance; ++r) {
        SchedulerConfig sc = g.full_config;
        sc.dp_rank = r;
        if (!g.kv_capacity_given) sc.kv.capacity_bytes = kv_bytes;
        KvTierIndex* shared = nullptr;
        if (role == InstanceRole::kPrefill) {
            if (!g.host_capacity_given)
                sc.prefix_cache.host.capacity_bytes =
                    config_.platform.host_memory.capacity_bytes / config_.platform.gpus_per_prefill_server;
            sc.prefix_cache.store.read_bytes_per_s = config_.platform.kv_store.node_bandwidth_bytes_per_s;
            sc.prefix_cache.store.write_bytes_per_s = config_.platform.kv_store.node_bandwidth_bytes_per_s;
            sc.prefix_cache.store_ttl_s = {config_.platform.kv_store.ttl_s[0],
                                           config_.platform.kv_store.ttl_s[1]};
            shared = store_.get();
        } else {
            // Decode ranks receive the KV with the handoff; they index no prefixes.
            sc.prefix_cache.enabled = false;
        }
        std::unique_ptr<DsparkVerifyAdapter> a;
        if (spec) a = std::make_unique<DsparkVerifyAdapter>(vc, cost_);
        ranks.push_back(std::make_unique<Scheduler>(sc, a.get(), shared));
        verify.push_back(std::move(a));
    }
    return std::make_unique<DpGroupScheduler>(std::move(ranks), std::move(verify));
}

std::vector<InstanceLoad> Cluster::loads(const std::vector<std::unique_ptr<Node>>& nodes) const {
    std::vector<InstanceLoad> out;
    out.reserve(nodes.size());
    for (const auto& n : nodes) {
        if (n->down) continue;
        InstanceLoad l;
        l.instance = n->index;
        l.role = n->role == InstanceRole::kPrefill ? deepinfer::InstanceRole::kPrefill
                                                   : deepinfer::InstanceRole::kDecode;
        l.ranks.resize(static_cast<std::size_t>(n->group->num_ranks()));
        for (std::int32_t r = 0; r < n->group->num_ranks(); ++r) {
            // NOTE: through rank_load: a decode step being committed early serves the loads as they
            // were before its commit (and stay until the Instance commits it).
            DpRankLoad& d = l.ranks[static_cast<std::size_t>(r)];
            d = n->group->rank_load(r);
            const auto pending = n->rank_pending_tokens[static_cast<std::size_t>(r)];
            if (n->role == InstanceRole::kPrefill)
                d.num_pending_prefill_tokens = pending;
            else
                d.num_waiting_seqs += static_cast<std::int32_t>(pending);  // handoffs in flight
        }
        out.push_back(std::move(l));
    }
    return out;
}

std::int32_t Cluster::cached_prompt_tokens(const Node& node, std::int32_t rank, const Request& q,
                                           StoreProbes& probes) const {
    // NOTE: an estimate for routing: the longest prefix held in this rank's HBM or host tier or in the
    // shared store, found by binary search (tiers are close to prefix-closed: sequences release their
    // blocks last-first and the store writes whole prefixes); the Scheduler matches exactly.
    const Scheduler& s = node.group->rank(rank);
    const PrefixCache& cache = s.prefix_cache();
    if (!cache.enabled()) return 0;
    const double now = sg::now_s();
    const auto& h = q.prompt_block_hashes;
    // The store is usually shared by every rank the router weighs: its answers are kept per block for
    // the whole routing decision and asked first (the rank's own tiers are probed only where the store
    // misses). Same result as probing in tier order: `held` is a pure OR.
    if (probes.store != &cache.store()) {
        probes.store = &cache.store();
        probes.held.assign(h.size(), -1);
    }
    auto held = [&](std::size_t i) {
        std::int8_t& in_store = probes.held[i];
        if (in_store < 0) in_store = cache.store().contains(h[i], now) ? 1 : 0;
        return in_store == 1 || s.pool().find_cached(h[i]).has_value() || cache.host().contains(h[i], now);
    };
    const std::int32_t bt = s.pool().block_tokens();
    std::size_t lo = 0, hi = std::min(h.size(), static_cast<std::size_t>((q.prompt_len() - 1) / bt));
    while (lo < hi) {  // first block not held
        const std::size_t mid = (lo + hi) / 2;
        if (held(mid))
            lo = mid + 1;
        else
            hi = mid;
    }
    return static_cast<std::int32_t>(lo) * bt;
}

void Cluster::write_back_to_store(Node& node, const RequestRecord& rec) {
    // NOTE (documented in experiments/01_default_128gpu/README.md): the next turn of an agent session
    // resends this turn's prompt + output. The prefill ranks wrote the prompt's blocks to the store;
    // the decode rank writes the blocks that the output completed, so the next turn's prefill finds
    // its whole history cached (the last partial block and the new tool result are recomputed).
    if (!store_ || rec.request.session_id == 0 || rec.decode_rank < 0) return;
    SimRequest ctx = rec.request;
    ctx.prompt_tokens = rec.request.prompt_tokens + rec.output_tokens - 1;  // the last token has no KV
    const double now = sg::now_s();
    std::int64_t fresh = 0;
    for (std::uint64_t h : prompt_block_hashes(ctx, config_.prefill.full_config.kv.block_tokens))
        fresh += store_->insert(h, rec.request.traffic_class, now) ? 1 : 0;
    if (fresh == 0 || platform_.store_nodes.empty()) return;
    const double bytes =
        static_cast<double>(fresh) * kv_bytes_per_block_ * config_.platform.kv_store.write_amplification();
    metrics_.decode_store_blocks_written += fresh;
    metrics_.decode_store_write_bytes += bytes;
    const auto rank =
        static_cast<std::int32_t>(static_cast<std::size_t>(rec.decode_rank) % node.hosts.gpus.size());
    sg::sg4::Host* src = node.hosts.gpus[static_cast<std::size_t>(nic_gpu(node.nic_down, rank))];
    sg::sg4::Host* dst =
        platform_
            .store_nodes[static_cast<std::size_t>(rec.request.session_id) % platform_.store_nodes.size()];
    store_writes_.start(src, dst, bytes);
}

RequestRecord& Cluster::record(RequestId id) {
    const auto i = static_cast<std::size_t>(id.value());
    if (i >= metrics_.requests.size()) metrics_.requests.resize(i + 1);
    return metrics_.requests[i];
}

void Cluster::start() {
    mutex_ = sg::sg4::Mutex::create();
    cv_ = sg::sg4::ConditionVariable::create();
    fault_mutex_ = sg::sg4::Mutex::create();
    fault_cv_ = sg::sg4::ConditionVariable::create();
    wall_start_ = wall_now_s();
    auto stop = [this] { abort_all(); };
    sg::sg4::Actor::create("frontend", platform_.frontend,
                           sg::guarded(
                               errors_, [this] { frontend_loop(); }, stop));
    for (auto* group : {&prefill_, &decode_})
        for (auto& n : *group) {
            Node* raw = n.get();
            n->actor = sg::sg4::Actor::create(n->name, n->hosts.gpus.front(),
                                              sg::guarded(
                                                  errors_, [this, raw] { instance_loop(*raw); }, stop));
            if (n->role == InstanceRole::kPrefill)
                n->transfer_actor =
                    sg::sg4::Actor::create(n->name + "-kv", n->hosts.gpus.front(),
                                           sg::guarded(
                                               errors_, [this, raw] { transfer_loop(*raw); }, stop));
        }
    if (faults_on()) {
        // NOTE: not a daemon: it waits for its next event on fault_cv_ and returns once the last request
        // is done (a killed daemon unwinds by exception, which ASan misreads on SimGrid's stacks).
        sg::sg4::Actor::create("faults", platform_.frontend,
                               sg::guarded(
                                   errors_, [this] { fault_loop(); }, stop));
    }
}

void Cluster::wake(Node& node) {
    if (node.idle) {
        node.idle = false;
        node.actor->resume();
    }
}

void Cluster::wake_transfer(Node& node) {
    if (node.transfer_idle) {
        node.transfer_idle = false;
        node.transfer_actor->resume();
    }
}

void Cluster::wake_all() {
    for (auto* group : {&prefill_, &decode_})
        for (auto& n : *group) {
            wake(*n);
            if (n->transfer_actor) wake_transfer(*n);
        }
}

void Cluster::abort_all() {
    stop_ = true;
    wake_all();
    cv_->notify_all();
    if (fault_cv_) fault_cv_->notify_all();
}

void Cluster::progress_tick() {
    if (!progress_) return;
    const double now = sg::now_s();
    const double step = config_.workload.duration_s / 100.0;
    if (last_progress_s_ >= 0 && now - last_progress_s_ < step) return;
    last_progress_s_ = now;
    const double frac = std::min(1.0, now / config_.workload.duration_s);
    const double wall = wall_now_s() - wall_start_;
    const double eta = frac > 0 ? wall * (1 - frac) / frac : 0;
    const int bar = static_cast<int>(frac * 30);
    std::fprintf(stderr, "\r[%.*s%*s] %3.0f%%  sim %7.1f / %.0f s  wall %6.1f s  ETA %6.1f s ", bar,
                 "##############################", 30 - bar, "", frac * 100, now, config_.workload.duration_s,
                 wall, eta);
    std::fflush(stderr);
}

void Cluster::frontend_loop() {
    const double deadline = config_.workload.duration_s + config_.workload.drain_limit_s;
    std::unique_lock<sg::sg4::Mutex> lock(*mutex_);
    for (;;) {
        if (stop_) break;
        progress_tick();
        const double now = sg::now_s();
        std::optional<double> next = workload_.peek_arrival_s();
        if (!turns_.empty() && (!next || turns_.top().arrival_s < *next)) next = turns_.top().arrival_s;
        if (next && *next > deadline) next.reset();
        if (!next) {
            if (outstanding_ == 0) break;
            if (now >= deadline) {
                stop_ = true;
                break;
            }
            cv_->wait_until(lock, deadline);
            continue;
        }
        if (*next > now) {
            cv_->wait_until(lock, *next);
            continue;
        }
        const bool from_turns =
            !turns_.empty() && turns_.top().arrival_s <= now &&
            (!workload_.peek_arrival_s() || turns_.top().arrival_s < *workload_.peek_arrival_s());
        if (from_turns) {
            const SimRequest r = turns_.top();
            turns_.pop();
            dispatch(r);
        } else {
            dispatch(workload_.pop_arrival());
        }
    }
    if (progress_) std::fprintf(stderr, "\n");
    done_ = true;
    wake_all();
    if (fault_cv_) fault_cv_->notify_all();
}

void Cluster::dispatch(SimRequest r) {
    ++metrics_.num_events;
    // Requests are numbered in dispatch order (turns the workload generated but never sent leave no gap).
    r.id = RequestId(static_cast<std::int64_t>(metrics_.requests.size()));
    RequestRecord& rec = record(r.id);
    rec.request = r;
    ++outstanding_;
    route_to_prefill(r.id);
}

std::int32_t Cluster::kv_prompt_tokens(RequestId id) const {
    const RequestRecord& rec = metrics_.requests[static_cast<std::size_t>(id.value())];
    const auto i = static_cast<std::size_t>(id.value());
    const std::int32_t delivered = i < fault_state_.size() ? fault_state_[i].delivered : 0;
    return rec.request.prompt_tokens + std::max(0, delivered - 1);
}

void Cluster::route_to_prefill(RequestId id) {
    RequestRecord& rec = record(id);
    const SimRequest& r = rec.request;
    SimRequest ctx = r;
    ctx.prompt_tokens = kv_prompt_tokens(id);
    Request q;
    q.id = r.id;
    q.arrival_s = r.arrival_s;
    q.traffic_class = r.traffic_class;
    q.prompt_len_tokens = ctx.prompt_tokens;
    q.prompt_block_hashes = prompt_block_hashes(ctx, config_.prefill.full_config.kv.block_tokens);
    q.max_new_tokens = 1;  // the prefill instance produces the first token
    q.session_id = r.session_id;
    const bool any_up = std::any_of(prefill_.begin(), prefill_.end(),
                                    [](const std::unique_ptr<Node>& n) { return !n->down; });
    if (!any_up) {
        parked_prefill_.push_back(id.value());
        fault_state(id).touched = true;
        return;
    }
    if (prefill_.front()->group != nullptr) {
        // The policies Router: prefix-cache and load aware over every prefill DP rank.
        const std::vector<InstanceLoad> ls = loads(prefill_);
        StoreProbes probes;
        const RouteDecision d =
            router_.route(q, ls, [&](std::int32_t inst, std::int32_t rank, const Request& req) {
                return cached_prompt_tokens(*prefill_[static_cast<std::size_t>(inst)], rank, req, probes);
            });
        DI_CHECK(d.prefill.valid(), "no prefill rank for request " << r.id);
        Node& node = *prefill_[static_cast<std::size_t>(d.prefill.instance)];
        rec.prefill_instance = node.index;
        rec.prefill_rank = d.prefill.dp_rank;
        rec.routed_uncached_tokens = ctx.prompt_tokens - d.num_cached_prompt_tokens;
        node.rank_pending_tokens[static_cast<std::size_t>(d.prefill.dp_rank)] += rec.routed_uncached_tokens;
        node.outstanding += ctx.prompt_tokens;
        if (faults_on()) node.resident.insert(id.value());
        node.inbox.push_back(Node::Queued{.request = std::move(q), .rank = d.prefill.dp_rank});
        wake(node);
        return;
    }
    // SimpleScheduler: least outstanding prompt tokens; an agent session sticks to its instance while
    // that one is within 1.5x of the least loaded (prefix affinity). Instances that are down are skipped.
    std::size_t best = 0;
    while (prefill_[best]->down) ++best;
    for (std::size_t i = best + 1; i < prefill_.size(); ++i)
        if (!prefill_[i]->down && prefill_[i]->outstanding < prefill_[best]->outstanding) best = i;
    if (r.session_id != 0) {
        const std::size_t home = static_cast<std::size_t>(mix64(r.session_id) % prefill_.size());
        if (!prefill_[home]->down && prefill_[home]->outstanding <= 1.5 * prefill_[best]->outstanding + 8192)
            best = home;
    }
    Node& node = *prefill_[best];
    rec.prefill_instance = node.index;
    node.outstanding += ctx.prompt_tokens;
    if (faults_on()) node.resident.insert(id.value());
    q.prompt_block_hashes.clear();  // no prefix cache
    node.inbox.push_back(Node::Queued{.request = std::move(q), .rank = -1});
    wake(node);
}

void Cluster::complete(RequestRecord& rec, double now) {
    --outstanding_;
    // Sessions continue while arrivals are open; a turn that would start after duration_s ends its
    // session (the run then only drains work already admitted).
    if (rec.status == RequestStatus::kCompleted)
        if (auto next = workload_.next_turn(rec.request, rec.output_tokens, now);
            next && next->arrival_s < config_.workload.duration_s)
            turns_.push(*next);
    cv_->notify_one();
}

void Cluster::on_prefill_finished(Node& node, const FinishedRequest& f, double now) {
    RequestRecord& rec = record(f.request);
    node.outstanding -= kv_prompt_tokens(f.request);
    if (node.group != nullptr && rec.prefill_rank >= 0)
        node.rank_pending_tokens[static_cast<std::size_t>(rec.prefill_rank)] -= rec.routed_uncached_tokens;
    if (f.reason == FinishReason::kRejected || f.reason == FinishReason::kAborted) {
        rec.status = RequestStatus::kRejected;
        node.resident.erase(f.request.value());
        complete(rec, now);
        return;
    }
    // A request resumed after a fault already delivered its first token (TTFT stays the first one).
    if (rec.first_token_s < 0) {
        rec.first_token_s = now;
        rec.output_tokens = 1;
    }
    if (faults_on()) fault_state(f.request).prefilled = true;
    if (rec.request.output_tokens <= 1) {
        rec.finish_s = now;
        rec.status = RequestStatus::kCompleted;
        node.resident.erase(f.request.value());
        complete(rec, now);
        return;
    }
    node.outbox.push_back(f.request);
    wake_transfer(node);
}

void Cluster::on_decode_finished(Node& node, const FinishedRequest& f, double now) {
    RequestRecord& rec = record(f.request);
    node.outstanding -= 1;
    node.resident.erase(f.request.value());
    if (f.reason == FinishReason::kRejected || f.reason == FinishReason::kAborted) {
        rec.status = RequestStatus::kRejected;
    } else {
        rec.status = RequestStatus::kCompleted;
        const auto i = static_cast<std::size_t>(f.request.value());
        const std::int32_t delivered = i < fault_state_.size() ? std::max(1, fault_state_[i].delivered) : 1;
        rec.output_tokens = delivered + f.num_output_tokens;
        rec.finish_s = now;
        write_back_to_store(node, rec);
    }
    complete(rec, now);
}

void Cluster::on_step(Node& node, const StepRecord& s) {
    ++metrics_.num_events;
    RoleMetrics& m = node.role == InstanceRole::kPrefill ? metrics_.prefill : metrics_.decode;
    ++m.num_steps;
    m.busy_s += s.end_s - s.start_s;
    if (s.end_s >= config_.workload.warmup_s && s.end_s <= config_.workload.duration_s) {
        m.window_tokens += static_cast<double>(s.num_tokens);
        m.imbalance_weighted += s.imbalance_max_mean * static_cast<double>(s.num_tokens);
        m.imbalance_weight += static_cast<double>(s.num_tokens);
        m.window_steps += 1;
        m.window_seqs += s.num_seqs;
        if (node.role == InstanceRole::kDecode) {
            metrics_.draft_seq_steps += s.num_draft_seqs;
            metrics_.verified_drafts += s.num_verified_drafts;
            metrics_.accepted_drafts += s.num_accepted_drafts;
        }
    }
    metrics_.replay_tokens += static_cast<double>(s.num_replay_tokens);
    metrics_.tier_read_bytes += s.read_bytes;
    if (record_timeline_ &&
        static_cast<std::int64_t>(metrics_.timeline.size()) < config_.output.timeline_max_events)
        metrics_.timeline.push_back(TimelineEvent{.pid = node.pid, .step = s});
}

void Cluster::instance_loop(Node& node) {
    for (;;) {
        if (stop_ || done_) break;
        if (node.down) {  // failed: wait for the repair (the fault injector wakes the actor)
            node.idle = true;
            sg::sg4::this_actor::suspend();
            node.idle = false;
            continue;
        }
        while (!node.inbox.empty()) {
            Node::Queued& q = node.inbox.front();
            if (node.group != nullptr && q.rank >= 0)
                node.group->add_request(std::move(q.request), q.rank);
            else
                node.instance->add_request(std::move(q.request));
            node.inbox.pop_front();
        }
        if (node.instance->has_work() && node.instance->step()) continue;
        if (!node.inbox.empty()) continue;
        node.idle = true;
        sg::sg4::this_actor::suspend();
        node.idle = false;
    }
}

void Cluster::transfer_loop(Node& node) {
    for (;;) {
        if (stop_ || done_) break;
        if (node.outbox.empty()) {
            node.transfer_idle = true;
            sg::sg4::this_actor::suspend();
            node.transfer_idle = false;
            continue;
        }
        const RequestId id = node.outbox.front();
        node.outbox.pop_front();
        RequestRecord* rec = &record(id);
        const std::int32_t attempt = faults_on() ? fault_state(id).attempt : 0;
        // KV of the prompt (and of output tokens delivered before a fault); decode produces the rest.
        const std::int32_t kv_tokens = kv_prompt_tokens(id);
        const std::int32_t delivered = faults_on() ? std::max(1, fault_state(id).delivered) : 1;
        if (std::all_of(decode_.begin(), decode_.end(),
                        [](const std::unique_ptr<Node>& n) { return n->down; })) {
            parked_handoffs_.push_back(
                ParkedHandoff{.src = &node, .request = id.value(), .attempt = attempt});
            fault_state(id).touched = true;
            continue;
        }
        const auto slot = static_cast<std::size_t>(id.value());
        std::size_t best = 0;
        std::int32_t dst_rank = -1;
        std::size_t src_gpu = slot % node.hosts.gpus.size();
        // The KV shape follows the top-level model (sim_config_json.cpp) with either scheduler.
        const KvPoolConfig& kv = config_.decode.full_config.kv;
        const double bytes = Router::make_handoff({}, {}, kv_tokens, kv.shape, kv.block_tokens).num_bytes;
        if (decode_.front()->group != nullptr) {
            // The policies Router picks the decode instance and DP rank (load aware).
            const RouteTarget t = router_.choose_decode(loads(decode_));
            DI_CHECK(t.valid(), "no decode rank for request " << id);
            best = static_cast<std::size_t>(t.instance);
            dst_rank = t.dp_rank;
            decode_[best]->rank_pending_tokens[static_cast<std::size_t>(dst_rank)] += 1;
            if (rec->prefill_rank >= 0)
                src_gpu = static_cast<std::size_t>(rec->prefill_rank) % node.hosts.gpus.size();
        } else {
            // Decode instance with the fewest outstanding sequences (ties: lowest index), among those up.
            while (decode_[best]->down) ++best;
            for (std::size_t i = best + 1; i < decode_.size(); ++i)
                if (!decode_[i]->down && decode_[i]->outstanding < decode_[best]->outstanding) best = i;
        }
        Node& dst = *decode_[best];
        const std::int32_t dst_epoch = dst.epoch;
        const std::size_t dst_gpu = dst_rank >= 0 ? static_cast<std::size_t>(dst_rank) % dst.hosts.gpus.size()
                                                  : slot % dst.hosts.gpus.size();
        const double t0 = sg::now_s();
        dst.outstanding += 1;
        rec->decode_instance = dst.index;
        rec->decode_rank = dst_rank;
        if (!faults_on()) {
            sg::sg4::Comm::sendto(node.hosts.gpus[src_gpu], dst.hosts.gpus[dst_gpu],
                                  static_cast<std::uint64_t>(bytes));
        } else if (!send_handoff(node, id, static_cast<std::int32_t>(src_gpu), dst,
                                 static_cast<std::int32_t>(dst_gpu), bytes)) {
            // A fault cut the transfer: resend while the KV still exists (same attempt), else drop.
            if (dst.epoch == dst_epoch) {
                dst.outstanding -= 1;
                if (dst_rank >= 0) dst.rank_pending_tokens[static_cast<std::size_t>(dst_rank)] -= 1;
            }
            if (fault_state(id).attempt == attempt) node.outbox.push_front(id);
            continue;
        }
        const double now = sg::now_s();
        rec = &record(id);  // NOTE: the record table may have grown while the transfer ran
        ++metrics_.num_events;
        ++metrics_.num_handoffs;
        metrics_.handoff_bytes += bytes;
        metrics_.handoff_time_s += now - t0;
        rec->handoff_done_s = now;
        if (faults_on()) {
            node.resident.erase(id.value());
            dst.resident.insert(id.value());
            RequestFaultState& st = fault_state(id);
            st.prefilled = false;
            st.decode_progress = 0;
        }
        Request q;
        q.id = id;
        q.arrival_s = rec->request.arrival_s;
        q.traffic_class = rec->request.traffic_class;
        q.prompt_len_tokens = kv_tokens + 1;
        q.num_handed_over_tokens = kv_tokens;
        q.max_new_tokens = rec->request.output_tokens - delivered;
        q.session_id = rec->request.session_id;
        if (dst_rank >= 0) dst.rank_pending_tokens[static_cast<std::size_t>(dst_rank)] -= 1;
        dst.inbox.push_back(Node::Queued{.request = std::move(q), .rank = dst_rank});
        wake(dst);
    }
}

void Cluster::finish() {
    auto add_moves = [this](const ExpertMoveStats& s, const ExpertBalancer* b) {
        metrics_.expert_moves.applied += s.applied;
        metrics_.expert_moves.bytes += s.bytes;
        metrics_.expert_moves.copy_s += s.copy_s;
        if (b == nullptr) return;
        const BalancerStats st = b->stats();
        metrics_.eplb_layers_kept += st.num_layers_kept;
        metrics_.eplb_layers_swapped += st.num_layers_swapped;
        metrics_.eplb_layers_new += st.num_layers_new;
    };
    for (auto* group : {&prefill_, &decode_})
        for (auto& n : *group) {
            metrics_.num_placements += n->instance->stats().num_placements;
            add_moves(n->executor->move_stats(), n->balancer.get());
            for (const Node::Retired& r : n->retired) {
                metrics_.num_placements += r.instance->stats().num_placements;
                add_moves(r.executor->move_stats(), r.balancer.get());
            }
            if (n->down) metrics_.faults.instance_down_s += sg::now_s() - n->down_since_s;
        }
    for (std::size_t i = 0; i < fault_state_.size() && i < metrics_.requests.size(); ++i) {
        if (!fault_state_[i].touched) continue;
        ++metrics_.faults.requests_affected;
        const RequestStatus st = metrics_.requests[i].status;
        metrics_.faults.requests_failed += st == RequestStatus::kPending || st == RequestStatus::kUnfinished;
    }
    for (RequestRecord& r : metrics_.requests)
        if (r.status == RequestStatus::kPending) r.status = RequestStatus::kUnfinished;
}

}  // namespace deepinfer::sim
