// DI_CUDA_CHECK: throw deepinfer::CudaError naming the failed call and the CUDA error.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace deepinfer::kernels {

class CudaError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* expr, const char* file, int line) {
    throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + expr + " failed: " +
                    cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

}  // namespace deepinfer::kernels

#define DI_CUDA_CHECK(expr)                                                                   \
    do {                                                                                      \
        const cudaError_t di_cuda_err_ = (expr);                                              \
        if (di_cuda_err_ != cudaSuccess)                                                      \
            ::deepinfer::kernels::throw_cuda_error(di_cuda_err_, #expr, __FILE__, __LINE__); \
    } while (0)
