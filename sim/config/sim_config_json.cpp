// Strict reading and writing of SimConfig (sim_config.h).
#include <filesystem>

#include "policies/common/units.h"
#include "policies/dspark/verify_policy.h"
#include "sim/config/sim_config.h"
#include "sim/outcome_model/acceptance_model.h"

namespace deepinfer::sim {
namespace {

using nlohmann::json;

std::int32_t get_i32(const JsonReader& r, std::string_view key, std::int32_t dflt, NumRange range) {
    return static_cast<std::int32_t>(r.get_int_or(key, dflt, range));
}

LengthDist read_length(const JsonReader& r, LengthDist d) {
    r.allow_keys({"median", "sigma", "min", "max"});
    d.median = r.get_double_or("median", d.median, NumRange::positive());
    d.sigma = r.get_double_or("sigma", d.sigma, NumRange::between(0, 5));
    d.min = get_i32(r, "min", d.min, NumRange::between(1, 1 << 24));
    d.max = get_i32(r, "max", d.max, NumRange::between(1, 1 << 24));
    if (d.max < d.min) r.at("max").fail("a value >= min (" + std::to_string(d.min) + ")");
    return d;
}
json write_length(const LengthDist& d) {
    return {{"median", d.median}, {"sigma", d.sigma}, {"min", d.min}, {"max", d.max}};
}

template <class F>
void read_opt(const JsonReader& r, std::string_view key, F&& fn) {
    if (auto sub = r.find(key)) fn(sub->expect_object());
}

TrafficConfig read_traffic(const JsonReader& r) {
    r.allow_keys({"class", "rate_per_s", "arrival", "burst_factor", "burst_fraction", "burst_mean_s",
                  "diurnal_amplitude", "diurnal_period_s", "num_shared_prefixes", "shared_prefix", "prompt",
                  "output", "mean_turns", "tool_result", "tool_time_mean_s", "max_context_tokens"});
    TrafficConfig t;
    t.traffic_class = *parse_traffic_class(r.at("class").as_enum({"chat", "agent"}));
    if (t.traffic_class == TrafficClass::kAgent) {  // agent defaults: long shared prefixes, short outputs
        t.shared_prefix = {.median = 12000, .sigma = 0.3, .min = 1024, .max = 65536};
        t.prompt = {.median = 500, .sigma = 1.0, .min = 16, .max = 16384};
        t.output = {.median = 300, .sigma = 0.8, .min = 1, .max = 8192};
    }
    t.rate_per_s = r.get_double("rate_per_s", NumRange::positive());
    const std::string arrival = r.at("arrival").as_enum({"poisson", "bursty", "diurnal"});
    t.arrival = arrival == "poisson"  ? ArrivalProcess::kPoisson
                : arrival == "bursty" ? ArrivalProcess::kBursty
                                      : ArrivalProcess::kDiurnal;
    t.burst_factor = r.get_double_or("burst_factor", t.burst_factor, NumRange::at_least(1));
    t.burst_fraction = r.get_double_or("burst_fraction", t.burst_fraction, NumRange::between(0, 0.99));
    t.burst_mean_s = r.get_double_or("burst_mean_s", t.burst_mean_s, NumRange::positive());
    t.diurnal_amplitude = r.get_double_or("diurnal_amplitude", t.diurnal_amplitude, NumRange::between(0, 1));
    t.diurnal_period_s = r.get_double_or("diurnal_period_s", t.diurnal_period_s, NumRange::positive());
    t.num_shared_prefixes =
        get_i32(r, "num_shared_prefixes", t.num_shared_prefixes, NumRange::between(0, 1 << 20));
    read_opt(r, "shared_prefix",
             [&](const JsonReader& s) { t.shared_prefix = read_length(s, t.shared_prefix); });
    read_opt(r, "prompt", [&](const JsonReader& s) { t.prompt = read_length(s, t.prompt); });
    read_opt(r, "output", [&](const JsonReader& s) { t.output = read_length(s, t.output); });
    read_opt(r, "tool_result", [&](const JsonReader& s) { t.tool_result = read_length(s, t.tool_result); });
    t.mean_turns = r.get_double_or("mean_turns", t.mean_turns, NumRange::at_least(1));
    t.tool_time_mean_s = r.get_double_or("tool_time_mean_s", t.tool_time_mean_s, NumRange::non_negative());
    t.max_context_tokens =
        get_i32(r, "max_context_tokens", t.max_context_tokens, NumRange::between(1, 1 << 24));
    return t;
}

json write_traffic(const TrafficConfig& t) {
    return {{"class", std::string(name(t.traffic_class))},
            {"rate_per_s", t.rate_per_s},
            {"arrival", std::string(name(t.arrival))},
            {"burst_factor", t.burst_factor},
            {"burst_fraction", t.burst_fraction},
            {"burst_mean_s", t.burst_mean_s},
            {"diurnal_amplitude", t.diurnal_amplitude},
            {"diurnal_period_s", t.diurnal_period_s},
            {"num_shared_prefixes", t.num_shared_prefixes},
            {"shared_prefix", write_length(t.shared_prefix)},
            {"prompt", write_length(t.prompt)},
            {"output", write_length(t.output)},
            {"mean_turns", t.mean_turns},
            {"tool_result", write_length(t.tool_result)},
            {"tool_time_mean_s", t.tool_time_mean_s},
            {"max_context_tokens", t.max_context_tokens}};
}

/// Keys of a full scheduler_config that the simulator sets itself: given, they would be silently
/// replaced, so they are errors that say where the value comes from.
void reject_sim_owned_keys(const JsonReader& sc) {
    if (sc.has("dp_rank"))
        sc.at("dp_rank").fail("no dp_rank (the simulator numbers each instance's DP ranks)");
    const auto pc = sc.find("prefix_cache");
    if (!pc) return;
    if (pc->has("store"))
        pc->at("store").fail("no prefix_cache.store (the shared store is platform.kv_store)");
    if (pc->has("store_ttl_s"))
        pc->at("store_ttl_s").fail("no prefix_cache.store_ttl_s (store TTLs are platform.kv_store.ttl_s)");
    if (const auto host = pc->find("host"))
        for (const char* key : {"read_gb_per_s", "write_gb_per_s"})
            if (host->has(key))
                host->at(key).fail(
                    "no host tier rate (host transfers are SimGrid flows at "
                    "platform.host_memory.bandwidth_GBps)");
}

InstanceGroupConfig read_group(const JsonReader& r, InstanceGroupConfig g, const ModelShape& model) {
    r.allow_keys({"instances", "gpus_per_instance", "ep_size", "redundant_experts_per_gpu", "scheduler",
                  "scheduler_config", "eplb", "eplb_window_steps", "eplb_period_steps", "hbm_gib_per_gpu",
                  "reserve_gib_per_gpu", "verify", "async_scheduling"});
    g.num_instances = get_i32(r, "instances", g.num_instances, NumRange::between(1, 4096));
    g.gpus_per_instance = get_i32(r, "gpus_per_instance", g.gpus_per_instance, NumRange::between(1, 1024));
    g.ep_size = get_i32(r, "ep_size", g.ep_size, NumRange::between(1, 1024));
    g.redundant_experts_per_gpu =
        get_i32(r, "redundant_experts_per_gpu", g.redundant_experts_per_gpu, NumRange::between(0, 256));
    if (g.ep_size != g.gpus_per_instance)
        r.at(r.has("ep_size") ? "ep_size" : "gpus_per_instance")
            .fail("ep_size == gpus_per_instance (attention DP over the EP group), " +
                  std::to_string(g.gpus_per_instance) + " GPUs");
    if (model.num_experts % g.ep_size != 0)
        r.at(r.has("ep_size") ? "ep_size" : "gpus_per_instance")
            .fail("an EP size dividing the " + std::to_string(model.num_experts) + " routed experts",
                  std::to_string(g.ep_size));
    if (auto s = r.find("scheduler")) g.scheduler = s->as_enum({"simple", "full"});
    bool kv_model_given = false;
    if (auto s = r.find("scheduler_config")) {
        if (g.scheduler == "full") {
            reject_sim_owned_keys(*s);
            g.full_config = scheduler_config_from_json(*s);
            const auto kv = s->find("kv");
            g.kv_capacity_given = kv && kv->has("capacity_gib");
            kv_model_given = kv && kv->has("model");
            const auto pc = s->find("prefix_cache");
            const auto host = pc ? pc->find("host") : std::nullopt;
            g.host_capacity_given = host && host->has("capacity_gib");
        } else {
            g.scheduler_config = simple_scheduler_config_from_json(*s);
        }
    }
    // The KV shape follows the top-level model's attention layers unless kv.model says otherwise.
    if (!kv_model_given) {
        g.full_config.kv.shape.num_swa_layers = model.num_swa_layers;
        g.full_config.kv.shape.num_csa_layers = model.num_csa_layers;
        g.full_config.kv.shape.num_hca_layers = model.num_hca_layers;
    }
    g.hbm_gib_per_gpu = r.get_double_or("hbm_gib_per_gpu", g.hbm_gib_per_gpu, NumRange::positive());
    g.reserve_gib_per_gpu =
        r.get_double_or("reserve_gib_per_gpu", g.reserve_gib_per_gpu, NumRange::non_negative());
    if (auto v = r.find("verify")) g.verify = dspark_adapter_config_from_json(*v);
    g.async_scheduling = r.get_bool_or("async_scheduling", g.async_scheduling);
    if (auto s = r.find("eplb")) g.eplb = s->as_enum({"none", "window"});
    g.eplb_window_steps = get_i32(r, "eplb_window_steps", g.eplb_window_steps, NumRange::between(1, 1 << 30));
    g.eplb_period_steps = get_i32(r, "eplb_period_steps", g.eplb_period_steps, NumRange::between(1, 1 << 30));
    return g;
}

json write_scheduler_config(const InstanceGroupConfig& g) {
    if (g.scheduler != "full")
        return {{"max_num_batched_tokens", g.scheduler_config.max_num_batched_tokens},
                {"max_num_seqs", g.scheduler_config.max_num_seqs},
                {"max_model_len", g.scheduler_config.max_model_len}};
    const SchedulerConfig& f = g.full_config;
    json pc = {{"enabled", f.prefix_cache.enabled},
               {"write_to_store", f.prefix_cache.write_to_store},
               {"swa_replay_tokens", f.prefix_cache.swa_replay_tokens},
               {"hbm_keeps_swa_state", f.prefix_cache.hbm_keeps_swa_state},
               {"host_keeps_swa_state", f.prefix_cache.host_keeps_swa_state}};
    if (g.host_capacity_given)
        pc["host"] = {{"capacity_gib", f.prefix_cache.host.capacity_bytes / units::kGiB}};
    json out = {{"max_num_batched_tokens", f.max_num_batched_tokens},
                {"max_num_seqs", f.max_num_seqs},
                {"max_model_len", f.max_model_len},
                {"num_speculative_tokens", f.num_speculative_tokens},
                {"kv", {{"block_tokens", f.kv.block_tokens}}},
                {"prefix_cache", pc}};
    if (g.kv_capacity_given) out["kv"]["capacity_gib"] = f.kv.capacity_bytes / units::kGiB;
    return out;
}

json write_group(const InstanceGroupConfig& g) {
    const VerifyPolicyConfig& v = g.verify.policy;
    return {{"instances", g.num_instances},
            {"gpus_per_instance", g.gpus_per_instance},
            {"ep_size", g.ep_size},
            {"redundant_experts_per_gpu", g.redundant_experts_per_gpu},
            {"scheduler", g.scheduler},
            {"scheduler_config", write_scheduler_config(g)},
            {"async_scheduling", g.async_scheduling},
            {"hbm_gib_per_gpu", g.hbm_gib_per_gpu},
            {"reserve_gib_per_gpu", g.reserve_gib_per_gpu},
            {"verify",
             {{"policy", verify_policy_config_to_json(v)},
              {"moe_pairs_per_token", g.verify.moe_pairs_per_token},
              {"ep_tokens_per_token", g.verify.ep_tokens_per_token},
              {"num_local_experts", g.verify.num_local_experts},
              {"admission_share", g.verify.admission_share},
              {"missing_confidence", g.verify.missing_confidence}}},
            {"eplb", g.eplb},
            {"eplb_window_steps", g.eplb_window_steps},
            {"eplb_period_steps", g.eplb_period_steps}};
}

PlatformConfig read_platform(const JsonReader& r) {
    r.allow_keys({"gpus_per_prefill_server", "scale_up", "scale_out", "host_memory", "kv_store"});
    PlatformConfig p;
    p.gpus_per_prefill_server =
        get_i32(r, "gpus_per_prefill_server", p.gpus_per_prefill_server, NumRange::between(1, 64));
    const NumRange pos = NumRange::positive(), nonneg = NumRange::non_negative();
    read_opt(r, "scale_up", [&](const JsonReader& s) {
        s.allow_keys({"bandwidth_GBps", "latency_us", "ep_traffic"});
        p.scale_up.bandwidth_bytes_per_s =
            s.get_double_or("bandwidth_GBps", p.scale_up.bandwidth_bytes_per_s / 1e9, pos) * 1e9;
        p.scale_up.latency_s = s.get_double_or("latency_us", p.scale_up.latency_s * 1e6, nonneg) * 1e-6;
        if (s.has("ep_traffic"))
            p.scale_up.ep_traffic = s.at("ep_traffic").as_enum({"simgrid", "profile"}) == "simgrid"
                                        ? EpTraffic::kSimGrid
                                        : EpTraffic::kProfile;
    });
    read_opt(r, "scale_out", [&](const JsonReader& s) {
        s.allow_keys({"nic_bandwidth_GBps", "latency_us", "spine_bandwidth_GBps"});
        auto& o = p.scale_out;
        o.nic_bandwidth_bytes_per_s =
            s.get_double_or("nic_bandwidth_GBps", o.nic_bandwidth_bytes_per_s / 1e9, pos) * 1e9;
        o.latency_s = s.get_double_or("latency_us", o.latency_s * 1e6, nonneg) * 1e-6;
        o.spine_bandwidth_bytes_per_s =
            s.get_double_or("spine_bandwidth_GBps", o.spine_bandwidth_bytes_per_s / 1e9, pos) * 1e9;
    });
    read_opt(r, "host_memory", [&](const JsonReader& s) {
        s.allow_keys({"capacity_GB", "bandwidth_GBps"});
        p.host_memory.capacity_bytes =
            s.get_double_or("capacity_GB", p.host_memory.capacity_bytes / 1e9, nonneg) * 1e9;
        p.host_memory.bandwidth_bytes_per_s =
            s.get_double_or("bandwidth_GBps", p.host_memory.bandwidth_bytes_per_s / 1e9, pos) * 1e9;
    });
    read_opt(r, "kv_store", [&](const JsonReader& s) {
        s.allow_keys({"nodes", "node_bandwidth_GBps", "capacity_TB", "erasure_coding", "ttl_s"});
        auto& k = p.kv_store;
        k.num_nodes = get_i32(s, "nodes", k.num_nodes, NumRange::between(1, 4096));
        k.node_bandwidth_bytes_per_s =
            s.get_double_or("node_bandwidth_GBps", k.node_bandwidth_bytes_per_s / 1e9, pos) * 1e9;
        k.capacity_bytes = s.get_double_or("capacity_TB", k.capacity_bytes / 1e12, nonneg) * 1e12;
        read_opt(s, "erasure_coding", [&](const JsonReader& e) {
            e.allow_keys({"data", "parity"});
            k.ec_data = get_i32(e, "data", k.ec_data, NumRange::between(1, 64));
            k.ec_parity = get_i32(e, "parity", k.ec_parity, NumRange::between(0, 64));
        });
        if (k.ec_data + k.ec_parity > k.num_nodes)
            (s.has("erasure_coding") ? s.at("erasure_coding") : s.at("nodes"))
                .fail("erasure-coding data + parity <= nodes (" + std::to_string(k.num_nodes) + ")",
                      std::to_string(k.ec_data + k.ec_parity) + " fragments");
        read_opt(s, "ttl_s", [&](const JsonReader& t) {
            t.allow_keys({"chat", "agent"});
            k.ttl_s[0] = t.get_double_or("chat", k.ttl_s[0], pos);
            k.ttl_s[1] = t.get_double_or("agent", k.ttl_s[1], pos);
        });
    });
    return p;
}

json write_platform(const PlatformConfig& p) {
    const auto& k = p.kv_store;
    return {{"gpus_per_prefill_server", p.gpus_per_prefill_server},
            {"scale_up",
             {{"bandwidth_GBps", p.scale_up.bandwidth_bytes_per_s / 1e9},
              {"latency_us", p.scale_up.latency_s * 1e6},
              {"ep_traffic", name(p.scale_up.ep_traffic)}}},
            {"scale_out",
             {{"nic_bandwidth_GBps", p.scale_out.nic_bandwidth_bytes_per_s / 1e9},
              {"latency_us", p.scale_out.latency_s * 1e6},
              {"spine_bandwidth_GBps", p.scale_out.spine_bandwidth_bytes_per_s / 1e9}}},
            {"host_memory",
             {{"capacity_GB", p.host_memory.capacity_bytes / 1e9},
              {"bandwidth_GBps", p.host_memory.bandwidth_bytes_per_s / 1e9}}},
            {"kv_store",
             {{"nodes", k.num_nodes},
              {"node_bandwidth_GBps", k.node_bandwidth_bytes_per_s / 1e9},
              {"capacity_TB", k.capacity_bytes / 1e12},
              {"erasure_coding", {{"data", k.ec_data}, {"parity", k.ec_parity}}},
              {"ttl_s", {{"chat", k.ttl_s[0]}, {"agent", k.ttl_s[1]}}}}}};
}

FaultConfig read_fault(const JsonReader& r, const SimConfig& c) {
    r.allow_keys({"kind", "at_s", "role", "instance", "gpu", "node", "repair_s", "recovers"});
    FaultConfig f;
    const std::string kind = r.at("kind").as_enum({"gpu", "link", "store_node"});
    f.kind = kind == "gpu" ? FaultKind::kGpu : kind == "link" ? FaultKind::kLink : FaultKind::kStoreNode;
    f.at_s = r.get_double("at_s", NumRange::non_negative());
    f.repair_s = r.get_double_or("repair_s", f.repair_s, NumRange::positive());
    f.recovers = r.get_bool_or("recovers", f.recovers);
    if (f.kind == FaultKind::kStoreNode) {
        for (const char* k : {"role", "instance", "gpu"})
            if (r.has(k)) r.at(k).fail("no such key for a store_node fault (it takes \"node\")");
        f.node = get_i32(r, "node", f.node, NumRange::between(0, 1 << 20));
        if (f.node >= c.platform.kv_store.num_nodes)
            r.at("node").fail("a KV store node index below platform.kv_store.nodes (" +
                                  std::to_string(c.platform.kv_store.num_nodes) + ")",
                              std::to_string(f.node));
        return f;
    }
    if (r.has("node")) r.at("node").fail("no such key for a gpu or link fault (it takes role/instance/gpu)");
    if (auto s = r.find("role"))
        f.role =
            s->as_enum({"prefill", "decode"}) == "decode" ? InstanceRole::kDecode : InstanceRole::kPrefill;
    const InstanceGroupConfig& g = f.role == InstanceRole::kDecode ? c.decode : c.prefill;
    f.instance = get_i32(r, "instance", f.instance, NumRange::between(0, 1 << 20));
    if (f.instance >= g.num_instances)
        r.at("instance")
            .fail("an instance index below " + std::string(name(f.role)) + ".instances (" +
                      std::to_string(g.num_instances) + ")",
                  std::to_string(f.instance));
    f.gpu = get_i32(r, "gpu", f.gpu, NumRange::between(0, 1 << 20));
    if (f.gpu >= g.gpus_per_instance)
        r.at("gpu").fail("a GPU rank below " + std::string(name(f.role)) + ".gpus_per_instance (" +
                             std::to_string(g.gpus_per_instance) + ")",
                         std::to_string(f.gpu));
    return f;
}

}  // namespace

std::string_view name(InstanceRole r) { return r == InstanceRole::kDecode ? "decode" : "prefill"; }
std::string_view name(ArrivalProcess p) {
    return p == ArrivalProcess::kPoisson ? "poisson" : p == ArrivalProcess::kBursty ? "bursty" : "diurnal";
}
std::string_view name(FaultKind k) {
    return k == FaultKind::kGpu ? "gpu" : k == FaultKind::kLink ? "link" : "store_node";
}

std::string_view name(EpTraffic t) { return t == EpTraffic::kSimGrid ? "simgrid" : "profile"; }

SimConfig sim_config_from_json(const JsonReader& r) {
    r.expect_object();
    r.allow_keys({"name", "seed", "profile", "model", "platform", "prefill", "decode", "routing_model",
                  "router", "acceptance", "workload", "faults", "output"});
    SimConfig c;
    c.file = r.file();
    c.name = r.get_string_or("name", c.name);
    c.seed = static_cast<std::uint64_t>(
        r.get_int_or("seed", static_cast<std::int64_t>(c.seed), NumRange::non_negative()));
    c.profile = r.get_string_or("profile", c.profile);
    read_opt(r, "model", [&](const JsonReader& m) {
        m.allow_keys(
            {"num_swa_layers", "num_csa_layers", "num_hca_layers", "num_moe_layers", "num_experts", "top_k"});
        auto& s = c.model;
        s.num_swa_layers = get_i32(m, "num_swa_layers", s.num_swa_layers, NumRange::between(0, 1024));
        s.num_csa_layers = get_i32(m, "num_csa_layers", s.num_csa_layers, NumRange::between(0, 1024));
        s.num_hca_layers = get_i32(m, "num_hca_layers", s.num_hca_layers, NumRange::between(0, 1024));
        s.num_moe_layers = get_i32(m, "num_moe_layers", s.num_moe_layers, NumRange::between(1, 1024));
        s.num_experts = get_i32(m, "num_experts", s.num_experts, NumRange::between(1, 65536));
        s.top_k = get_i32(m, "top_k", s.top_k, NumRange::between(1, 64));
        if (s.top_k > s.num_experts) m.at("top_k").fail("top_k <= num_experts");
    });
    read_opt(r, "platform", [&](const JsonReader& p) { c.platform = read_platform(p); });
    read_opt(r, "prefill", [&](const JsonReader& g) { c.prefill = read_group(g, c.prefill, c.model); });
    read_opt(r, "decode", [&](const JsonReader& g) { c.decode = read_group(g, c.decode, c.model); });
    // Groups left out get their defaults checked against the model too (EP dividing the experts).
    if (!r.has("prefill")) c.prefill = read_group(JsonReader::parse_text("{}", c.file), c.prefill, c.model);
    if (!r.has("decode")) c.decode = read_group(JsonReader::parse_text("{}", c.file), c.decode, c.model);
    read_opt(r, "routing_model", [&](const JsonReader& m) {
        m.allow_keys({"zipf_exponent", "drift_interval_s", "drift_sigma", "drift_reversion"});
        c.routing.zipf_exponent =
            m.get_double_or("zipf_exponent", c.routing.zipf_exponent, NumRange::between(0, 4));
        c.routing.drift_interval_s =
            m.get_double_or("drift_interval_s", c.routing.drift_interval_s, NumRange::positive());
        c.routing.drift_sigma =
            m.get_double_or("drift_sigma", c.routing.drift_sigma, NumRange::between(0, 10));
        c.routing.drift_reversion =
            m.get_double_or("drift_reversion", c.routing.drift_reversion, NumRange::between(0, 1));
    });
    read_opt(r, "acceptance", [&](const JsonReader& a) {
        a.allow_keys({"model", "fixed_rate", "max_draft_tokens", "mean_accepted_length", "position_decay",
                      "correlation", "confidence_temperature", "confidence_bias"});
        auto& ac = c.acceptance;
        if (auto m = a.find("model")) ac.model = m->as_enum({"fixed_rate", "dspark"});
        ac.fixed_rate = a.get_double_or("fixed_rate", ac.fixed_rate, NumRange::unit());
        auto& d = ac.dspark;
        d.max_draft_tokens = get_i32(a, "max_draft_tokens", d.max_draft_tokens, NumRange::between(1, 7));
        d.mean_accepted_length = a.get_double_or("mean_accepted_length", d.mean_accepted_length,
                                                 {.min = 1.0, .max = 8.0, .min_exclusive = true});
        d.position_decay = a.get_double_or("position_decay", d.position_decay,
                                           {.min = 0.0, .max = 1.0, .min_exclusive = true});
        d.correlation = a.get_double_or("correlation", d.correlation, NumRange::unit());
        d.confidence_temperature =
            a.get_double_or("confidence_temperature", d.confidence_temperature, NumRange::positive());
        d.confidence_bias = a.get_double_or("confidence_bias", d.confidence_bias, NumRange::between(-20, 20));
        const double max_len =
            AcceptanceModel::max_mean_accepted_length(d.position_decay, d.max_draft_tokens);
        if (d.mean_accepted_length > max_len) {
            const std::string expected = "a number in (1, " + std::to_string(max_len) +
                                         "] for this position_decay and max_draft_tokens";
            if (a.has("mean_accepted_length")) a.at("mean_accepted_length").fail(expected);
            a.fail(expected + " (mean_accepted_length " + std::to_string(d.mean_accepted_length) + ")");
        }
    });
    read_opt(r, "router", [&](const JsonReader& rt) {
        if (rt.has("disaggregated"))
            rt.at("disaggregated")
                .fail("no router.disaggregated (the simulator always disaggregates prefill and decode)");
        c.router = router_config_from_json(rt);
    });
    c.router.disaggregated = true;
    const JsonReader w = r.at("workload").expect_object();
    w.allow_keys({"duration_s", "warmup_s", "drain_limit_s", "traffic", "trace_file"});
    c.workload.duration_s = w.get_double("duration_s", NumRange::positive());
    c.workload.warmup_s = w.get_double_or(
        "warmup_s", std::min(c.workload.warmup_s, c.workload.duration_s / 4), NumRange::non_negative());
    if (c.workload.warmup_s >= c.workload.duration_s) w.at("warmup_s").fail("a value below duration_s");
    c.workload.drain_limit_s =
        w.get_double_or("drain_limit_s", c.workload.drain_limit_s, NumRange::non_negative());
    c.workload.trace_file = w.get_string_or("trace_file", "");
    if (auto t = w.find("traffic")) {
        t->expect_array();
        for (std::size_t i = 0; i < t->size(); ++i)
            c.workload.traffic.push_back(read_traffic(t->at(i).expect_object()));
    }
    if (c.workload.traffic.empty() && c.workload.trace_file.empty())
        w.fail("a non-empty \"traffic\" array or a \"trace_file\"", "neither");
    if (auto f = r.find("faults")) {
        f->expect_array();
        for (std::size_t i = 0; i < f->size(); ++i)
            c.faults.push_back(read_fault(f->at(i).expect_object(), c));
    }
    read_opt(r, "output", [&](const JsonReader& o) {
        o.allow_keys({"per_request_csv", "timeline_max_events"});
        c.output.per_request_csv = o.get_bool_or("per_request_csv", c.output.per_request_csv);
        c.output.timeline_max_events =
            o.get_int_or("timeline_max_events", c.output.timeline_max_events, NumRange::non_negative());
    });
    return c;
}

nlohmann::json sim_config_to_json(const SimConfig& c) {
    json traffic = json::array();
    for (const auto& t : c.workload.traffic) traffic.push_back(write_traffic(t));
    json faults = json::array();
    for (const auto& f : c.faults) {
        // Only the fields the kind takes, so that the document reads back as a config.
        json one = {{"kind", std::string(name(f.kind))},
                    {"at_s", f.at_s},
                    {"repair_s", f.repair_s},
                    {"recovers", f.recovers}};
        if (f.kind == FaultKind::kStoreNode) {
            one["node"] = f.node;
        } else {
            one["role"] = std::string(name(f.role));
            one["instance"] = f.instance;
            one["gpu"] = f.gpu;
        }
        faults.push_back(std::move(one));
    }
    json workload = {{"duration_s", c.workload.duration_s},
                     {"warmup_s", c.workload.warmup_s},
                     {"drain_limit_s", c.workload.drain_limit_s},
                     {"traffic", traffic}};
    if (!c.workload.trace_file.empty()) workload["trace_file"] = c.workload.trace_file;
    return {{"name", c.name},
            {"seed", c.seed},
            {"profile", c.profile},
            {"model",
             {{"num_swa_layers", c.model.num_swa_layers},
              {"num_csa_layers", c.model.num_csa_layers},
              {"num_hca_layers", c.model.num_hca_layers},
              {"num_moe_layers", c.model.num_moe_layers},
              {"num_experts", c.model.num_experts},
              {"top_k", c.model.top_k}}},
            {"platform", write_platform(c.platform)},
            {"prefill", write_group(c.prefill)},
            {"decode", write_group(c.decode)},
            {"routing_model",
             {{"zipf_exponent", c.routing.zipf_exponent},
              {"drift_interval_s", c.routing.drift_interval_s},
              {"drift_sigma", c.routing.drift_sigma},
              {"drift_reversion", c.routing.drift_reversion}}},
            {"router",
             {{"uncached_token_weight", c.router.uncached_token_weight},
              {"pending_token_weight", c.router.pending_token_weight},
              {"running_seq_weight", c.router.running_seq_weight},
              {"waiting_seq_weight", c.router.waiting_seq_weight},
              {"kv_pressure_weight", c.router.kv_pressure_weight},
              {"min_kv_free_fraction", c.router.min_kv_free_fraction}}},
            {"acceptance",
             {{"model", c.acceptance.model},
              {"fixed_rate", c.acceptance.fixed_rate},
              {"max_draft_tokens", c.acceptance.dspark.max_draft_tokens},
              {"mean_accepted_length", c.acceptance.dspark.mean_accepted_length},
              {"position_decay", c.acceptance.dspark.position_decay},
              {"correlation", c.acceptance.dspark.correlation},
              {"confidence_temperature", c.acceptance.dspark.confidence_temperature},
              {"confidence_bias", c.acceptance.dspark.confidence_bias}}},
            {"workload", workload},
            {"faults", faults},
            {"output",
             {{"per_request_csv", c.output.per_request_csv},
              {"timeline_max_events", c.output.timeline_max_events}}}};
}

SimConfig load_sim_config(const std::string& path, const std::vector<std::string>& overrides) {
    const JsonReader raw = JsonReader::parse_file(path);
    nlohmann::json doc = raw.json();
    for (const auto& o : overrides) apply_override(doc, o, "--set");
    SimConfig c = sim_config_from_json(JsonReader::from_json(std::move(doc), path));
    namespace fs = std::filesystem;
    // Resolved to absolute paths: effective_config.json, written elsewhere, must read back as the same
    // config.
    const fs::path base = fs::absolute(fs::path(path)).parent_path();
    if (fs::path(c.profile).is_relative()) c.profile = (base / c.profile).lexically_normal().string();
    if (!c.workload.trace_file.empty() && fs::path(c.workload.trace_file).is_relative())
        c.workload.trace_file = (base / c.workload.trace_file).lexically_normal().string();
    return c;
}

}  // namespace deepinfer::sim
