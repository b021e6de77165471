// Strict JSON reader for DsparkAdapterConfig.
#include "policies/dspark/dspark_verify_adapter.h"

namespace deepinfer {

DsparkAdapterConfig dspark_adapter_config_from_json(const JsonReader& r) {
    r.expect_object().allow_keys({"policy", "moe_pairs_per_token", "ep_tokens_per_token", "num_local_experts",
                                  "admission_share", "missing_confidence"});
    DsparkAdapterConfig c;
    if (auto p = r.find("policy")) c.policy = verify_policy_config_from_json(*p);
    c.moe_pairs_per_token =
        r.get_double_or("moe_pairs_per_token", c.moe_pairs_per_token, NumRange::non_negative());
    c.ep_tokens_per_token =
        r.get_double_or("ep_tokens_per_token", c.ep_tokens_per_token, NumRange::non_negative());
    c.num_local_experts = static_cast<std::int32_t>(
        r.get_int_or("num_local_experts", c.num_local_experts, NumRange::between(0, 1 << 20)));
    c.admission_share = r.get_double_or("admission_share", c.admission_share, NumRange::unit());
    c.missing_confidence = r.get_double_or("missing_confidence", c.missing_confidence, NumRange::unit());
    return c;
}

}  // namespace deepinfer
