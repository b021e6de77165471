// Small seeded outcome models behind interfaces the SimExecutor uses: draft acceptance.
// The fixed-rate model is `acceptance.model: "fixed_rate"`; "dspark" selects the calibrated seeded model
// of sim/outcome_model/acceptance_model.h.
#pragma once

#include <cstdint>

#include "policies/common/rng.h"
#include "policies/step_plan.h"

namespace deepinfer::sim {

/// How many of a sequence's verified drafts are accepted in one step.
class DraftAcceptance {
public:
    virtual ~DraftAcceptance() = default;
    virtual std::int32_t accepted(const SeqSchedule& seq, Rng& rng) = 0;
};

/// Each draft is accepted with a fixed probability until the first rejection.
class FixedRateAcceptance final : public DraftAcceptance {
public:
    explicit FixedRateAcceptance(double rate) : rate_(rate) {}
    std::int32_t accepted(const SeqSchedule& seq, Rng& rng) override {
        std::int32_t n = 0;
        while (n < seq.num_verify_tokens && rng.bernoulli(rate_)) ++n;
        return n;
    }

private:
    double rate_;
};

}  // namespace deepinfer::sim
