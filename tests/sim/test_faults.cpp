// Fault injection end to end (each run in its own `deepinfer simulate` process: one SimGrid engine per
// process): no request lost when components recover, honest counters, determinism, bad fault configs.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "policies/common/json_reader.h"
#include "tests/support/cli_runner.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// Runs `deepinfer simulate ARGS --no-progress`; returns its exit code, stdout+stderr in `output`.
int run_cli(const std::string& args, std::string& output) {
    const auto r = deepinfer::testing::run_deepinfer("simulate " + args + " --no-progress");
    output = r.output;
    return r.status;
}

fs::path temp_dir(const std::string& name) {
    return fs::temp_directory_path() / ("deepinfer_faults_" + name + "." + std::to_string(getpid()));
}

json summary(const fs::path& dir) { return json::parse(deepinfer::testing::read_file(dir / "summary.json")); }

const fs::path kSource = DEEPINFER_SOURCE_DIR;
// small_full (2 prefill instances × 8, one EP16 decode instance) with longer outputs, a 4-node
// erasure-coded (3+1) store, and five faults: prefill GPU at 6 s (4 s repair), decode GPU at 9 s
// (2 s), a prefill NIC at 4 s (6 s), store nodes 1 and 2 at 12 and 13 s (5 s each).
const fs::path kFaults = kSource / "tests/golden/sim/faults_config.json";

/// The fault config with `faults` replaced, in the temp folder (profile path made absolute).
fs::path config_with_faults(const std::string& name, const json& faults) {
    json c = json::parse(deepinfer::testing::read_file(kFaults));
    c["faults"] = faults;
    c["profile"] = (kSource / "profiles/h200-roofline").string();
    const fs::path p =
        fs::temp_directory_path() / ("deepinfer_faults_" + name + "." + std::to_string(getpid()) + ".json");
    std::ofstream(p) << c.dump(2);
    return p;
}

}  // namespace

TEST_CASE("faults: GPU, link and store-node failures that recover lose no request", "[sim][faults]") {
    const fs::path dir = temp_dir("recover");
    std::string out;
    REQUIRE(run_cli("--config " + kFaults.string() + " --out " + dir.string(), out) == 0);
    const json s = summary(dir);
    INFO(s.dump(2));
    const json& f = s["faults"];
    // Every arrived request completes.
    CHECK(s["requests_arrived"].get<int>() > 100);
    CHECK(s["requests_completed"] == s["requests_arrived"]);
    CHECK(s["requests_unfinished"] == 0);
    CHECK(f["injected"] == 5);
    CHECK(f["repaired"] == 5);
    CHECK(f["requests_failed"] == 0);
    // The decode instance (the only one) held running sequences: they were prefilled again.
    CHECK(f["requests_reprefilled"].get<int>() > 0);
    CHECK(f["requests_affected"].get<int>() >= f["requests_reprefilled"].get<int>());
    CHECK(f["tokens_recomputed"].get<double>() > 0);
    // Two of four 3+1 store nodes down at once: the stored blocks are lost.
    CHECK(f["store_blocks_lost"].get<int>() > 0);
    // Instance downtime: 4 s (prefill 0) + 2 s (decode 0).
    CHECK(f["instance_down_s"].get<double>() == Approx(6.0));
    // The per-request CSV marks the moved requests.
    const std::string csv = deepinfer::testing::read_file(dir / "requests.csv");
    CHECK(csv.find(",completed,1,") != std::string::npos);
}

TEST_CASE("faults: the same config and seed give byte-identical results with faults", "[sim][faults]") {
    const fs::path a = temp_dir("det_a"), b = temp_dir("det_b");
    std::string out;
    REQUIRE(run_cli("--config " + kFaults.string() + " --out " + a.string(), out) == 0);
    REQUIRE(run_cli("--config " + kFaults.string() + " --out " + b.string(), out) == 0);
    json sa = summary(a), sb = summary(b);
    sa.erase("wall");
    sb.erase("wall");
    CHECK(sa.dump() == sb.dump());
    CHECK(deepinfer::testing::read_file(a / "requests.csv") ==
          deepinfer::testing::read_file(b / "requests.csv"));
}

TEST_CASE("faults: a decode GPU that never recovers leaves requests failed, counted", "[sim][faults]") {
    // One decode instance only: with it down for good nothing can finish decoding.
    const fs::path dir = temp_dir("permanent");
    std::string out;
    REQUIRE(run_cli("--config " + kFaults.string() +
                        " --set faults.1.recovers=false --set workload.drain_limit_s=5" + " --out " +
                        dir.string(),
                    out) == 0);
    const json s = summary(dir);
    const json& f = s["faults"];
    CHECK(f["repaired"] == 4);
    CHECK(f["requests_failed"].get<int>() > 0);
    CHECK(f["requests_failed"] == s["requests_unfinished"]);
    CHECK(s["requests_completed"].get<int>() + s["requests_unfinished"].get<int>() == s["requests_arrived"]);
}

TEST_CASE("faults: a config without faults reports no faults block", "[sim][faults]") {
    const fs::path dir = temp_dir("none");
    std::string out;
    const fs::path p = config_with_faults("none", json::array());
    const int rc = run_cli("--config " + p.string() + " --out " + dir.string(), out);
    fs::remove(p);
    REQUIRE(rc == 0);
    const json s = summary(dir);
    CHECK_FALSE(s.contains("faults"));
    CHECK(s["requests_completed"] == s["requests_arrived"]);
}

TEST_CASE("faults: bad fault configs fail with one line naming file and field", "[sim][faults]") {
    const fs::path dir = temp_dir("bad");
    std::string out;
    auto run_bad = [&](const std::string& name, const json& fault) {
        const fs::path p = config_with_faults(name, json::array({fault}));
        const int rc = run_cli("--config " + p.string() + " --out " + dir.string(), out);
        fs::remove(p);
        CHECK(rc == 1);
        CHECK(out.find(p.filename().string()) != std::string::npos);
        CHECK(std::count(out.begin(), out.end(), '\n') == 1);
    };
    SECTION("unknown kind") {
        run_bad("kind", {{"kind", "switch"}, {"at_s", 1}});
        CHECK(out.find("/faults/0/kind") != std::string::npos);
    }
    SECTION("negative time") {
        run_bad("time", {{"kind", "gpu"}, {"at_s", -1}});
        CHECK(out.find("/faults/0/at_s") != std::string::npos);
    }
    SECTION("unknown instance") {
        run_bad("instance", {{"kind", "gpu"}, {"at_s", 1}, {"role", "decode"}, {"instance", 1}});
        CHECK(out.find("/faults/0/instance") != std::string::npos);
    }
    SECTION("unknown GPU") {
        run_bad("gpu", {{"kind", "link"}, {"at_s", 1}, {"role", "prefill"}, {"gpu", 8}});
        CHECK(out.find("/faults/0/gpu") != std::string::npos);
    }
    SECTION("unknown store node") {
        run_bad("node", {{"kind", "store_node"}, {"at_s", 1}, {"node", 4}});
        CHECK(out.find("/faults/0/node") != std::string::npos);
    }
    SECTION("unknown key") {
        run_bad("key", {{"kind", "gpu"}, {"at_s", 1}, {"instanse", 0}});
        CHECK(out.find("instanse") != std::string::npos);
    }
}
