// `deepinfer eplb` end to end: trace file in, placement file out, the printed balance, node-first
// placement, determinism, and one-line errors naming the file and field for bad traces and options.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "policies/eplb/eplb_json.h"
#include "policies/eplb/moves.h"
#include "policies/eplb/rebalance.h"
#include "tests/support/cli_runner.h"

using namespace deepinfer;

namespace {

namespace fs = std::filesystem;

using testing::CliResult;
using Result = CliResult;

CliResult run_cli(const std::string& args) { return testing::run_deepinfer(args); }

/// A scratch folder for one test, removed at the end.
struct Scratch {
    fs::path dir;
    Scratch() {
        dir = fs::temp_directory_path() / ("deepinfer_eplb_cli_" + std::to_string(::getpid()));
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    ~Scratch() { fs::remove_all(dir); }
    std::string write(const std::string& name, const std::string& text) const {
        const auto path = (dir / name).string();
        std::ofstream(path) << text;
        return path;
    }
    std::string path(const std::string& name) const { return (dir / name).string(); }
};

std::string slurp(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// 2 layers x 8 experts, two windows: one hot expert that moves, and a ramp that reverses.
const char* kTrace = R"({"layers": 2, "experts": 8, "windows": [
  [[90, 5, 5, 5, 5, 5, 5, 5], [1, 2, 3, 4, 5, 6, 7, 8]],
  [[5, 90, 5, 5, 5, 5, 5, 5], [8, 7, 6, 5, 4, 3, 2, 1]]]})";

/// The value printed after `label` at the start of a line (e.g. the "mean" row's first column).
double printed_after(const std::string& output, const std::string& label) {
    std::istringstream in(output);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(label, 0) == 0) return std::stod(line.substr(label.size()));
    FAIL("no line starting with \"" << label << "\" in:\n" << output);
    return 0.0;
}

}  // namespace

TEST_CASE("eplb CLI: writes a valid placement and prints per-layer balance, bound and run time",
          "[cli][eplb]") {
    Scratch s;
    const auto trace = s.write("t.json", kTrace);
    const Result r = run_cli("eplb --trace " + trace + " --gpus 4 --redundant 1 --out " + s.path("p.json"));
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK(r.output.find("2 layers x 8 experts on 4 GPUs (1 nodes), 3 slots per GPU") != std::string::npos);
    CHECK(r.output.find("bound/mean") != std::string::npos);
    CHECK(r.output.find("run time: ") != std::string::npos);

    const ExpertPlacement p = read_placement(s.path("p.json"), 8);
    CHECK(p.validate().empty());  // every expert placed, no duplicate replica on a GPU, shares sum to 1
    CHECK(p.num_gpus == 4);
    CHECK(p.slots_per_gpu() == 3);
    REQUIRE(p.layers.size() == 2);
    for (const auto& layer : p.layers) {
        const auto counts = replica_counts(layer, 8);
        for (std::int32_t c : counts) CHECK(c >= 1);
    }
    // The printed mean max/mean is the balance of the written placement on the summed windows.
    const LoadMatrix total = read_load_trace(trace).total();
    double sum = 0.0;
    for (std::int32_t l = 0; l < 2; ++l)
        sum += measure_balance(p.layers[static_cast<std::size_t>(l)], total.layer(l), 4).imbalance();
    CHECK(printed_after(r.output, "mean") == Approx(sum / 2.0).epsilon(1e-4));
    for (const char* row : {"0 ", "1 "}) {  // one line per layer, max/mean first
        CHECK(printed_after(r.output, row) >= 1.0);
        CHECK(printed_after(r.output, row) <= 2.0);
    }
}

TEST_CASE("eplb CLI: the same trace and options give the same placement file", "[cli][eplb]") {
    Scratch s;
    const auto trace = s.write("t.json", kTrace);
    for (const char* split : {"weighted", "uniform"}) {
        const std::string args =
            "eplb --trace " + trace + " --gpus 4 --redundant 2 --split " + split + " --predict ema --out ";
        REQUIRE(run_cli(args + s.path("a.json")).status == 0);
        REQUIRE(run_cli(args + s.path("b.json")).status == 0);
        CHECK(slurp(s.path("a.json")) == slurp(s.path("b.json")));
    }
}

TEST_CASE("eplb CLI: node-first placement keeps every replica on its group's node", "[cli][eplb]") {
    Scratch s;
    const auto trace = s.write("t.json", kTrace);
    const Result r = run_cli("eplb --trace " + trace + " --gpus 4 --nodes 2 --groups 4 --redundant 1 --out " +
                             s.path("p.json"));
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK(r.output.find("node-first") != std::string::npos);
    const ExpertPlacement p = read_placement(s.path("p.json"), 8);
    REQUIRE(p.validate().empty());
    const std::int32_t slots_per_node = 2 * p.slots_per_gpu();
    for (const auto& layer : p.layers) {
        std::set<std::pair<std::int32_t, std::int32_t>> group_node;  // (group of 2 experts, node)
        for (std::size_t slot = 0; slot < layer.phy2log.size(); ++slot)
            group_node.emplace(layer.phy2log[slot].value() / 2,
                               static_cast<std::int32_t>(slot) / slots_per_node);
        CHECK(group_node.size() == 4);  // each of the 4 groups on exactly one node
    }
}

TEST_CASE("eplb CLI: --replay measures the predictors on later windows", "[cli][eplb]") {
    Scratch s;
    const Result r =
        run_cli("eplb --trace " + s.write("t.json", kTrace) + " --gpus 4 --redundant 1 --replay");
    INFO(r.output);
    REQUIRE(r.status == 0);
    for (const char* row : {"  last ", "  ema ", "  holt ", "  oracle "})
        CHECK(r.output.find(row) != std::string::npos);
}

TEST_CASE("eplb CLI: bad traces fail with one line naming the file and the field", "[cli][eplb]") {
    Scratch s;
    const auto short_row = s.write(
        "short.json", R"({"layers": 2, "experts": 8, "windows": [[[1, 2, 3], [1, 2, 3, 4, 5, 6, 7, 8]]]})");
    Result r = run_cli("eplb --trace " + short_row + " --gpus 4");
    CHECK(r.status == 1);
    CHECK(r.output == "deepinfer eplb: error: " + short_row +
                          ": /windows/0/0: expected 8 expert loads (\"experts\"), got 3\n");

    const auto negative = s.write("neg.json", R"({"layers": 1, "experts": 2, "windows": [[[1, -2]]]})");
    r = run_cli("eplb --trace " + negative + " --gpus 2");
    CHECK(r.status == 1);
    CHECK(r.output.rfind("deepinfer eplb: error: " + negative + ": /windows/0/0/1: expected", 0) == 0);

    const auto extra =
        s.write("extra.json", R"({"layers": 1, "experts": 2, "windows": [[[1, 2]]], "steps": 3})");
    r = run_cli("eplb --trace " + extra + " --gpus 2");
    CHECK(r.status == 1);
    CHECK(r.output.find(extra) != std::string::npos);
    CHECK(r.output.find("steps") != std::string::npos);

    r = run_cli("eplb --trace " + s.path("missing.json") + " --gpus 2");
    CHECK(r.status == 1);
    CHECK(r.output.find("missing.json") != std::string::npos);
}

TEST_CASE("eplb CLI: bad options fail with one line naming the option", "[cli][eplb]") {
    Scratch s;
    const auto trace = s.write("t.json", kTrace);
    Result r = run_cli("eplb --trace " + trace + " --gpus 3");
    CHECK(r.status == 1);
    CHECK(r.output ==
          "deepinfer eplb: error: eplb options: num_gpus: expected a positive divisor of the 8 "
          "experts, got 3\n");
    r = run_cli("eplb --trace " + trace + " --gpus 4 --split even");
    CHECK(r.status == 1);
    CHECK(r.output ==
          "deepinfer eplb: error: command line: --split: expected weighted or uniform, got \"even\"\n");
    r = run_cli("eplb --trace " + trace + " --gpus 4 --nodes 3");
    CHECK(r.status == 1);
    CHECK(r.output.find("num_nodes") != std::string::npos);
    r = run_cli("eplb --trace " + trace + " --gpus 4 --redundant 7");
    CHECK(r.status == 1);
    CHECK(r.output.find("redundant_per_gpu") != std::string::npos);
    r = run_cli("eplb --gpus 4");
    CHECK(r.status == 1);
    CHECK(r.output.find("--trace") != std::string::npos);
}

TEST_CASE("eplb CLI: --from weighs each layer's copies against its gain", "[cli][eplb]") {
    // Place for the trace, then the loads drift (another hot expert): from the placement in force,
    // dear copies keep every layer's slots (only the router split changes); cheap ones take a few
    // move-aware rounds, reported with their copies and the gain.
    Scratch s;
    const auto trace = s.write("t.json", kTrace);
    REQUIRE(run_cli("eplb --trace " + trace + " --gpus 4 --redundant 1 --out " + s.path("p0.json")).status ==
            0);
    const auto drifted = s.write("d.json", R"({"layers": 2, "experts": 8, "windows": [
      [[5, 5, 5, 90, 5, 5, 5, 5], [8, 1, 1, 1, 1, 1, 1, 8]]]})");
    const std::string base = "eplb --trace " + drifted + " --gpus 4 --redundant 1 --from " +
                             s.path("p0.json") +
                             " --expert-bytes 1000000000 --copy-GBps 50 --period-steps 10000";
    const ExpertPlacement p0 = read_placement(s.path("p0.json"), 8);

    const Result dear = run_cli(base + " --s-per-token 1e-9 --out " + s.path("dear.json"));
    INFO(dear.output);
    REQUIRE(dear.status == 0);
    CHECK(dear.output.find("from_max/mean  move") != std::string::npos);
    CHECK(dear.output.find("kept") != std::string::npos);
    CHECK(dear.output.find("copies: 0 replicas") != std::string::npos);
    const ExpertPlacement kept = read_placement(s.path("dear.json"), 8);
    REQUIRE(kept.validate().empty());
    for (std::size_t l = 0; l < 2; ++l) CHECK(kept.layers[l].phy2log == p0.layers[l].phy2log);

    const Result cheap = run_cli(base + " --s-per-token 1e-6 --out " + s.path("cheap.json"));
    INFO(cheap.output);
    REQUIRE(cheap.status == 0);
    CHECK(cheap.output.find("rounds") != std::string::npos);
    CHECK(cheap.output.find(": re-place") != std::string::npos);
    const ExpertPlacement moved = read_placement(s.path("cheap.json"), 8);
    REQUIRE(moved.validate().empty());
    const MovePlan plan = plan_moves(p0, moved, 1'000'000'000);
    CHECK(cheap.output.find("copies: " + std::to_string(plan.moves.size()) + " replicas") !=
          std::string::npos);
    CHECK_FALSE(plan.moves.empty());
    // The written placement is better balanced on the drifted loads than the one in force.
    const LoadMatrix w = read_load_trace(drifted).total();
    for (std::int32_t l = 0; l < 2; ++l)
        CHECK(measure_balance(moved.layers[static_cast<std::size_t>(l)], w.layer(l), 4).max_gpu_load <
              measure_balance(p0.layers[static_cast<std::size_t>(l)], w.layer(l), 4).max_gpu_load);
}

TEST_CASE("eplb CLI: --from and copy-cost mistakes fail with one line naming the file or option",
          "[cli][eplb]") {
    Scratch s;
    const auto trace = s.write("t.json", kTrace);
    REQUIRE(run_cli("eplb --trace " + trace + " --gpus 4 --redundant 1 --out " + s.path("p0.json")).status ==
            0);
    const Result gpus = run_cli("eplb --trace " + trace + " --gpus 8 --from " + s.path("p0.json"));
    CHECK(gpus.status != 0);
    CHECK(gpus.output.find("p0.json: /num_gpus: expected 8") != std::string::npos);
    const Result partial = run_cli("eplb --trace " + trace + " --gpus 4 --redundant 1 --from " +
                                   s.path("p0.json") + " --copy-GBps 50");
    CHECK(partial.status != 0);
    CHECK(partial.output.find("--period-steps all > 0 together") != std::string::npos);
    const Result no_from = run_cli("eplb --trace " + trace +
                                   " --gpus 4 --redundant 1 --expert-bytes 1 --copy-GBps 50 --s-per-token 1 "
                                   "--period-steps 1");
    CHECK(no_from.status != 0);
    CHECK(no_from.output.find("--from: expected the placement in force") != std::string::npos);
    for (const Result& r : {gpus, partial, no_from})
        CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
}
