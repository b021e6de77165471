// `deepinfer generate` speculation flags: the verify policy choice is explicit in --help, and bad
// values (or speculation on a checkpoint without MTP weights) fail with one line.
#include <catch2/catch.hpp>
#include <sstream>

#include "tests/engine/cpu/v4_golden_support.h"
#include "tests/support/cli_runner.h"

using deepinfer::testing::run_deepinfer;

TEST_CASE("deepinfer generate: --help states the verify policies and the dynamic fallback",
          "[engine][cpu][cli][integ]") {
    const deepinfer::testing::CliResult r = run_deepinfer("generate --help");
    INFO(r.output);
    CHECK(r.status == 0);
    // (boost wraps the help text, so only short phrases are matched)
    CHECK_THAT(r.output, Catch::Contains("--verify-policy arg (=fixed)") &&
                             Catch::Contains("threshold (cumulative") && Catch::Contains("dynamic (DSpark") &&
                             Catch::Contains("falls back to") && Catch::Contains("--cost-profile") &&
                             Catch::Contains("--kv-cache-gib"));
}

TEST_CASE("deepinfer generate: bad speculation flags fail with one line and exit 1",
          "[engine][cpu][cli][integ]") {
    const std::string model = deepinfer::testing::v4_golden_dir("hc2w8");
    for (const std::string& extra :
         {std::string("--num-speculative-tokens 2"),  // the tiny golden has no MTP weights
          std::string("--num-speculative-tokens 2 --verify-policy sometimes"),
          std::string("--num-speculative-tokens 9"), std::string("--verify-threshold 1.5"),
          std::string("--kv-cache-gib 0"),
          std::string("--num-speculative-tokens 2 --verify-policy dynamic --cost-profile /nonexistent")}) {
        const deepinfer::testing::CliResult r =
            run_deepinfer("generate --model " + model + " --prompt-ids 1,2,3 " + extra);
        INFO(extra << " -> " << r.output);
        CHECK(r.status == 1);
        CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
        CHECK(r.output.find("error") != std::string::npos);
    }
}
