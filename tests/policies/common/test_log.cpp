// Logger: component levels, injected time source, lazy formatting, spec parsing.
#include <catch2/catch.hpp>

#include "policies/common/check.h"
#include "policies/common/log.h"

using namespace deepinfer;

TEST_CASE("log: levels per component, time source and sink are injectable", "[policies][log]") {
    std::vector<std::string> lines;
    log::set_sink([&](std::string_view l) { lines.emplace_back(l); });
    log::set_time_source([] { return 12.5; });
    log::configure("warn,sched:debug");
    int evaluated = 0;
    auto count = [&] {
        ++evaluated;
        return 1;
    };
    DI_LOG(kSched, kDebug, "planned " << count());
    DI_LOG(kKv, kDebug, "hidden " << count());
    DI_LOG(kKv, kWarn, "shown");
    log::set_sink(nullptr);
    log::set_time_source(nullptr);
    log::set_all(log::Level::kWarn);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == "[   12.500000] [sched/debug] planned 1\n");
    CHECK(lines[1] == "[   12.500000] [kv/warn] shown\n");
    CHECK(evaluated == 1);
}

TEST_CASE("log: bad specs name the component or level", "[policies][log]") {
    CHECK_THROWS_WITH(log::configure("sched:loud"), Catch::Contains("--log: /: expected a level"));
    CHECK_THROWS_WITH(log::configure("nosuch:debug"), Catch::Contains("got \"nosuch\""));
    log::set_all(log::Level::kWarn);
}

TEST_CASE("DI_CHECK: throws InternalError with file, line and message", "[policies][check]") {
    try {
        const int n = 3;
        DI_CHECK(n < 0, "n=" << n);
        FAIL("no throw");
    } catch (const InternalError& e) {
        const std::string w = e.what();
        CHECK(w.find("test_log.cpp:") != std::string::npos);
        CHECK(w.find("check `n < 0` failed: n=3") != std::string::npos);
    }
}
