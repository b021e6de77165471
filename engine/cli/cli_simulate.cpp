// `deepinfer simulate --config FILE [--set a.b=v]... [--seed N] --out DIR [--timeline] [--progress]
// [--threads N]`:
// runs the SimGrid cluster model and writes summary.json, effective_config.json, requests.csv and
// (with --timeline) timeline.json (Chrome/Perfetto trace).
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "engine/cli/commands.h"
#include "policies/common/json_reader.h"
#include "policies/common/log.h"
#ifdef DEEPINFER_WITH_SIMGRID
#include "sim/parallel/worker_pool.h"
#include "sim/simulation.h"
#endif

namespace deepinfer::cli {

#ifdef DEEPINFER_WITH_SIMGRID
namespace {

void write_file(const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    if (!out) throw std::runtime_error(path.string() + ": cannot write");
    out << text;
}

}  // namespace
#endif

int run_simulate(const Args& args) {
#ifdef DEEPINFER_WITH_SIMGRID
    namespace po = boost::program_options;
    std::string config_path, out_dir, log_spec;
    std::vector<std::string> sets;
    std::uint64_t seed = 0;
    std::int32_t threads = sim::WorkerPool::default_threads();
    po::options_description opts("deepinfer simulate options");
    opts.add_options()("help,h", "show this help")(
        "config", po::value(&config_path)->required(),
        "simulation config JSON (e.g. experiments/01_default_128gpu/config.json)")(
        "set", po::value(&sets)->composing(),
        "override a config value before validation: --set workload.duration_s=60")(
        "seed", po::value(&seed), "random seed (overrides the config's seed)")(
        "out", po::value(&out_dir)->required(), "output folder")(
        "timeline", po::bool_switch(), "also write timeline.json (Chrome/Perfetto trace)")(
        "progress", po::bool_switch(),
        "show a progress bar on stderr (default: only when stderr is a terminal)")(
        "no-progress", po::bool_switch(), "never show the progress bar")(
        "threads", po::value(&threads)->default_value(threads),
        "threads for the decode ranks' planning (results are identical for any count)")(
        "log", po::value(&log_spec), "log levels, e.g. sim:debug");
    po::variables_map vm;
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    if (vm.count("help")) {
        std::cout
            << "usage: deepinfer simulate --config FILE [--set a.b=v]... [--seed N] --out DIR [--timeline]\n"
            << opts;
        return 0;
    }
    po::notify(vm);
    if (!log_spec.empty()) log::configure(log_spec);
    const sim::SimConfig config = sim::load_sim_config(config_path, sets);
    sim::RunOptions options;
    if (vm.count("seed")) options.seed = seed;
    options.record_timeline = vm["timeline"].as<bool>();
    if (threads < 1 || threads > 256)
        throw ConfigError("command line", "--threads", "an integer in [1, 256]", std::to_string(threads));
    options.threads = threads;
    options.progress = !vm["no-progress"].as<bool>() && (vm["progress"].as<bool>() || isatty(STDERR_FILENO));
    const sim::RunMetrics metrics = sim::run_simulation(config, options);

    sim::SimConfig effective = config;
    if (options.seed) effective.seed = *options.seed;
    const nlohmann::json summary = sim::make_summary(effective, metrics);
    namespace fs = std::filesystem;
    fs::create_directories(out_dir);
    write_file(fs::path(out_dir) / "summary.json", dump_pretty(summary));
    write_file(fs::path(out_dir) / "effective_config.json", dump_pretty(sim::sim_config_to_json(effective)));
    if (config.output.per_request_csv)
        write_file(fs::path(out_dir) / "requests.csv", sim::make_requests_csv(metrics));
    if (options.record_timeline)
        write_file(fs::path(out_dir) / "timeline.json", sim::make_timeline(metrics).dump());
    std::cout << sim::make_human_summary(summary) << "  outputs in " << out_dir << "\n";
    return 0;
#else
    (void)args;
    return unavailable("simulate",
                       "this build has no SimGrid model (install libsimgrid-dev and reconfigure)");
#endif
}

}  // namespace deepinfer::cli
