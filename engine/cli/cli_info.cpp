// `deepinfer info`: which backends this build has, and the visible CUDA devices.
#include <cstdio>

#include "engine/cli/commands.h"
#ifdef DEEPINFER_WITH_CUDA
#include "engine/cuda/device.h"
#endif

namespace deepinfer::cli {

int run_info(const Args& /*args*/) {
#ifdef DEEPINFER_WITH_CUDA
    std::printf("cuda backend: built\n");
    const auto devices = cuda::list_devices();
    if (devices.empty()) std::printf("cuda devices: none visible\n");
    for (const auto& d : devices)
        std::printf("cuda device %d: %s, sm_%d%d, %d SMs, %.1f GiB\n", d.index, d.name.c_str(), d.sm_major, d.sm_minor,
                    d.num_sms, static_cast<double>(d.total_memory_bytes) / (1024.0 * 1024.0 * 1024.0));
#else
    std::printf("cuda backend: not built (configure with nvcc available, or -DDEEPINFER_CUDA=ON)\n");
#endif
#ifdef DEEPINFER_WITH_SIMGRID
    std::printf("simgrid model: built\n");
#else
    std::printf("simgrid model: not built (install libsimgrid-dev and reconfigure)\n");
#endif
    return 0;
}

}  // namespace deepinfer::cli
