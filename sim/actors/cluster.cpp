// Cluster actors: frontend (workload + router), instance loops, KV handoff.
#include "sim/actors/cluster.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "policies/common/check.h"
#include "policies/cost/roofline.h"
#include "sim/policy_factory.h"

namespace deepinfer::sim {
namespace {

double wall_now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Cluster::Cluster(const SimConfig& config, const Platform& platform, const CostModel& cost, Workload& workload,
                 Rng rng, RunMetrics& metrics, bool record_timeline, bool progress, sg::ActorErrors& errors)
    : config_(config),
      platform_(platform),
      cost_(cost),
      workload_(workload),
      rng_(rng),
      metrics_(metrics),
      record_timeline_(record_timeline),
      progress_(progress),
      errors_(errors),
      routing_(config.routing, config.model, rng.fork("routing")),
      acceptance_(config.acceptance.fixed_rate) {
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
    const InstanceGroupConfig& g = role == InstanceRole::kPrefill ? config_.prefill : config_.decode;
    auto n = std::make_unique<Node>();
    n->name = hosts.name;
    n->role = role;
    n->index = index;
    n->pid = static_cast<std::int32_t>(metrics_.instance_names.size());
    metrics_.instance_names.push_back(n->name);
    n->hosts = hosts;
    const ExpertPlacement initial = make_static_placement(
        config_.model.num_moe_layers, config_.model.num_experts, g.ep_size, g.redundant_experts_per_gpu);
    n->ep = std::make_unique<EpLoadModel>(routing_, initial);
    n->scheduler = make_scheduler(g);
    n->balancer = make_balancer(g, initial);
    Node* raw = n.get();
    n->executor = std::make_unique<SimExecutor>(
        SimExecutorSetup{.name = n->name,
                         .gpus = hosts.gpus,
                         .host_speed_flops = platform_.gpu_speed_flops,
                         .store_nodes = platform_.store_nodes,
                         .host_memory = hosts.host_memory,
                         .store_write_amplification = config_.platform.kv_store.write_amplification(),
                         .report_expert_load = n->balancer != nullptr},
        cost_, *n->ep, acceptance_, rng_.fork(n->name),
        [this, raw](const StepRecord& s) { on_step(*raw, s); });
    engine::InstanceHooks hooks;
    if (role == InstanceRole::kPrefill) {
        hooks.on_finished = [this, raw](const FinishedRequest& f, double now) {
            on_prefill_finished(*raw, f, now);
        };
    } else {
        hooks.on_finished = [this, raw](const FinishedRequest& f, double now) {
            on_decode_finished(*raw, f, now);
        };
        hooks.on_commit = [this](const StepPlan&, const StepOutcome& o, const CommitResult& r, double now) {
            if (o.end_s < config_.workload.warmup_s || now > config_.workload.duration_s) return;
            for (const TokenProgress& p : r.progress)
                metrics_.decode.window_output_tokens += p.num_new_output_tokens;
        };
    }
    n->instance =
        std::make_unique<engine::Instance>(n->name, *n->executor, clock_, *n->scheduler, n->balancer.get(),
                                           engine::InstanceConfig{}, std::move(hooks));
    return n;
}

RequestRecord& Cluster::record(RequestId id) {
    const auto i = static_cast<std::size_t>(id.value());
    if (i >= metrics_.requests.size()) metrics_.requests.resize(i + 1);
    return metrics_.requests[i];
}

void Cluster::start() {
    mutex_ = sg::sg4::Mutex::create();
    cv_ = sg::sg4::ConditionVariable::create();
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
}

void Cluster::dispatch(SimRequest r) {
    ++metrics_.num_events;
    // Requests are numbered in dispatch order (turns the workload generated but never sent leave no gap).
    r.id = RequestId(static_cast<std::int64_t>(metrics_.requests.size()));
    RequestRecord& rec = record(r.id);
    rec.request = r;
    ++outstanding_;
    // Router: least outstanding prompt tokens; an agent session sticks to its instance while that one
    // is within 1.5x of the least loaded (prefix affinity). TODO(#3): the policies/router Router.
    std::size_t best = 0;
    for (std::size_t i = 1; i < prefill_.size(); ++i)
        if (prefill_[i]->outstanding < prefill_[best]->outstanding) best = i;
    if (r.session_id != 0) {
        const std::size_t home = static_cast<std::size_t>(mix64(r.session_id) % prefill_.size());
        if (prefill_[home]->outstanding <= 1.5 * prefill_[best]->outstanding + 8192) best = home;
    }
    Node& node = *prefill_[best];
    rec.prefill_instance = node.index;
    node.outstanding += r.prompt_tokens;
    Request q;
    q.id = r.id;
    q.arrival_s = r.arrival_s;
    q.traffic_class = r.traffic_class;
    q.prompt_len_tokens = r.prompt_tokens;
    q.prompt_block_hashes = prompt_block_hashes(r);
    q.max_new_tokens = 1;  // the prefill instance produces the first token
    q.session_id = r.session_id;
    node.inbox.push_back(std::move(q));
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
    node.outstanding -= rec.request.prompt_tokens;
    if (f.reason == FinishReason::kRejected || f.reason == FinishReason::kAborted) {
        rec.status = RequestStatus::kRejected;
        complete(rec, now);
        return;
    }
    rec.first_token_s = now;
    rec.output_tokens = 1;
    if (rec.request.output_tokens <= 1) {
        rec.finish_s = now;
        rec.status = RequestStatus::kCompleted;
        complete(rec, now);
        return;
    }
    node.outbox.push_back(f.request);
    wake_transfer(node);
}

void Cluster::on_decode_finished(Node& node, const FinishedRequest& f, double now) {
    RequestRecord& rec = record(f.request);
    node.outstanding -= 1;
    if (f.reason == FinishReason::kRejected || f.reason == FinishReason::kAborted) {
        rec.status = RequestStatus::kRejected;
    } else {
        rec.status = RequestStatus::kCompleted;
        rec.output_tokens = 1 + f.num_output_tokens;
        rec.finish_s = now;
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
    }
    if (record_timeline_ &&
        static_cast<std::int64_t>(metrics_.timeline.size()) < config_.output.timeline_max_events)
        metrics_.timeline.push_back(TimelineEvent{.pid = node.pid, .step = s});
}

void Cluster::instance_loop(Node& node) {
    for (;;) {
        if (stop_ || done_) break;
        while (!node.inbox.empty()) {
            node.instance->add_request(std::move(node.inbox.front()));
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
    const double fixed_bytes = roofline::kv_bytes_per_sequence_fixed();
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
        // Decode instance with the fewest outstanding sequences (ties: lowest index).
        std::size_t best = 0;
        for (std::size_t i = 1; i < decode_.size(); ++i)
            if (decode_[i]->outstanding < decode_[best]->outstanding) best = i;
        Node& dst = *decode_[best];
        const auto slot = static_cast<std::size_t>(id.value());
        const double bytes = rec->request.prompt_tokens * roofline::kv_bytes_per_token() + fixed_bytes;
        const double t0 = sg::now_s();
        dst.outstanding += 1;
        rec->decode_instance = dst.index;
        sg::sg4::Comm::sendto(node.hosts.gpus[slot % node.hosts.gpus.size()],
                              dst.hosts.gpus[slot % dst.hosts.gpus.size()],
                              static_cast<std::uint64_t>(bytes));
        const double now = sg::now_s();
        rec = &record(id);  // NOTE: the record table may have grown while the transfer ran
        ++metrics_.num_events;
        ++metrics_.num_handoffs;
        metrics_.handoff_bytes += bytes;
        metrics_.handoff_time_s += now - t0;
        rec->handoff_done_s = now;
        Request q;
        q.id = id;
        q.arrival_s = rec->request.arrival_s;
        q.traffic_class = rec->request.traffic_class;
        q.prompt_len_tokens = rec->request.prompt_tokens + 1;
        q.num_handed_over_tokens = rec->request.prompt_tokens;
        q.max_new_tokens = rec->request.output_tokens - 1;
        q.session_id = rec->request.session_id;
        dst.inbox.push_back(std::move(q));
        wake(dst);
    }
}

void Cluster::finish() {
    for (auto* group : {&prefill_, &decode_})
        for (auto& n : *group) metrics_.num_placements += n->instance->stats().num_placements;
    for (RequestRecord& r : metrics_.requests)
        if (r.status == RequestStatus::kPending) r.status = RequestStatus::kUnfinished;
}

}  // namespace deepinfer::sim
