// `deepinfer eplb`: expert placement from a load trace. Writes the placement JSON and prints per-layer
// and mean max/mean GPU load, the provable lower bound and the run time; --replay measures predictors.
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "engine/cli/commands.h"
#include "policies/common/check.h"
#include "policies/common/json_reader.h"
#include "policies/eplb/eplb_json.h"
#include "policies/eplb/move_aware.h"
#include "policies/eplb/moves.h"
#include "policies/eplb/predictor.h"
#include "policies/eplb/rebalance.h"

namespace deepinfer::cli {
namespace {

namespace po = boost::program_options;

// Drift weight when placing for the next period: validated on fresh draws of the drifting traces of
// experiments/04_eplb_vs_deepseek (not on the compared trace itself).
constexpr double kNextPeriodDriftWeight = 0.3;

struct EplbArgs {
    std::string trace;
    std::string out;
    std::string split = "weighted";
    std::string predict = "sum";
    double alpha = 0.5;
    double beta = 0.2;
    bool hierarchical = false;
    bool replay = false;
    double drift_weight = -1.0;
    PlacementOptions options;
    // Re-placement from the placement in force (--from) and the cost rule's inputs.
    std::string from;
    std::int64_t expert_bytes = 0;
    double copy_gbps = 0.0;
    double s_per_token = 0.0;
    std::int64_t period_steps = 0;
};

double mean_of(const std::vector<LayerBalance>& layers, bool bound) {
    double sum = 0.0;
    for (const auto& l : layers) sum += bound ? l.bound_imbalance() : l.imbalance();
    return layers.empty() ? 1.0 : sum / static_cast<double>(layers.size());
}

LoadMatrix predicted_loads(const LoadTrace& trace, const EplbArgs& a) {
    if (a.predict == "sum") return trace.total();
    LoadPredictor predictor({.kind = parse_predictor_kind(a.predict), .alpha = a.alpha, .beta = a.beta});
    for (const auto& w : trace.windows) predictor.observe(w);
    return predictor.predict();
}

// For every window t >= 1: place from a prediction made on windows < t, measure on window t.
void replay(const LoadTrace& trace, const EplbArgs& a) {
    std::printf("replay: realised mean max/mean GPU load on windows 1..%zu, placing from earlier windows\n",
                trace.windows.size() - 1);
    struct Row {
        std::string name;
        PredictorConfig config;
    };
    const std::vector<Row> rows = {
        {"last", {.kind = PredictorKind::kLastWindow, .alpha = 1.0, .beta = a.beta}},
        {"ema", {.kind = PredictorKind::kEma, .alpha = a.alpha, .beta = a.beta}},
        {"holt", {.kind = PredictorKind::kHolt, .alpha = a.alpha, .beta = a.beta}}};
    PlacementOptions next_period = a.options, own_loads = a.options;
    if (a.drift_weight < 0.0) next_period.drift_weight = kNextPeriodDriftWeight, own_loads.drift_weight = 0.0;
    for (const auto& row : rows) {
        LoadPredictor predictor(row.config);
        double sum = 0.0;
        for (std::size_t t = 1; t < trace.windows.size(); ++t) {
            predictor.observe(trace.windows[t - 1]);
            const auto placed = compute_placement(predictor.predict(), next_period);
            double layer_sum = 0.0;
            for (std::int32_t l = 0; l < trace.num_layers; ++l)
                layer_sum += measure_balance(placed.placement.layers[static_cast<std::size_t>(l)],
                                             trace.windows[t].layer(l), a.options.num_gpus)
                                 .imbalance();
            sum += layer_sum / trace.num_layers;
        }
        std::printf("  %-6s %.4f\n", row.name.c_str(), sum / static_cast<double>(trace.windows.size() - 1));
    }
    double oracle = 0.0;
    for (std::size_t t = 1; t < trace.windows.size(); ++t)
        oracle += mean_of(compute_placement(trace.windows[t], own_loads).layers, false);
    std::printf("  %-6s %.4f   (placed from the window itself)\n", "oracle",
                oracle / static_cast<double>(trace.windows.size() - 1));
}

/// The placement in force, checked against the trace and the options.
ExpertPlacement read_current(const EplbArgs& a, const LoadTrace& trace) {
    ExpertPlacement p = read_placement(a.from, trace.num_experts);
    auto mismatch = [&](const std::string& field, std::int64_t want, std::int64_t got) {
        if (want != got)
            throw ConfigError(a.from, field, std::to_string(want) + " (as the trace and options say)",
                              std::to_string(got));
    };
    mismatch("/layers", trace.num_layers, static_cast<std::int64_t>(p.layers.size()));
    mismatch("/num_gpus", a.options.num_gpus, p.num_gpus);
    mismatch("/num_nodes", a.options.num_nodes, p.num_nodes);
    mismatch("slots per GPU (--redundant)", a.options.slots_per_gpu(trace.num_experts), p.slots_per_gpu());
    return p;
}

int run(const EplbArgs& a) {
    const LoadTrace trace = read_load_trace(a.trace);
    const std::optional<ExpertPlacement> current =
        a.from.empty() ? std::nullopt : std::optional<ExpertPlacement>(read_current(a, trace));
    const MoveCost cost{.expert_bytes = a.expert_bytes,
                        .copy_bytes_per_s = a.copy_gbps * 1e9,
                        .s_per_token = a.s_per_token * static_cast<double>(a.period_steps)};
    const auto t0 = std::chrono::steady_clock::now();
    const LoadMatrix loads = predicted_loads(trace, a);
    PlacementResult result = compute_placement(loads, a.options);
    std::vector<LayerMove> kind;
    if (current) {
        // From the placement in force: the new one aligned to it (fewest copies), then per layer the
        // cheapest candidate net of its copies when the copy cost is given (the WindowBalancer's rule).
        result.placement = align_to_previous(*current, std::move(result.placement));
        if (cost.enabled()) {
            std::vector<double> fresh_max;
            for (const LayerBalance& b : result.layers) fresh_max.push_back(b.max_gpu_load);
            MoveAwareChoice choice =
                choose_moves(*current, loads, result.placement, fresh_max, a.options, cost);
            result.placement = std::move(choice.placement);
            kind = std::move(choice.kind);
            for (std::size_t l = 0; l < result.layers.size(); ++l)
                result.layers[l] =
                    measure_balance(result.placement.layers[l], loads.layer(static_cast<std::int32_t>(l)),
                                    a.options.num_gpus);
        }
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    DI_CHECK(result.placement.validate().empty(), result.placement.validate());
    std::printf("eplb: %d layers x %d experts on %d GPUs (%d nodes), %d slots per GPU, split %s%s\n",
                trace.num_layers, trace.num_experts, a.options.num_gpus, a.options.num_nodes,
                a.options.slots_per_gpu(trace.num_experts), a.split.c_str(),
                a.hierarchical ? ", node-first" : "");
    std::printf("%-6s %10s %12s %14s %14s%s\n", "layer", "max/mean", "bound/mean", "max_tokens",
                "mean_tokens", current ? "  from_max/mean  move" : "");
    double gain_tokens = 0.0;
    for (std::size_t l = 0; l < result.layers.size(); ++l) {
        const auto& b = result.layers[l];
        std::printf("%-6zu %10.5f %12.5f %14.1f %14.1f", l, b.imbalance(), b.bound_imbalance(),
                    b.max_gpu_load, b.mean_gpu_load);
        if (current) {
            const LayerBalance from = measure_balance(
                current->layers[l], loads.layer(static_cast<std::int32_t>(l)), a.options.num_gpus);
            gain_tokens += from.max_gpu_load - b.max_gpu_load;
            std::printf("  %13.5f  %s", from.imbalance(),
                        kind.empty() ? "new" : std::string(name(kind[l])).c_str());
        }
        std::printf("\n");
    }
    std::printf("mean   %10.5f %12.5f\n", mean_of(result.layers, false), mean_of(result.layers, true));
    ExpertPlacement written = result.placement;
    if (current) {
        const MovePlan moves = plan_moves(*current, result.placement, a.expert_bytes);
        std::printf("copies: %zu replicas", moves.moves.size());
        if (a.expert_bytes > 0)
            std::printf(", %.3f GB, at most %.3f GB into one GPU",
                        static_cast<double>(moves.total_bytes) * 1e-9,
                        static_cast<double>(moves.max_bytes_into_gpu) * 1e-9);
        std::printf("\n");
        if (cost.enabled()) {
            const double gain_s = gain_tokens * cost.s_per_token;
            const double cost_s = static_cast<double>(moves.max_bytes_into_gpu) / cost.copy_bytes_per_s;
            const bool pays = !(gain_s < cost_s);
            std::printf("gain %.6f s over %lld steps against %.6f s of copies: %s\n", gain_s,
                        static_cast<long long>(a.period_steps), cost_s,
                        !pays           ? "keep the placement in force (written unchanged)"
                        : moves.empty() ? "no copies, only the router split changes"
                                        : "re-place");
            if (!pays) written = *current;
        }
    }
    if (!a.out.empty()) {
        std::ofstream f(a.out);
        if (!f) throw ConfigError(a.out, "cannot open for writing");
        f << dump_pretty(placement_to_json(written));
    }
    std::printf("run time: %.1f ms\n", ms);
    if (a.replay && trace.windows.size() > 1) replay(trace, a);
    return 0;
}

}  // namespace

int run_eplb(const Args& args) {
    EplbArgs a;
    po::options_description desc("deepinfer eplb options");
    desc.add_options()("help,h", "this help")("trace", po::value(&a.trace)->required(),
                                              "expert load trace JSON (DESIGN.md format)")(
        "gpus", po::value(&a.options.num_gpus)->required(), "GPUs (expert-parallel width)")(
        "nodes", po::value(&a.options.num_nodes)->default_value(1), "nodes; must divide --gpus")(
        "redundant", po::value(&a.options.redundant_per_gpu)->default_value(0),
        "redundant expert slots per GPU")(
        "groups", po::value(&a.options.num_groups)->default_value(0),
        "expert groups; > 0 asks for node-first placement (groups packed onto nodes)")(
        "hierarchical", po::bool_switch(&a.hierarchical),
        "node-first placement (one group per expert without --groups)")(
        "split", po::value(&a.split)->default_value("weighted"),
        "router split: weighted (per-replica shares) or uniform (1/replicas)")(
        "spread", po::value(&a.options.split_spread)->default_value(0.0),
        "weighted split: weight of spreading each expert over its replicas (robustness to drift)")(
        "hedge-reach", po::value(&a.options.hedge_reach)->default_value(a.options.hedge_reach),
        "hedging: rank neighbours whose load an expert may take (0 = off)")(
        "hedge-slack", po::value(&a.options.hedge_slack)->default_value(a.options.hedge_slack),
        "hedging may raise a GPU's load to lower bound * (1 + slack)")(
        "drift-weight", po::value(&a.drift_weight)->default_value(-1.0),
        "robustness to drift in [0, 1]: weight of the mean max GPU load over single rank swaps against the "
        "max on the given loads when choosing among placements; -1 = auto (0.3 with --predict "
        "last/ema/holt, placing for the next period; 0 with sum)")(
        "hedge-min-pair", po::value(&a.options.hedge_min_pair)->default_value(a.options.hedge_min_pair),
        "hedging ignores pairs below this fraction of the largest risk weight")(
        "hedge-rounds", po::value(&a.options.max_hedge_rounds)->default_value(a.options.max_hedge_rounds),
        "hedging: improving swaps per layer")("predict", po::value(&a.predict)->default_value("sum"),
                                              "loads to place for: sum (all windows), last, ema, holt")(
        "alpha", po::value(&a.alpha)->default_value(0.5), "ema/holt weight of the newest window")(
        "beta", po::value(&a.beta)->default_value(0.2), "holt weight of the newest trend")(
        "replay", po::bool_switch(&a.replay),
        "also measure predictors: place from windows < t, measure on t")("out", po::value(&a.out),
                                                                         "write the placement JSON here")(
        "from", po::value(&a.from),
        "the placement in force (JSON): the new one is aligned to it and its copies reported")(
        "expert-bytes", po::value(&a.expert_bytes)->default_value(0),
        "weight bytes of one expert replica in one layer (copies' size)")(
        "copy-GBps", po::value(&a.copy_gbps)->default_value(0.0), "GB/s one GPU receives while copying")(
        "s-per-token", po::value(&a.s_per_token)->default_value(0.0),
        "seconds of MoE time per token on a GPU in one layer")(
        "period-steps", po::value(&a.period_steps)->default_value(0),
        "steps until the next re-placement; with --from and the three above, each layer keeps its slots, "
        "takes a few move-aware rounds or the new placement, whichever saves most net of its copies");
    po::variables_map vm;
    try {
        po::store(po::command_line_parser(args).options(desc).run(), vm);
        if (vm.count("help") != 0) {
            std::cout
                << "usage: deepinfer eplb --trace T.json --gpus G [--nodes N] [--redundant R] [--groups K] "
                   "[--out P.json] [--from P.json [--expert-bytes B --copy-GBps X --s-per-token S "
                   "--period-steps N]]\n"
                << desc;
            return 0;
        }
        po::notify(vm);
    } catch (const po::error& e) {
        throw ConfigError("command line", e.what());
    }
    if (a.split != "weighted" && a.split != "uniform")
        throw ConfigError("command line", "--split", "weighted or uniform", "\"" + a.split + "\"");
    if (a.predict != "sum") parse_predictor_kind(a.predict);
    if (a.expert_bytes < 0)
        throw ConfigError("command line", "--expert-bytes", ">= 0", std::to_string(a.expert_bytes));
    if (!(a.copy_gbps >= 0.0))
        throw ConfigError("command line", "--copy-GBps", ">= 0", std::to_string(a.copy_gbps));
    if (!(a.s_per_token >= 0.0))
        throw ConfigError("command line", "--s-per-token", ">= 0", std::to_string(a.s_per_token));
    if (a.period_steps < 0)
        throw ConfigError("command line", "--period-steps", ">= 0", std::to_string(a.period_steps));
    const bool any_cost = a.copy_gbps > 0.0 || a.s_per_token > 0.0 || a.period_steps > 0;
    const bool all_cost =
        a.expert_bytes > 0 && a.copy_gbps > 0.0 && a.s_per_token > 0.0 && a.period_steps > 0;
    if (any_cost && !all_cost)
        throw ConfigError("command line", "--copy-GBps",
                          "--expert-bytes, --copy-GBps, --s-per-token and --period-steps all > 0 together",
                          "only some of them");
    if (any_cost && a.from.empty())
        throw ConfigError("command line", "--from", "the placement in force, for the copy cost", "none");
    a.options.split = a.split == "weighted" ? SplitMode::kWeighted : SplitMode::kUniform;
    // Placing for the next period (a predictor) weighs robustness to drift; placing for the trace's
    // own loads (sum) does not.
    a.options.drift_weight =
        a.drift_weight >= 0.0 ? a.drift_weight : (a.predict == "sum" ? 0.0 : kNextPeriodDriftWeight);
    a.hierarchical = a.hierarchical || a.options.num_groups > 0;
    a.options.hierarchical = a.hierarchical;
    return run(a);
}

}  // namespace deepinfer::cli
