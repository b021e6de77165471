// The simulation's configuration: deployment (platform + instances), workload, outcome models, faults.
// Read strictly from JSON (unknown keys are errors naming file and field); defaults documented here.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "policies/common/json_reader.h"
#include "policies/cost/cost_model.h"
#include "policies/dspark/dspark_verify_adapter.h"
#include "policies/request.h"
#include "policies/router/router.h"
#include "policies/scheduler/scheduler.h"
#include "policies/scheduler/simple_scheduler.h"
#include "sim/outcome_model/acceptance_model.h"

namespace deepinfer::sim {

/// How a step's expert-parallel dispatch/combine traffic is timed.
enum class EpTraffic : std::uint8_t {
    /// A SimGrid communication over the scale-up links, sized from the busiest rank's token copies
    /// (sim/sim_executor.h says how); the profile's ep_dispatch_combine curve gives only its floor.
    kSimGrid = 0,
    /// The profile's ep_dispatch_combine curve alone (no SimGrid activity: faster, no contention).
    kProfile = 1,
};

/// Scale-up (NVLink-class) domain: every GPU has one port of `bandwidth` to a non-blocking switch.
struct ScaleUpConfig {
    double bandwidth_bytes_per_s = 900e9;
    double latency_s = 1e-6;
    EpTraffic ep_traffic = EpTraffic::kSimGrid;
};

/// Scale-out network: one NIC per GPU into a leaf per server/supernode, leaves into a spine.
struct ScaleOutConfig {
    double nic_bandwidth_bytes_per_s = 50e9;  // 400 Gb/s
    double latency_s = 5e-6;
    double spine_bandwidth_bytes_per_s = 12.8e12;
};

/// CPU host memory of one server, reachable from its GPUs over PCIe.
struct HostMemoryConfig {
    double capacity_bytes = 2e12;
    double bandwidth_bytes_per_s = 64e9;
};

/// Distributed KV store cluster (3FS-like): nodes with NICs, erasure-coded blocks, TTL per class.
struct KvStoreConfig {
    std::int32_t num_nodes = 12;
    double node_bandwidth_bytes_per_s = 50e9;
    double capacity_bytes = 100e12;
    std::int32_t ec_data = 10;
    std::int32_t ec_parity = 2;
    /// Time-to-live of stored prefix blocks per traffic class, seconds (chat, agent).
    double ttl_s[kNumTrafficClasses] = {7 * 86400.0, 3 * 86400.0};
    /// Bytes written per logical byte: (data + parity) / data.
    double write_amplification() const { return static_cast<double>(ec_data + ec_parity) / ec_data; }
};

struct PlatformConfig {
    std::int32_t gpus_per_prefill_server = 8;
    ScaleUpConfig scale_up;
    ScaleOutConfig scale_out;
    HostMemoryConfig host_memory;
    KvStoreConfig kv_store;
};

enum class InstanceRole : std::uint8_t { kPrefill = 0, kDecode = 1 };

/// A group of identical instances (all prefill or all decode).
struct InstanceGroupConfig {
    InstanceRole role = InstanceRole::kPrefill;
    std::int32_t num_instances = 1;
    std::int32_t gpus_per_instance = 8;
    /// Expert-parallel width; attention is data-parallel over the same GPUs. Must divide the experts
    /// and equal gpus_per_instance.
    std::int32_t ep_size = 8;
    std::int32_t redundant_experts_per_gpu = 0;
    /// "simple" (SimpleScheduler: FCFS, no KV limit, no prefix cache, no drafts) or "full" (one
    /// policies/scheduler Scheduler per data-parallel attention rank: KV block pool, prefix cache with
    /// host and shared store tiers, speculative decoding with a DSpark verify policy).
    std::string scheduler = "simple";
    /// "scheduler_config" when scheduler == "simple".
    SimpleSchedulerConfig scheduler_config;
    /// "scheduler_config" when scheduler == "full" (policies/scheduler/scheduler_json.cpp keys); the
    /// sim sets dp_rank per rank, the store tier from platform.kv_store, and, unless kv.capacity_gib
    /// is given, the KV capacity from HBM minus weights (below).
    SchedulerConfig full_config;
    bool kv_capacity_given = false;
    bool host_capacity_given = false;
    /// Per-GPU HBM and the part kept for activations, workspace and CUDA graphs (GiB). KV capacity
    /// per DP rank = hbm − dense weights (replicated) − this GPU's expert slots − reserve.
    double hbm_gib_per_gpu = 180.0;
    double reserve_gib_per_gpu = 10.0;
    /// DSpark verify policy (used when full_config.num_speculative_tokens > 0). Zero MoE fields are
    /// filled from the group's EP layout (top_k pairs per token, (1 − 1/EP) of them leave the rank).
    DsparkAdapterConfig verify;
    /// engine/core InstanceConfig::async_scheduling: plan step N+1 while step N runs. With speculative
    /// decoding the Scheduler does not re-plan a sequence whose sampling step is in flight, nor admit
    /// new ones while it is (policies/scheduler/scheduler.h says why).
    bool async_scheduling = true;
    /// "none" (static placement) or "window" (the policies/eplb WindowBalancer). A re-placement's
    /// expert copies run as SimGrid transfers between the instance's GPUs and it takes effect when they
    /// have landed; the balancer skips one whose copy time (bytes into one GPU / scale-up bandwidth)
    /// exceeds its gain (max-GPU MoE time saved over a period, priced from the profile).
    std::string eplb = "none";
    /// WindowBalancer: steps of load history per decision and steps between re-placements.
    std::int32_t eplb_window_steps = 1000;
    std::int32_t eplb_period_steps = 10000;
};

/// Skewed, drifting expert popularity (V4 routing statistics are not public: these are assumptions).
struct RoutingModelConfig {
    /// Zipf exponent of expert popularity within a layer (0 = uniform).
    double zipf_exponent = 0.3;
    /// Every `drift_interval_s` the log-popularity of each expert takes a mean-reverting step
    /// (Ornstein-Uhlenbeck): w <- base + reversion * (w - base) + N(0, drift_sigma). The stationary
    /// spread around the Zipf base is drift_sigma / sqrt(1 - reversion^2).
    double drift_interval_s = 30.0;
    double drift_sigma = 0.1;
    double drift_reversion = 0.9;
};

/// Draft acceptance. "fixed_rate": every draft accepted with `fixed_rate` until the first rejection,
/// no confidences reported. "dspark": the seeded DSpark acceptance model (confidences + outcomes).
struct AcceptanceConfig {
    std::string model = "dspark";
    double fixed_rate = 0.7;
    AcceptanceModelConfig dspark;
};

enum class ArrivalProcess : std::uint8_t { kPoisson = 0, kBursty = 1, kDiurnal = 2 };

/// Lognormal token-length distribution, clipped to [min, max].
struct LengthDist {
    double median = 1000;
    double sigma = 1.0;
    std::int32_t min = 1;
    std::int32_t max = 131072;
};

/// One traffic stream. Chat: independent requests. Agent: sessions whose every turn resends the whole
/// history (shared prefix + previous turns + outputs + tool results).
struct TrafficConfig {
    TrafficClass traffic_class = TrafficClass::kChat;
    /// Requests (chat) or sessions (agent) per second, averaged.
    double rate_per_s = 1.0;
    ArrivalProcess arrival = ArrivalProcess::kPoisson;
    /// Bursty: rate multiplier while in a burst, fraction of time in bursts, mean burst length.
    double burst_factor = 4.0;
    double burst_fraction = 0.1;
    double burst_mean_s = 10.0;
    /// Diurnal: rate(t) = rate * (1 + amplitude * sin(2 pi t / period)).
    double diurnal_amplitude = 0.5;
    double diurnal_period_s = 86400.0;
    /// Shared prefixes (system prompt + tool definitions): how many distinct ones, and their length.
    std::int32_t num_shared_prefixes = 8;
    LengthDist shared_prefix{.median = 2000, .sigma = 0.3, .min = 128, .max = 32768};
    /// Chat: the user prompt after the prefix. Agent: the first user message.
    LengthDist prompt{.median = 1000, .sigma = 1.0, .min = 16, .max = 65536};
    LengthDist output{.median = 400, .sigma = 0.8, .min = 1, .max = 8192};
    /// Agent only: turns per session (geometric with this mean), tool-result tokens appended per
    /// turn, tool execution time between turns (exponential, mean).
    double mean_turns = 8.0;
    LengthDist tool_result{.median = 800, .sigma = 1.0, .min = 16, .max = 32768};
    double tool_time_mean_s = 3.0;
    /// Agent only: a session ends when its context would exceed this.
    std::int32_t max_context_tokens = 131072;
};

struct WorkloadConfig {
    /// Arrivals are generated during [0, duration_s); the run then drains in-flight work.
    double duration_s = 900.0;
    /// Metrics count requests arriving and steps ending after warmup_s (default: min(60, duration_s / 4)).
    double warmup_s = 60.0;
    /// Upper bound on the drain after duration_s (requests still unfinished are reported).
    double drain_limit_s = 600.0;
    std::vector<TrafficConfig> traffic;
    /// JSONL trace (sim/workload/TRACE_FORMAT.md) replayed instead of `traffic` when set.
    std::string trace_file;
};

enum class FaultKind : std::uint8_t { kGpu = 0, kLink = 1, kStoreNode = 2 };

/// One injected failure (sim/actors/cluster_faults.cpp says what each kind does to the cluster).
/// gpu: GPU `gpu` of instance `instance` in group `role`; the whole instance (one EP group) goes down.
/// link: the scale-out NIC link of that GPU. store_node: KV store node `node`.
struct FaultConfig {
    FaultKind kind = FaultKind::kGpu;
    /// Simulated time of the failure, seconds.
    double at_s = 0.0;
    /// Prefill/decode instance group, instance index and GPU rank (gpu and link faults).
    InstanceRole role = InstanceRole::kPrefill;
    std::int32_t instance = 0;
    std::int32_t gpu = 0;
    /// KV store node index (store_node faults).
    std::int32_t node = 0;
    /// The component is back (GPU replaced and instance restarted, link up, node rejoined) at
    /// at_s + repair_s, seconds.
    double repair_s = 60.0;
    /// False: the component never comes back (repair_s is ignored).
    bool recovers = true;
};

struct OutputConfig {
    bool per_request_csv = true;
    /// Cap on timeline events written with --timeline.
    std::int64_t timeline_max_events = 200000;
};

struct SimConfig {
    /// Where the config came from (for error messages); set by the reader.
    std::string file;
    std::string name = "unnamed";
    std::uint64_t seed = 1;
    /// Profile folder; a relative path is resolved against the config file's folder.
    std::string profile = "../../profiles/b200-roofline";
    ModelShape model = ModelShape::v4_flash();
    PlatformConfig platform;
    InstanceGroupConfig prefill{.role = InstanceRole::kPrefill};
    InstanceGroupConfig decode{.role = InstanceRole::kDecode,
                               .num_instances = 1,
                               .gpus_per_instance = 64,
                               .ep_size = 64,
                               .redundant_experts_per_gpu = 1};
    RoutingModelConfig routing;
    /// Prefix- and load-aware router (policies/router); always disaggregated here.
    RouterConfig router;
    AcceptanceConfig acceptance;
    WorkloadConfig workload;
    std::vector<FaultConfig> faults;
    OutputConfig output;
};

/// Reads a config document; every error is a ConfigError naming the file and JSON pointer.
SimConfig sim_config_from_json(const JsonReader& r);
/// The config with every default resolved (what effective_config.json holds).
nlohmann::json sim_config_to_json(const SimConfig& c);
/// Reads `path`, applies `--set` overrides, then validates.
SimConfig load_sim_config(const std::string& path, const std::vector<std::string>& overrides);

std::string_view name(InstanceRole r);
std::string_view name(ArrivalProcess p);
std::string_view name(FaultKind k);
std::string_view name(EpTraffic t);

}  // namespace deepinfer::sim
