// Strict JSON reader for RouterConfig.
#include "policies/router/router.h"

namespace deepinfer {

RouterConfig router_config_from_json(const JsonReader& r) {
    r.allow_keys({"disaggregated", "uncached_token_weight", "pending_token_weight", "running_seq_weight",
                  "waiting_seq_weight", "kv_pressure_weight", "min_kv_free_fraction"});
    RouterConfig c;
    c.disaggregated = r.get_bool_or("disaggregated", c.disaggregated);
    c.uncached_token_weight =
        r.get_double_or("uncached_token_weight", c.uncached_token_weight, NumRange::non_negative());
    c.pending_token_weight =
        r.get_double_or("pending_token_weight", c.pending_token_weight, NumRange::non_negative());
    c.running_seq_weight =
        r.get_double_or("running_seq_weight", c.running_seq_weight, NumRange::non_negative());
    c.waiting_seq_weight =
        r.get_double_or("waiting_seq_weight", c.waiting_seq_weight, NumRange::non_negative());
    c.kv_pressure_weight =
        r.get_double_or("kv_pressure_weight", c.kv_pressure_weight, NumRange::non_negative());
    c.min_kv_free_fraction =
        r.get_double_or("min_kv_free_fraction", c.min_kv_free_fraction, NumRange::unit());
    return c;
}

}  // namespace deepinfer
