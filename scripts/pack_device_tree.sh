#!/usr/bin/env bash
# Run HERE: exports the committed tree (HEAD, not uncommitted work) plus .debs into ./.devtree
# (git-ignored), so a device run builds exactly what is committed. Then, with the device tool:
#   run(command="cd .devtree && bash scripts/device_build.sh", carry=[".devtree"])
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .debs ] || bash scripts/fetch_gpu_debs.sh
rm -rf .devtree && mkdir -p .devtree
# The CPU goldens (tests/golden/v4, ~32 MB) stay behind: the device tool carries at most 64 MiB and
# the GPU tests do not read them.
git archive HEAD -- . ':(exclude)tests/golden/v4' | tar -x -C .devtree
cp -r .debs .devtree/.debs
du -sh .devtree | cut -f1 | xargs echo "pack_device_tree: .devtree size"
