// Strict JSON reader for SchedulerConfig.
#include "policies/scheduler/scheduler.h"

namespace deepinfer {

SchedulerConfig scheduler_config_from_json(const JsonReader& r) {
    r.allow_keys({"max_num_batched_tokens", "max_num_seqs", "max_model_len", "num_speculative_tokens",
                  "dp_rank", "kv", "prefix_cache"});
    SchedulerConfig c;
    auto i32 = [&](std::string_view key, std::int32_t dflt, double lo, double hi) {
        return static_cast<std::int32_t>(r.get_int_or(key, dflt, NumRange::between(lo, hi)));
    };
    c.max_num_batched_tokens = i32("max_num_batched_tokens", c.max_num_batched_tokens, 1, 1 << 30);
    c.max_num_seqs = i32("max_num_seqs", c.max_num_seqs, 1, 1 << 20);
    c.max_model_len = i32("max_model_len", c.max_model_len, 1, 1 << 30);
    c.num_speculative_tokens = i32("num_speculative_tokens", c.num_speculative_tokens, 0, 64);
    c.dp_rank = i32("dp_rank", c.dp_rank, 0, 1 << 20);
    if (auto kv = r.find("kv")) c.kv = kv_pool_config_from_json(*kv);
    if (auto pc = r.find("prefix_cache")) c.prefix_cache = prefix_cache_config_from_json(*pc);
    return c;
}

}  // namespace deepinfer
