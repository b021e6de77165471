// JSON for VerifyPolicyConfig (keys as in verify_policy.h).
#include <string>

#include "policies/dspark/verify_policy.h"

namespace deepinfer {

VerifyPolicyConfig verify_policy_config_from_json(const JsonReader& r) {
    r.expect_object().allow_keys(
        {"policy", "max_draft_tokens", "threshold", "exhaustive", "optimality_gap", "max_time_evals"});
    VerifyPolicyConfig c;
    if (auto p = r.find("policy")) {
        const std::string kind = p->as_enum({"fixed", "threshold", "dynamic"});
        c.kind = kind == "fixed"       ? VerifyPolicyKind::kFixed
                 : kind == "threshold" ? VerifyPolicyKind::kThreshold
                                       : VerifyPolicyKind::kDynamic;
    }
    c.max_draft_tokens = static_cast<std::int32_t>(
        r.get_int_or("max_draft_tokens", c.max_draft_tokens, NumRange::between(1, kMaxDraftTokens)));
    c.threshold = r.get_double_or("threshold", c.threshold, NumRange::unit());
    c.exhaustive = r.get_bool_or("exhaustive", c.exhaustive);
    c.optimality_gap = r.get_double_or("optimality_gap", c.optimality_gap, NumRange::unit());
    c.max_time_evals = static_cast<std::int32_t>(
        r.get_int_or("max_time_evals", c.max_time_evals, NumRange::between(2, 1 << 30)));
    return c;
}

nlohmann::json verify_policy_config_to_json(const VerifyPolicyConfig& c) {
    return nlohmann::json{{"policy", std::string(name(c.kind))},
                          {"max_draft_tokens", c.max_draft_tokens},
                          {"threshold", c.threshold},
                          {"exhaustive", c.exhaustive},
                          {"optimality_gap", c.optimality_gap},
                          {"max_time_evals", c.max_time_evals}};
}

}  // namespace deepinfer
