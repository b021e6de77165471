// `deepinfer generate`: not built yet. TODO(#6): the V4 CPU reference executor.
#include "engine/cli/commands.h"

namespace deepinfer::cli {

int run_generate(const Args&) { return unavailable("generate", "not implemented yet: the V4 CPU reference executor is issue #6"); }

}  // namespace deepinfer::cli
