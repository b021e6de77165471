// EPLB JSON: load traces (bad ones rejected with file and JSON pointer) and placements round-trip.
#include <catch2/catch.hpp>

#include "policies/eplb/eplb_json.h"

using namespace deepinfer;

namespace {

LoadTrace parse(const std::string& text) {
    return parse_load_trace(JsonReader::parse_text(text, "t.json", JsonReader::ErrorKind::kTrace));
}

}  // namespace

TEST_CASE("EPLB trace: a well-formed trace is read window by window", "[policies][eplb]") {
    const auto t = parse(
        R"({"layers": 2, "experts": 3, "windows": [[[1, 2, 3], [4, 5, 6]], [[0, 0, 1], [1, 0, 0.5]]]})");
    REQUIRE(t.windows.size() == 2);
    CHECK(t.windows[0].at(1, 2) == 6.0);
    CHECK(t.windows[1].at(1, 2) == 0.5);
    CHECK(t.total().at(0, 2) == 4.0);
    const auto again = parse(load_trace_to_json(t).dump());
    CHECK(again.windows[1].tokens == t.windows[1].tokens);
}

TEST_CASE("EPLB trace: bad traces are rejected with the file and field named", "[policies][eplb]") {
    CHECK_THROWS_AS(parse(R"({"layers": 1, "experts": 2, "windows": [[[1, 2]]], "extra": 1})"), TraceError);
    CHECK_THROWS_WITH(parse(R"({"layers": 2, "experts": 3, "windows": [[[1, 2, 3], [4, 5]]]})"),
                      "t.json: /windows/0/1: expected 3 expert loads (\"experts\"), got 2");
    CHECK_THROWS_WITH(parse(R"({"layers": 2, "experts": 3, "windows": [[[1, 2, 3]]]})"),
                      "t.json: /windows/0: expected 2 layers (\"layers\"), got 1");
    CHECK_THROWS_WITH(parse(R"({"layers": 1, "experts": 2, "windows": [[[1, -2]]]})"),
                      Catch::StartsWith("t.json: /windows/0/0/1: expected"));
    CHECK_THROWS_WITH(parse(R"({"layers": 1, "experts": 2, "windows": [[[1, "x"]]]})"),
                      Catch::StartsWith("t.json: /windows/0/0/1:"));
    CHECK_THROWS_WITH(parse(R"({"layers": 1, "experts": 2, "windows": []})"),
                      Catch::StartsWith("t.json: /windows:"));
    CHECK_THROWS_WITH(parse(R"({"layers": 0, "experts": 2, "windows": [[]]})"),
                      Catch::StartsWith("t.json: /layers:"));
    CHECK_THROWS_WITH(parse(R"({"experts": 2, "windows": [[]]})"), Catch::Contains("layers"));
}

TEST_CASE("EPLB placement JSON: written placements read back identically", "[policies][eplb]") {
    auto p = make_identity_placement(2, 4, 2);
    p.layers[1].phy2log = {LogicalExpertId(3), LogicalExpertId(2), LogicalExpertId(1), LogicalExpertId(0)};
    p.layers[1].replica_share = {1.0, 1.0, 1.0, 1.0};
    const auto j = placement_to_json(p);
    CHECK(j.at("num_gpus") == 2);
    CHECK(j.at("layers").at(0).contains("replica_share") == false);
    const auto back = parse_placement(JsonReader::from_json(j, "p.json"));
    CHECK(back.layers == p.layers);
    CHECK(back.num_logical_experts == 4);
    nlohmann::json bad = j;
    bad["layers"][0]["phy2log"] = {0, 0, 1, 2};
    CHECK_THROWS_WITH(parse_placement(JsonReader::from_json(bad, "p.json")),
                      Catch::Contains("two replicas on GPU 0"));
}
