// Load predictors: last window, exponential moving average, Holt's linear trend.
#include "policies/eplb/predictor.h"

#include <algorithm>

#include "policies/common/check.h"

namespace deepinfer {

PredictorKind parse_predictor_kind(const std::string& name) {
    if (name == "last") return PredictorKind::kLastWindow;
    if (name == "ema") return PredictorKind::kEma;
    if (name == "holt") return PredictorKind::kHolt;
    throw ConfigError("eplb options", "predictor", "one of last, ema, holt", "\"" + name + "\"");
}

const char* predictor_kind_name(PredictorKind kind) {
    switch (kind) {
        case PredictorKind::kLastWindow:
            return "last";
        case PredictorKind::kEma:
            return "ema";
        case PredictorKind::kHolt:
            return "holt";
    }
    return "?";
}

LoadPredictor::LoadPredictor(PredictorConfig config) : config_(config) {
    if (!(config.alpha > 0.0 && config.alpha <= 1.0))
        throw ConfigError("eplb options", "alpha", "in (0, 1]", std::to_string(config.alpha));
    if (!(config.beta > 0.0 && config.beta <= 1.0))
        throw ConfigError("eplb options", "beta", "in (0, 1]", std::to_string(config.beta));
}

void LoadPredictor::observe(const LoadMatrix& window) {
    if (num_windows_ == 0) {
        level_ = window;
        trend_.assign(window.tokens.size(), 0.0);
        ++num_windows_;
        return;
    }
    DI_CHECK(window.num_layers == level_.num_layers && window.num_experts == level_.num_experts,
             "load window shape changed: " << window.num_layers << "x" << window.num_experts << " after "
                                           << level_.num_layers << "x" << level_.num_experts);
    const double a = config_.alpha, b = config_.beta;
    for (std::size_t i = 0; i < window.tokens.size(); ++i) {
        const double x = window.tokens[i];
        double& level = level_.tokens[i];
        switch (config_.kind) {
            case PredictorKind::kLastWindow:
                level = x;
                break;
            case PredictorKind::kEma:
                level = a * x + (1.0 - a) * level;
                break;
            case PredictorKind::kHolt: {
                const double next = a * x + (1.0 - a) * (level + trend_[i]);
                trend_[i] = b * (next - level) + (1.0 - b) * trend_[i];
                level = next;
                break;
            }
        }
    }
    ++num_windows_;
}

LoadMatrix LoadPredictor::predict() const {
    if (num_windows_ == 0) return {};
    LoadMatrix out = level_;
    if (config_.kind == PredictorKind::kHolt)
        for (std::size_t i = 0; i < out.tokens.size(); ++i)
            out.tokens[i] = std::max(0.0, out.tokens[i] + trend_[i]);
    return out;
}

}  // namespace deepinfer
