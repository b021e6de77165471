// End-to-end `deepinfer simulate` runs (each in its own process: SimGrid allows one engine per
// process): determinism, the golden small scenario, and one-line errors for bad configs.
#include <unistd.h>

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

namespace {

/// Runs `deepinfer simulate ARGS --no-progress`; returns its exit code, stdout+stderr in `output`.
int run_cli(const std::string& args, std::string& output) {
    const auto r = deepinfer::testing::run_deepinfer("simulate " + args + " --no-progress");
    output = r.output;
    return r.status;
}

/// summary.json without its wall-clock block, pretty-printed.
std::string deterministic_summary(const fs::path& dir) {
    nlohmann::json s = nlohmann::json::parse(deepinfer::testing::read_file(dir / "summary.json"));
    s.erase("wall");
    return deepinfer::dump_pretty(s);
}

const fs::path kSource = DEEPINFER_SOURCE_DIR;
const fs::path kSmall = kSource / "tests/golden/sim/small_config.json";

/// summary.json of a run of `config` with `overrides` (`--set ...` arguments), into a temp folder
/// named after `tag`.
nlohmann::json run_summary(const fs::path& config, const std::string& overrides, const std::string& tag) {
    const fs::path dir = fs::temp_directory_path() / ("deepinfer_sim_" + tag);
    std::string out;
    REQUIRE(run_cli("--config " + config.string() + " " + overrides + " --out " + dir.string(), out) == 0);
    return nlohmann::json::parse(deepinfer::testing::read_file(dir / "summary.json"));
}

}  // namespace

TEST_CASE("simulate: the same config and seed give byte-identical summary and per-request CSV",
          "[sim][cli]") {
    const fs::path a = fs::temp_directory_path() / "deepinfer_sim_det_a";
    const fs::path b = fs::temp_directory_path() / "deepinfer_sim_det_b";
    std::string out;
    REQUIRE(run_cli("--config " + kSmall.string() + " --out " + a.string(), out) == 0);
    REQUIRE(run_cli("--config " + kSmall.string() + " --out " + b.string(), out) == 0);
    CHECK(deterministic_summary(a) == deterministic_summary(b));
    CHECK(deepinfer::testing::read_file(a / "requests.csv") ==
          deepinfer::testing::read_file(b / "requests.csv"));
    // A different seed changes the traffic.
    const fs::path c = fs::temp_directory_path() / "deepinfer_sim_det_c";
    REQUIRE(run_cli("--config " + kSmall.string() + " --seed 8 --out " + c.string(), out) == 0);
    CHECK(deepinfer::testing::read_file(a / "requests.csv") !=
          deepinfer::testing::read_file(c / "requests.csv"));
}

TEST_CASE("simulate: the small scenarios match their golden files", "[sim][cli][golden]") {
    // small: SimpleScheduler everywhere; small_full: one policies Scheduler per DP rank, prefix cache
    // with the shared store, DSpark dynamic verification on decode.
    for (const std::string name : {"small", "small_full"}) {
        const fs::path dir = fs::temp_directory_path() / ("deepinfer_sim_golden_" + name);
        std::string out;
        const fs::path config = kSource / ("tests/golden/sim/" + name + "_config.json");
        REQUIRE(run_cli("--config " + config.string() + " --out " + dir.string(), out) == 0);
        const fs::path golden_summary = kSource / ("tests/golden/sim/" + name + "_summary.json");
        const fs::path golden_csv = kSource / ("tests/golden/sim/" + name + "_requests.csv");
        if (const char* u = std::getenv("DEEPINFER_UPDATE_GOLDEN"); u != nullptr && std::string(u) == "1") {
            std::ofstream(golden_summary, std::ios::binary) << deterministic_summary(dir);
            std::ofstream(golden_csv, std::ios::binary)
                << deepinfer::testing::read_file(dir / "requests.csv");
        }
        INFO(name);
        CHECK(deterministic_summary(dir) == deepinfer::testing::read_file(golden_summary));
        CHECK(deepinfer::testing::read_file(dir / "requests.csv") ==
              deepinfer::testing::read_file(golden_csv));
    }
}

TEST_CASE(
    "simulate: the full scheduler run is deterministic for any thread count, caches agent turns and "
    "verifies drafts",
    "[sim][cli]") {
    const fs::path full = kSource / "tests/golden/sim/small_full_config.json";
    const fs::path a = fs::temp_directory_path() / "deepinfer_sim_full_a";
    const fs::path b = fs::temp_directory_path() / "deepinfer_sim_full_b";
    std::string out;
    // The decode ranks plan on worker threads: the thread count does not change the results.
    REQUIRE(run_cli("--config " + full.string() + " --threads 3 --out " + a.string(), out) == 0);
    REQUIRE(run_cli("--config " + full.string() + " --threads 1 --out " + b.string(), out) == 0);
    CHECK(deterministic_summary(a) == deterministic_summary(b));
    CHECK(deepinfer::testing::read_file(a / "requests.csv") ==
          deepinfer::testing::read_file(b / "requests.csv"));
    const auto s = nlohmann::json::parse(deepinfer::testing::read_file(a / "summary.json"));
    CHECK(s["requests_completed"].get<int>() == s["requests_arrived"].get<int>());
    // Agent turns resend their history: most of their prompt comes from the cache.
    const double agent = s["prefix_cache"]["hit_rate"]["agent"].get<double>();
    CHECK(agent > 0.5);
    CHECK(agent <= 1.0);
    CHECK(s["prefix_cache"]["prefill_throughput_gain"].get<double>() > 1.0);
    // Dynamic verification verifies at most the 5 drafts; the accepted length is 1 + accepted drafts.
    const double verified = s["speculative"]["verified_drafts_per_seq_step"].get<double>();
    const double accepted_length = s["speculative"]["accepted_length"].get<double>();
    CHECK(verified > 0);
    CHECK(verified <= 5.0);
    CHECK(accepted_length > 1.0);
    CHECK(accepted_length <= 1.0 + verified);
}

TEST_CASE("simulate: expert-parallel traffic runs over the scale-up links (or the profile's curve)",
          "[sim][cli]") {
    // The small scenario with a given scale-up bandwidth and EP traffic mode; returns decode TPOT p50.
    auto tpot_p50 = [](const std::string& mode, const std::string& bandwidth_GBps) {
        return run_summary(kSmall,
                           "--set workload.duration_s=8 --set platform.scale_up.bandwidth_GBps=" +
                               bandwidth_GBps + " --set platform.scale_up.ep_traffic=" + mode,
                           "ep_" + mode + "_" + bandwidth_GBps)["tpot_s"]["p50"]
            .get<double>();
    };
    const double simgrid_fast = tpot_p50("simgrid", "900");
    const double simgrid_slow = tpot_p50("simgrid", "0.2");
    const double profile_fast = tpot_p50("profile", "900");
    const double profile_slow = tpot_p50("profile", "0.2");
    // At the datasheet bandwidth the SimGrid transfer and the roofline curve agree to within a
    // quarter of a step; a 0.2 GB/s scale-up domain slows decode only when the traffic is simulated.
    CHECK(simgrid_fast / profile_fast == Approx(1.0).margin(0.25));
    CHECK(simgrid_slow > 2 * simgrid_fast);
    CHECK(profile_slow == profile_fast);
}

TEST_CASE("simulate: EPLB re-placements copy expert weights over the scale-up links first", "[sim][cli]") {
    // Decode EPLB every 200 steps; the balancer's cost rule weighs the copy (bytes into one GPU over the
    // scale-up bandwidth) against the balance gained.
    auto run = [](const std::string& bandwidth_GBps) {
        return run_summary(kSmall,
                           "--set workload.duration_s=8 --set workload.traffic.0.rate_per_s=40"
                           " --set decode.eplb=window --set decode.eplb_window_steps=50"
                           " --set decode.eplb_period_steps=200 --set platform.scale_up.bandwidth_GBps=" +
                               bandwidth_GBps,
                           "moves_" + bandwidth_GBps);
    };
    const auto fast = run("100000");
    CHECK(fast["eplb_replacements"].get<int>() >= 1);
    CHECK(fast["eplb_moves"]["applied"] == fast["eplb_replacements"]);
    CHECK(fast["eplb_moves"]["copied_GB"].get<double>() > 1.0);
    CHECK(fast["eplb_moves"]["mean_copy_s"].get<double>() > 0.0);
    const auto& layers = fast["eplb_moves"]["layers"];
    CHECK(layers["new"].get<int>() + layers["swapped"].get<int>() > 0);
    // Over a 1 GB/s domain the copy would take longer than any gain: every expert keeps its slot and
    // re-placements only re-balance the router split, which copies nothing.
    const auto slow = run("1");
    CHECK(slow["eplb_moves"]["applied"] == slow["eplb_replacements"]);
    CHECK(slow["eplb_moves"]["copied_GB"].get<double>() == 0.0);
    CHECK(slow["eplb_moves"]["mean_copy_s"].get<double>() == 0.0);
    CHECK(slow["eplb_moves"]["layers"]["kept"].get<int>() > 0);
    CHECK(slow["eplb_moves"]["layers"]["new"].get<int>() == 0);
    CHECK(slow["eplb_moves"]["layers"]["swapped"].get<int>() == 0);
}

TEST_CASE("simulate: a finished run accounts for every request and names its profile", "[sim][cli]") {
    const fs::path dir = fs::temp_directory_path() / "deepinfer_sim_accounting";
    std::string out;
    REQUIRE(run_cli("--config " + kSmall.string() + " --set workload.duration_s=10 --out " + dir.string(),
                    out) == 0);
    const auto s = nlohmann::json::parse(deepinfer::testing::read_file(dir / "summary.json"));
    CHECK(s["requests_arrived"].get<int>() > 0);
    CHECK(s["requests_completed"].get<int>() + s["requests_rejected"].get<int>() +
              s["requests_unfinished"].get<int>() ==
          s["requests_arrived"].get<int>());
    CHECK(s["profile"]["name"] == "h200-roofline");
    CHECK(s["prefix_cache_hit_rate"].is_null());
    CHECK(s["ttft_s"]["p50"].get<double>() > 0);
    CHECK(s["ttft_s"]["p50"].get<double>() <= s["ttft_s"]["p99"].get<double>());
    const auto eff = nlohmann::json::parse(deepinfer::testing::read_file(dir / "effective_config.json"));
    CHECK(eff["workload"]["duration_s"].get<double>() == 10.0);
    CHECK(out.find("TTFT") != std::string::npos);
}

TEST_CASE("simulate: effective_config.json reads back as the same config", "[sim][cli]") {
    // Faults of every kind and a relative profile path: the written document must load from the
    // output folder and give the same results.
    const fs::path faults = kSource / "tests/golden/sim/faults_config.json";
    const fs::path a = fs::temp_directory_path() / "deepinfer_sim_effective_a";
    const fs::path b = fs::temp_directory_path() / "deepinfer_sim_effective_b";
    std::string out;
    REQUIRE(run_cli("--config " + faults.string() + " --set workload.duration_s=6 --out " + a.string(),
                    out) == 0);
    REQUIRE(run_cli("--config " + (a / "effective_config.json").string() + " --out " + b.string(), out) == 0);
    CHECK(deterministic_summary(a) == deterministic_summary(b));
    CHECK(deepinfer::testing::read_file(a / "effective_config.json") ==
          deepinfer::testing::read_file(b / "effective_config.json"));
}

TEST_CASE("simulate: the KV shape follows the model's attention layers", "[sim][cli]") {
    // Twice the CSA layers: every handed-over KV byte of those layers doubles (6880 B/token at 21).
    const fs::path full = kSource / "tests/golden/sim/small_full_config.json";
    auto handoff_bytes = [&](int csa_layers) {
        const std::string layers = std::to_string(csa_layers);
        return run_summary(
                   full,
                   "--set workload.duration_s=4 --set workload.warmup_s=1 --set model.num_csa_layers=" +
                       layers,
                   "kvshape_" + layers)["kv_handoff"]["mean_bytes"]
            .get<double>();
    };
    CHECK(handoff_bytes(42) > 1.5 * handoff_bytes(21));
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
    SECTION("erasure coding wider than the store") {
        CHECK(
            run_cli("--config " + kSmall.string() + " --set platform.kv_store.nodes=4 --out " + dir.string(),
                    out) == 1);
        CHECK(out.find("/platform/kv_store/nodes") != std::string::npos);
    }
    SECTION("an accepted length the draft positions cannot reach") {
        CHECK(run_cli("--config " + kSmall.string() + " --set acceptance.mean_accepted_length=6 --out " +
                          dir.string(),
                      out) == 1);
        CHECK(out.find("small_config.json: /acceptance/mean_accepted_length") != std::string::npos);
    }
    SECTION("keys the simulator sets itself") {
        const fs::path full = kSource / "tests/golden/sim/small_full_config.json";
        const std::pair<const char*, const char*> cases[] = {
            {"decode.scheduler_config.dp_rank=3", "/decode/scheduler_config/dp_rank"},
            {"prefill.scheduler_config.prefix_cache.store_ttl_s.chat=60",
             "/prefill/scheduler_config/prefix_cache/store_ttl_s"},
            {"prefill.scheduler_config.prefix_cache.store.capacity_gib=1",
             "/prefill/scheduler_config/prefix_cache/store"},
            {"prefill.scheduler_config.prefix_cache.host.read_gb_per_s=10",
             "/prefill/scheduler_config/prefix_cache/host/read_gb_per_s"},
            {"router.disaggregated=false", "/router/disaggregated"}};
        for (const auto& [set, pointer] : cases) {
            INFO(set);
            CHECK(run_cli("--config " + full.string() + " --set " + set + " --out " + dir.string(), out) ==
                  1);
            CHECK(out.find(std::string("small_full_config.json: ") + pointer) != std::string::npos);
            CHECK(std::count(out.begin(), out.end(), '\n') == 1);
        }
    }
    SECTION("a thread count out of range") {
        CHECK(run_cli("--config " + kSmall.string() + " --threads 0 --out " + dir.string(), out) == 1);
        CHECK(out.find("--threads") != std::string::npos);
    }
    SECTION("missing profile") {
        CHECK(run_cli("--config " + kSmall.string() + " --set profile=no-such-profile --out " + dir.string(),
                      out) == 1);
        CHECK(out.find("no-such-profile") != std::string::npos);
    }
    CHECK(std::count(out.begin(), out.end(), '\n') == 1);
}
