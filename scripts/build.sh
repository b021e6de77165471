#!/usr/bin/env bash
# Configures and builds DeepInfer into ./build (Release; CUDA parts when nvcc is found).
# Extra arguments go to the CMake configure step, e.g. -DDEEPINFER_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${DEEPINFER_JOBS:-$(nproc)}
# nvcc is usually outside PATH on Debian CUDA installs.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$jobs"
