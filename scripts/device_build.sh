#!/usr/bin/env bash
# Run ON THE GPU MACHINE from the repository root (the device tool's working copy), with .debs
# carried along (scripts/fetch_gpu_debs.sh made it here). Unpacks the .debs into .deps/prefix,
# configures a CUDA build without SimGrid, builds with all cores and runs `ctest -L gpu`.
# Logs go to $OUT when set (the device tool brings them back), else to ./device-logs.
#   usage: bash scripts/device_build.sh [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-device-logs}
mkdir -p "$out"
prefix=$PWD/.deps/prefix
if [ ! -d .debs ] || ! ls .debs/*.deb >/dev/null 2>&1; then
  echo "device_build: no .debs folder: run scripts/fetch_gpu_debs.sh first and carry .debs" >&2
  exit 2
fi
rm -rf "$prefix" && mkdir -p "$prefix"
for f in .debs/*.deb; do dpkg -x "$f" "$prefix"; done
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
{
  echo "== machine"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  nvcc --version | tail -1; cmake --version | head -1
} 2>&1 | tee "$out/device_env.txt"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDEEPINFER_CUDA=ON -DDEEPINFER_SIMGRID=OFF \
  -DDEEPINFER_CUDA_ARCHS="${DEEPINFER_CUDA_ARCHS:-90a}" -DCMAKE_PREFIX_PATH="$prefix/usr" \
  -DCMAKE_BUILD_RPATH="$prefix/usr/lib/x86_64-linux-gnu" -DDEEPINFER_WERROR=OFF "$@" 2>&1 | tee "$out/configure.log" | tail -3
# NOTE: only what `ctest -L gpu` and the CLI need; warnings are not errors here because the GPU
# machine's compiler (gcc 13) differs from CI's (gcc 12), whose -Werror build is the gate.
cmake --build build-gpu -j"$(nproc)" --target deepinfer_tests_gpu deepinfer 2>&1 | tee "$out/build.log" |
  grep -E "error|Built target" | tail -20
export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
./build-gpu/engine/cli/deepinfer info 2>&1 | tee "$out/info.txt"
set +e
ctest --test-dir build-gpu -L gpu --output-on-failure 2>&1 | tee "$out/ctest_gpu.log"
rc=${PIPESTATUS[0]}
exit "$rc"
