// Subcommands whose implementation has not landed yet: each says so and exits 2.
// TODO(#6): generate. TODO(#4): eplb. TODO(#7): derive-profile. TODO(#7): simulate without SimGrid is impossible.
#include "engine/cli/commands.h"

namespace deepinfer::cli {

#ifndef DEEPINFER_WITH_SIMGRID
int run_simulate(const Args&) {
    return unavailable("simulate", "this build has no SimGrid model (install libsimgrid-dev and reconfigure)");
}
#endif

int run_generate(const Args&) {
    return unavailable("generate", "not implemented yet: the V4 CPU reference executor is issue #6");
}

int run_eplb(const Args&) { return unavailable("eplb", "not implemented yet: the EPLB policy is issue #4"); }

#ifdef DEEPINFER_WITH_CUDA
int run_profile(const Args&) {
    return unavailable("profile", "not implemented yet: the profiler needs the CUDA executor (later issue)");
}
#else
int run_profile(const Args&) {
    return unavailable("profile", "this build has no CUDA backend (configure where nvcc is available)");
}
#endif

int run_derive_profile(const Args&) {
    return unavailable("derive-profile", "not implemented yet: roofline-derived profiles are issue #7");
}

}  // namespace deepinfer::cli
