// Strict JSON readers of the scheduler, KV pool, model shape, tiers and prefix cache: values land
// in the config; bad input gives one line naming the field.
#include <catch2/catch.hpp>

#include "policies/common/units.h"
#include "policies/scheduler/scheduler.h"

using namespace deepinfer;

namespace {
SchedulerConfig read(const std::string& text) {
    return scheduler_config_from_json(JsonReader::parse_text(text, "sched.json"));
}

std::string error_of(const std::string& text) {
    try {
        read(text);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "no error";
}
}  // namespace

TEST_CASE("scheduler_config_from_json: every section is read", "[policies][scheduler][kv]") {
    const SchedulerConfig c = read(R"({
        "max_num_batched_tokens": 2048, "max_num_seqs": 64, "max_model_len": 65536,
        "num_speculative_tokens": 3, "dp_rank": 2,
        "kv": {"capacity_gib": 40, "block_tokens": 128,
               "model": {"num_csa_layers": 10, "dtype_bytes": 4, "online_compressor_state": true}},
        "prefix_cache": {"enabled": true, "swa_replay_tokens": 200, "write_to_store": false,
                         "host": {"capacity_gib": 100, "read_gb_per_s": 50},
                         "store": {"capacity_gib": 1000, "write_gb_per_s": 5},
                         "store_ttl_s": {"agent": 3600}, "hbm_keeps_swa_state": false}
    })");
    CHECK(c.max_num_batched_tokens == 2048);
    CHECK(c.max_num_seqs == 64);
    CHECK(c.max_model_len == 65536);
    CHECK(c.num_speculative_tokens == 3);
    CHECK(c.dp_rank == 2);
    CHECK(c.kv.capacity_bytes == 40 * units::kGiB);
    CHECK(c.kv.shape.num_csa_layers == 10);
    CHECK(c.kv.shape.num_hca_layers == 20);
    CHECK(c.kv.shape.dtype_bytes == 4);
    CHECK(c.kv.shape.online_compressor_state);
    CHECK(c.prefix_cache.swa_replay_tokens == 200);
    CHECK_FALSE(c.prefix_cache.write_to_store);
    CHECK(c.prefix_cache.host.capacity_bytes == 100 * units::kGiB);
    CHECK(c.prefix_cache.host.read_bytes_per_s == 50e9);
    CHECK(c.prefix_cache.store.write_bytes_per_s == 5e9);
    CHECK(c.prefix_cache.store_ttl_s[static_cast<std::size_t>(TrafficClass::kAgent)] == 3600);
    CHECK(c.prefix_cache.store_ttl_s[static_cast<std::size_t>(TrafficClass::kChat)] == 7 * 86400.0);
    CHECK_FALSE(c.prefix_cache.hbm_keeps_swa_state);
    // Defaults: an empty object is the documented default config.
    const SchedulerConfig d = read("{}");
    CHECK(d.max_num_batched_tokens == SchedulerConfig{}.max_num_batched_tokens);
    CHECK(d.kv.block_tokens == 128);
}

TEST_CASE("scheduler_config_from_json: bad input is one line naming the field", "[policies][scheduler][kv]") {
    struct Case {
        const char* json;
        const char* pointer;
    };
    const std::vector<Case> cases = {
        {R"({"max_num_batched_tokens": -3})", "/max_num_batched_tokens"},
        {R"({"max_num_seqs": 0})", "/max_num_seqs"},
        {R"({"num_speculative_tokens": -1})", "/num_speculative_tokens"},
        {R"({"kv": {"block_tokens": 0}})", "/kv/block_tokens"},
        {R"({"kv": {"capacity_gib": -1}})", "/kv/capacity_gib"},
        {R"({"kv": {"model": {"head_dim": "big"}}})", "/kv/model/head_dim"},
        {R"({"kv": {"model": {"num_csa_layers": 0, "num_hca_layers": 0}}})", "/kv/model"},
        {R"({"prefix_cache": {"store_ttl_s": {"batch": 60}}})", "/prefix_cache/store_ttl_s/batch"},
        {R"({"prefix_cache": {"store_ttl_s": {"chat": 0}}})", "/prefix_cache/store_ttl_s/chat"},
        {R"({"prefix_cache": {"host": {"read_gb_per_s": 0}}})", "/prefix_cache/host/read_gb_per_s"},
        {R"({"prefix_cache": {"swa_replay_tokens": -5}})", "/prefix_cache/swa_replay_tokens"},
        {R"({"max_num_seq": 4})", "/max_num_seq"},
    };
    for (const Case& c : cases) {
        const std::string err = error_of(c.json);
        INFO(c.json << " -> " << err);
        CHECK(err.rfind(std::string("sched.json: ") + c.pointer + ":", 0) == 0);
        CHECK(err.find('\n') == std::string::npos);
    }
    CHECK(error_of(R"({"prefix_cache": {"store_ttl_s": {"batch": 60}}})").find("unknown traffic class") !=
          std::string::npos);
}
