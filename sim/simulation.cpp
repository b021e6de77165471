// Simulation driver: engine setup, platform, actors, run, metrics.
#include "sim/simulation.h"

#include <chrono>

#include "policies/common/check.h"
#include "policies/common/log.h"
#include "sim/actors/cluster.h"
#include "sim/platform/platform.h"

namespace deepinfer::sim {

RunMetrics run_simulation(const SimConfig& input, const RunOptions& options) {
    SimConfig config = input;
    if (options.seed) config.seed = *options.seed;
    const auto wall0 = std::chrono::steady_clock::now();
    ProfileSet profile = load_profile_dir(config.profile);
    const OpGroupProfile& any = profile.groups.begin()->second;
    RunMetrics metrics;
    metrics.profile_name = profile.name;
    metrics.profile_kind = any.meta.kind;
    metrics.profile_method = any.meta.method;
    const CostModel cost(std::move(profile), config.model);

    Rng rng(config.seed);
    std::optional<Workload> workload;
    if (!config.workload.trace_file.empty())
        workload.emplace(config.workload, read_trace_jsonl(config.workload.trace_file));
    else
        workload.emplace(config.workload, rng.fork("workload"));

    int argc = 2;
    char arg0[] = "deepinfer-simulate";
    char arg1[] = "--log=root.thresh:critical";
    char* argv[] = {arg0, arg1, nullptr};
    sg::sg4::Engine engine(&argc, argv);
    const Platform platform = build_platform(config);
    sg::ActorErrors errors;
    Cluster cluster(config, platform, cost, *workload, rng.fork("cluster"), metrics, options.record_timeline,
                    options.progress, errors, options.threads);
    struct TimeSourceGuard {
        TimeSourceGuard() {
            log::set_time_source([] { return sg::now_s(); });
        }
        ~TimeSourceGuard() { log::set_time_source(nullptr); }
    } time_source;
    cluster.start();
    engine.run();
    errors.rethrow_if_any();
    cluster.finish();
    metrics.simulated_s = sg::now_s();
    metrics.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    metrics.threads = options.threads;
    return metrics;
}

}  // namespace deepinfer::sim
