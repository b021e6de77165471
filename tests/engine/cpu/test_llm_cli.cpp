// `deepinfer generate` speculation flags: the verify policy choice is explicit in --help, and bad
// values (or speculation on a checkpoint without MTP weights) fail with one line.
#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <sstream>

#include "tests/engine/cpu/v4_golden_support.h"

namespace {

struct CliRun {
    int rc = -1;
    std::string out;
};

CliRun run_deepinfer(const std::string& args) {
    std::ostringstream cmd;
    cmd << DEEPINFER_CLI << " " << args << " 2>&1";
    CliRun r;
    FILE* p = popen(cmd.str().c_str(), "r");
    REQUIRE(p != nullptr);
    std::array<char, 4096> buf{};
    while (fgets(buf.data(), static_cast<int>(buf.size()), p) != nullptr) r.out += buf.data();
    const int status = pclose(p);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

}  // namespace

TEST_CASE("deepinfer generate: --help states the verify policies and the dynamic fallback",
          "[engine][cpu][cli][integ]") {
    const CliRun r = run_deepinfer("generate --help");
    INFO(r.out);
    CHECK(r.rc == 0);
    // (boost wraps the help text, so only short phrases are matched)
    CHECK_THAT(r.out, Catch::Contains("--verify-policy arg (=fixed)") &&
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
        const CliRun r = run_deepinfer("generate --model " + model + " --prompt-ids 1,2,3 " + extra);
        INFO(extra << " -> " << r.out);
        CHECK(r.rc == 1);
        CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
        CHECK(r.out.find("error") != std::string::npos);
    }
}
