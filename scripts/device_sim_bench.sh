#!/usr/bin/env bash
# Run ON THE GPU MACHINE (many cores) from the repository root, with .debs carried along
# (scripts/fetch_gpu_debs.sh and scripts/fetch_sim_debs.sh made it here; scripts/pack_device_tree.sh
# copies it into .devtree). Builds the simulator CLI (no CUDA) against the unpacked Debian packages
# and times the default study for each thread count given (default: 1 2 4 8), writing each run's
# summary.json and stdout under $OUT (or ./device-logs).
#   usage: bash scripts/device_sim_bench.sh [duration_s] [threads...]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-device-logs}
mkdir -p "$out"
duration=${1:-300}
shift || true
threads=("$@")
[ ${#threads[@]} -gt 0 ] || threads=(1 2 4 8)
prefix=$PWD/.deps/prefix
if ! ls .debs/sim/*.deb >/dev/null 2>&1; then
  echo "device_sim_bench: no .debs/sim: run scripts/fetch_sim_debs.sh here first" >&2
  exit 2
fi
rm -rf "$prefix" && mkdir -p "$prefix"
for f in .debs/*.deb .debs/sim/*.deb; do dpkg -x "$f" "$prefix"; done
lib=$prefix/usr/lib/x86_64-linux-gnu
# Debian's simgrid.pc names /usr: point it at the unpacked prefix.
sed -i "s|=/usr|=$prefix/usr|" "$lib/pkgconfig/simgrid.pc"
ln -sf libsimgrid.so.3.32 "$lib/libsimgrid.so" 2>/dev/null || true
export PKG_CONFIG_PATH="$lib/pkgconfig"
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cmake -S . -B build-simbench -DCMAKE_BUILD_TYPE=Release -DDEEPINFER_CUDA=OFF -DDEEPINFER_SIMGRID=ON \
  -DCMAKE_PREFIX_PATH="$prefix/usr" -DCMAKE_BUILD_RPATH="$lib" -DDEEPINFER_WERROR=OFF \
  2>&1 | tee "$out/configure.log" | tail -2
cmake --build build-simbench -j"$(nproc)" --target deepinfer 2>&1 | tee "$out/build.log" | grep -E "error|Built target" | tail -5
{ nproc; grep -m1 "model name" /proc/cpuinfo; } | tee "$out/cpu.txt"
for t in "${threads[@]}"; do
  ./build-simbench/engine/cli/deepinfer simulate --config experiments/01_default_128gpu/config.json \
    --set workload.duration_s="$duration" --threads "$t" --no-progress --out "$out/threads_$t" 2>&1 |
    tee "$out/threads_$t.txt" | sed -n 2p
done
