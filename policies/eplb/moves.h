// Moves between two expert placements: the expert weights to copy (bytes, source and target GPU) so
// the engine can apply a re-placement and the simulator can charge its copy time.
#pragma once

#include <cstdint>
#include <vector>

#include "policies/eplb/placement.h"

namespace deepinfer {

/// One expert weight copy into a physical slot. Sources refer to the *previous* placement (the engine
/// keeps the old weights readable until every copy of the re-placement is done).
struct ExpertMove {
    std::int32_t layer = 0;
    LogicalExpertId expert{0};
    GpuRank src_gpu{0};
    GpuRank dst_gpu{0};
    PhysicalSlotId dst_slot{0};
    std::int64_t bytes = 0;
};

struct MovePlan {
    std::vector<ExpertMove> moves;
    std::int64_t total_bytes = 0;
    /// Largest byte count any single GPU receives (copy time ~ this / per-GPU copy bandwidth).
    std::int64_t max_bytes_into_gpu = 0;
    /// Largest byte count any single GPU sends.
    std::int64_t max_bytes_out_of_gpu = 0;

    bool empty() const { return moves.empty(); }
};

/// `next` relabelled to need fewer copies from `prev`: per layer, GPUs are permuted within their node
/// so that each new GPU's experts land on the old GPU that shares the most of them (greedy), then the
/// slots of each GPU are reordered so that an expert the GPU already held keeps its old slot. Whole
/// GPUs move with their slots and shares, so every GPU's and node's load, and so the balance, is
/// unchanged.
ExpertPlacement align_to_previous(const ExpertPlacement& prev, ExpertPlacement next);

/// The copies that turn `prev` into `next`: one per slot whose expert changes. The source is the
/// destination GPU itself when it held the expert, else a GPU of the same node, else the lowest rank
/// (ties: lowest rank). Both placements must have the same shape. `expert_bytes`: weight bytes of one
/// expert replica.
MovePlan plan_moves(const ExpertPlacement& prev, const ExpertPlacement& next, std::int64_t expert_bytes);

/// `prev` with every move applied to phy2log (replica shares are not part of a move; copy them from
/// the new placement).
ExpertPlacement apply_moves(const ExpertPlacement& prev, const MovePlan& plan);

}  // namespace deepinfer
