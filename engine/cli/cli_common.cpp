// Shared CLI helpers and the subcommands that are not built yet in this tree.
#include <cstdio>

#include "engine/cli/commands.h"

namespace deepinfer::cli {

int unavailable(const std::string& cmd, const std::string& why) {
    std::fprintf(stderr, "deepinfer %s: %s\n", cmd.c_str(), why.c_str());
    return 2;
}

}  // namespace deepinfer::cli
