// Move-aware re-placement: the per-layer choice between keeping, improving and replacing the slots.
#include "policies/eplb/move_aware.h"

#include <array>

#include "policies/common/check.h"
#include "policies/eplb/moves.h"

namespace deepinfer {
namespace {

/// Round budgets of the move-aware candidates of a layer (a round copies one or two replicas).
constexpr std::array<std::int32_t, 6> kRoundBudgets{1, 2, 4, 8, 16, 32};

}  // namespace

MoveAwareChoice choose_moves(const ExpertPlacement& current, const LoadMatrix& predicted,
                             const ExpertPlacement& fresh, std::span<const double> fresh_max,
                             const PlacementOptions& options, const MoveCost& cost,
                             const ParallelFor& parallel_for) {
    DI_CHECK(cost.enabled(), "choose_moves needs expert_bytes, copy_bytes_per_s and s_per_token > 0");
    DI_CHECK(fresh.layers.size() == current.layers.size() && fresh_max.size() == current.layers.size() &&
                 static_cast<std::size_t>(predicted.num_layers) == current.layers.size(),
             "choose_moves: " << current.layers.size() << " layers, fresh " << fresh.layers.size()
                              << ", loads " << predicted.num_layers);
    MoveAwareChoice out{.placement = fresh,
                        .kind = std::vector<LayerMove>(current.layers.size(), LayerMove::kNew),
                        .max_load = std::vector<double>(fresh_max.begin(), fresh_max.end())};
    auto choose_layer = [&](std::size_t l) {
        const auto w = predicted.layer(static_cast<std::int32_t>(l));
        const LayerPlacement& now = current.layers[l];
        const ExpertPlacement from{current.num_gpus, current.num_nodes, current.num_logical_experts, {now}};
        auto copy_s = [&](const LayerPlacement& to) {
            const ExpertPlacement b{current.num_gpus, current.num_nodes, current.num_logical_experts, {to}};
            return static_cast<double>(plan_moves(from, b, cost.expert_bytes).max_bytes_into_gpu) /
                   cost.copy_bytes_per_s;
        };
        LayerPlacement best = resplit_layer(now, w, options);
        double best_max = measure_balance(best, w, current.num_gpus).max_gpu_load;
        double best_value = -best_max * cost.s_per_token;
        LayerMove best_kind = LayerMove::kKept;
        auto consider = [&](LayerPlacement cand, double cand_max, LayerMove k) {
            const double value = -cand_max * cost.s_per_token - copy_s(cand);
            if (value > best_value) {
                best = std::move(cand);
                best_max = cand_max;
                best_value = value;
                best_kind = k;
            }
        };
        for (LayerPlacement& cand : improve_layer(now, w, options, kRoundBudgets)) {
            const double cand_max = measure_balance(cand, w, current.num_gpus).max_gpu_load;
            consider(std::move(cand), cand_max, LayerMove::kRounds);
        }
        consider(fresh.layers[l], fresh_max[l], LayerMove::kNew);
        out.placement.layers[l] = std::move(best);
        out.max_load[l] = best_max;
        out.kind[l] = best_kind;
    };
    if (parallel_for)
        parallel_for(current.layers.size(), choose_layer);
    else
        for (std::size_t l = 0; l < current.layers.size(); ++l) choose_layer(l);
    return out;
}

std::string_view name(LayerMove kind) {
    switch (kind) {
        case LayerMove::kKept:
            return "kept";
        case LayerMove::kRounds:
            return "rounds";
        case LayerMove::kNew:
            return "new";
    }
    return "unknown";
}

}  // namespace deepinfer
