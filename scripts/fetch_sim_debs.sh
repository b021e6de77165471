#!/usr/bin/env bash
# Run HERE (Debian 12, with apt): downloads the Debian .deb files of SimGrid and its runtime
# libraries into ./.debs/sim (git-ignored), so that scripts/device_sim_bench.sh can build the
# simulator on the GPU machine (no package registry there) and time it on many cores.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(
  libsimgrid-dev libsimgrid3.32 libboost-context1.74.0 libboost-stacktrace1.74.0 libns3.37 libgsl27 libgslcblas0
)
mkdir -p .debs/sim
cd .debs/sim
apt-get download "${packages[@]}" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true
ls -1 *.deb | wc -l | xargs echo "fetch_sim_debs: .debs/sim holds these many packages:"
