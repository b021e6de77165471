// Flat placement of one layer: greedy replica counts, LPT assignment with the one-replica-per-GPU
// rule, swap local search on the most-loaded GPU, then water-filling of the router split.
#include "policies/eplb/flat_placer.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>

#include "policies/common/check.h"
#include "policies/eplb/fill_placer.h"

namespace deepinfer::eplb_detail {
namespace {

using Index = std::size_t;

// The weighted split repairs what swaps leave, so fewer swap rounds suffice.
constexpr std::int32_t kWeightedSwapRounds = 64;
// A packed placement within this fraction of the lower bound is kept (no fill attempt).
constexpr double kGoodEnough = 1e-3;

Index ix(std::int32_t v) { return static_cast<Index>(v); }

class FlatPlacer {
public:
    FlatPlacer(std::span<const double> loads, std::int32_t num_gpus, std::int32_t slots_per_gpu)
        : w_(loads),
          num_experts_(static_cast<std::int32_t>(loads.size())),
          num_gpus_(num_gpus),
          slots_(slots_per_gpu),
          expert_(ix(num_gpus * slots_per_gpu), -1),
          fill_(ix(num_gpus), 0),
          holds_(ix(num_gpus) * loads.size(), 0),
          gpu_load_(ix(num_gpus), 0.0) {
        double total = 0.0;
        for (double v : loads) total += v;
        tol_ = 1e-12 * std::max(total, 1e-300);
    }

    void assign(const std::vector<std::int32_t>& counts);
    void swap_search(std::int32_t max_rounds);
    FlatSolution solution() const;

private:
    bool holds(std::int32_t g, std::int32_t e) const { return holds_[ix(g) * ix(num_experts_) + ix(e)] != 0; }
    void set_holds(std::int32_t g, std::int32_t e, bool v) {
        holds_[ix(g) * ix(num_experts_) + ix(e)] = v ? 1 : 0;
    }
    double replica_load(std::int32_t e) const { return w_[ix(e)] / counts_[ix(e)]; }
    void put(std::int32_t g, std::int32_t e);
    void repair_and_put(std::int32_t e);
    std::int32_t most_loaded_gpu() const;

    std::span<const double> w_;
    std::int32_t num_experts_;
    std::int32_t num_gpus_;
    std::int32_t slots_;
    std::vector<std::int32_t> counts_;
    std::vector<std::int32_t> expert_;  // per slot, GPU-major; -1 = empty
    std::vector<std::int32_t> fill_;
    std::vector<std::uint8_t> holds_;
    std::vector<double> gpu_load_;  // under the uniform split
    double tol_ = 0.0;
};

void FlatPlacer::put(std::int32_t g, std::int32_t e) {
    expert_[ix(g * slots_ + fill_[ix(g)])] = e;
    ++fill_[ix(g)];
    set_holds(g, e, true);
    gpu_load_[ix(g)] += replica_load(e);
}

// NOTE: LPT can corner itself: every GPU with a free slot already holds `e`. Then some GPU g without
// `e` hands one of its replicas f to a GPU h with a free slot (h must not hold f), and `e` takes f's
// slot on g. Such a pair always exists while fewer than G replicas of `e` are placed.
void FlatPlacer::repair_and_put(std::int32_t e) {
    for (std::int32_t h = 0; h < num_gpus_; ++h) {
        if (fill_[ix(h)] == slots_) continue;
        for (std::int32_t g = 0; g < num_gpus_; ++g) {
            if (g == h || holds(g, e)) continue;
            for (std::int32_t k = 0; k < fill_[ix(g)]; ++k) {
                const std::int32_t f = expert_[ix(g * slots_ + k)];
                if (holds(h, f)) continue;
                expert_[ix(g * slots_ + k)] = e;
                set_holds(g, f, false);
                set_holds(g, e, true);
                gpu_load_[ix(g)] += replica_load(e) - replica_load(f);
                put(h, f);
                return;
            }
        }
    }
    DI_CHECK(false, "no GPU can take a replica of expert " << e);
}

void FlatPlacer::assign(const std::vector<std::int32_t>& counts) {
    counts_ = counts;
    std::vector<std::int32_t> order(ix(num_experts_));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::int32_t a, std::int32_t b) { return replica_load(a) > replica_load(b); });
    for (std::int32_t e : order) {
        for (std::int32_t r = 0; r < counts_[ix(e)]; ++r) {
            std::int32_t best = -1;
            for (std::int32_t g = 0; g < num_gpus_; ++g) {
                if (fill_[ix(g)] == slots_ || holds(g, e)) continue;
                if (best < 0 || gpu_load_[ix(g)] < gpu_load_[ix(best)]) best = g;
            }
            if (best >= 0)
                put(best, e);
            else
                repair_and_put(e);
        }
    }
}

std::int32_t FlatPlacer::most_loaded_gpu() const {
    std::int32_t g = 0;
    for (std::int32_t h = 1; h < num_gpus_; ++h)
        if (gpu_load_[ix(h)] > gpu_load_[ix(g)]) g = h;
    return g;
}

// Best-improvement swaps between the most-loaded GPU and any other: a swap of replicas a (on g) and
// b (on h) is legal when neither GPU then holds two replicas of one expert; it is taken when it lowers
// max(load g, load h) below the old maximum. Stops at a local optimum or after `max_rounds`.
void FlatPlacer::swap_search(std::int32_t max_rounds) {
    for (std::int32_t round = 0; round < max_rounds; ++round) {
        const std::int32_t g = most_loaded_gpu();
        const double lg = gpu_load_[ix(g)];
        double best = lg - tol_;
        std::int32_t best_h = -1, best_a = -1, best_b = -1;
        for (std::int32_t h = 0; h < num_gpus_; ++h) {
            const double lh = gpu_load_[ix(h)];
            if (h == g || lh >= best) continue;
            for (std::int32_t a = 0; a < slots_; ++a) {
                const std::int32_t ea = expert_[ix(g * slots_ + a)];
                if (holds(h, ea)) continue;
                const double la = replica_load(ea);
                for (std::int32_t b = 0; b < slots_; ++b) {
                    const std::int32_t eb = expert_[ix(h * slots_ + b)];
                    const double d = la - replica_load(eb);
                    if (d <= 0.0 || holds(g, eb)) continue;
                    const double peak = std::max(lg - d, lh + d);
                    if (peak < best) best = peak, best_h = h, best_a = a, best_b = b;
                }
            }
        }
        if (best_h < 0) return;
        const Index sa = ix(g * slots_ + best_a), sb = ix(best_h * slots_ + best_b);
        const std::int32_t ea = expert_[sa], eb = expert_[sb];
        const double d = replica_load(ea) - replica_load(eb);
        std::swap(expert_[sa], expert_[sb]);
        set_holds(g, ea, false), set_holds(g, eb, true);
        set_holds(best_h, eb, false), set_holds(best_h, ea, true);
        gpu_load_[ix(g)] -= d;
        gpu_load_[ix(best_h)] += d;
    }
}

FlatSolution FlatPlacer::solution() const {
    FlatSolution out{.expert = expert_, .share = std::vector<double>(expert_.size())};
    for (std::size_t s = 0; s < expert_.size(); ++s) out.share[s] = 1.0 / counts_[ix(expert_[s])];
    return out;
}

double max_gpu_load(std::span<const double> w, std::int32_t num_gpus, const FlatSolution& sol) {
    std::vector<double> load(ix(num_gpus), 0.0);
    const std::size_t per_gpu = sol.expert.size() / ix(num_gpus);
    for (std::size_t s = 0; s < sol.expert.size(); ++s)
        load[s / per_gpu] += w[ix(sol.expert[s])] * sol.share[s];
    return *std::max_element(load.begin(), load.end());
}

}  // namespace

// Minimises the sum of squared GPU loads over the router split by exact block-coordinate steps: each
// replicated expert in turn spreads its load over its GPUs so they reach one water level. The
// feasible GPU-load vectors form a polymatroid base polytope, whose sum-of-squares minimiser also
// minimises the maximum load, so the sweeps converge towards the best split for this placement.
void water_fill(std::span<const double> w, std::int32_t num_gpus, FlatSolution& sol, std::int32_t max_sweeps,
                double spread) {
    const Index n = sol.expert.size();
    const Index per_gpu = n / ix(num_gpus);
    std::vector<std::vector<Index>> slots_of(w.size());
    for (Index s = 0; s < n; ++s) slots_of[ix(sol.expert[s])].push_back(s);
    std::vector<double> load(ix(num_gpus), 0.0);
    double total = 0.0;
    for (Index s = 0; s < n; ++s) load[s / per_gpu] += w[ix(sol.expert[s])] * sol.share[s];
    for (double v : w) total += v;
    std::vector<std::int32_t> replicated;
    for (Index e = 0; e < w.size(); ++e)
        if (slots_of[e].size() > 1 && w[e] > 0.0) replicated.push_back(static_cast<std::int32_t>(e));
    std::vector<std::pair<double, Index>> base;  // (GPU load without e, slot)
    for (std::int32_t sweep = 0; sweep < max_sweeps; ++sweep) {
        double moved = 0.0;
        for (std::int32_t e : replicated) {
            const double we = w[ix(e)];
            base.clear();
            for (Index s : slots_of[ix(e)]) base.emplace_back(load[s / per_gpu] - we * sol.share[s], s);
            std::sort(base.begin(), base.end());
            double level = 0.0, sum = (1.0 + spread) * we;
            std::size_t k = 0;
            while (k < base.size()) {
                sum += base[k].first;
                ++k;
                level = sum / static_cast<double>(k);
                if (k == base.size() || level <= base[k].first) break;
            }
            for (std::size_t i = 0; i < base.size(); ++i) {
                const Index s = base[i].second;
                const double part = i < k ? std::max(0.0, level - base[i].first) / (1.0 + spread) : 0.0;
                moved = std::max(moved, std::abs(part - we * sol.share[s]));
                load[s / per_gpu] = base[i].first + part;
                sol.share[s] = part / we;
            }
        }
        if (moved <= 1e-9 * total / static_cast<double>(num_gpus)) break;
    }
    // Renormalise each expert's shares to sum to exactly 1 (rounding drift of the updates).
    for (Index e = 0; e < w.size(); ++e) {
        double sum = 0.0;
        for (Index s : slots_of[e]) sum += sol.share[s];
        if (sum > 0.0)
            for (Index s : slots_of[e]) sol.share[s] /= sum;
        else
            for (Index s : slots_of[e]) sol.share[s] = 1.0 / static_cast<double>(slots_of[e].size());
    }
}

std::vector<std::int32_t> greedy_replica_counts(std::span<const double> loads, std::int32_t num_gpus,
                                                std::int32_t num_slots) {
    const auto num_experts = static_cast<std::int32_t>(loads.size());
    DI_CHECK(
        num_slots >= num_experts && num_slots <= num_experts * num_gpus,
        "slots " << num_slots << " cannot hold " << num_experts << " experts on " << num_gpus << " GPUs");
    std::vector<std::int32_t> counts(loads.size(), 1);
    // Max-heap on load per replica; ties: lower expert id first.
    auto less = [](const std::pair<double, std::int32_t>& a, const std::pair<double, std::int32_t>& b) {
        return a.first < b.first || (a.first == b.first && a.second > b.second);
    };
    std::priority_queue<std::pair<double, std::int32_t>, std::vector<std::pair<double, std::int32_t>>,
                        decltype(less)>
        heap(less);
    if (num_gpus > 1)
        for (std::int32_t e = 0; e < num_experts; ++e) heap.emplace(loads[ix(e)], e);
    for (std::int32_t extra = num_slots - num_experts; extra > 0; --extra) {
        const std::int32_t e = heap.top().second;
        heap.pop();
        const std::int32_t r = ++counts[ix(e)];
        if (r < num_gpus) heap.emplace(loads[ix(e)] / r, e);
    }
    return counts;
}

double max_load_lower_bound_flat(std::span<const double> loads, std::int32_t num_gpus,
                                 std::int32_t slots_per_gpu) {
    double total = 0.0;
    for (double v : loads) total += v;
    const auto counts = greedy_replica_counts(loads, num_gpus, num_gpus * slots_per_gpu);
    double per_replica = 0.0;
    for (std::size_t e = 0; e < loads.size(); ++e) per_replica = std::max(per_replica, loads[e] / counts[e]);
    return std::max(total / num_gpus, per_replica);
}

FlatSolution place_flat(std::span<const double> loads, std::int32_t num_gpus, std::int32_t slots_per_gpu,
                        Split split, const FlatLimits& limits) {
    const auto num_experts = static_cast<std::int32_t>(loads.size());
    DI_CHECK(num_gpus > 0 && slots_per_gpu > 0 && slots_per_gpu <= num_experts &&
                 num_experts <= num_gpus * slots_per_gpu,
             num_experts << " experts do not fit " << num_gpus << " GPUs x " << slots_per_gpu << " slots");
    // Packed placement: greedy counts, LPT, swaps; with the weighted split, shares water-filled from
    // uniform. Its shares stay close to uniform, which keeps it robust when the real loads drift.
    const double bound = max_load_lower_bound_flat(loads, num_gpus, slots_per_gpu);
    FlatPlacer placer(loads, num_gpus, slots_per_gpu);
    placer.assign(greedy_replica_counts(loads, num_gpus, num_gpus * slots_per_gpu));
    placer.swap_search(split == Split::kWeighted ? std::min(limits.max_swap_rounds, kWeightedSwapRounds)
                                                 : limits.max_swap_rounds);
    FlatSolution packed = placer.solution();
    if (split == Split::kUniform) return packed;
    water_fill(loads, num_gpus, packed, limits.max_split_sweeps, limits.split_spread);
    const double packed_max = max_gpu_load(loads, num_gpus, packed);
    if (packed_max <= bound * (1.0 + kGoodEnough)) return packed;
    // Far from the bound (skewed loads, few slots): the fill placement usually reaches it outright.
    double total = 0.0;
    for (double v : loads) total += v;
    auto filled = place_by_fill(loads, num_gpus, slots_per_gpu, bound, packed_max);
    if (!filled) return packed;
    water_fill(loads, num_gpus, *filled, limits.max_split_sweeps, limits.split_spread);
    return max_gpu_load(loads, num_gpus, *filled) < packed_max ? *filled : packed;
}

}  // namespace deepinfer::eplb_detail
