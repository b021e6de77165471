// Strict JSON readers for the KV model shape, the block pool, the tiers and the prefix cache.
#include <string>

#include "policies/kv/block_pool.h"
#include "policies/kv/kv_model_shape.h"
#include "policies/kv/prefix_cache.h"
#include "policies/request.h"

namespace deepinfer {

namespace {
std::int32_t get_i32(const JsonReader& r, std::string_view key, std::int32_t dflt, double lo, double hi) {
    return static_cast<std::int32_t>(r.get_int_or(key, dflt, NumRange::between(lo, hi)));
}
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}  // namespace

KvModelShape kv_model_shape_from_json(const JsonReader& r) {
    r.allow_keys({"num_swa_layers", "num_csa_layers", "num_hca_layers", "num_mtp_layers", "head_dim",
                  "index_head_dim", "csa_compress_rate", "hca_compress_rate", "sliding_window_tokens",
                  "dtype_bytes", "online_compressor_state"});
    KvModelShape s;
    s.num_swa_layers = get_i32(r, "num_swa_layers", s.num_swa_layers, 0, 4096);
    s.num_csa_layers = get_i32(r, "num_csa_layers", s.num_csa_layers, 0, 4096);
    s.num_hca_layers = get_i32(r, "num_hca_layers", s.num_hca_layers, 0, 4096);
    s.num_mtp_layers = get_i32(r, "num_mtp_layers", s.num_mtp_layers, 0, 64);
    s.head_dim = get_i32(r, "head_dim", s.head_dim, 1, 1 << 16);
    s.index_head_dim = get_i32(r, "index_head_dim", s.index_head_dim, 0, 1 << 16);
    s.csa_compress_rate = get_i32(r, "csa_compress_rate", s.csa_compress_rate, 1, 1 << 16);
    s.hca_compress_rate = get_i32(r, "hca_compress_rate", s.hca_compress_rate, 1, 1 << 16);
    s.sliding_window_tokens = get_i32(r, "sliding_window_tokens", s.sliding_window_tokens, 0, 1 << 20);
    s.dtype_bytes = get_i32(r, "dtype_bytes", s.dtype_bytes, 1, 8);
    s.online_compressor_state = r.get_bool_or("online_compressor_state", s.online_compressor_state);
    if (s.num_csa_layers + s.num_hca_layers == 0)
        r.fail("a model with at least one CSA or HCA layer (num_csa_layers + num_hca_layers > 0)");
    return s;
}

KvPoolConfig kv_pool_config_from_json(const JsonReader& r) {
    r.allow_keys({"capacity_gib", "block_tokens", "model"});
    KvPoolConfig c;
    c.capacity_bytes = r.get_double_or("capacity_gib", c.capacity_bytes / kGiB, NumRange::positive()) * kGiB;
    c.block_tokens = get_i32(r, "block_tokens", c.block_tokens, 1, 1 << 20);
    if (auto m = r.find("model")) c.shape = kv_model_shape_from_json(*m);
    return c;
}

KvTierConfig kv_tier_config_from_json(const JsonReader& r) {
    r.allow_keys({"capacity_gib", "read_gb_per_s", "write_gb_per_s"});
    KvTierConfig t;
    t.capacity_bytes =
        r.get_double_or("capacity_gib", t.capacity_bytes / kGiB, NumRange::non_negative()) * kGiB;
    t.read_bytes_per_s =
        r.get_double_or("read_gb_per_s", t.read_bytes_per_s / 1e9, NumRange::positive()) * 1e9;
    t.write_bytes_per_s =
        r.get_double_or("write_gb_per_s", t.write_bytes_per_s / 1e9, NumRange::positive()) * 1e9;
    return t;
}

PrefixCacheConfig prefix_cache_config_from_json(const JsonReader& r) {
    r.allow_keys({"enabled", "host", "store", "store_ttl_s", "write_to_store", "swa_replay_tokens",
                  "hbm_keeps_swa_state", "host_keeps_swa_state"});
    PrefixCacheConfig c;
    c.enabled = r.get_bool_or("enabled", c.enabled);
    if (auto h = r.find("host")) c.host = kv_tier_config_from_json(*h);
    if (auto s = r.find("store")) c.store = kv_tier_config_from_json(*s);
    if (auto ttl = r.find("store_ttl_s")) {
        ttl->expect_object();
        for (const std::string& key : ttl->keys()) {
            const auto cls = parse_traffic_class(key);
            if (!cls)
                ttl->at(key).fail("a traffic class key (chat, agent)",
                                  "unknown traffic class \"" + key + "\"");
            c.store_ttl_s[static_cast<std::size_t>(*cls)] = ttl->get_double(key, NumRange::positive());
        }
    }
    c.write_to_store = r.get_bool_or("write_to_store", c.write_to_store);
    c.swa_replay_tokens = get_i32(r, "swa_replay_tokens", c.swa_replay_tokens, 0, 1 << 20);
    c.hbm_keeps_swa_state = r.get_bool_or("hbm_keeps_swa_state", c.hbm_keeps_swa_state);
    c.host_keeps_swa_state = r.get_bool_or("host_keeps_swa_state", c.host_keeps_swa_state);
    return c;
}

}  // namespace deepinfer
