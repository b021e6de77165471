// RMSNorm fp32: one block per row, fp32 sum of squares reduced through warp shuffles.
#include "kernels/rmsnorm/rmsnorm.h"

namespace deepinfer::kernels {
namespace {

constexpr int kThreads = 256;

__device__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void __launch_bounds__(kThreads) rms_norm_kernel(RmsNormParams p) {
    const std::int64_t row = blockIdx.x;
    const float* x = p.x + row * p.dim;
    float* y = p.y + row * p.dim;
    float sum = 0.f;
    for (std::int64_t i = threadIdx.x; i < p.dim; i += kThreads) sum += x[i] * x[i];
    __shared__ float partial[kThreads / 32];
    sum = warp_sum(sum);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = sum;
    __syncthreads();
    if (threadIdx.x < 32) {
        float v = threadIdx.x < kThreads / 32 ? partial[threadIdx.x] : 0.f;
        v = warp_sum(v);
        if (threadIdx.x == 0) partial[0] = v;
    }
    __syncthreads();
    const float inv = rsqrtf(partial[0] / static_cast<float>(p.dim) + p.eps);
    for (std::int64_t i = threadIdx.x; i < p.dim; i += kThreads) {
        const float w = p.weight != nullptr ? p.weight[i] : 1.f;
        y[i] = x[i] * inv * w;
    }
}

}  // namespace

cudaError_t launch_rms_norm(const RmsNormParams& p, cudaStream_t stream) {
    if (p.rows < 0 || p.dim <= 0 || p.x == nullptr || p.y == nullptr) return cudaErrorInvalidValue;
    if (p.rows == 0) return cudaSuccess;
    rms_norm_kernel<<<static_cast<unsigned>(p.rows), kThreads, 0, stream>>>(p);
    return cudaGetLastError();
}

}  // namespace deepinfer::kernels
