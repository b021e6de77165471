// Fill placement for the weighted split: GPUs are filled one after another up to a target load T,
// each with a few whole light experts from the tail of the load order plus consecutive pieces of the
// heavy experts from its head (McNaughton's wrap-around rule with a slot budget per GPU). The smallest
// T that places everything is found by bisection.
#include "policies/eplb/fill_placer.h"

#include <algorithm>
#include <numeric>

namespace deepinfer::eplb_detail {
namespace {

using Index = std::size_t;
Index ix(std::int32_t v) { return static_cast<Index>(v); }

struct Piece {
    std::int32_t expert;
    double amount;
};

class Filler {
public:
    Filler(std::span<const double> w, std::int32_t num_gpus, std::int32_t slots)
        : w_(w), num_gpus_(num_gpus), slots_(slots), order_(w.size()) {
        std::iota(order_.begin(), order_.end(), 0);
        std::stable_sort(order_.begin(), order_.end(),
                         [&](std::int32_t a, std::int32_t b) { return w_[ix(a)] > w_[ix(b)]; });
        total_ = std::accumulate(w.begin(), w.end(), 0.0);
        eps_ = 1e-12 * std::max(total_, 1e-300);
    }

    /// Pieces per GPU when everything fits under `target`, else empty.
    std::vector<std::vector<Piece>> fill(double target) const;
    double total() const { return total_; }

private:
    double weight(std::int32_t pos) const { return w_[ix(order_[ix(pos)])]; }
    // Head pieces covering `cap` from (head, rem) without passing `last`; returns the piece count.
    std::int32_t head_pieces(double cap, std::int32_t head, double rem, std::int32_t last,
                             std::vector<Piece>* out, std::int32_t* new_head, double* new_rem) const;

    std::span<const double> w_;
    std::int32_t num_gpus_;
    std::int32_t slots_;
    std::vector<std::int32_t> order_;  // positions sorted by load, heaviest first
    double total_ = 0.0;
    double eps_ = 0.0;
};

std::int32_t Filler::head_pieces(double cap, std::int32_t head, double rem, std::int32_t last,
                                 std::vector<Piece>* out, std::int32_t* new_head, double* new_rem) const {
    std::int32_t pieces = 0;
    while (cap > eps_ && head <= last) {
        const double take = std::min(rem, cap);
        ++pieces;
        if (out != nullptr) out->push_back({order_[ix(head)], take});
        cap -= take;
        if (take >= rem - eps_) {
            ++head;
            rem = head <= last ? weight(head) : 0.0;
        } else {
            rem -= take;
        }
        if (pieces > slots_) break;
    }
    if (new_head != nullptr) *new_head = head, *new_rem = rem;
    return pieces;
}

// Each GPU takes as many whole light experts (from the tail) as leave room for the head pieces that
// fill it up to `target`; a GPU whose head pieces alone exceed its slots takes its slot count of
// head pieces. Only the expert being split continues on the next GPU, so no GPU holds an expert twice.
std::vector<std::vector<Piece>> Filler::fill(double target) const {
    std::vector<std::vector<Piece>> gpus(ix(num_gpus_));
    const auto n = static_cast<std::int32_t>(order_.size());
    std::int32_t head = 0, tail = n - 1;
    double rem = n > 0 ? weight(0) : 0.0;
    for (std::int32_t g = 0; g < num_gpus_ && head <= tail; ++g) {
        auto& out = gpus[ix(g)];
        std::int32_t chosen = -1;
        for (std::int32_t k = std::min(slots_ - 1, tail - head); k >= 0; --k) {
            double light = 0.0;
            for (std::int32_t i = 0; i < k; ++i) light += weight(tail - i);
            if (light > target) continue;
            if (k + head_pieces(target - light, head, rem, tail - k, nullptr, nullptr, nullptr) <= slots_) {
                chosen = k;
                break;
            }
        }
        if (chosen < 0) {  // even without light experts the head needs too many slots: cap by slots
            for (std::int32_t i = 0; i < slots_ && head <= tail; ++i) {
                out.push_back({order_[ix(head)], rem});
                ++head;
                rem = head <= tail ? weight(head) : 0.0;
            }
            continue;
        }
        double light = 0.0;
        for (std::int32_t i = 0; i < chosen; ++i) {
            out.push_back({order_[ix(tail)], weight(tail)});
            light += weight(tail);
            --tail;
        }
        head_pieces(target - light, head, rem, tail, &out, &head, &rem);
    }
    if (head <= tail) return {};
    return gpus;
}

}  // namespace

std::optional<FlatSolution> place_by_fill(std::span<const double> loads, std::int32_t num_gpus,
                                          std::int32_t slots_per_gpu, double lower_bound,
                                          double upper_bound) {
    Filler filler(loads, num_gpus, slots_per_gpu);
    if (filler.total() <= 0.0) return std::nullopt;
    std::vector<std::vector<Piece>> best;
    if (auto at_lb = filler.fill(lower_bound); !at_lb.empty()) {
        best = std::move(at_lb);
    } else {
        double lo = lower_bound, hi = upper_bound;
        for (int it = 0; it < 40 && hi - lo > 1e-7 * lower_bound; ++it) {
            const double mid = 0.5 * (lo + hi);
            auto attempt = filler.fill(mid);
            if (attempt.empty()) {
                lo = mid;
            } else {
                hi = mid;
                best = std::move(attempt);
            }
        }
        if (best.empty()) return std::nullopt;
    }
    // Slots: pieces first, then filler replicas (share 0) of the heaviest experts the GPU lacks, so
    // the water-filling step has room to move load.
    std::vector<std::int32_t> by_load(loads.size());
    std::iota(by_load.begin(), by_load.end(), 0);
    std::stable_sort(by_load.begin(), by_load.end(),
                     [&](std::int32_t a, std::int32_t b) { return loads[ix(a)] > loads[ix(b)]; });
    FlatSolution sol;
    sol.expert.reserve(ix(num_gpus * slots_per_gpu));
    sol.share.reserve(ix(num_gpus * slots_per_gpu));
    std::vector<std::uint8_t> held(loads.size());
    for (const auto& pieces : best) {
        std::fill(held.begin(), held.end(), 0);
        for (const auto& p : pieces) {
            held[ix(p.expert)] = 1;
            sol.expert.push_back(p.expert);
            sol.share.push_back(loads[ix(p.expert)] > 0.0 ? p.amount / loads[ix(p.expert)] : 1.0);
        }
        std::size_t next = 0;
        for (auto k = static_cast<std::int32_t>(pieces.size()); k < slots_per_gpu; ++k) {
            while (held[ix(by_load[next])] != 0) ++next;
            held[ix(by_load[next])] = 1;
            sol.expert.push_back(by_load[next]);
            sol.share.push_back(0.0);
        }
    }
    return sol;
}

}  // namespace deepinfer::eplb_detail
