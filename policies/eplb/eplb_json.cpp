// Reading and writing EPLB load traces and placements.
#include "policies/eplb/eplb_json.h"

#include <algorithm>

namespace deepinfer {
namespace {

using Index = std::size_t;

// Reads one layer's expert loads; fast path on plain numbers, JsonReader for the error message.
void read_layer(const JsonReader& layer, std::int32_t num_experts, double* out) {
    if (!layer.is_array()) layer.fail("an array of " + std::to_string(num_experts) + " expert loads");
    const auto& arr = layer.json();
    if (arr.size() != static_cast<Index>(num_experts))
        layer.fail(std::to_string(num_experts) + " expert loads (\"experts\")", std::to_string(arr.size()));
    for (Index e = 0; e < arr.size(); ++e) {
        const auto& v = arr[e];
        if (v.is_number() && v.get<double>() >= 0.0)
            out[e] = v.get<double>();
        else
            out[e] = layer.at(e).as_double(NumRange::non_negative());
    }
}

}  // namespace

LoadMatrix LoadTrace::total() const {
    LoadMatrix out{.num_layers = num_layers, .num_experts = num_experts, .tokens = {}};
    out.tokens.assign(static_cast<Index>(num_layers) * static_cast<Index>(num_experts), 0.0);
    for (const auto& w : windows)
        for (Index i = 0; i < out.tokens.size(); ++i) out.tokens[i] += w.tokens[i];
    return out;
}

LoadTrace parse_load_trace(const JsonReader& root) {
    root.expect_object().allow_keys({"layers", "experts", "windows"});
    LoadTrace trace;
    trace.num_layers = static_cast<std::int32_t>(root.get_int("layers", NumRange::between(1, 1e6)));
    trace.num_experts = static_cast<std::int32_t>(root.get_int("experts", NumRange::between(1, 1e6)));
    const JsonReader windows = root.at("windows");
    if (!windows.is_array() || windows.size() == 0) windows.fail("a non-empty array of windows");
    for (Index w = 0; w < windows.size(); ++w) {
        const JsonReader win = windows.at(w);
        if (!win.is_array()) win.fail("an array of " + std::to_string(trace.num_layers) + " layers");
        if (win.size() != static_cast<Index>(trace.num_layers))
            win.fail(std::to_string(trace.num_layers) + " layers (\"layers\")", std::to_string(win.size()));
        LoadMatrix m{.num_layers = trace.num_layers, .num_experts = trace.num_experts, .tokens = {}};
        m.tokens.resize(static_cast<Index>(trace.num_layers) * static_cast<Index>(trace.num_experts));
        for (Index l = 0; l < win.size(); ++l)
            read_layer(win.at(l), trace.num_experts,
                       m.tokens.data() + l * static_cast<Index>(trace.num_experts));
        trace.windows.push_back(std::move(m));
    }
    return trace;
}

LoadTrace read_load_trace(const std::string& path) {
    return parse_load_trace(JsonReader::parse_file(path, JsonReader::ErrorKind::kTrace));
}

nlohmann::json load_trace_to_json(const LoadTrace& trace) {
    nlohmann::json windows = nlohmann::json::array();
    for (const auto& w : trace.windows) {
        nlohmann::json layers = nlohmann::json::array();
        for (std::int32_t l = 0; l < w.num_layers; ++l) {
            const auto row = w.layer(l);
            layers.push_back(std::vector<double>(row.begin(), row.end()));
        }
        windows.push_back(std::move(layers));
    }
    return {{"layers", trace.num_layers}, {"experts", trace.num_experts}, {"windows", std::move(windows)}};
}

nlohmann::json placement_to_json(const ExpertPlacement& placement) {
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& layer : placement.layers) {
        std::vector<std::int32_t> ids;
        ids.reserve(layer.phy2log.size());
        for (auto e : layer.phy2log) ids.push_back(e.value());
        nlohmann::json j{{"phy2log", ids}};
        if (!layer.replica_share.empty()) j["replica_share"] = layer.replica_share;
        layers.push_back(std::move(j));
    }
    return {
        {"num_gpus", placement.num_gpus}, {"num_nodes", placement.num_nodes}, {"layers", std::move(layers)}};
}

ExpertPlacement parse_placement(const JsonReader& root, std::int32_t num_experts) {
    root.expect_object().allow_keys({"num_gpus", "num_nodes", "layers"});
    ExpertPlacement p;
    p.num_gpus = static_cast<std::int32_t>(root.get_int("num_gpus", NumRange::between(1, 1e6)));
    p.num_nodes = static_cast<std::int32_t>(root.get_int("num_nodes", NumRange::between(1, 1e6)));
    const JsonReader layers = root.at("layers");
    if (!layers.is_array() || layers.size() == 0) layers.fail("a non-empty array of layers");
    std::int64_t max_id = -1;
    for (Index l = 0; l < layers.size(); ++l) {
        const JsonReader layer = layers.at(l);
        layer.expect_object().allow_keys({"phy2log", "replica_share"});
        LayerPlacement lp;
        for (auto id : layer.at("phy2log").as_int_vector(NumRange::between(0, 1e9))) {
            lp.phy2log.emplace_back(static_cast<std::int32_t>(id));
            max_id = std::max(max_id, id);
        }
        if (auto share = layer.find("replica_share"))
            lp.replica_share = share->as_double_vector(NumRange::unit());
        p.layers.push_back(std::move(lp));
    }
    p.num_logical_experts = num_experts > 0 ? num_experts : static_cast<std::int32_t>(max_id + 1);
    if (const auto err = p.validate(); !err.empty()) root.fail("a valid placement", err);
    return p;
}

ExpertPlacement read_placement(const std::string& path, std::int32_t num_experts) {
    return parse_placement(JsonReader::parse_file(path), num_experts);
}

}  // namespace deepinfer
