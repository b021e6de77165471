// CUDA device discovery.
#include "engine/cuda/device.h"

#include <cuda_runtime.h>

namespace deepinfer::cuda {

std::vector<DeviceInfo> list_devices() {
    std::vector<DeviceInfo> out;
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky "no device" error
        return out;
    }
    for (int i = 0; i < n; ++i) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
        out.push_back(DeviceInfo{.index = i,
                                 .name = prop.name,
                                 .sm_major = prop.major,
                                 .sm_minor = prop.minor,
                                 .num_sms = prop.multiProcessorCount,
                                 .total_memory_bytes = prop.totalGlobalMem});
    }
    return out;
}

}  // namespace deepinfer::cuda
