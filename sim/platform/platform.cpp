// Platform builder: scale-up domains, scale-out network, host memory, KV store cluster.
//
//                                   root (full zone)
//      uplink_p0 ... uplink_p7 ──────── spine ──────── uplink_d0        uplink_store
//          │                                              │                  │
//   prefill-0 (full zone)                         decode-0 (full zone)   kvstore (star zone)
//   ┌──────────────────────────┐                  ┌───────────────────┐  frontend, node0..node11
//   │ gpu0 … gpu7              │                  │ gpu0 … gpu63      │  each node: nic link
//   │  gpu_i ↔ gpu_j: nvlink_i, │                  │ (same pattern,    │
//   │                nvlink_j  │                  │  host memory per  │
//   │  gpu_i ↔ gateway: nic_i   │                  │  8 GPUs)          │
//   │  gpu_i ↔ hostmem: pcie_i  │                  └───────────────────┘
//   └──────────────────────────┘
//
// Inter-zone route: nic_src, uplink_src, spine, uplink_dst, nic_dst. Uplinks carry the sum of their
// GPUs' NICs; the spine is one shared link of the configured bisection bandwidth.
#include "sim/platform/platform.h"

#include <stdexcept>

#include "policies/common/check.h"

namespace deepinfer::sim {
namespace {

using sg::sg4::Host;
using sg::sg4::Link;
using sg::sg4::NetZone;
using NetPoint = simgrid::kernel::routing::NetPoint;

struct BuiltZone {
    NetZone* zone = nullptr;
    NetPoint* gateway = nullptr;
    const Link* uplink = nullptr;
};

BuiltZone build_domain(const std::string& name, std::int32_t num_gpus, const PlatformConfig& pc,
                       double gpu_speed, NetZone* root, DomainHosts& out, std::int64_t& num_links) {
    BuiltZone b;
    b.zone = sg::make_full_zone(name, root);
    out.name = name;
    std::vector<const Link*> nvlink, nic, pcie;
    for (std::int32_t g = 0; g < num_gpus; ++g) {
        const std::string id = name + "-gpu" + std::to_string(g);
        out.gpus.push_back(b.zone->create_host(id, gpu_speed)->seal());
        nvlink.push_back(b.zone->create_link(id + "-nvlink", pc.scale_up.bandwidth_bytes_per_s)
                             ->set_latency(pc.scale_up.latency_s)
                             ->seal());
        nic.push_back(b.zone->create_link(id + "-nic", pc.scale_out.nic_bandwidth_bytes_per_s)
                          ->set_latency(pc.scale_out.latency_s)
                          ->seal());
        pcie.push_back(b.zone->create_link(id + "-pcie", pc.host_memory.bandwidth_bytes_per_s)
                           ->set_latency(1e-6)
                           ->seal());
        num_links += 3;
    }
    const std::int32_t per_server = pc.gpus_per_prefill_server;
    for (std::int32_t s = 0; s * per_server < num_gpus; ++s)
        out.host_memory.push_back(
            b.zone->create_host(name + "-hostmem" + std::to_string(s), gpu_speed)->seal());
    b.gateway = b.zone->create_router(name + "-gw");
    for (std::int32_t i = 0; i < num_gpus; ++i) {
        const auto ii = static_cast<std::size_t>(i);
        for (std::int32_t j = i + 1; j < num_gpus; ++j)
            b.zone->add_route(
                out.gpus[ii]->get_netpoint(), out.gpus[static_cast<std::size_t>(j)]->get_netpoint(), nullptr,
                nullptr,
                {sg::sg4::LinkInRoute(nvlink[ii]), sg::sg4::LinkInRoute(nvlink[static_cast<std::size_t>(j)])},
                true);
        b.zone->add_route(out.gpus[ii]->get_netpoint(), b.gateway, nullptr, nullptr,
                          {sg::sg4::LinkInRoute(nic[ii])}, true);
        b.zone->add_route(out.gpus[ii]->get_netpoint(),
                          out.host_memory[ii / static_cast<std::size_t>(per_server)]->get_netpoint(), nullptr,
                          nullptr, {sg::sg4::LinkInRoute(pcie[ii])}, true);
    }
    b.zone->seal();
    b.uplink = root->create_link(name + "-uplink", pc.scale_out.nic_bandwidth_bytes_per_s * num_gpus)
                   ->set_latency(pc.scale_out.latency_s)
                   ->seal();
    ++num_links;
    return b;
}

}  // namespace

std::int32_t nic_gpu(const std::vector<bool>& nic_down, std::int32_t gpu) {
    const auto n = static_cast<std::int32_t>(nic_down.size());
    for (std::int32_t k = 0; k < n; ++k) {
        const std::int32_t g = (gpu + k) % n;
        if (!nic_down[static_cast<std::size_t>(g)]) return g;
    }
    throw std::runtime_error("not implemented: every scale-out NIC of an instance down at once");
}

Platform build_platform(const SimConfig& config) {
    const PlatformConfig& pc = config.platform;
    Platform p;
    NetZone* root = sg::make_full_zone("root", nullptr);
    std::vector<BuiltZone> zones;
    for (std::int32_t i = 0; i < config.prefill.num_instances; ++i) {
        p.prefill.emplace_back();
        zones.push_back(build_domain("prefill" + std::to_string(i), config.prefill.gpus_per_instance, pc,
                                     p.gpu_speed_flops, root, p.prefill.back(), p.num_links));
    }
    for (std::int32_t i = 0; i < config.decode.num_instances; ++i) {
        p.decode.emplace_back();
        zones.push_back(build_domain("decode" + std::to_string(i), config.decode.gpus_per_instance, pc,
                                     p.gpu_speed_flops, root, p.decode.back(), p.num_links));
    }
    // KV store cluster + the frontend (router/workload) host.
    BuiltZone store;
    store.zone = sg::make_star_zone("kvstore", root);
    p.frontend = store.zone->create_host("frontend", p.gpu_speed_flops)->seal();
    sg::add_star_route(store.zone, p.frontend->get_netpoint(), {});
    for (std::int32_t n = 0; n < pc.kv_store.num_nodes; ++n) {
        const std::string id = "kvstore-node" + std::to_string(n);
        Host* h = store.zone->create_host(id, p.gpu_speed_flops)->seal();
        const Link* nic = store.zone->create_link(id + "-nic", pc.kv_store.node_bandwidth_bytes_per_s)
                              ->set_latency(pc.scale_out.latency_s)
                              ->seal();
        ++p.num_links;
        sg::add_star_route(store.zone, h->get_netpoint(), {nic});
        p.store_nodes.push_back(h);
    }
    store.gateway = sg::make_gateway(store.zone, "kvstore-gw", nullptr);
    store.zone->seal();
    store.uplink =
        root->create_link("kvstore-uplink", pc.kv_store.node_bandwidth_bytes_per_s * pc.kv_store.num_nodes)
            ->set_latency(pc.scale_out.latency_s)
            ->seal();
    zones.push_back(store);
    const Link* spine = root->create_link("spine", pc.scale_out.spine_bandwidth_bytes_per_s)
                            ->set_latency(pc.scale_out.latency_s)
                            ->seal();
    p.num_links += 2;
    for (std::size_t a = 0; a < zones.size(); ++a)
        for (std::size_t b = a + 1; b < zones.size(); ++b)
            sg::add_zone_route(root, zones[a].zone, zones[a].gateway, zones[b].zone, zones[b].gateway,
                               {zones[a].uplink, spine, zones[b].uplink});
    root->seal();
    return p;
}

}  // namespace deepinfer::sim
