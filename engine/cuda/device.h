// CUDA device discovery and a small owning device buffer for the CUDA backend.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace deepinfer::cuda {

struct DeviceInfo {
    int index = 0;
    std::string name;
    int sm_major = 0;
    int sm_minor = 0;
    int num_sms = 0;
    std::size_t total_memory_bytes = 0;
};

/// All visible CUDA devices; empty when the driver finds none (never throws for "no GPU").
std::vector<DeviceInfo> list_devices();

}  // namespace deepinfer::cuda
