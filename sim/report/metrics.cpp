// Summary, per-request CSV, timeline and the human-readable summary.
#include "sim/report/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace deepinfer::sim {

using nlohmann::json;

double percentile(std::vector<double> values, double q) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
    return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

namespace {

json pcts(const std::vector<double>& v) {
    if (v.empty()) return {{"p50", nullptr}, {"p90", nullptr}, {"p99", nullptr}, {"count", 0}};
    return {{"p50", percentile(v, 0.5)},
            {"p90", percentile(v, 0.9)},
            {"p99", percentile(v, 0.99)},
            {"count", v.size()}};
}

bool in_window(const SimConfig& c, const RequestRecord& r) {
    return r.request.arrival_s >= c.workload.warmup_s && r.request.arrival_s < c.workload.duration_s;
}

double tpot(const RequestRecord& r) {
    return (r.finish_s - r.first_token_s) / static_cast<double>(r.output_tokens - 1);
}

json latency_block(const SimConfig& c, const RunMetrics& m, int cls) {
    std::vector<double> ttft, tp, user_rate;
    std::int64_t n = 0;
    for (const RequestRecord& r : m.requests) {
        if (!in_window(c, r) || (cls >= 0 && static_cast<int>(r.request.traffic_class) != cls)) continue;
        ++n;
        if (r.first_token_s >= 0) ttft.push_back(r.first_token_s - r.request.arrival_s);
        if (r.status == RequestStatus::kCompleted && r.output_tokens > 1) {
            tp.push_back(tpot(r));
            user_rate.push_back(1.0 / tpot(r));
        }
    }
    return {{"requests_in_window", n},
            {"ttft_s", pcts(ttft)},
            {"tpot_s", pcts(tp)},
            {"tokens_per_user_s", pcts(user_rate)}};
}

json role_throughput(const RoleMetrics& r, double window_s, bool output) {
    if (r.num_gpus == 0 || window_s <= 0) return nullptr;
    return (output ? r.window_output_tokens : r.window_tokens) / (window_s * r.num_gpus);
}

json imbalance(const RoleMetrics& r) {
    if (r.imbalance_weight <= 0) return nullptr;
    return r.imbalance_weighted / r.imbalance_weight;
}

}  // namespace

json make_summary(const SimConfig& c, const RunMetrics& m) {
    std::int64_t completed = 0, rejected = 0, unfinished = 0, retried = 0;
    for (const RequestRecord& r : m.requests) {
        completed += r.status == RequestStatus::kCompleted;
        rejected += r.status == RequestStatus::kRejected;
        unfinished += r.status == RequestStatus::kUnfinished || r.status == RequestStatus::kPending;
        retried += r.retries > 0;
    }
    const double window = c.workload.duration_s - c.workload.warmup_s;
    const json all = latency_block(c, m, -1);
    json s;
    s["name"] = c.name;
    s["seed"] = c.seed;
    s["profile"] = {{"name", m.profile_name}, {"kind", m.profile_kind}, {"method", m.profile_method}};
    s["deployment"] = {{"prefill_instances", c.prefill.num_instances},
                       {"prefill_gpus", c.prefill.num_instances * c.prefill.gpus_per_instance},
                       {"prefill_ep", c.prefill.ep_size},
                       {"decode_instances", c.decode.num_instances},
                       {"decode_gpus", c.decode.num_instances * c.decode.gpus_per_instance},
                       {"decode_ep", c.decode.ep_size},
                       {"decode_redundant_experts_per_gpu", c.decode.redundant_experts_per_gpu},
                       {"scheduler", {{"prefill", c.prefill.scheduler}, {"decode", c.decode.scheduler}}},
                       {"eplb", {{"prefill", c.prefill.eplb}, {"decode", c.decode.eplb}}}};
    s["simulated_s"] = m.simulated_s;
    s["measurement_window_s"] = {c.workload.warmup_s, c.workload.duration_s};
    s["requests_arrived"] = m.requests.size();
    s["requests_completed"] = completed;
    s["requests_rejected"] = rejected;
    s["requests_unfinished"] = unfinished;
    s["requests_retried"] = retried;
    s["throughput_tok_s_per_gpu"] = {{"prefill", role_throughput(m.prefill, window, false)},
                                     {"decode", role_throughput(m.decode, window, true)}};
    s["ttft_s"] = all["ttft_s"];
    s["tpot_s"] = all["tpot_s"];
    s["tokens_per_user_s"] = all["tokens_per_user_s"];
    s["by_class"] = {{"chat", latency_block(c, m, 0)}, {"agent", latency_block(c, m, 1)}};
    if (!m.full_scheduler) {
        s["prefix_cache_hit_rate"] = nullptr;
        s["prefix_cache"] = "not modelled: the SimpleScheduler has no prefix cache (\"scheduler\": \"full\")";
    } else {
        double prompt[kNumTrafficClasses] = {0, 0}, cached[kNumTrafficClasses] = {0, 0};
        for (const RequestRecord& r : m.requests) {
            if (!in_window(c, r) || r.cached_tokens < 0) continue;
            const auto k = static_cast<std::size_t>(r.request.traffic_class);
            prompt[k] += r.request.prompt_tokens;
            cached[k] += r.cached_tokens;
        }
        auto rate = [](double num, double den) -> json { return den > 0 ? json(num / den) : json(nullptr); };
        const double p_all = prompt[0] + prompt[1], c_all = cached[0] + cached[1];
        s["prefix_cache_hit_rate"] = rate(c_all, p_all);
        s["prefix_cache"] = {
            {"hit_rate",
             {{"overall", rate(c_all, p_all)},
              {"chat", rate(cached[0], prompt[0])},
              {"agent", rate(cached[1], prompt[1])}}},
            {"prompt_tokens", p_all},
            {"cached_tokens", c_all},
            {"prefill_throughput_gain", rate(p_all, p_all - c_all)},
            {"prompt_tok_s_per_prefill_gpu", m.prefill.num_gpus > 0 && window > 0
                                                 ? json(p_all / (window * m.prefill.num_gpus))
                                                 : json(nullptr)},
            {"swa_replay_tokens", m.replay_tokens},
            {"tier_read_GB", m.tier_read_bytes / 1e9},
            {"decode_store_write_GB", m.decode_store_write_bytes / 1e9},
            {"decode_store_blocks_written", m.decode_store_blocks_written},
            {"note",
             "hit = prompt tokens not recomputed at first prefill admission (HBM, host and store hits, "
             "minus SWA replay), requests arriving in the window; gain = prompt tokens / computed"}};
    }
    if (m.draft_seq_steps > 0) {
        const auto n = static_cast<double>(m.draft_seq_steps);
        s["speculative"] = {
            {"draft_seq_steps", m.draft_seq_steps},
            {"verified_drafts_per_seq_step", static_cast<double>(m.verified_drafts) / n},
            {"accepted_length", 1.0 + static_cast<double>(m.accepted_drafts) / n},
            {"acceptance_rate", m.verified_drafts > 0 ? static_cast<double>(m.accepted_drafts) /
                                                            static_cast<double>(m.verified_drafts)
                                                      : 0.0}};
    } else {
        s["speculative"] = nullptr;
    }
    s["ep_imbalance_max_mean"] = {{"prefill", imbalance(m.prefill)}, {"decode", imbalance(m.decode)}};
    s["eplb_replacements"] = m.num_placements;
    s["eplb_moves"] = {
        {"applied", m.expert_moves.applied},
        {"copied_GB", m.expert_moves.bytes / 1e9},
        {"mean_copy_s", m.expert_moves.applied > 0
                            ? m.expert_moves.copy_s / static_cast<double>(m.expert_moves.applied)
                            : 0.0},
        {"layers",
         {{"kept", m.eplb_layers_kept}, {"swapped", m.eplb_layers_swapped}, {"new", m.eplb_layers_new}}}};
    s["kv_handoff"] = {{"count", m.num_handoffs},
                       {"mean_bytes", m.num_handoffs ? m.handoff_bytes / m.num_handoffs : 0.0},
                       {"mean_time_s", m.num_handoffs ? m.handoff_time_s / m.num_handoffs : 0.0}};
    s["steps"] = {{"prefill", m.prefill.num_steps}, {"decode", m.decode.num_steps}};
    auto per_rank = [](const RoleMetrics& r, const InstanceGroupConfig& g) -> json {
        if (r.window_steps <= 0) return nullptr;
        return r.window_seqs / r.window_steps / g.gpus_per_instance;
    };
    s["mean_seqs_per_step_per_rank"] = {{"prefill", per_rank(m.prefill, c.prefill)},
                                        {"decode", per_rank(m.decode, c.decode)}};
    s["gpu_busy_fraction"] = {{"prefill", m.simulated_s > 0 && c.prefill.num_instances > 0
                                              ? m.prefill.busy_s / (m.simulated_s * c.prefill.num_instances)
                                              : 0.0},
                              {"decode", m.simulated_s > 0 && c.decode.num_instances > 0
                                             ? m.decode.busy_s / (m.simulated_s * c.decode.num_instances)
                                             : 0.0}};
    if (!c.faults.empty()) {
        s["faults"] = {{"injected", m.faults.injected},
                       {"repaired", m.faults.repaired},
                       {"requests_affected", m.faults.requests_affected},
                       {"requests_retried", m.faults.requests_retried},
                       {"requests_reprefilled", m.faults.requests_reprefilled},
                       {"requests_failed", m.faults.requests_failed},
                       {"tokens_recomputed", m.faults.tokens_recomputed},
                       {"store_blocks_lost", m.faults.store_blocks_lost},
                       {"instance_down_s", m.faults.instance_down_s}};
    }
    s["events"] = m.num_events;
    s["wall"] = {{"wall_s", m.wall_s},
                 {"events_per_s", m.wall_s > 0 ? static_cast<double>(m.num_events) / m.wall_s : 0.0},
                 {"simulated_per_wall", m.wall_s > 0 ? m.simulated_s / m.wall_s : 0.0},
                 {"threads", m.threads}};
    return s;
}

std::string make_requests_csv(const RunMetrics& m) {
    std::ostringstream out;
    out << "id,class,session_id,turn,arrival_s,prompt_tokens,shared_prefix_tokens,output_tokens,prefill_"
           "instance,"
           "decode_instance,first_token_s,handoff_done_s,finish_s,ttft_s,tpot_s,status,retries,cached_"
           "tokens\n";
    char buf[512];
    for (const RequestRecord& r : m.requests) {
        const char* status = r.status == RequestStatus::kCompleted  ? "completed"
                             : r.status == RequestStatus::kRejected ? "rejected"
                                                                    : "unfinished";
        const double ttft = r.first_token_s >= 0 ? r.first_token_s - r.request.arrival_s : -1;
        const double tp = r.status == RequestStatus::kCompleted && r.output_tokens > 1 ? tpot(r) : -1;
        std::snprintf(
            buf, sizeof buf, "%lld,%s,%llu,%d,%.6f,%d,%d,%d,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%s,%d,%d\n",
            static_cast<long long>(r.request.id.value()), std::string(name(r.request.traffic_class)).c_str(),
            static_cast<unsigned long long>(r.request.session_id), r.request.turn, r.request.arrival_s,
            r.request.prompt_tokens, r.request.shared_prefix_tokens, r.output_tokens, r.prefill_instance,
            r.decode_instance, r.first_token_s, r.handoff_done_s, r.finish_s, ttft, tp, status, r.retries,
            r.cached_tokens);
        out << buf;
    }
    return out.str();
}

json make_timeline(const RunMetrics& m) {
    json events = json::array();
    for (std::size_t i = 0; i < m.instance_names.size(); ++i)
        events.push_back(
            {{"name", "process_name"}, {"ph", "M"}, {"pid", i}, {"args", {{"name", m.instance_names[i]}}}});
    for (const TimelineEvent& e : m.timeline)
        events.push_back({{"name", "step"},
                          {"ph", "X"},
                          {"pid", e.pid},
                          {"tid", 0},
                          {"ts", e.step.start_s * 1e6},
                          {"dur", (e.step.end_s - e.step.start_s) * 1e6},
                          {"args",
                           {{"tokens", e.step.num_tokens},
                            {"seqs", e.step.num_seqs},
                            {"imbalance", e.step.imbalance_max_mean},
                            {"moe_ms", e.step.cost.moe_s * 1e3},
                            {"ep_comm_ms", e.step.cost.ep_comm_s * 1e3},
                            {"attention_ms", e.step.cost.attention_s * 1e3}}}});
    return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

std::string make_human_summary(const json& s) {
    auto num = [](const json& v, double scale = 1.0) -> std::string {
        if (v.is_null()) return "n/a";
        char b[64];
        std::snprintf(b, sizeof b, scale == 1.0 && v.get<double>() < 10 ? "%.2f" : "%.1f",
                      v.get<double>() * scale);
        return b;
    };
    std::ostringstream o;
    o << "simulation \"" << s["name"].get<std::string>() << "\" (profile "
      << s["profile"]["name"].get<std::string>() << ", " << s["profile"]["kind"].get<std::string>() << "/"
      << s["profile"]["method"].get<std::string>() << ")\n";
    o << "  simulated " << num(s["simulated_s"]) << " s in " << num(s["wall"]["wall_s"]) << " s wall ("
      << num(s["wall"]["simulated_per_wall"]) << "x real time, " << num(s["wall"]["events_per_s"])
      << " events/s, " << s["wall"]["threads"] << (s["wall"]["threads"] == 1 ? " thread" : " threads")
      << ")\n";
    o << "  requests: " << s["requests_arrived"] << " arrived, " << s["requests_completed"] << " completed, "
      << s["requests_rejected"] << " rejected, " << s["requests_unfinished"] << " unfinished\n";
    o << "  throughput per GPU: prefill " << num(s["throughput_tok_s_per_gpu"]["prefill"])
      << " tok/s, decode " << num(s["throughput_tok_s_per_gpu"]["decode"]) << " generated tok/s\n";
    o << "  TTFT p50/p90/p99: " << num(s["ttft_s"]["p50"], 1e3) << " / " << num(s["ttft_s"]["p90"], 1e3)
      << " / " << num(s["ttft_s"]["p99"], 1e3) << " ms\n";
    o << "  TPOT p50/p90/p99: " << num(s["tpot_s"]["p50"], 1e3) << " / " << num(s["tpot_s"]["p90"], 1e3)
      << " / " << num(s["tpot_s"]["p99"], 1e3) << " ms (" << num(s["tokens_per_user_s"]["p50"])
      << " tok/s per user, p50)\n";
    o << "  EP imbalance max/mean: prefill " << num(s["ep_imbalance_max_mean"]["prefill"]) << ", decode "
      << num(s["ep_imbalance_max_mean"]["decode"]) << "\n";
    if (s["prefix_cache"].is_string()) {
        o << "  prefix cache: " << s["prefix_cache"].get<std::string>() << "\n";
    } else {
        const json& h = s["prefix_cache"]["hit_rate"];
        o << "  prefix cache hit rate: " << num(h["overall"], 100) << "% (chat " << num(h["chat"], 100)
          << "%, agent " << num(h["agent"], 100) << "%), prefill gain "
          << num(s["prefix_cache"]["prefill_throughput_gain"]) << "x\n";
    }
    if (!s["speculative"].is_null())
        o << "  speculative: " << num(s["speculative"]["verified_drafts_per_seq_step"])
          << " drafts verified per sequence-step, accepted length "
          << num(s["speculative"]["accepted_length"]) << "\n";
    return o.str();
}

}  // namespace deepinfer::sim
