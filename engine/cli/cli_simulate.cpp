// `deepinfer simulate`: not built yet. TODO(#7): the SimGrid cluster model.
#include "engine/cli/commands.h"

namespace deepinfer::cli {

int run_simulate(const Args&) {
#ifdef DEEPINFER_WITH_SIMGRID
    return unavailable("simulate", "not implemented yet: the SimGrid cluster model is issue #7");
#else
    return unavailable("simulate", "this build has no SimGrid model (install libsimgrid-dev and reconfigure)");
#endif
}

}  // namespace deepinfer::cli
