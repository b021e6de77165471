// The `deepinfer` CLI as a user meets it: usage, unknown commands, one-line errors, exit codes.
#include <catch2/catch.hpp>
#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace {

struct Result {
    int status = -1;
    std::string output;  // stdout and stderr together
};

/// Runs `deepinfer ARGS` with optional `ENV=value` assignments in front.
Result run_cli(const std::string& args, const std::string& env = "") {
    const std::string cmd = env + (env.empty() ? "" : " ") + std::string(DEEPINFER_CLI) + " " + args + " 2>&1";
    Result r;
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    std::array<char, 4096> buf{};
    std::size_t n = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
    const int raw = pclose(p);
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    return r;
}

}  // namespace

TEST_CASE("CLI: no arguments prints usage and fails", "[cli]") {
    const Result r = run_cli("");
    CHECK(r.status == 1);
    CHECK(r.output.find("usage: deepinfer <command>") != std::string::npos);
}

TEST_CASE("CLI: --help lists every subcommand and succeeds", "[cli]") {
    const Result r = run_cli("--help");
    CHECK(r.status == 0);
    for (const char* c : {"simulate", "generate", "eplb", "profile", "derive-profile", "info"})
        CHECK(r.output.find(std::string("  ") + c) != std::string::npos);
}

TEST_CASE("CLI: an unknown command is named", "[cli]") {
    const Result r = run_cli("frobnicate");
    CHECK(r.status == 1);
    CHECK(r.output.find("unknown command \"frobnicate\"") != std::string::npos);
}

TEST_CASE("CLI: info reports which backends this build has", "[cli]") {
    const Result r = run_cli("info");
    CHECK(r.status == 0);
    CHECK(r.output.find("cuda backend: ") != std::string::npos);
    CHECK(r.output.find("simgrid model: ") != std::string::npos);
}

TEST_CASE("CLI: a bad DEEPINFER_LOG is one error line naming the level", "[cli]") {
    const Result r = run_cli("info", "DEEPINFER_LOG=sched:loud");
    CHECK(r.status == 1);
    CHECK(r.output == "deepinfer info: error: --log: /: expected a level (trace, debug, info, warn, error, off), got \"loud\"\n");
}
