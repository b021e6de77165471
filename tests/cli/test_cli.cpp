// The `deepinfer` CLI as a user meets it: usage, unknown commands, one-line errors, exit codes.
#include <catch2/catch.hpp>
#include <string>

#include "tests/support/cli_runner.h"

using deepinfer::testing::CliResult;
using deepinfer::testing::run_deepinfer;

TEST_CASE("CLI: no arguments prints usage and fails", "[cli]") {
    const CliResult r = run_deepinfer("");
    CHECK(r.status == 1);
    CHECK(r.output.find("usage: deepinfer <command>") != std::string::npos);
}

TEST_CASE("CLI: --help lists every subcommand and succeeds", "[cli]") {
    const CliResult r = run_deepinfer("--help");
    CHECK(r.status == 0);
    for (const char* c : {"simulate", "generate", "eplb", "profile", "derive-profile", "info"})
        CHECK(r.output.find(std::string("  ") + c) != std::string::npos);
}

TEST_CASE("CLI: an unknown command is named", "[cli]") {
    const CliResult r = run_deepinfer("frobnicate");
    CHECK(r.status == 1);
    CHECK(r.output.find("unknown command \"frobnicate\"") != std::string::npos);
}

TEST_CASE("CLI: info reports which backends this build has", "[cli]") {
    const CliResult r = run_deepinfer("info");
    CHECK(r.status == 0);
    CHECK(r.output.find("cuda backend: ") != std::string::npos);
    CHECK(r.output.find("simgrid model: ") != std::string::npos);
}

TEST_CASE("CLI: a bad DEEPINFER_LOG is one error line naming the level", "[cli]") {
    const CliResult r = run_deepinfer("info", "DEEPINFER_LOG=sched:loud");
    CHECK(r.status == 1);
    CHECK(r.output ==
          "deepinfer info: error: --log: /: expected a level (trace, debug, info, warn, error, off), got "
          "\"loud\"\n");
}
