// Hardware profiles: per operation group, a time curve over a grid, with where it came from.
// File format: profiles/SCHEMA.md.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "policies/common/json_reader.h"
#include "policies/cost/curve.h"

namespace deepinfer {

/// The operation groups a step is composed of (SCHEMA.md lists the axes of each).
inline constexpr const char* kOpGroups[] = {"dense",          "attention_swa", "attention_csa", "attention_hca",
                                            "moe_experts",    "sampling",      "ep_dispatch_combine"};

struct ProfileMeta {
    std::string hardware;
    /// "measured" (by the DeepInfer profiler on `hardware`) or "derived" (computed or scaled).
    std::string kind;
    /// How the numbers were produced, e.g. "roofline", "cuda-events", "scaled-from:h200".
    std::string method;
    std::string date;
    std::string build;
    std::string notes;
};

struct OpGroupProfile {
    std::string op_group;
    ProfileMeta meta;
    Curve curve;
};

/// A profile: one curve per op group for one piece of hardware. `name` identifies it in reports.
struct ProfileSet {
    std::string name;
    std::map<std::string, OpGroupProfile> groups;

    bool has(const std::string& op_group) const { return groups.count(op_group) != 0; }
    /// Throws ProfileError naming the profile when the group is missing.
    const OpGroupProfile& at(const std::string& op_group) const;
};

/// Parses one op-group profile document (SCHEMA.md). Errors are ProfileError naming file and field.
OpGroupProfile op_group_profile_from_json(const JsonReader& r);
/// Serialises an op-group profile in the SCHEMA.md format.
nlohmann::json op_group_profile_to_json(const OpGroupProfile& p);

/// Loads every `*.json` in `dir` as an op-group profile; the set's name is the directory's last
/// component unless a `profile.json` manifest says otherwise. Throws ProfileError.
ProfileSet load_profile_dir(const std::string& dir);
/// Writes each group as `<dir>/<op_group>.json` plus `profile.json` (the manifest with the name).
void save_profile_dir(const ProfileSet& set, const std::string& dir);

}  // namespace deepinfer
