#!/usr/bin/env bash
# Installs DeepInfer's build dependencies from Debian 12 packages. Idempotent: installs only what
# is missing. CUDA is optional and not installed here (the CUDA parts build when nvcc is found).
set -euo pipefail

packages=(
  cmake g++ make pkg-config ccache
  libsimgrid-dev            # the SimGrid cluster model (S4U, 3.32 on Debian 12)
  libeigen3-dev             # CPU reference executor
  libboost-program-options-dev  # the CLI
  libboost-dev              # Boost.Math headers (Beta quantiles of the simulator's acceptance model)
  nlohmann-json3-dev        # JSON configs, profiles, traces
  catch2                    # tests (v2)
  libbenchmark-dev          # Google Benchmark
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo_cmd=(sudo); else
    echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
