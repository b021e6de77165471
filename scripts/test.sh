#!/usr/bin/env bash
# README command (2): set up, build, and run the CPU test suite (ctest label "cpu").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir build -L cpu -j"$(nproc)" --output-on-failure
