// `deepinfer profile`: measures op-group curves on the local GPU. Not built yet: it needs the CUDA
// executor, which no issue covers so far (the simulator reads roofline-derived profiles meanwhile).
#include "engine/cli/commands.h"

namespace deepinfer::cli {

int run_profile(const Args&) {
#ifdef DEEPINFER_WITH_CUDA
    return unavailable("profile", "not implemented yet: the profiler needs the CUDA executor (a later issue)");
#else
    return unavailable("profile", "this build has no CUDA backend (configure where nvcc is available)");
#endif
}

}  // namespace deepinfer::cli
