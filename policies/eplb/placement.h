// ExpertPlacement: which logical expert each physical expert slot holds, per MoE layer. Plain data,
// written by the EPLB policy, applied by executors (CUDA: weight copies; sim: routing model).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policies/common/ids.h"

namespace deepinfer {

struct LayerPlacement {
    /// For every physical slot in GPU-major order (slots of GPU 0 first) the logical expert it holds.
    std::vector<LogicalExpertId> phy2log;
    /// Optional router split, one entry per physical slot: the fraction of its expert's tokens that
    /// slot serves (the entries of one expert sum to 1). Empty means uniform: 1 / replica count.
    std::vector<double> replica_share;

    bool operator==(const LayerPlacement&) const = default;
};

struct ExpertPlacement {
    std::int32_t num_gpus = 0;
    std::int32_t num_nodes = 1;
    std::int32_t num_logical_experts = 0;
    std::vector<LayerPlacement> layers;

    std::int32_t num_slots() const {
        return layers.empty() ? 0 : static_cast<std::int32_t>(layers.front().phy2log.size());
    }
    std::int32_t slots_per_gpu() const { return num_gpus == 0 ? 0 : num_slots() / num_gpus; }
    GpuRank gpu_of(PhysicalSlotId slot) const { return GpuRank(slot.value() / slots_per_gpu()); }

    /// Empty string when valid, else the first violation: unequal layer sizes, slots not divisible
    /// by GPUs, an expert id out of range, a logical expert without a replica, two replicas of an
    /// expert on one GPU, or a replica_share of the wrong size, negative, or not summing to 1.
    std::string validate() const;
};

/// The identity placement without redundancy: expert e on GPU e / (E / G). E must divide by G.
ExpertPlacement make_identity_placement(std::int32_t num_layers, std::int32_t num_experts,
                                        std::int32_t num_gpus, std::int32_t num_nodes = 1);

}  // namespace deepinfer
