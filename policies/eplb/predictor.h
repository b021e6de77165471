// Load prediction across measurement windows: the loads of the next period from the windows seen so
// far (last window, exponential smoothing, or smoothing with a trend).
#pragma once

#include <cstdint>
#include <string>

#include "policies/eplb/rebalance.h"

namespace deepinfer {

enum class PredictorKind {
    kLastWindow,  ///< next = the last window
    kEma,         ///< next = alpha * last + (1 - alpha) * previous prediction
    kHolt,        ///< exponential smoothing with a per-expert linear trend (alpha level, beta trend)
};

/// "last", "ema" or "holt"; throws ConfigError (file "eplb options", "predictor") otherwise.
PredictorKind parse_predictor_kind(const std::string& name);
const char* predictor_kind_name(PredictorKind kind);

struct PredictorConfig {
    PredictorKind kind = PredictorKind::kEma;
    /// Weight of the newest window, in (0, 1].
    double alpha = 0.5;
    /// Holt only: weight of the newest trend estimate, in (0, 1].
    double beta = 0.2;
};

class LoadPredictor {
public:
    explicit LoadPredictor(PredictorConfig config);

    /// Feeds one window's loads (per-step averages, so windows of different lengths compare). The
    /// shape must stay the same across windows.
    void observe(const LoadMatrix& window);
    /// Predicted loads of the next window (non-negative). Empty matrix before the first observe().
    LoadMatrix predict() const;
    bool has_prediction() const { return num_windows_ > 0; }

private:
    PredictorConfig config_;
    std::int64_t num_windows_ = 0;
    LoadMatrix level_;
    std::vector<double> trend_;
};

}  // namespace deepinfer
