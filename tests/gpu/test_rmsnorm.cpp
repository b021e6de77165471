// GPU: the RMSNorm kernel against the CPU reference (engine/cpu), fp32, fresh random inputs.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "engine/cpu/ops.h"
#include "engine/cuda/device.h"
#include "kernels/common/cuda_check.h"
#include "kernels/rmsnorm/rmsnorm.h"
#include "policies/common/rng.h"

using namespace deepinfer;

namespace {
/// ||a - b|| / ||b|| and max |a - b|.
std::pair<double, double> diff(const std::vector<float>& a, const std::vector<float>& b) {
    double num = 0;
    double den = 0;
    double max_abs = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = static_cast<double>(a[i]) - b[i];
        num += d * d;
        den += static_cast<double>(b[i]) * b[i];
        max_abs = std::max(max_abs, std::fabs(d));
    }
    return {std::sqrt(num / den), max_abs};
}
}  // namespace

TEST_CASE("GPU: a CUDA device is visible", "[gpu]") {
    const auto devices = cuda::list_devices();
    REQUIRE_FALSE(devices.empty());
    INFO(devices[0].name << " sm_" << devices[0].sm_major << devices[0].sm_minor);
    CHECK(devices[0].sm_major >= 9);
}

TEST_CASE("GPU: rms_norm matches the CPU reference", "[gpu][kernels]") {
    const auto [rows, dim] = GENERATE(std::pair<std::int64_t, std::int64_t>{1, 4096}, std::pair<std::int64_t, std::int64_t>{37, 512},
                                      std::pair<std::int64_t, std::int64_t>{300, 16384}, std::pair<std::int64_t, std::int64_t>{5, 7});
    const bool weighted = GENERATE(true, false);
    Rng rng(static_cast<std::uint64_t>(rows * 131 + dim));
    std::vector<float> x(static_cast<std::size_t>(rows * dim));
    std::vector<float> w(weighted ? static_cast<std::size_t>(dim) : 0);
    for (auto& v : x) v = static_cast<float>(rng.normal(0.3, 2.0));
    for (auto& v : w) v = static_cast<float>(rng.uniform(0.5, 1.5));
    std::vector<float> ref(x.size());
    cpu::rms_norm(x, w, ref, rows, dim, 1e-6f);

    float *dx = nullptr, *dw = nullptr, *dy = nullptr;
    DI_CUDA_CHECK(cudaMalloc(&dx, x.size() * sizeof(float)));
    DI_CUDA_CHECK(cudaMalloc(&dy, x.size() * sizeof(float)));
    if (weighted) DI_CUDA_CHECK(cudaMalloc(&dw, w.size() * sizeof(float)));
    DI_CUDA_CHECK(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
    if (weighted) DI_CUDA_CHECK(cudaMemcpy(dw, w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice));
    // Poison the output so unwritten elements show.
    DI_CUDA_CHECK(cudaMemset(dy, 0xff, x.size() * sizeof(float)));
    kernels::RmsNormParams p{.x = dx, .weight = dw, .y = dy, .rows = rows, .dim = dim, .eps = 1e-6f};
    DI_CUDA_CHECK(kernels::launch_rms_norm(p, nullptr));
    DI_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> y(x.size());
    DI_CUDA_CHECK(cudaMemcpy(y.data(), dy, y.size() * sizeof(float), cudaMemcpyDeviceToHost));
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dw);
    for (float v : y) REQUIRE(std::isfinite(v));
    const auto [rel, max_abs] = diff(y, ref);
    INFO("rows=" << rows << " dim=" << dim << " rel=" << rel << " max_abs=" << max_abs);
    CHECK(rel < 1e-6);
    CHECK(max_abs < 1e-5);
}
