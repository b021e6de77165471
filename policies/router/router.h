// Router: picks the instance and data-parallel attention rank for each request, weighing the prefix
// cache a rank already holds against its load; with P/D disaggregation it picks a prefill rank and
// then the decode rank that receives the KV handoff. Plain data in, plain data out.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "policies/common/json_reader.h"
#include "policies/kv/kv_model_shape.h"
#include "policies/request.h"

namespace deepinfer {

enum class InstanceRole : std::uint8_t { kMixed = 0, kPrefill = 1, kDecode = 2 };

/// Load of one DP attention rank as the router sees it (a snapshot taken by the caller).
struct DpRankLoad {
    std::int32_t num_running_seqs = 0;
    std::int32_t num_waiting_seqs = 0;
    /// Prompt tokens admitted or queued on the rank and not computed yet.
    std::int64_t num_pending_prefill_tokens = 0;
    /// Free fraction of the rank's KV pool, in [0, 1].
    double kv_free_fraction = 1.0;
    /// The rank's sequence cap (0 = unknown: never treated as full).
    std::int32_t max_num_seqs = 0;
};

struct InstanceLoad {
    /// Caller's instance id (returned in decisions; ties go to the lower id).
    std::int32_t instance = 0;
    InstanceRole role = InstanceRole::kMixed;
    /// One entry per DP attention rank.
    std::vector<DpRankLoad> ranks;
    /// False: the instance takes no new requests (draining, failed).
    bool accepting = true;
};

/// Prompt tokens of `request` already cached for (instance, dp_rank), over every tier it can read.
using PrefixMatchFn =
    std::function<std::int32_t(std::int32_t instance, std::int32_t dp_rank, const Request& request)>;

struct RouterConfig {
    /// Prefill on kPrefill instances, decode on kDecode instances; otherwise kMixed instances only.
    bool disaggregated = false;
    /// Cost per prompt token not cached on the rank (prefill work this choice causes).
    double uncached_token_weight = 1.0;
    /// Cost per prompt token already pending on the rank (queueing delay).
    double pending_token_weight = 1.0;
    /// Cost per running / waiting sequence, in prompt-token equivalents.
    double running_seq_weight = 64.0;
    double waiting_seq_weight = 256.0;
    /// Cost of a full KV pool, scaled by the used fraction (1 - kv_free_fraction).
    double kv_pressure_weight = 4096.0;
    /// Ranks with less free KV than this, or at their sequence cap, are used only when no other
    /// rank is eligible.
    double min_kv_free_fraction = 0.02;
};

RouterConfig router_config_from_json(const JsonReader& r);

struct RouteTarget {
    /// -1 when no instance of the needed role exists.
    std::int32_t instance = -1;
    std::int32_t dp_rank = -1;
    bool valid() const { return instance >= 0; }
    auto operator<=>(const RouteTarget&) const = default;
};

struct RouteDecision {
    /// Where the prompt runs (the only target without disaggregation).
    RouteTarget prefill;
    /// Disaggregated: where decode runs after the KV handoff (tentative; `choose_decode` again at
    /// handoff time with fresh loads). Invalid when not disaggregated.
    RouteTarget decode;
    /// Prompt tokens cached at the prefill target.
    std::int32_t num_cached_prompt_tokens = 0;
    /// The prefill target's cost (prompt-token equivalents).
    double cost = 0.0;
};

/// The KV a prefill rank sends to a decode rank: the whole cache of the sequence, bounded state
/// (sliding windows, compressor buffers) included.
struct KvHandoff {
    RouteTarget from;
    RouteTarget to;
    std::int32_t num_tokens = 0;
    double num_bytes = 0.0;
};

class Router {
public:
    explicit Router(RouterConfig config) : config_(config) {}
    const RouterConfig& config() const { return config_; }

    /// Chooses the prefill target (least cost; ties to the lower instance, then rank) and, when
    /// disaggregated, a decode target.
    RouteDecision route(const Request& request, std::span<const InstanceLoad> instances,
                        const PrefixMatchFn& prefix_match) const;
    /// Chooses the decode target among decode instances (kMixed when not disaggregated).
    RouteTarget choose_decode(std::span<const InstanceLoad> instances) const;
    /// The handoff after a prompt of `num_tokens` tokens was computed at `from`.
    static KvHandoff make_handoff(RouteTarget from, RouteTarget to, std::int32_t num_tokens,
                                  const KvModelShape& shape, std::int32_t block_tokens);

private:
    bool eligible(const DpRankLoad& load) const;
    double load_cost(const DpRankLoad& load) const;

    RouterConfig config_;
};

}  // namespace deepinfer
