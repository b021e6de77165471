// Runs the `deepinfer` CLI in a subprocess for end-to-end tests (SimGrid allows one engine per
// process, and this is how users meet the CLI). DEEPINFER_CLI is the binary's path (tests/CMakeLists.txt).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace deepinfer::testing {

struct CliResult {
    /// Exit status (-1 when the process did not exit normally).
    int status = -1;
    /// stdout and stderr together.
    std::string output;
};

/// Runs `deepinfer ARGS`, with optional `VAR=value` assignments (`env`) in front.
inline CliResult run_deepinfer(const std::string& args, const std::string& env = "") {
    const std::string cmd =
        env + (env.empty() ? "" : " ") + std::string(DEEPINFER_CLI) + " " + args + " 2>&1";
    CliResult r;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) throw std::runtime_error("popen failed for: " + cmd);
    std::array<char, 4096> buf{};
    std::size_t n = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
    const int raw = pclose(p);
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    return r;
}

/// The whole file as bytes (empty when it cannot be read).
inline std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace deepinfer::testing
