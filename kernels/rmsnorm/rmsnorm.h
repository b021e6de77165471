// RMSNorm kernel launch API (no framework types): y = w * x / sqrt(mean(x^2) + eps) per row.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace deepinfer::kernels {

struct RmsNormParams {
    const float* x = nullptr;       ///< [rows, dim] row-major, device memory
    const float* weight = nullptr;  ///< [dim] or nullptr (unweighted)
    float* y = nullptr;             ///< [rows, dim]; may alias x
    std::int64_t rows = 0;
    std::int64_t dim = 0;
    float eps = 1e-6f;
};

/// Enqueues the kernel on `stream`; returns the launch error (cudaSuccess on success).
cudaError_t launch_rms_norm(const RmsNormParams& p, cudaStream_t stream);

}  // namespace deepinfer::kernels
