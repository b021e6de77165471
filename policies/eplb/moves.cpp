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

}  // namespace

ExpertPlacement align_to_previous(const ExpertPlacement& prev, ExpertPlacement next) {
    check_same_shape(prev, next);
    const Index per_gpu = ix(next.slots_per_gpu());
    for (Index l = 0; l < next.layers.size(); ++l) {
        auto& layer = next.layers[l];
        const auto& old = prev.layers[l].phy2log;
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
