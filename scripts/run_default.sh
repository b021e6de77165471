#!/usr/bin/env bash
# README command (1): set up, build, and run the main job, the default 128-GPU simulation
# (experiments/01_default_128gpu). Results go to out/default/ (summary.json, per-request CSV,
# effective_config.json); a human summary is printed. Extra arguments go to `deepinfer simulate`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/engine/cli/deepinfer simulate --config experiments/01_default_128gpu/config.json --out out/default "$@"
