// JsonReader: errors name file, JSON pointer, what was expected and what was found.
#include <catch2/catch.hpp>

#include "policies/common/json_reader.h"

using deepinfer::ConfigError;
using deepinfer::JsonReader;
using deepinfer::NumRange;

namespace {
std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}
}  // namespace

TEST_CASE("JsonReader: a wrong value names file, pointer, expected and got", "[policies][json]") {
    const auto r = JsonReader::parse_text(R"({"decode": {"ep_size": -3}})", "deploy.json");
    const std::string e = error_of([&] { r.at("decode").get_int("ep_size", NumRange::positive()); });
    REQUIRE(e == "deploy.json: /decode/ep_size: expected an integer positive, got -3");
}

TEST_CASE("JsonReader: unknown keys are rejected by name", "[policies][json]") {
    const auto r = JsonReader::parse_text(R"({"a": 1, "bogus": 2})", "c.json");
    const std::string e = error_of([&] { r.allow_keys({"a", "b"}); });
    REQUIRE(e == "c.json: /bogus: expected a known key (one of: a, b), got unknown key \"bogus\"");
}

TEST_CASE("JsonReader: missing keys, wrong types and enums", "[policies][json]") {
    const auto r = JsonReader::parse_text(R"({"name": 5, "mode": "x", "list": [1, "two"]})", "f.json");
    CHECK(error_of([&] { r.get_int("count"); }) == "f.json: /count: expected a value, got nothing (missing key)");
    CHECK(error_of([&] { r.get_string("name"); }) == "f.json: /name: expected a string, got 5");
    CHECK(error_of([&] { r.at("mode").as_enum({"fast", "exact"}); }) ==
          "f.json: /mode: expected one of \"fast\", \"exact\", got \"x\"");
    CHECK(error_of([&] { r.at("list").as_int_vector(); }) == "f.json: /list/1: expected an integer, got \"two\"");
    CHECK(error_of([&] { r.at("list").at(5); }) == "f.json: /list: expected an array with more than 5 elements, got an array of 2");
}

TEST_CASE("JsonReader: integers reject fractions and accept integral floats", "[policies][json]") {
    const auto r = JsonReader::parse_text(R"({"a": 2.0, "b": 2.5})", "f.json");
    CHECK(r.get_int("a") == 2);
    CHECK_THROWS_AS(r.get_int("b"), ConfigError);
}

TEST_CASE("JsonReader: defaults apply only when the key is absent", "[policies][json]") {
    const auto r = JsonReader::parse_text(R"({"a": 0.25})", "f.json");
    CHECK(r.get_double_or("a", 1.0) == 0.25);
    CHECK(r.get_double_or("b", 1.0) == 1.0);
    CHECK_THROWS_AS(r.get_double_or("a", 1.0, NumRange::between(0.5, 1.0)), ConfigError);
}

TEST_CASE("JsonReader: syntax errors give line and column", "[policies][json]") {
    const std::string e = error_of([] { JsonReader::parse_text("{\n  \"a\": 1,\n  oops\n}", "bad.json"); });
    REQUIRE(e.rfind("bad.json: invalid JSON at line 3", 0) == 0);
}

TEST_CASE("JsonReader: a missing file is named", "[policies][json]") {
    REQUIRE(error_of([] { JsonReader::parse_file("/nonexistent/x.json"); }) == "/nonexistent/x.json: cannot open file");
}

TEST_CASE("JsonReader: error kinds follow the document", "[policies][json]") {
    const auto r = JsonReader::parse_text(R"({"a": "x"})", "p.json", JsonReader::ErrorKind::kProfile);
    REQUIRE_THROWS_AS(r.get_int("a"), deepinfer::ProfileError);
}

TEST_CASE("apply_override: sets nested values, parses JSON, rejects bad paths", "[policies][json]") {
    nlohmann::json doc = nlohmann::json::parse(R"({"a": {"b": 1, "list": [{"x": 1}]}, "s": "v"})");
    deepinfer::apply_override(doc, "a.b=2.5", "--set");
    deepinfer::apply_override(doc, "a.list.0.x=[1,2]", "--set");
    deepinfer::apply_override(doc, "s=hello world", "--set");
    deepinfer::apply_override(doc, "a.new=true", "--set");
    CHECK(doc["a"]["b"] == 2.5);
    CHECK(doc["a"]["list"][0]["x"] == nlohmann::json::array({1, 2}));
    CHECK(doc["s"] == "hello world");
    CHECK(doc["a"]["new"] == true);
    // Missing objects on the way are created (the strict reader validates their keys later).
    deepinfer::apply_override(doc, "fresh.inner.x=1", "--set");
    CHECK(doc["fresh"]["inner"]["x"] == 1);
    CHECK(error_of([&] { deepinfer::apply_override(doc, "s.x=1", "--set"); }) ==
          "--set: /s: expected an object or array to descend into for s.x, got \"hello world\"");
    CHECK(error_of([&] { deepinfer::apply_override(doc, "a.list.3=1", "--set"); }) ==
          "--set: /a/list/3: expected an index below 1, got 3");
    CHECK(error_of([&] { deepinfer::apply_override(doc, "novalue", "--set"); }) ==
          "--set: /: expected a.b.c=VALUE, got \"novalue\"");
}
