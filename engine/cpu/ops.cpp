// Reference operations (Eigen).
#include "engine/cpu/ops.h"

#include <Eigen/Core>
#include <cmath>

#include "policies/common/check.h"

namespace deepinfer::cpu {

void rms_norm(std::span<const float> x, std::span<const float> weight, std::span<float> y, std::int64_t rows,
              std::int64_t dim, float eps) {
    DI_CHECK(rows >= 0 && dim > 0, "rms_norm rows=" << rows << " dim=" << dim);
    DI_CHECK(static_cast<std::int64_t>(x.size()) == rows * dim && y.size() == x.size(), "rms_norm size mismatch");
    DI_CHECK(weight.empty() || static_cast<std::int64_t>(weight.size()) == dim, "rms_norm weight size");
    using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    Eigen::Map<const RowMat> xin(x.data(), rows, dim);
    Eigen::Map<RowMat> out(y.data(), rows, dim);
    for (std::int64_t r = 0; r < rows; ++r) {
        // Accumulate in double so the reference is more exact than any fp32 kernel it checks.
        const double ms = xin.row(r).cast<double>().squaredNorm() / static_cast<double>(dim);
        const auto inv = static_cast<float>(1.0 / std::sqrt(ms + static_cast<double>(eps)));
        if (weight.empty()) {
            out.row(r) = xin.row(r) * inv;
        } else {
            Eigen::Map<const Eigen::RowVectorXf> w(weight.data(), dim);
            out.row(r) = (xin.row(r) * inv).cwiseProduct(w);
        }
    }
}

}  // namespace deepinfer::cpu
