// Reading and writing profile files (profiles/SCHEMA.md).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "policies/cost/profile.h"

namespace deepinfer {
namespace {

constexpr int kSchemaVersion = 1;

bool is_known_group(const std::string& g) {
    return std::any_of(std::begin(kOpGroups), std::end(kOpGroups), [&](const char* k) { return g == k; });
}

/// Flattens nested arrays of numbers whose shape must equal `shape`.
void flatten_times(const JsonReader& r, const std::vector<std::size_t>& shape, std::size_t depth,
                   std::vector<double>& out) {
    if (r.size() != shape[depth])
        r.fail("an array of " + std::to_string(shape[depth]) + " (the grid size of axis " + std::to_string(depth) + ")");
    for (std::size_t i = 0; i < r.size(); ++i) {
        if (depth + 1 == shape.size())
            out.push_back(r.at(i).as_double(NumRange::non_negative()));
        else
            flatten_times(r.at(i).expect_array(), shape, depth + 1, out);
    }
}

nlohmann::json nest_times(const std::vector<double>& flat, const std::vector<std::size_t>& shape, std::size_t depth,
                          std::size_t& pos) {
    nlohmann::json arr = nlohmann::json::array();
    for (std::size_t i = 0; i < shape[depth]; ++i)
        arr.push_back(depth + 1 == shape.size() ? nlohmann::json(flat[pos++]) : nest_times(flat, shape, depth + 1, pos));
    return arr;
}

}  // namespace

const OpGroupProfile& ProfileSet::at(const std::string& op_group) const {
    auto it = groups.find(op_group);
    if (it == groups.end())
        throw ProfileError(name, "/" + op_group, "a profile for op group \"" + op_group + "\"", "none in this profile");
    return it->second;
}

OpGroupProfile op_group_profile_from_json(const JsonReader& r) {
    r.allow_keys({"schema_version", "op_group", "hardware", "kind", "method", "date", "build", "notes", "axes",
                  "time_us"});
    const auto version = r.get_int("schema_version");
    if (version != kSchemaVersion) r.at("schema_version").fail("schema_version " + std::to_string(kSchemaVersion));
    OpGroupProfile p;
    p.op_group = r.get_string("op_group");
    if (!is_known_group(p.op_group)) {
        std::string list;
        for (const char* g : kOpGroups) list += (list.empty() ? "" : ", ") + std::string(g);
        r.at("op_group").fail("one of " + list);
    }
    p.meta.hardware = r.get_string("hardware");
    p.meta.kind = r.at("kind").as_enum({"measured", "derived"});
    p.meta.method = r.get_string("method");
    p.meta.date = r.get_string("date");
    p.meta.build = r.get_string("build");
    p.meta.notes = r.get_string_or("notes", "");
    const JsonReader axes = r.at("axes").expect_array();
    if (axes.size() == 0 || axes.size() > 8) axes.fail("1 to 8 axes");
    std::vector<CurveAxis> curve_axes;
    std::vector<std::size_t> shape;
    for (std::size_t i = 0; i < axes.size(); ++i) {
        const JsonReader a = axes.at(i);
        a.allow_keys({"name", "values"});
        CurveAxis axis{.name = a.get_string("name"), .values = a.at("values").expect_array().as_double_vector()};
        if (axis.values.empty()) a.at("values").fail("a non-empty array");
        for (std::size_t k = 1; k < axis.values.size(); ++k)
            if (!(axis.values[k] > axis.values[k - 1])) a.at("values").at(k).fail("a value larger than the previous one");
        shape.push_back(axis.values.size());
        curve_axes.push_back(std::move(axis));
    }
    std::vector<double> times;
    flatten_times(r.at("time_us").expect_array(), shape, 0, times);
    p.curve = Curve(std::move(curve_axes), std::move(times));
    return p;
}

nlohmann::json op_group_profile_to_json(const OpGroupProfile& p) {
    nlohmann::json j;
    j["schema_version"] = kSchemaVersion;
    j["op_group"] = p.op_group;
    j["hardware"] = p.meta.hardware;
    j["kind"] = p.meta.kind;
    j["method"] = p.meta.method;
    j["date"] = p.meta.date;
    j["build"] = p.meta.build;
    if (!p.meta.notes.empty()) j["notes"] = p.meta.notes;
    std::vector<std::size_t> shape;
    nlohmann::json axes = nlohmann::json::array();
    for (const auto& a : p.curve.axes()) {
        axes.push_back({{"name", a.name}, {"values", a.values}});
        shape.push_back(a.values.size());
    }
    j["axes"] = axes;
    std::size_t pos = 0;
    j["time_us"] = nest_times(p.curve.time_us(), shape, 0, pos);
    return j;
}

ProfileSet load_profile_dir(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw ProfileError(dir, "not a profile directory (expected a folder of <op_group>.json)");
    ProfileSet set;
    set.name = fs::path(dir).filename().string();
    if (set.name.empty()) set.name = fs::path(dir).parent_path().filename().string();
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
        const JsonReader r = JsonReader::parse_file(f.string(), JsonReader::ErrorKind::kProfile);
        if (f.filename() == "profile.json") {
            r.allow_keys({"schema_version", "name", "description"});
            set.name = r.get_string("name");
            continue;
        }
        OpGroupProfile p = op_group_profile_from_json(r);
        if (p.op_group + ".json" != f.filename().string())
            r.at("op_group").fail("\"" + f.stem().string() + "\" (the file name)");
        set.groups.emplace(p.op_group, std::move(p));
    }
    if (set.groups.empty()) throw ProfileError(dir, "no op-group profiles (*.json) in this folder");
    return set;
}

void save_profile_dir(const ProfileSet& set, const std::string& dir) {
    namespace fs = std::filesystem;
    fs::create_directories(dir);
    auto write = [&](const fs::path& path, const nlohmann::json& j) {
        std::ofstream out(path);
        if (!out) throw std::runtime_error(path.string() + ": cannot write");
        out << dump_pretty(j);
    };
    write(fs::path(dir) / "profile.json", {{"schema_version", kSchemaVersion}, {"name", set.name}});
    for (const auto& [group, p] : set.groups) write(fs::path(dir) / (group + ".json"), op_group_profile_to_json(p));
}

}  // namespace deepinfer
