// JSON for EPLB: the expert-load trace (input) and the placement (output), in the formats of
// DESIGN.md "Formats other tools rely on".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policies/common/json_reader.h"
#include "policies/eplb/placement.h"
#include "policies/eplb/rebalance.h"

namespace deepinfer {

/// `{"layers": L, "experts": E, "windows": [[[tokens per expert] per layer] per window]}`.
struct LoadTrace {
    std::int32_t num_layers = 0;
    std::int32_t num_experts = 0;
    /// One load matrix per window, in trace order (at least one).
    std::vector<LoadMatrix> windows;

    /// Element-wise sum of all windows.
    LoadMatrix total() const;
};

/// Reads a trace; every error is a TraceError naming the file and JSON pointer, e.g.
/// `t.json: /windows/0/3: expected 256 expert loads ("experts"), got 255`.
LoadTrace read_load_trace(const std::string& path);
LoadTrace parse_load_trace(const JsonReader& root);
nlohmann::json load_trace_to_json(const LoadTrace& trace);

/// `{"num_gpus": G, "num_nodes": N, "layers": [{"phy2log": [...], "replica_share": [...]}, ...]}`;
/// replica_share (optional, our extension) is written only when the layer has one.
nlohmann::json placement_to_json(const ExpertPlacement& placement);
/// Reads a placement (ConfigError naming file and pointer); the number of logical experts is the
/// largest id + 1 unless `num_experts` > 0. The result passes validate() or the read throws.
ExpertPlacement parse_placement(const JsonReader& root, std::int32_t num_experts = 0);
ExpertPlacement read_placement(const std::string& path, std::int32_t num_experts = 0);

}  // namespace deepinfer
