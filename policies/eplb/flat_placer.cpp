// Flat placement of one layer: greedy replica counts, LPT assignment with the one-replica-per-GPU
// rule, swap local search on the most-loaded GPU, hedging swaps against rank drift, then
// water-filling of the router split (or the fill placement when it scores better).
#include "policies/eplb/flat_placer.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <queue>

#include "policies/common/check.h"
#include "policies/eplb/fill_placer.h"

namespace deepinfer::eplb_detail {
namespace {

using Index = std::size_t;

// The weighted split repairs what swaps leave, so fewer swap rounds suffice.
constexpr std::int32_t kWeightedSwapRounds = 64;
// Hedging stops after this many GPUs in a row found no improving swap (rounds without a swap cost as
// much as rounds with one).
constexpr std::int32_t kMaxStuckInARow = 8;
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
    /// Takes `experts` (one per slot, GPU-major, every slot filled) as the assignment; replica counts
    /// are those of `experts`.
    void seed(std::span<const std::int32_t> experts);
    void swap_search(std::int32_t max_rounds);
    /// The best legal swap of a replica on the most-loaded GPU g with one on another GPU h, by the
    /// new max(load g, load h); none when no swap lowers it below g's load.
    struct Swap {
        std::int32_t g = -1, h = -1, a = -1, b = -1;
        double peak = 0.0;
    };
    std::optional<Swap> best_swap() const;
    void apply_swap(const Swap& s);
    /// One move-aware round: the better of the best swap on the most-loaded GPU (two copies) and the
    /// best replica move (one copy: a replica of the expert that loses least gives its slot to the
    /// expert with the most load per replica). Returns false when neither lowers the max GPU load.
    bool improve_round();
    void hedge_search(std::int32_t reach, double min_pair, double cap, std::int32_t max_rounds);
    double max_load() const { return gpu_load_[ix(most_loaded_gpu())]; }
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
    // Hedging (see hedge_search).
    struct Pair {
        std::int32_t other;
        double weight;
    };
    std::span<const Pair> heavier(std::int32_t e) const {
        return {pairs_.data() + up_begin_[ix(e)], pairs_.data() + dn_begin_[ix(e)]};
    }
    std::span<const Pair> lighter(std::int32_t e) const {
        return {pairs_.data() + dn_begin_[ix(e)], pairs_.data() + up_begin_[ix(e) + 1]};
    }
    bool has_pairs(std::int32_t e) const { return up_begin_[ix(e)] != up_begin_[ix(e) + 1]; }
    double pair_weight(std::int32_t x, std::int32_t y) const;
    double unhedged(std::int32_t g, std::int32_t f) const;
    double hedging(std::int32_t g, std::int32_t e) const;
    double gpu_risk(std::int32_t g) const;
    void rank_experts(std::int32_t reach, double min_pair);

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
    std::int32_t reach_ = 0;
    // Risk pairs (heavier e, lighter f within reach ranks, weight (w_e - w_f)^2 / (r_e r_f) at least
    // min_pair of the largest): per expert its heavier partners, then its lighter partners.
    std::vector<Pair> pairs_;
    std::vector<std::size_t> up_begin_, dn_begin_;
    std::vector<std::int32_t> partnered_;                        // experts in at least one pair, by id
    std::vector<double> out_, in_g_, in_h_, slot_load_, min_h_;  // hedge_search scratch
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

// LPT: replicas by load per replica, each to the least-loaded GPU with a free slot that lacks the
// expert.
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

void FlatPlacer::seed(std::span<const std::int32_t> experts) {
    DI_CHECK(experts.size() == expert_.size(),
             "seed of " << experts.size() << " slots for " << expert_.size());
    counts_.assign(ix(num_experts_), 0);
    for (std::int32_t e : experts) {
        DI_CHECK(e >= 0 && e < num_experts_, "expert " << e << " of " << num_experts_);
        ++counts_[ix(e)];
    }
    for (std::int32_t g = 0; g < num_gpus_; ++g)
        for (std::int32_t k = 0; k < slots_; ++k) put(g, experts[ix(g * slots_ + k)]);
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
        const std::optional<Swap> swap = best_swap();
        if (!swap) return;
        apply_swap(*swap);
    }
}

std::optional<FlatPlacer::Swap> FlatPlacer::best_swap() const {
    const std::int32_t g = most_loaded_gpu();
    const double lg = gpu_load_[ix(g)];
    Swap best{.g = g, .peak = lg - tol_};
    for (std::int32_t h = 0; h < num_gpus_; ++h) {
        const double lh = gpu_load_[ix(h)];
        if (h == g || lh >= best.peak) continue;
        for (std::int32_t a = 0; a < slots_; ++a) {
            const std::int32_t ea = expert_[ix(g * slots_ + a)];
            if (holds(h, ea)) continue;
            const double la = replica_load(ea);
            for (std::int32_t b = 0; b < slots_; ++b) {
                const std::int32_t eb = expert_[ix(h * slots_ + b)];
                const double d = la - replica_load(eb);
                if (d <= 0.0 || holds(g, eb)) continue;
                const double peak = std::max(lg - d, lh + d);
                if (peak < best.peak) best.peak = peak, best.h = h, best.a = a, best.b = b;
            }
        }
    }
    if (best.h < 0) return std::nullopt;
    return best;
}

void FlatPlacer::apply_swap(const Swap& s) {
    const Index sa = ix(s.g * slots_ + s.a), sb = ix(s.h * slots_ + s.b);
    const std::int32_t ea = expert_[sa], eb = expert_[sb];
    const double d = replica_load(ea) - replica_load(eb);
    std::swap(expert_[sa], expert_[sb]);
    set_holds(s.g, ea, false), set_holds(s.g, eb, true);
    set_holds(s.h, eb, false), set_holds(s.h, ea, true);
    gpu_load_[ix(s.g)] -= d;
    gpu_load_[ix(s.h)] += d;
}

bool FlatPlacer::improve_round() {
    const std::int32_t g = most_loaded_gpu();
    const double lg = gpu_load_[ix(g)];
    const std::optional<Swap> swap = best_swap();
    double swap_max = lg;  // max over all GPUs after the swap
    if (swap) {
        swap_max = swap->peak;
        for (std::int32_t k = 0; k < num_gpus_; ++k)
            if (k != swap->g && k != swap->h) swap_max = std::max(swap_max, gpu_load_[ix(k)]);
    }
    // Best replica move: hot = most load per replica (can take one more), cold = least load per
    // replica once it has one fewer (has two or more); the cold replica's slot on a GPU without the
    // hot expert goes to the hot expert. Every GPU holding either expert changes.
    std::int32_t hot = -1, cold = -1;
    for (std::int32_t e = 0; e < num_experts_; ++e) {
        if (counts_[ix(e)] < num_gpus_ && (hot < 0 || replica_load(e) > replica_load(hot))) hot = e;
        if (counts_[ix(e)] >= 2 &&
            (cold < 0 || w_[ix(e)] / (counts_[ix(e)] - 1) < w_[ix(cold)] / (counts_[ix(cold)] - 1)))
            cold = e;
    }
    double move_max = lg;
    std::int32_t move_slot = -1;
    if (hot >= 0 && cold >= 0 && hot != cold) {
        const double hot_now = replica_load(hot), hot_after = w_[ix(hot)] / (counts_[ix(hot)] + 1);
        const double cold_now = replica_load(cold), cold_after = w_[ix(cold)] / (counts_[ix(cold)] - 1);
        for (std::int32_t k = 0; k < num_gpus_; ++k) {
            if (!holds(k, cold) || holds(k, hot)) continue;
            double peak = 0.0;
            for (std::int32_t j = 0; j < num_gpus_; ++j) {
                double l = gpu_load_[ix(j)];
                if (holds(j, hot)) l += hot_after - hot_now;
                if (holds(j, cold)) l += cold_after - cold_now;
                if (j == k) l += hot_after - cold_after;  // k trades its cold replica for a hot one
                peak = std::max(peak, l);
            }
            if (peak < move_max - tol_) move_max = peak, move_slot = k;
        }
    }
    if (!swap && move_slot < 0) return false;
    if (move_slot >= 0 && (!swap || move_max < swap_max)) {
        const std::int32_t k = move_slot;
        for (std::int32_t a = 0; a < slots_; ++a)
            if (expert_[ix(k * slots_ + a)] == cold) {
                expert_[ix(k * slots_ + a)] = hot;
                break;
            }
        set_holds(k, cold, false), set_holds(k, hot, true);
        --counts_[ix(cold)], ++counts_[ix(hot)];
        std::fill(gpu_load_.begin(), gpu_load_.end(), 0.0);
        for (std::int32_t j = 0; j < num_gpus_; ++j)
            for (std::int32_t a = 0; a < slots_; ++a)
                gpu_load_[ix(j)] += replica_load(expert_[ix(j * slots_ + a)]);
        return true;
    }
    apply_swap(*swap);
    return true;
}

double FlatPlacer::pair_weight(std::int32_t x, std::int32_t y) const {
    for (const Pair& p : heavier(x))
        if (p.other == y) return p.weight;
    for (const Pair& p : lighter(x))
        if (p.other == y) return p.weight;
    return 0.0;
}

// Risk weight of replica f on g: its heavier partners that g lacks.
double FlatPlacer::unhedged(std::int32_t g, std::int32_t f) const {
    double sum = 0.0;
    for (const Pair& p : heavier(f))
        if (!holds(g, p.other)) sum += p.weight;
    return sum;
}

// Risk weight that e's replica on g offsets: its lighter partners on g.
double FlatPlacer::hedging(std::int32_t g, std::int32_t e) const {
    double sum = 0.0;
    for (const Pair& p : lighter(e))
        if (holds(g, p.other)) sum += p.weight;
    return sum;
}

double FlatPlacer::gpu_risk(std::int32_t g) const {
    double sum = 0.0;
    for (std::int32_t k = 0; k < slots_; ++k) sum += unhedged(g, expert_[ix(g * slots_ + k)]);
    return sum;
}

// Ranks the experts by load (ties: lower id) and lists the risk pairs.
void FlatPlacer::rank_experts(std::int32_t reach, double min_pair) {
    reach_ = reach;
    std::vector<std::int32_t> by_pos(ix(num_experts_));
    std::iota(by_pos.begin(), by_pos.end(), 0);
    std::stable_sort(by_pos.begin(), by_pos.end(),
                     [&](std::int32_t a, std::int32_t b) { return w_[ix(a)] > w_[ix(b)]; });
    auto weight = [&](std::int32_t e, std::int32_t f) {
        const double gap = w_[ix(e)] - w_[ix(f)];
        return gap * gap / (static_cast<double>(counts_[ix(e)]) * counts_[ix(f)]);
    };
    double largest = 0.0;
    for (std::int32_t p = 0; p < num_experts_; ++p)
        for (std::int32_t q = std::max(0, p - reach); q < p; ++q)
            largest = std::max(largest, weight(by_pos[ix(q)], by_pos[ix(p)]));
    const double floor = min_pair * largest;
    pairs_.clear();
    up_begin_.assign(ix(num_experts_) + 1, 0);
    dn_begin_.assign(ix(num_experts_) + 1, 0);
    std::vector<std::int32_t> pos(ix(num_experts_));
    for (std::int32_t p = 0; p < num_experts_; ++p) pos[ix(by_pos[ix(p)])] = p;
    for (std::int32_t e = 0; e < num_experts_; ++e) {
        const std::int32_t p = pos[ix(e)];
        up_begin_[ix(e)] = pairs_.size();
        for (std::int32_t q = std::max(0, p - reach); q < p; ++q)
            if (const double wt = weight(by_pos[ix(q)], e); wt > 0.0 && wt >= floor)
                pairs_.push_back({by_pos[ix(q)], wt});
        dn_begin_[ix(e)] = pairs_.size();
        for (std::int32_t q = p + 1; q <= std::min(num_experts_ - 1, p + reach); ++q)
            if (const double wt = weight(e, by_pos[ix(q)]); wt > 0.0 && wt >= floor)
                pairs_.push_back({by_pos[ix(q)], wt});
        up_begin_[ix(e) + 1] = pairs_.size();  // overwritten by the next expert's start
    }
    partnered_.clear();
    for (std::int32_t e = 0; e < num_experts_; ++e)
        if (has_pairs(e)) partnered_.push_back(e);
}

// NOTE: Hedging. Loads drift mostly by experts trading places in the popularity order, and one
// layer's total is fixed, so when an expert f takes the load of a heavier neighbour e, e falls by as
// much as f rises. A GPU holding replicas of both sees the rise offset by the fall (uniform split:
// (w_e - w_f) (1/r_f - 1/r_e) instead of (w_e - w_f) / r_f), and the max GPU load after such a swap
// is set by the worst replica of f. The search minimises the total risk weight of replicas lacking
// a heavier neighbour within `reach` ranks, weight (w_e - w_f)^2 / (r_e r_f) (the rise times the
// offset), by swaps that keep every GPU's load <= cap. Each round takes the best swap of the GPU
// with the largest risk; a GPU without an improving swap is skipped until a swap changes it.
void FlatPlacer::hedge_search(std::int32_t reach, double min_pair, double cap, std::int32_t max_rounds) {
    rank_experts(reach, min_pair);
    if (pairs_.empty()) return;
    // out_[slot]: change of its GPU's risk when the replica leaves; in_g_[expert]: change of g's risk
    // when the expert joins g; in_h_[h * S + a]: change of h's risk when g's a-th replica joins h.
    // A swap x <-> y of partners corrects these by twice their pair weight.
    out_.assign(expert_.size(), 0.0);
    slot_load_.resize(expert_.size());
    for (std::size_t k = 0; k < expert_.size(); ++k) slot_load_[k] = replica_load(expert_[k]);
    in_g_.assign(ix(num_experts_), 0.0);  // stays 0 for experts without pairs
    in_h_.assign(expert_.size(), 0.0);
    min_h_.assign(ix(num_gpus_), 0.0);
    auto refresh_out = [&](std::int32_t g) {
        for (std::int32_t k = 0; k < slots_; ++k) {
            const std::int32_t x = expert_[ix(g * slots_ + k)];
            out_[ix(g * slots_ + k)] = -unhedged(g, x) + hedging(g, x);
        }
    };
    std::vector<double> risk(ix(num_gpus_));
    for (std::int32_t g = 0; g < num_gpus_; ++g) risk[ix(g)] = gpu_risk(g), refresh_out(g);
    std::vector<std::uint8_t> stuck(ix(num_gpus_), 0);
    double total_w = 0.0;
    for (const Pair& p : pairs_) total_w += p.weight;
    const double min_gain = 1e-9 * total_w;
    std::int32_t stuck_in_a_row = 0;
    for (std::int32_t round = 0; round < max_rounds; ++round) {
        std::int32_t g = -1;
        for (std::int32_t h = 0; h < num_gpus_; ++h)
            if (stuck[ix(h)] == 0 && risk[ix(h)] > min_gain && (g < 0 || risk[ix(h)] > risk[ix(g)])) g = h;
        if (g < 0) return;
        for (std::int32_t e : partnered_) in_g_[ix(e)] = holds(g, e) ? 0.0 : unhedged(g, e) - hedging(g, e);
        for (std::int32_t a = 0; a < slots_; ++a) {
            const std::int32_t x = expert_[ix(g * slots_ + a)];
            if (!has_pairs(x)) continue;
            for (std::int32_t h = 0; h < num_gpus_; ++h)
                in_h_[ix(h * slots_ + a)] = holds(h, x) ? 0.0 : unhedged(h, x) - hedging(h, x);
        }
        double best = -min_gain;
        std::int32_t best_h = -1, best_a = -1, best_b = -1;
        const double room_g = cap - gpu_load_[ix(g)];
        const std::uint8_t* held_by_g = holds_.data() + ix(g) * ix(num_experts_);
        // Lower bound of the h-side terms per GPU h (pair corrections are >= 0): skips most (a, h).
        for (std::int32_t h = 0; h < num_gpus_; ++h) {
            double m = 0.0;
            for (std::int32_t b = 0; b < slots_; ++b) {
                const std::int32_t y = expert_[ix(h * slots_ + b)];
                if (held_by_g[ix(y)] == 0) m = std::min(m, in_g_[ix(y)] + out_[ix(h * slots_ + b)]);
            }
            min_h_[ix(h)] = m;
        }
        for (std::int32_t a = 0; a < slots_; ++a) {
            const std::int32_t x = expert_[ix(g * slots_ + a)];
            const double out_g = out_[ix(g * slots_ + a)];
            const bool partnered = has_pairs(x);
            const double load_x = replica_load(x);
            for (std::int32_t h = 0; h < num_gpus_; ++h) {
                if (h == g || holds(h, x)) continue;
                if (out_g + (partnered ? in_h_[ix(h * slots_ + a)] : 0.0) + min_h_[ix(h)] >= best) continue;
                const double room_h = cap - gpu_load_[ix(h)];
                for (std::int32_t b = 0; b < slots_; ++b) {
                    const std::int32_t y = expert_[ix(h * slots_ + b)];
                    if ((!partnered && !has_pairs(y)) || held_by_g[ix(y)] != 0) continue;
                    const double d = slot_load_[ix(h * slots_ + b)] - load_x;
                    if (d > room_g || -d > room_h) continue;
                    double delta = out_g + in_g_[ix(y)] + out_[ix(h * slots_ + b)] +
                                   (partnered ? in_h_[ix(h * slots_ + a)] : 0.0);
                    if (delta >= best) continue;
                    if (partnered) delta += 2.0 * pair_weight(x, y);
                    if (delta < best) best = delta, best_h = h, best_a = a, best_b = b;
                }
            }
        }
        if (best_h < 0) {
            stuck[ix(g)] = 1;
            if (++stuck_in_a_row == kMaxStuckInARow) return;
            continue;
        }
        stuck_in_a_row = 0;
        const Index sa = ix(g * slots_ + best_a), sb = ix(best_h * slots_ + best_b);
        const std::int32_t ea = expert_[sa], eb = expert_[sb];
        const double d = replica_load(ea) - replica_load(eb);
        std::swap(expert_[sa], expert_[sb]);
        std::swap(slot_load_[sa], slot_load_[sb]);
        set_holds(g, ea, false), set_holds(g, eb, true);
        set_holds(best_h, eb, false), set_holds(best_h, ea, true);
        gpu_load_[ix(g)] -= d;
        gpu_load_[ix(best_h)] += d;
        risk[ix(g)] = gpu_risk(g), refresh_out(g);
        risk[ix(best_h)] = gpu_risk(best_h), refresh_out(best_h);
        stuck[ix(best_h)] = 0;
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

// Mean, over the rank-swap pairs hedging weighs (heavier e, lighter f within `reach` ranks, weight
// at least min_pair of the largest), of the max GPU load after e and f trade loads: how badly
// the placement with its split takes the typical drift of the popularity order.
double swap_stress(std::span<const double> w, std::int32_t num_gpus, const FlatSolution& sol,
                   std::int32_t reach, double min_pair) {
    const auto num_experts = static_cast<std::int32_t>(w.size());
    const std::size_t per_gpu = sol.expert.size() / ix(num_gpus);
    std::vector<double> load(ix(num_gpus), 0.0);
    std::vector<std::int32_t> counts(w.size(), 0);
    std::vector<std::vector<std::size_t>> slots_of(w.size());
    for (std::size_t s = 0; s < sol.expert.size(); ++s) {
        const std::int32_t e = sol.expert[s];
        load[s / per_gpu] += w[ix(e)] * sol.share[s];
        ++counts[ix(e)];
        slots_of[ix(e)].push_back(s);
    }
    std::vector<std::int32_t> by_load(ix(num_gpus));
    std::iota(by_load.begin(), by_load.end(), 0);
    std::stable_sort(by_load.begin(), by_load.end(),
                     [&](std::int32_t a, std::int32_t b) { return load[ix(a)] > load[ix(b)]; });
    std::vector<std::int32_t> by_pos(w.size());
    std::iota(by_pos.begin(), by_pos.end(), 0);
    std::stable_sort(by_pos.begin(), by_pos.end(),
                     [&](std::int32_t a, std::int32_t b) { return w[ix(a)] > w[ix(b)]; });
    auto weight = [&](std::int32_t e, std::int32_t f) {
        const double gap = w[ix(e)] - w[ix(f)];
        return gap * gap / (static_cast<double>(counts[ix(e)]) * counts[ix(f)]);
    };
    double largest = 0.0;
    for (std::int32_t p = 0; p < num_experts; ++p)
        for (std::int32_t q = std::max(0, p - reach); q < p; ++q)
            largest = std::max(largest, weight(by_pos[ix(q)], by_pos[ix(p)]));
    std::vector<double> moved(ix(num_gpus), 0.0);
    std::vector<std::uint8_t> touched(ix(num_gpus), 0);
    double sum = 0.0;
    std::int32_t num_pairs = 0;
    for (std::int32_t p = 0; p < num_experts; ++p)
        for (std::int32_t q = std::max(0, p - reach); q < p; ++q) {
            const std::int32_t e = by_pos[ix(q)], f = by_pos[ix(p)];
            if (largest <= 0.0 || weight(e, f) < min_pair * largest) continue;
            const double gap = w[ix(e)] - w[ix(f)];
            for (std::size_t s : slots_of[ix(e)])
                moved[s / per_gpu] -= gap * sol.share[s], touched[s / per_gpu] = 1;
            for (std::size_t s : slots_of[ix(f)])
                moved[s / per_gpu] += gap * sol.share[s], touched[s / per_gpu] = 1;
            double peak = 0.0;
            for (std::int32_t g : by_load)
                if (touched[ix(g)] == 0) {
                    peak = load[ix(g)];
                    break;
                }
            for (std::int32_t x : {e, f})
                for (std::size_t s : slots_of[ix(x)]) {
                    const std::size_t g = s / per_gpu;
                    peak = std::max(peak, load[g] + moved[g]);
                }
            for (std::int32_t x : {e, f})
                for (std::size_t s : slots_of[ix(x)]) moved[s / per_gpu] = 0.0, touched[s / per_gpu] = 0;
            sum += peak;
            ++num_pairs;
        }
    return num_pairs > 0 ? sum / num_pairs : 0.0;
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

std::vector<FlatSolution> improve_flat(std::span<const double> loads, std::int32_t num_gpus,
                                       std::span<const std::int32_t> start,
                                       std::span<const double> start_share, Split split,
                                       const FlatLimits& limits, std::span<const std::int32_t> budgets) {
    const auto slots_per_gpu = static_cast<std::int32_t>(start.size()) / num_gpus;
    FlatPlacer placer(loads, num_gpus, slots_per_gpu);
    placer.seed(start);
    std::vector<FlatSolution> out;
    std::int32_t done = 0;
    for (const std::int32_t budget : budgets) {
        DI_CHECK(budget >= done, "round budgets must not decrease: " << budget << " after " << done);
        while (done < budget && placer.improve_round()) ++done;
        done = budget;
        FlatSolution sol = placer.solution();
        if (!out.empty() && sol.expert == out.back().expert) break;  // the search stopped early
        if (split == Split::kWeighted) {
            if (start_share.size() == start.size()) {
                // Warm start: a slot whose expert did not move keeps its share, then each expert's
                // shares are scaled to sum to 1 (the water-filling then needs few sweeps).
                std::vector<double> sum(loads.size(), 0.0);
                for (std::size_t s = 0; s < sol.expert.size(); ++s) {
                    if (sol.expert[s] == start[s]) sol.share[s] = start_share[s];
                    sum[ix(sol.expert[s])] += sol.share[s];
                }
                for (std::size_t s = 0; s < sol.expert.size(); ++s)
                    if (sum[ix(sol.expert[s])] > 0.0) sol.share[s] /= sum[ix(sol.expert[s])];
            }
            water_fill(loads, num_gpus, sol, limits.max_split_sweeps, limits.split_spread);
        }
        out.push_back(std::move(sol));
    }
    return out;
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
    const bool weighted = split == Split::kWeighted;
    const bool hedge = limits.hedge_reach > 0;
    std::optional<FlatSolution> plain;  // the packed placement before hedging (weighted split)
    if (hedge && weighted) plain = placer.solution();
    if (hedge) {
        // Without slack (uniform split, placing for the given loads) few swaps keep the max, so the
        // search gets half the rounds.
        const bool slack = weighted || limits.drift_weight > 0.0;
        placer.hedge_search(limits.hedge_reach, limits.hedge_min_pair,
                            std::max(placer.max_load(), bound * (1.0 + (slack ? limits.hedge_slack : 0.0))),
                            slack ? limits.max_hedge_rounds : limits.max_hedge_rounds / 2);
    }
    FlatSolution packed = placer.solution();
    if (!weighted) return packed;
    water_fill(loads, num_gpus, packed, limits.max_split_sweeps, limits.split_spread);
    // Candidates are scored by their max GPU load, or with a drift weight b > 0 by
    // (1 - b) * max + b * mean max over single rank swaps (swap_stress).
    const double b = hedge ? limits.drift_weight : 0.0;
    auto score = [&](const FlatSolution& sol, double max_load) {
        return b > 0.0 ? (1.0 - b) * max_load +
                             b * swap_stress(loads, num_gpus, sol, limits.hedge_reach, limits.hedge_min_pair)
                       : max_load;
    };
    double packed_max = max_gpu_load(loads, num_gpus, packed);
    double packed_score = score(packed, packed_max);
    if (plain) {
        // Hedging must earn its place: the split may not flatten the hedged placement as well.
        water_fill(loads, num_gpus, *plain, limits.max_split_sweeps, limits.split_spread);
        const double plain_max = max_gpu_load(loads, num_gpus, *plain);
        const double plain_score = score(*plain, plain_max);
        if (plain_score < packed_score * (1.0 - 1e-9))
            packed = std::move(*plain), packed_max = plain_max, packed_score = plain_score;
    }
    if (packed_max <= bound * (1.0 + kGoodEnough)) return packed;
    // Far from the bound (skewed loads, few slots): the fill placement usually reaches it outright,
    // but its uneven pieces take load swaps badly, which the drift weight accounts for.
    auto filled = place_by_fill(loads, num_gpus, slots_per_gpu, bound, packed_max);
    if (!filled) return packed;
    water_fill(loads, num_gpus, *filled, limits.max_split_sweeps, limits.split_spread);
    const double filled_score = score(*filled, max_gpu_load(loads, num_gpus, *filled));
    return filled_score < packed_score ? *filled : packed;
}

}  // namespace deepinfer::eplb_detail
