// `deepinfer eplb`: not built yet. TODO(#4): the EPLB policy.
#include "engine/cli/commands.h"

namespace deepinfer::cli {

int run_eplb(const Args&) { return unavailable("eplb", "not implemented yet: the EPLB policy is issue #4"); }

}  // namespace deepinfer::cli
