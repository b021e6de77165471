// Fill placement for the weighted split (internal to the EPLB policy): McNaughton-style wrap-around
// with a slot budget per GPU, searched for the smallest feasible target load.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "policies/eplb/flat_placer.h"

namespace deepinfer::eplb_detail {

/// Places `loads` on G GPUs x S slots so that no GPU carries more than the smallest target in
/// [lower_bound, upper_bound] (bisection) for which the fill rule places every expert. Shares are the
/// pieces' fractions; slots left over hold zero-share replicas of the heaviest experts the GPU lacks.
/// nullopt when no target up to upper_bound works or the layer carries no load.
std::optional<FlatSolution> place_by_fill(std::span<const double> loads, std::int32_t num_gpus,
                                          std::int32_t slots_per_gpu, double lower_bound, double upper_bound);

}  // namespace deepinfer::eplb_detail
