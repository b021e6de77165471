// Fault injection: GPU, NIC link and KV store node failures at configured times, with optional repair.
// What is modelled (every effect is bookkeeping plus rerouting; no request is dropped):
//  * gpu: the GPU's instance (one EP group: a GPU failure stops the whole synchronised step) goes down
//    until the repair, then restarts with the same static expert placement and empty KV caches.
//    Queued requests move to another instance (retried); requests whose KV was on the instance
//    (prefill under way or done, decode under way) are prefilled again elsewhere over prompt + the
//    output already delivered (re-prefilled) and decode the rest. With no other instance of the role
//    up, they wait for the repair.
//  * link: the GPU's scale-out NIC. A KV handoff crossing it is cut and resent; while it is down,
//    handoffs, store reads and store write-backs of that GPU cross NVLink to a peer GPU and use the
//    peer's NIC (a store read already in flight when the NIC fails completes: not cut).
//  * store_node: blocks are erasure-coded over the store nodes (data + parity fragments). With at most
//    `parity` nodes down nothing is lost (reads reconstruct); beyond that the stored blocks are lost:
//    the store index forgets them and later prefix hits on them become misses (recompute). Every stripe
//    spans data + parity nodes; with more nodes than that, which stripes a node failure touches is not
//    modelled: losing more than `parity` nodes loses the whole store.
// NOTE: SimGrid's own host/link turn_off is not used: it fails every activity on the resource,
// including the SimExecutor's step Execs and tier reads, which have no recovery path (and turning a
// host off kills its actors). The failures are therefore modelled at the cluster level.
#include <algorithm>
#include <mutex>
#include <set>
#include <stdexcept>

#include "policies/common/check.h"
#include "policies/common/log.h"
#include "sim/actors/cluster.h"

namespace deepinfer::sim {

Cluster::RequestFaultState& Cluster::fault_state(RequestId id) {
    const auto i = static_cast<std::size_t>(id.value());
    if (i >= fault_state_.size()) fault_state_.resize(i + 1);
    return fault_state_[i];
}

Cluster::Node& Cluster::node_of(InstanceRole role, std::int32_t instance) {
    auto& group = role == InstanceRole::kPrefill ? prefill_ : decode_;
    return *group.at(static_cast<std::size_t>(instance));
}

void Cluster::fault_loop() {
    struct Event {
        double t = 0;
        std::size_t fault = 0;
        bool repair = false;
    };
    std::vector<Event> events;
    for (std::size_t i = 0; i < config_.faults.size(); ++i) {
        const FaultConfig& f = config_.faults[i];
        events.push_back({f.at_s, i, false});
        if (f.recovers) events.push_back({f.at_s + f.repair_s, i, true});
    }
    // Time order; at equal times in config order, a failure before its own repair.
    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
        return a.t != b.t ? a.t < b.t : a.fault != b.fault ? a.fault < b.fault : a.repair < b.repair;
    });
    for (const Event& e : events) {
        if (stop_ || done_) break;
        {
            std::unique_lock<sg::sg4::Mutex> lock(*fault_mutex_);
            while (e.t > sg::now_s() && !stop_ && !done_) fault_cv_->wait_until(lock, e.t);
        }
        if (stop_ || done_) break;
        ++metrics_.num_events;
        if (e.repair)
            repair(config_.faults[e.fault]);
        else
            inject(config_.faults[e.fault]);
    }
}

void Cluster::inject(const FaultConfig& f) {
    ++metrics_.faults.injected;
    DI_LOG(kSim, kInfo, "fault: " << name(f.kind) << " fails");
    switch (f.kind) {
        case FaultKind::kGpu: {
            Node& n = node_of(f.role, f.instance);
            if (n.num_down_faults++ == 0) fail_instance(n);
            break;
        }
        case FaultKind::kLink: {
            Node& n = node_of(f.role, f.instance);
            n.nic_down[static_cast<std::size_t>(f.gpu)] = true;
            for (auto& p : prefill_) {
                const Node::Handoff& h = p->handoff;
                if (h.request < 0) continue;
                const bool cut =
                    (p.get() == &n && h.src_nic_gpu == f.gpu) || (h.dst == &n && h.dst_nic_gpu == f.gpu);
                if (!cut) continue;
                const RequestId id(h.request);
                ++metrics_.faults.requests_retried;
                ++record(id).retries;
                fault_state(id).touched = true;
                cancel_handoff(*p);
            }
            break;
        }
        case FaultKind::kStoreNode: {
            ++store_nodes_down_;
            if (store_ && store_nodes_down_ > config_.platform.kv_store.ec_parity) {
                // More fragments lost than parity can rebuild: every stored block is gone.
                store_->expire(sg::now_s());
                metrics_.faults.store_blocks_lost += store_->size();
                const KvStoreConfig& k = config_.platform.kv_store;
                *store_ = KvTierIndex(store_->capacity_blocks(),
                                      std::array<double, kNumTrafficClasses>{k.ttl_s[0], k.ttl_s[1]});
            }
            break;
        }
    }
}

void Cluster::repair(const FaultConfig& f) {
    ++metrics_.faults.repaired;
    switch (f.kind) {
        case FaultKind::kGpu: {
            Node& n = node_of(f.role, f.instance);
            if (--n.num_down_faults > 0) break;
            n.down = false;
            metrics_.faults.instance_down_s += sg::now_s() - n.down_since_s;
            wake(n);
            release_parked();
            break;
        }
        case FaultKind::kLink:
            node_of(f.role, f.instance).nic_down[static_cast<std::size_t>(f.gpu)] = false;
            break;
        case FaultKind::kStoreNode:
            // A rejoined node holds nothing readable; new writes stripe over it again.
            --store_nodes_down_;
            break;
    }
}

void Cluster::cancel_handoff(Node& src) {
    Node::Handoff& h = src.handoff;
    if (h.request < 0 || h.canceled) return;
    h.canceled = true;
    if (h.comm) h.comm->cancel();
}

bool Cluster::send_handoff(Node& src, RequestId id, std::int32_t src_gpu, Node& dst, std::int32_t dst_gpu,
                           double bytes) {
    Node::Handoff& h = src.handoff;
    h = Node::Handoff{.request = id.value(),
                      .src_nic_gpu = nic_gpu(src.nic_down, src_gpu),
                      .dst = &dst,
                      .dst_nic_gpu = nic_gpu(dst.nic_down, dst_gpu),
                      .comm = nullptr,
                      .canceled = false};
    // Legs: NVLink to the NIC's GPU where it is a peer, scale-out, NVLink from the peer.
    struct Leg {
        sg::sg4::Host* from;
        sg::sg4::Host* to;
    };
    std::vector<Leg> legs;
    auto gpu = [](const Node& n, std::int32_t g) { return n.hosts.gpus[static_cast<std::size_t>(g)]; };
    if (h.src_nic_gpu != src_gpu) legs.push_back({gpu(src, src_gpu), gpu(src, h.src_nic_gpu)});
    legs.push_back({gpu(src, h.src_nic_gpu), gpu(dst, h.dst_nic_gpu)});
    if (h.dst_nic_gpu != dst_gpu) legs.push_back({gpu(dst, h.dst_nic_gpu), gpu(dst, dst_gpu)});
    bool ok = true;
    for (const Leg& leg : legs) {
        h.comm = sg::transfer_async(leg.from, leg.to, bytes);
        try {
            h.comm->wait();
        } catch (const simgrid::Exception&) {
            // Canceled by cancel_handoff (a fault cut the transfer).
        }
        if (h.canceled) {
            ok = false;
            break;
        }
    }
    src.handoff = Node::Handoff{};
    return ok;
}

void Cluster::fail_instance(Node& n) {
    const double now = sg::now_s();
    n.down = true;
    n.down_since_s = now;
    ++n.epoch;  // callbacks from the old engine are ignored from now on
    // Handoffs out of the instance lose their source (the requests are re-prefilled below); handoffs
    // into it are resent elsewhere from their prefill instance (retried).
    if (n.role == InstanceRole::kPrefill) {
        cancel_handoff(n);
    } else {
        for (auto& p : prefill_)
            if (p->handoff.request >= 0 && p->handoff.dst == &n && !p->handoff.canceled) {
                const RequestId id(p->handoff.request);
                ++metrics_.faults.requests_retried;
                ++record(id).retries;
                fault_state(id).touched = true;
                cancel_handoff(*p);
            }
    }
    std::set<std::int64_t> queued;  // routed here, not yet handed to the scheduler: no work lost
    for (const Node::Queued& q : n.inbox) queued.insert(q.request.id.value());
    const std::vector<std::int64_t> ids(n.resident.begin(), n.resident.end());
    n.resident.clear();
    n.inbox.clear();
    n.outbox.clear();
    n.outstanding = 0;
    // Keep the old engine alive (its actor may be inside a step) and start a fresh one for the restart.
    n.retired.push_back(Node::Retired{.ep = std::move(n.ep),
                                      .scheduler = std::move(n.scheduler),
                                      .balancer = std::move(n.balancer),
                                      .executor = std::move(n.executor),
                                      .instance = std::move(n.instance)});
    n.group = nullptr;
    build_engine(n);
    for (const std::int64_t raw : ids) {
        const RequestId id(raw);
        RequestRecord& rec = record(id);
        RequestFaultState& st = fault_state(id);
        ++st.attempt;
        ++rec.retries;
        st.touched = true;
        if (n.role == InstanceRole::kPrefill) {
            if (queued.count(raw) != 0 && !st.prefilled) {
                ++metrics_.faults.requests_retried;
            } else {
                ++metrics_.faults.requests_reprefilled;
                // A finished prefill's KV is lost; a prefill under way loses its computed chunks too
                // (not tracked, not counted).
                if (st.prefilled) metrics_.faults.tokens_recomputed += kv_prompt_tokens(id);
            }
        } else {
            // The KV of the prompt and of every output token so far is lost.
            const std::int32_t delivered = std::max(1, st.delivered) + st.decode_progress;
            st.delivered = delivered;
            st.decode_progress = 0;
            if (delivered >= rec.request.output_tokens) {  // nothing left to generate
                st.prefilled = false;
                rec.output_tokens = delivered;
                rec.finish_s = now;
                rec.status = RequestStatus::kCompleted;
                complete(rec, now);
                continue;
            }
            ++metrics_.faults.requests_reprefilled;
            metrics_.faults.tokens_recomputed += kv_prompt_tokens(id);
        }
        st.prefilled = false;
        route_to_prefill(id);
    }
}

void Cluster::release_parked() {
    const std::deque<std::int64_t> prefill = std::move(parked_prefill_);
    parked_prefill_.clear();
    for (const std::int64_t id : prefill) route_to_prefill(RequestId(id));
    const std::deque<ParkedHandoff> handoffs = std::move(parked_handoffs_);
    parked_handoffs_.clear();
    for (const ParkedHandoff& h : handoffs) {
        if (fault_state(RequestId(h.request)).attempt != h.attempt || h.src->down) continue;  // re-prefilled
        h.src->outbox.push_back(RequestId(h.request));
        wake_transfer(*h.src);
    }
}

}  // namespace deepinfer::sim
