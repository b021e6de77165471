// Placement diff: slot alignment that keeps experts in place, and the list of weight copies.
#include "policies/eplb/moves.h"

#include <algorithm>

#include "policies/common/check.h"

namespace deepinfer {
namespace {

using Index = std::size_t;
Index ix(std::int32_t v) { return static_cast<Index>(v); }

void check_same_shape(const ExpertPlacement& a, const ExpertPlacement& b) {
    DI_CHECK(a.num_gpus == b.num_gpus && a.num_nodes == b.num_nodes && a.layers.size() == b.layers.size() &&
                 a.num_slots() == b.num_slots() && a.num_logical_experts == b.num_logical_experts,
             "placements differ in shape");
}

/// Relabels `layer`'s GPUs within each node so that each new GPU takes the place of the old GPU it
/// shares the most experts with (greedy over pairs by overlap, then lower new and old rank). Whole
/// GPUs move, slots and shares together, so every GPU's and node's load is unchanged.
void relabel_gpus(const LayerPlacement& old, LayerPlacement& layer, Index num_gpus, Index num_nodes,
                  Index per_gpu) {
    if (num_nodes == 0 || num_gpus % num_nodes != 0) return;
    const Index per_node = num_gpus / num_nodes;
    std::vector<std::vector<Index>> old_gpus_of;
    for (Index slot = 0; slot < old.phy2log.size(); ++slot) {
        const auto e = static_cast<Index>(old.phy2log[slot].value());
        if (e >= old_gpus_of.size()) old_gpus_of.resize(e + 1);
        old_gpus_of[e].push_back(slot / per_gpu);
    }
    std::vector<Index> target(num_gpus, num_gpus);  // new GPU -> its old label
    for (Index node = 0; node < num_nodes; ++node) {
        const Index first = node * per_node;
        std::vector<std::int32_t> overlap(per_node * per_node, 0);  // [new - first][old - first]
        for (Index a = first; a < first + per_node; ++a)
            for (Index k = 0; k < per_gpu; ++k) {
                const auto e = static_cast<Index>(layer.phy2log[a * per_gpu + k].value());
                if (e >= old_gpus_of.size()) continue;
                for (const Index b : old_gpus_of[e])
                    if (b >= first && b < first + per_node) ++overlap[(a - first) * per_node + (b - first)];
            }
        struct Pair {
            std::int32_t common;
            Index a, b;
        };
        std::vector<Pair> pairs;
        for (Index a = 0; a < per_node; ++a)
            for (Index b = 0; b < per_node; ++b)
                if (overlap[a * per_node + b] > 0) pairs.push_back({overlap[a * per_node + b], a, b});
        std::sort(pairs.begin(), pairs.end(), [](const Pair& x, const Pair& y) {
            if (x.common != y.common) return x.common > y.common;
            return x.a != y.a ? x.a < y.a : x.b < y.b;
        });
        std::vector<bool> old_taken(per_node, false);
        for (const Pair& p : pairs)
            if (target[first + p.a] == num_gpus && !old_taken[p.b]) {
                target[first + p.a] = first + p.b;
                old_taken[p.b] = true;
            }
        Index free_b = 0;
        for (Index a = 0; a < per_node; ++a) {
            if (target[first + a] != num_gpus) continue;
            while (old_taken[free_b]) ++free_b;
            target[first + a] = first + free_b;
            old_taken[free_b] = true;
        }
    }
    LayerPlacement moved = layer;
    const bool has_share = !layer.replica_share.empty();
    for (Index a = 0; a < num_gpus; ++a)
        for (Index k = 0; k < per_gpu; ++k) {
            moved.phy2log[target[a] * per_gpu + k] = layer.phy2log[a * per_gpu + k];
            if (has_share)
                moved.replica_share[target[a] * per_gpu + k] = layer.replica_share[a * per_gpu + k];
        }
    layer = std::move(moved);
}

}  // namespace

ExpertPlacement align_to_previous(const ExpertPlacement& prev, ExpertPlacement next) {
    check_same_shape(prev, next);
    const Index per_gpu = ix(next.slots_per_gpu());
    for (Index l = 0; l < next.layers.size(); ++l) {
        auto& layer = next.layers[l];
        const auto& old = prev.layers[l].phy2log;
        relabel_gpus(prev.layers[l], layer, ix(next.num_gpus), ix(std::max(next.num_nodes, 1)), per_gpu);
        const bool has_share = !layer.replica_share.empty();
        for (Index g = 0; g < ix(next.num_gpus); ++g) {
            const Index base = g * per_gpu;
            std::vector<LogicalExpertId> experts(
                layer.phy2log.begin() + static_cast<std::ptrdiff_t>(base),
                layer.phy2log.begin() + static_cast<std::ptrdiff_t>(base + per_gpu));
            std::vector<double> shares(per_gpu, 0.0);
            if (has_share)
                std::copy_n(layer.replica_share.begin() + static_cast<std::ptrdiff_t>(base), per_gpu,
                            shares.begin());
            std::vector<bool> used(per_gpu, false), filled(per_gpu, false);
            // First keep every expert that sat on this GPU before in its old slot.
            for (Index k = 0; k < per_gpu; ++k)
                for (Index j = 0; j < per_gpu; ++j)
                    if (!used[j] && experts[j] == old[base + k]) {
                        layer.phy2log[base + k] = experts[j];
                        if (has_share) layer.replica_share[base + k] = shares[j];
                        used[j] = filled[k] = true;
                        break;
                    }
            // Then the newcomers, in their order, into the freed slots.
            Index j = 0;
            for (Index k = 0; k < per_gpu; ++k) {
                if (filled[k]) continue;
                while (used[j]) ++j;
                layer.phy2log[base + k] = experts[j];
                if (has_share) layer.replica_share[base + k] = shares[j];
                used[j] = true;
            }
        }
    }
    return next;
}

MovePlan plan_moves(const ExpertPlacement& prev, const ExpertPlacement& next, std::int64_t expert_bytes) {
    check_same_shape(prev, next);
    const std::int32_t per_gpu = next.slots_per_gpu();
    const std::int32_t gpus_per_node = next.num_gpus / next.num_nodes;
    MovePlan plan;
    std::vector<std::int64_t> in(ix(next.num_gpus), 0), out(ix(next.num_gpus), 0);
    for (Index l = 0; l < next.layers.size(); ++l) {
        const auto& old = prev.layers[l].phy2log;
        const auto& now = next.layers[l].phy2log;
        std::vector<std::vector<std::int32_t>> old_gpus(ix(prev.num_logical_experts));
        for (Index t = 0; t < old.size(); ++t)
            old_gpus[ix(old[t].value())].push_back(static_cast<std::int32_t>(t) / per_gpu);
        for (Index s = 0; s < now.size(); ++s) {
            if (now[s] == old[s]) continue;
            const std::int32_t dst = static_cast<std::int32_t>(s) / per_gpu;
            std::int32_t src = -1;
            for (const std::int32_t g : old_gpus[ix(now[s].value())]) {
                const auto rank = [&](std::int32_t x) {
                    return x == dst ? 0 : (x / gpus_per_node == dst / gpus_per_node ? 1 : 2);
                };
                if (src < 0 || rank(g) < rank(src)) src = g;
            }
            DI_CHECK(src >= 0,
                     "layer " << l << ": expert " << now[s] << " has no replica in the previous placement");
            plan.moves.push_back({.layer = static_cast<std::int32_t>(l),
                                  .expert = now[s],
                                  .src_gpu = GpuRank(src),
                                  .dst_gpu = GpuRank(dst),
                                  .dst_slot = PhysicalSlotId(static_cast<std::int32_t>(s)),
                                  .bytes = expert_bytes});
            plan.total_bytes += expert_bytes;
            if (src != dst) in[ix(dst)] += expert_bytes, out[ix(src)] += expert_bytes;
        }
    }
    plan.max_bytes_into_gpu = in.empty() ? 0 : *std::max_element(in.begin(), in.end());
    plan.max_bytes_out_of_gpu = out.empty() ? 0 : *std::max_element(out.begin(), out.end());
    return plan;
}

ExpertPlacement apply_moves(const ExpertPlacement& prev, const MovePlan& plan) {
    ExpertPlacement out = prev;
    for (const auto& m : plan.moves) {
        DI_CHECK(m.layer >= 0 && ix(m.layer) < out.layers.size(), "move names layer " << m.layer);
        auto& slots = out.layers[ix(m.layer)].phy2log;
        DI_CHECK(m.dst_slot.value() >= 0 && ix(m.dst_slot.value()) < slots.size(),
                 "move names slot " << m.dst_slot);
        slots[ix(m.dst_slot.value())] = m.expert;
    }
    return out;
}

}  // namespace deepinfer
