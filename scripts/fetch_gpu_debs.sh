#!/usr/bin/env bash
# Run HERE (Debian 12, with apt): downloads the Debian .deb files that the GPU machine's build needs
# into ./.debs (git-ignored). The GPU machine (Ubuntu 24.04, CUDA 13) has no package registry;
# scripts/device_build.sh unpacks these into a prefix there.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(
  nlohmann-json3-dev catch2 libeigen3-dev
  libboost-program-options-dev libboost-program-options1.74-dev libboost-program-options1.74.0 libboost1.74-dev
  libbenchmark-dev libbenchmark1debian
)
mkdir -p .debs
cd .debs
# apt-get download writes into the current folder; _apt cannot write here when run as root, so
# the download runs unsandboxed (harmless warning).
apt-get download "${packages[@]}" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true
ls -1 *.deb | wc -l | xargs echo "fetch_gpu_debs: .debs holds these many packages:"
du -sh . | cut -f1 | xargs echo "fetch_gpu_debs: size"
