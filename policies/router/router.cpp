// Router implementation: score every (instance, rank) of the needed role, take the cheapest.
#include "policies/router/router.h"

#include <algorithm>
#include <limits>
#include <tuple>
#include <vector>

namespace deepinfer {

bool Router::eligible(const DpRankLoad& load) const {
    if (load.kv_free_fraction < config_.min_kv_free_fraction) return false;
    return load.max_num_seqs == 0 || load.num_running_seqs < load.max_num_seqs;
}

double Router::load_cost(const DpRankLoad& load) const {
    return config_.pending_token_weight * static_cast<double>(load.num_pending_prefill_tokens) +
           config_.running_seq_weight * load.num_running_seqs +
           config_.waiting_seq_weight * load.num_waiting_seqs +
           config_.kv_pressure_weight * (1.0 - load.kv_free_fraction);
}

namespace {
/// Best (cost, instance, rank) over ranks of instances with `role`; eligible ranks first. Costs are
/// known to be at least `lower_bound(inst, rank)` (cheap) while `cost` may be dear: ranks are scored
/// in increasing bound order and the scan stops at the first bound above the best cost found. Ties
/// (a rank whose bound equals the best cost is still scored) go to the lower instance, then rank.
template <class CostFn, class BoundFn, class EligibleFn>
std::tuple<RouteTarget, double> pick(std::span<const InstanceLoad> instances, InstanceRole role, CostFn cost,
                                     BoundFn lower_bound, EligibleFn is_eligible) {
    struct Candidate {
        double bound;
        RouteTarget target;
        const InstanceLoad* inst;
    };
    std::vector<Candidate> candidates;
    for (int pass = 0; pass < 2; ++pass) {
        candidates.clear();
        for (const InstanceLoad& inst : instances) {
            if (inst.role != role || !inst.accepting) continue;
            for (std::size_t r = 0; r < inst.ranks.size(); ++r) {
                if (pass == 0 && !is_eligible(inst.ranks[r])) continue;
                const auto rank = static_cast<std::int32_t>(r);
                candidates.push_back(
                    Candidate{lower_bound(inst, rank), RouteTarget{inst.instance, rank}, &inst});
            }
        }
        std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
            return a.bound < b.bound || (a.bound == b.bound && a.target < b.target);
        });
        RouteTarget best;
        double best_cost = 0.0;
        for (const Candidate& c : candidates) {
            if (best.valid() && c.bound > best_cost) break;
            const double v = cost(*c.inst, c.target.dp_rank);
            if (!best.valid() || v < best_cost || (v == best_cost && c.target < best)) {
                best = c.target;
                best_cost = v;
            }
        }
        if (best.valid()) return {best, best_cost};
    }
    return {RouteTarget{}, 0.0};
}
}  // namespace

RouteDecision Router::route(const Request& request, std::span<const InstanceLoad> instances,
                            const PrefixMatchFn& prefix_match) const {
    const InstanceRole role = config_.disaggregated ? InstanceRole::kPrefill : InstanceRole::kMixed;
    const std::int32_t prompt = request.prompt_len();
    auto cost = [&](const InstanceLoad& inst, std::int32_t rank) {
        const std::int32_t hit =
            prefix_match ? std::min(prefix_match(inst.instance, rank, request), prompt) : 0;
        return config_.uncached_token_weight * (prompt - hit) +
               load_cost(inst.ranks[static_cast<std::size_t>(rank)]);
    };
    auto ok = [&](const DpRankLoad& l) { return eligible(l); };
    // The prefix match is the dear part of a rank's cost; with every prompt token cached the cost is
    // the load cost alone, which bounds it from below (uncached_token_weight >= 0).
    auto bound = [&](const InstanceLoad& inst, std::int32_t rank) {
        return load_cost(inst.ranks[static_cast<std::size_t>(rank)]);
    };
    auto no_bound = [](const InstanceLoad&, std::int32_t) {
        return -std::numeric_limits<double>::infinity();
    };
    const auto [target, c] = prefix_match && config_.uncached_token_weight >= 0
                                 ? pick(instances, role, cost, bound, ok)
                                 : pick(instances, role, cost, no_bound, ok);
    RouteDecision d;
    d.prefill = target;
    d.cost = c;
    if (target.valid() && prefix_match)
        d.num_cached_prompt_tokens = std::min(prefix_match(target.instance, target.dp_rank, request), prompt);
    if (config_.disaggregated) d.decode = choose_decode(instances);
    return d;
}

RouteTarget Router::choose_decode(std::span<const InstanceLoad> instances) const {
    const InstanceRole role = config_.disaggregated ? InstanceRole::kDecode : InstanceRole::kMixed;
    auto cost = [&](const InstanceLoad& inst, std::int32_t rank) {
        return load_cost(inst.ranks[static_cast<std::size_t>(rank)]);
    };
    auto ok = [&](const DpRankLoad& l) { return eligible(l); };
    return std::get<0>(pick(instances, role, cost, cost, ok));  // the load cost is its own bound
}

KvHandoff Router::make_handoff(RouteTarget from, RouteTarget to, std::int32_t num_tokens,
                               const KvModelShape& shape, std::int32_t block_tokens) {
    return KvHandoff{.from = from,
                     .to = to,
                     .num_tokens = num_tokens,
                     .num_bytes = kv_bytes_per_seq(shape, num_tokens, block_tokens)};
}

}  // namespace deepinfer
