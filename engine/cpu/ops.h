// Reference operations on the CPU (fp32, Eigen): the numerical oracle for kernels/.
#pragma once

#include <cstdint>
#include <span>

namespace deepinfer::cpu {

/// Weighted RMSNorm over rows: y[r, :] = w * x[r, :] / sqrt(mean(x[r, :]^2) + eps).
/// x and y are row-major [rows, dim]; `weight` has dim entries (empty = unweighted). x may alias y.
void rms_norm(std::span<const float> x, std::span<const float> weight, std::span<float> y, std::int64_t rows,
              std::int64_t dim, float eps);

}  // namespace deepinfer::cpu
