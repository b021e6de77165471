// `deepinfer derive-profile`: not built yet. TODO(#7): roofline-derived profiles.
#include "engine/cli/commands.h"

namespace deepinfer::cli {

int run_derive_profile(const Args&) { return unavailable("derive-profile", "not implemented yet: roofline-derived profiles is issue #7"); }

}  // namespace deepinfer::cli
