#!/usr/bin/env bash
# DSpark in the simulator: dynamic vs fixed-5 verification at 16, 60 and 96 sequences per decode rank
# (EP64 decode instance, b200-roofline profile). Usage: run.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-build}"
out="${2:-$root/out/05_dspark_sim}"
cli="$root/$build/engine/cli/deepinfer"
mkdir -p "$out"
for n in 16 60 96; do
  for policy in fixed dynamic; do
    "$cli" simulate --config "$here/config.json" --no-progress \
      --set decode.scheduler_config.max_num_seqs=$n \
      --set decode.verify.policy.policy=$policy \
      --out "$out/n${n}_${policy}" > "$out/n${n}_${policy}.log"
  done
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
pub = {16: "-1.5%", 60: "+5.4%", 96: "+11.0%"}
print("| seqs/rank (cap) | measured seqs/rank | policy | decode tok/s/GPU | change vs fixed-5 | DeepInfer | drafts verified / seq-step | accepted length | tok/s per sequence |")
print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
for n in (16, 60, 96):
    base = None
    for policy in ("fixed", "dynamic"):
        s = json.load(open(f"{out}/n{n}_{policy}/summary.json"))
        tput = s["throughput_tok_s_per_gpu"]["decode"]
        sp = s["speculative"]
        if policy == "fixed":
            base = tput
            change, ref = "—", "—"
        else:
            change, ref = f"{100 * (tput / base - 1):+.1f}%", pub[n]
        seqs = s["mean_seqs_per_step_per_rank"]["decode"]
        print(f"| {n} | {seqs:.1f} | {policy}{'-5' if policy == 'fixed' else ''} | {tput:,.0f} | {change} | {ref} | "
              f"{sp['verified_drafts_per_seq_step']:.2f} | {sp['accepted_length']:.2f} | {tput / seqs:,.0f} |")
PY
