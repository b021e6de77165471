// Test support for the V4 golden data in tests/golden/v4/<name>/ (written by make_golden.py):
// loading the tiny model and reading golden tensors as float.
#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/cpu/v4_model.h"
#include "engine/model/checkpoint.h"
#include "engine/model/config.h"
#include "engine/model/safetensors.h"
#include "engine/model/weights.h"

namespace deepinfer::testing {

/// The golden directories committed under tests/golden/v4/.
inline const std::vector<std::string>& v4_golden_names() {
    static const std::vector<std::string> names = {"default", "seed7", "hc2w8"};
    return names;
}

inline std::string v4_golden_dir(const std::string& name) {
    return std::string(DEEPINFER_SOURCE_DIR) + "/tests/golden/v4/" + name;
}

/// Loads the HF-saved checkpoint (hybrid names) of a golden directory.
inline std::shared_ptr<cpu::V4Model> load_v4_golden_model(const std::string& name) {
    const std::string dir = v4_golden_dir(name);
    model::ModelConfig config = model::load_model_config(dir + "/config.json");
    const model::Checkpoint ckpt = model::Checkpoint::open(dir);
    model::ModelWeights weights = model::load_model_weights(ckpt, config);
    return std::make_shared<cpu::V4Model>(std::move(config), std::move(weights));
}

/// Golden tensors of golden_float32.safetensors.
class GoldenTensors {
public:
    explicit GoldenTensors(const std::string& name)
        : file_(v4_golden_dir(name) + "/golden_float32.safetensors") {}

    bool has(const std::string& key) const { return file_.find(key) != nullptr; }
    std::vector<std::int64_t> shape(const std::string& key) const { return info(key).shape; }
    std::vector<float> floats(const std::string& key) const {
        const model::TensorInfo& i = info(key);
        std::vector<float> out(static_cast<std::size_t>(i.numel()));
        model::convert_to_float(i.dtype, file_.data(i), out);
        return out;
    }
    std::vector<std::int32_t> ints(const std::string& key) const {
        std::vector<std::int32_t> out;
        for (float v : floats(key)) out.push_back(static_cast<std::int32_t>(v));
        return out;
    }

private:
    const model::TensorInfo& info(const std::string& key) const {
        const model::TensorInfo* i = file_.find(key);
        if (i == nullptr) throw std::runtime_error("golden tensor missing: " + key);
        return *i;
    }
    model::SafetensorsFile file_;
};

/// max|a - b| / max|b| (normalised max difference; 0 for two empty inputs).
inline double rel_max_diff(const float* a, const float* b, std::size_t n) {
    double num = 0.0, den = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        num = std::max(num, std::abs(static_cast<double>(a[i]) - b[i]));
        den = std::max(den, std::abs(static_cast<double>(b[i])));
    }
    return den > 0.0 ? num / den : num;
}

}  // namespace deepinfer::testing
