// Router: prefix-cache and load aware choice of instance and DP rank, P/D disaggregation, JSON.
#include <catch2/catch.hpp>

#include "policies/router/router.h"
#include "tests/support/builders.h"

using namespace deepinfer;
using deepinfer::testing::make_requests;

namespace {
InstanceLoad instance(std::int32_t id, InstanceRole role, std::vector<DpRankLoad> ranks) {
    return InstanceLoad{.instance = id, .role = role, .ranks = std::move(ranks)};
}
}  // namespace

TEST_CASE("Router: a cached prefix attracts the request until load outweighs it", "[policies][router]") {
    Router router(RouterConfig{});
    const Request req = make_requests(1, 1000)[0];
    std::vector<InstanceLoad> insts = {instance(0, InstanceRole::kMixed, {{}, {}}),
                                       instance(1, InstanceRole::kMixed, {{}, {}})};
    // Instance 1 rank 1 holds 768 tokens of the prompt.
    auto match = [](std::int32_t inst, std::int32_t rank, const Request&) {
        return inst == 1 && rank == 1 ? 768 : 0;
    };
    RouteDecision d = router.route(req, insts, match);
    CHECK(d.prefill == RouteTarget{1, 1});
    CHECK(d.num_cached_prompt_tokens == 768);
    CHECK(d.cost == Approx(232));
    CHECK_FALSE(d.decode.valid());
    // 1000 pending prompt tokens on that rank outweigh the 768 cached ones.
    insts[1].ranks[1].num_pending_prefill_tokens = 1000;
    d = router.route(req, insts, match);
    CHECK(d.prefill == RouteTarget{0, 0});  // tie between the empty ranks goes to the lowest id
    // With load weight 0 the prefix wins again.
    Router prefix_only(RouterConfig{.pending_token_weight = 0.0});
    CHECK(prefix_only.route(req, insts, match).prefill == RouteTarget{1, 1});
}

TEST_CASE("Router: full or nearly out-of-KV ranks are used only when nothing else is", "[policies][router]") {
    Router router(RouterConfig{});
    const Request req = make_requests(1, 100)[0];
    std::vector<InstanceLoad> insts = {
        instance(0, InstanceRole::kMixed,
                 {{.num_running_seqs = 4, .max_num_seqs = 4}, {.kv_free_fraction = 0.01}}),
        instance(1, InstanceRole::kMixed,
                 {{.num_running_seqs = 3, .num_waiting_seqs = 20, .max_num_seqs = 4}})};
    CHECK(router.route(req, insts, nullptr).prefill == RouteTarget{1, 0});
    insts[1].accepting = false;
    // Every rank left is ineligible: the cheapest of them is used rather than refusing.
    CHECK(router.route(req, insts, nullptr).prefill.valid());
}

TEST_CASE("Router: with P/D disaggregation prefill and decode go to their own instances",
          "[policies][router]") {
    Router router(RouterConfig{.disaggregated = true});
    const Request req = make_requests(1, 4096)[0];
    const std::vector<InstanceLoad> insts = {
        instance(0, InstanceRole::kPrefill, {{.num_pending_prefill_tokens = 8000}}),
        instance(1, InstanceRole::kPrefill, {{.num_pending_prefill_tokens = 100}}),
        instance(2, InstanceRole::kDecode, {{.num_running_seqs = 50}, {.num_running_seqs = 10}}),
        instance(3, InstanceRole::kMixed, {{}})};
    const RouteDecision d = router.route(req, insts, nullptr);
    CHECK(d.prefill == RouteTarget{1, 0});
    CHECK(d.decode == RouteTarget{2, 1});
    const KvHandoff h = Router::make_handoff(d.prefill, d.decode, 4096, KvModelShape{}, 128);
    CHECK(h.num_tokens == 4096);
    CHECK(h.num_bytes == kv_bytes_per_seq(KvModelShape{}, 4096, 128));
    // No decode instance: the decode target is invalid (a value, not an exception).
    const std::vector<InstanceLoad> only_prefill = {insts[0]};
    CHECK_FALSE(router.route(req, only_prefill, nullptr).decode.valid());
}

TEST_CASE("Router: decisions are deterministic and ties go to the lowest instance and rank (many seeds)",
          "[policies][router]") {
    Router router(RouterConfig{});
    for (std::int32_t seed = 0; seed < 20; ++seed) {
        std::vector<InstanceLoad> insts;
        for (std::int32_t i = 0; i < 4; ++i) insts.push_back(instance(i, InstanceRole::kMixed, {{}, {}, {}}));
        const Request req = make_requests(1, 10 + seed)[0];
        CHECK(router.route(req, insts, nullptr).prefill == RouteTarget{0, 0});
        insts[0].ranks[0].num_running_seqs = 1 + seed;
        CHECK(router.route(req, insts, nullptr).prefill == RouteTarget{0, 1});
    }
}

TEST_CASE("router_config_from_json: values land and bad input names the field", "[policies][router]") {
    const RouterConfig c = router_config_from_json(JsonReader::parse_text(
        R"({"disaggregated": true, "uncached_token_weight": 2, "kv_pressure_weight": 0})", "router.json"));
    CHECK(c.disaggregated);
    CHECK(c.uncached_token_weight == 2);
    CHECK(c.kv_pressure_weight == 0);
    auto err = [](const char* text) {
        try {
            router_config_from_json(JsonReader::parse_text(text, "router.json"));
        } catch (const ConfigError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(err(R"({"running_seq_weight": -1})").rfind("router.json: /running_seq_weight:", 0) == 0);
    CHECK(err(R"({"min_kv_free_fraction": 2})").rfind("router.json: /min_kv_free_fraction:", 0) == 0);
    CHECK(err(R"({"weights": {}})").rfind("router.json: /weights:", 0) == 0);
}
