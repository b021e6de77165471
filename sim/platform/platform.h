// The simulated cluster as SimGrid NetZones, built in C++ from the deployment config.
#pragma once

#include <string>
#include <vector>

#include "sim/config/sim_config.h"
#include "sim/sg_compat.h"

namespace deepinfer::sim {

/// The hosts of one instance's scale-up domain (a prefill server or a decode supernode).
struct DomainHosts {
    std::string name;
    /// GPUs in rank order.
    std::vector<sg::sg4::Host*> gpus;
    /// CPU host memory, one per server of `gpus_per_prefill_server` GPUs (reached over PCIe).
    std::vector<sg::sg4::Host*> host_memory;
};

struct Platform {
    std::vector<DomainHosts> prefill;
    std::vector<DomainHosts> decode;
    std::vector<sg::sg4::Host*> store_nodes;
    /// Runs the workload/router actor.
    sg::sg4::Host* frontend = nullptr;
    /// Speed of every GPU host in flop/s: steps are Execs of duration * speed flops.
    double gpu_speed_flops = 1e9;
    std::int64_t num_links = 0;
};

/// The GPU of a scale-up domain whose scale-out NIC carries traffic for `gpu`: itself, else the next
/// peer (in rank order, wrapping) whose NIC is up; the data crosses the scale-up links to that peer.
/// Throws "not implemented" when every NIC of the domain is down.
std::int32_t nic_gpu(const std::vector<bool>& nic_down, std::int32_t gpu);

/// Builds the platform inside the current SimGrid engine. Call once, before creating actors.
Platform build_platform(const SimConfig& config);

}  // namespace deepinfer::sim
