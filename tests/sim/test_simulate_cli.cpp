// End-to-end `deepinfer simulate` runs (each in its own process: SimGrid allows one engine per
// process): determinism, the golden small scenario, and one-line errors for bad configs.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <unistd.h>

#include "policies/common/json_reader.h"

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// Runs the CLI; returns its exit code, stdout+stderr in `output`.
int run_cli(const std::string& args, std::string& output) {
    // NOTE: one log per process: ctest runs test cases in parallel processes.
    const fs::path log = fs::temp_directory_path() / ("deepinfer_sim_cli." + std::to_string(getpid()) + ".log");
    const std::string cmd =
        std::string(DEEPINFER_CLI) + " simulate " + args + " --no-progress > " + log.string() + " 2>&1";
    const int rc = std::system(cmd.c_str());
    output = slurp(log);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/// summary.json without its wall-clock block, pretty-printed.
std::string deterministic_summary(const fs::path& dir) {
    nlohmann::json s = nlohmann::json::parse(slurp(dir / "summary.json"));
    s.erase("wall");
    return deepinfer::dump_pretty(s);
}

const fs::path kSource = DEEPINFER_SOURCE_DIR;
const fs::path kSmall = kSource / "tests/golden/sim/small_config.json";

}  // namespace

TEST_CASE("simulate: the same config and seed give byte-identical summary and per-request CSV",
          "[sim][cli]") {
    const fs::path a = fs::temp_directory_path() / "deepinfer_sim_det_a";
    const fs::path b = fs::temp_directory_path() / "deepinfer_sim_det_b";
    std::string out;
    REQUIRE(run_cli("--config " + kSmall.string() + " --out " + a.string(), out) == 0);
    REQUIRE(run_cli("--config " + kSmall.string() + " --out " + b.string(), out) == 0);
    CHECK(deterministic_summary(a) == deterministic_summary(b));
    CHECK(slurp(a / "requests.csv") == slurp(b / "requests.csv"));
    // A different seed changes the traffic.
    const fs::path c = fs::temp_directory_path() / "deepinfer_sim_det_c";
    REQUIRE(run_cli("--config " + kSmall.string() + " --seed 8 --out " + c.string(), out) == 0);
    CHECK(slurp(a / "requests.csv") != slurp(c / "requests.csv"));
}

TEST_CASE("simulate: the small scenario matches its golden files", "[sim][cli][golden]") {
    const fs::path dir = fs::temp_directory_path() / "deepinfer_sim_golden";
    std::string out;
    REQUIRE(run_cli("--config " + kSmall.string() + " --out " + dir.string(), out) == 0);
    const fs::path golden_summary = kSource / "tests/golden/sim/small_summary.json";
    const fs::path golden_csv = kSource / "tests/golden/sim/small_requests.csv";
    if (const char* u = std::getenv("DEEPINFER_UPDATE_GOLDEN"); u != nullptr && std::string(u) == "1") {
        std::ofstream(golden_summary, std::ios::binary) << deterministic_summary(dir);
        std::ofstream(golden_csv, std::ios::binary) << slurp(dir / "requests.csv");
    }
    CHECK(deterministic_summary(dir) == slurp(golden_summary));
    CHECK(slurp(dir / "requests.csv") == slurp(golden_csv));
}

TEST_CASE("simulate: a finished run accounts for every request and names its profile", "[sim][cli]") {
    const fs::path dir = fs::temp_directory_path() / "deepinfer_sim_accounting";
    std::string out;
    REQUIRE(run_cli("--config " + kSmall.string() + " --set workload.duration_s=10 --out " + dir.string(),
                    out) == 0);
    const auto s = nlohmann::json::parse(slurp(dir / "summary.json"));
    CHECK(s["requests_arrived"].get<int>() > 0);
    CHECK(s["requests_completed"].get<int>() + s["requests_rejected"].get<int>() +
              s["requests_unfinished"].get<int>() ==
          s["requests_arrived"].get<int>());
    CHECK(s["profile"]["name"] == "h200-roofline");
    CHECK(s["prefix_cache_hit_rate"].is_null());
    CHECK(s["ttft_s"]["p50"].get<double>() > 0);
    CHECK(s["ttft_s"]["p50"].get<double>() <= s["ttft_s"]["p99"].get<double>());
    const auto eff = nlohmann::json::parse(slurp(dir / "effective_config.json"));
    CHECK(eff["workload"]["duration_s"].get<double>() == 10.0);
    CHECK(out.find("TTFT") != std::string::npos);
}

TEST_CASE("simulate: bad configs fail with one line naming file and field", "[sim][cli]") {
    const fs::path dir = fs::temp_directory_path() / "deepinfer_sim_bad";
    std::string out;
    SECTION("unknown key") {
        CHECK(run_cli("--config " + kSmall.string() + " --set decode.ep_sizee=64 --out " + dir.string(),
                      out) == 1);
        CHECK(out.find("small_config.json: /decode") != std::string::npos);
        CHECK(out.find("ep_sizee") != std::string::npos);
    }
    SECTION("EP not dividing the experts") {
        CHECK(run_cli("--config " + kSmall.string() +
                          " --set decode.ep_size=48 --set decode.gpus_per_instance=48 --out " + dir.string(),
                      out) == 1);
        CHECK(out.find("/decode/ep_size") != std::string::npos);
    }
    SECTION("missing profile") {
        CHECK(run_cli("--config " + kSmall.string() + " --set profile=no-such-profile --out " + dir.string(),
                      out) == 1);
        CHECK(out.find("no-such-profile") != std::string::npos);
    }
    CHECK(std::count(out.begin(), out.end(), '\n') == 1);
}
