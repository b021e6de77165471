// The `deepinfer` CLI's subcommands. Each returns the process exit code:
// 0 success, 1 error (one line on stderr), 2 unavailable in this build or not implemented yet.
#pragma once

#include <string>
#include <vector>

namespace deepinfer::cli {

using Args = std::vector<std::string>;

int run_simulate(const Args& args);
int run_generate(const Args& args);
int run_eplb(const Args& args);
int run_profile(const Args& args);
int run_derive_profile(const Args& args);
int run_info(const Args& args);

/// Prints "deepinfer <cmd>: <why>" and returns 2 (backend not built / feature not yet built).
int unavailable(const std::string& cmd, const std::string& why);

}  // namespace deepinfer::cli
