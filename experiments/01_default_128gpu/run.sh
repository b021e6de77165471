#!/usr/bin/env bash
# The default 128-GPU study (64 prefill + 64 decode GPUs, V4.1-Flash shape, b200-roofline profile).
# Usage: experiments/01_default_128gpu/run.sh [BUILD_DIR] [extra simulate flags...]; results go to
# $OUT (default: out/01_default_128gpu at the repository root, which git ignores).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-$root/build}"
shift || true
"$build/engine/cli/deepinfer" simulate --config "$here/config.json" --out "${OUT:-$root/out/01_default_128gpu}" "$@"
