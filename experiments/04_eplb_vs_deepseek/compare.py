#!/usr/bin/env python3
"""EPLB: our `deepinfer eplb` against DeepSeek's open-source eplb.py on the same generated traces.

Developer-side study (the product never needs Python). eplb.py is NOT part of this repository: fetch it
from github.com/deepseek-ai/EPLB into a scratch folder and pass its path with --eplb-py; it needs torch
(Debian: apt-get install python3-torch; PyPI: pip install torch).

Both placements are scored by the same code here: per layer, max GPU load / mean GPU load, where a
replica carries load / replicas (eplb.py's model) or, for ours with the weighted split, its
replica_share of the expert's load. The lower bound is max(W / G, min over replica counts of
max load / replicas), the bound our CLI prints (see policies/eplb/rebalance.h).
"""
import argparse
import importlib.util
import json
import math
import os
import random
import subprocess
import sys
import tempfile

EXPERTS = 256


def zipf_weights(n, s):
    return [1.0 / (i + 1) ** s for i in range(n)]


def hot_weights(n, hot, frac):
    return [frac / hot] * hot + [(1 - frac) / (n - hot)] * (n - hot)


def make_trace(weights, layers, windows, drift, tokens, seed):
    """Per layer a random popularity order; between windows adjacent-rank swaps with prob `drift`;
    counts ~ normal approximation of Poisson around the expected share."""
    rng = random.Random(seed)
    n = len(weights)
    total_w = sum(weights)
    orders = []
    for _ in range(layers):
        order = list(range(n))
        rng.shuffle(order)
        orders.append(order)
    out = []
    for w in range(windows):
        if w > 0 and drift > 0:
            for order in orders:
                for i in range(n - 1):
                    if rng.random() < drift:
                        j = i + 1 + rng.randrange(min(8, n - 1 - i))
                        order[i], order[j] = order[j], order[i]
        win = []
        for order in orders:
            row = [0.0] * n
            for rank, e in enumerate(order):
                mean = tokens * weights[rank] / total_w
                row[e] = float(max(0, round(mean + rng.gauss(0, 1) * math.sqrt(mean))))
            win.append(row)
        out.append(win)
    return {"layers": layers, "experts": n, "windows": out}


def fresh_next_window(loads, weights, drift, tokens, rng):
    """One fresh draw of the next window of the drift model, from the popularity order of `loads`."""
    n = len(loads)
    order = sorted(range(n), key=lambda e: (-loads[e], e))
    for i in range(n - 1):
        if rng.random() < drift:
            j = i + 1 + rng.randrange(min(8, n - 1 - i))
            order[i], order[j] = order[j], order[i]
    total_w = sum(weights)
    row = [0.0] * n
    for rank, e in enumerate(order):
        mean = tokens * weights[rank] / total_w
        row[e] = float(max(0, round(mean + rng.gauss(0, 1) * math.sqrt(mean))))
    return row


def gpu_max_over_mean(phy2log, share, loads, gpus):
    per_gpu = len(phy2log) // gpus
    counts = [0] * len(loads)
    for e in phy2log:
        counts[e] += 1
    g_load = [0.0] * gpus
    for s, e in enumerate(phy2log):
        frac = share[s] if share is not None else 1.0 / counts[e]
        g_load[s // per_gpu] += loads[e] * frac
    mean = sum(loads) / gpus
    return max(g_load) / mean if mean > 0 else 1.0


def duplicates_on_gpu(phy2log, gpus):
    per_gpu = len(phy2log) // gpus
    return sum(per_gpu - len(set(phy2log[g * per_gpu:(g + 1) * per_gpu])) for g in range(gpus))


def lower_bound(loads, gpus, slots):
    counts = [1] * len(loads)
    for _ in range(gpus * slots - len(loads)):
        best = max((e for e in range(len(loads)) if counts[e] < gpus), key=lambda e: (loads[e] / counts[e], -e))
        counts[best] += 1
    mean = sum(loads) / gpus
    return max(mean, max(l / c for l, c in zip(loads, counts))) / mean if mean > 0 else 1.0


def run_ours(cli, trace_path, gpus, redundant, split, predict, out_path, spread=0.0):
    cmd = [cli, "eplb", "--trace", trace_path, "--gpus", str(gpus), "--redundant", str(redundant), "--split", split,
           "--predict", predict, "--spread", str(spread), "--out", out_path]
    res = subprocess.run(cmd, check=True, capture_output=True, text=True)
    ms = float([l for l in res.stdout.splitlines() if l.startswith("run time:")][0].split()[2])
    with open(out_path) as f:
        placement = json.load(f)
    return placement, ms


def run_eplb_py(eplb, torch, loads_matrix, gpus, redundant):
    weight = torch.tensor(loads_matrix, dtype=torch.float32)
    phy2log, _, _ = eplb.rebalance_experts(weight, EXPERTS + gpus * redundant, 1, 1, gpus)
    return phy2log.tolist()


def mean(xs):
    return sum(xs) / len(xs)


def score(placement_layers, eval_windows_loads, gpus, use_share):
    """Mean over layers of max/mean on the given loads (list per layer)."""
    vals = []
    for l, loads in enumerate(eval_windows_loads):
        layer = placement_layers[l]
        share = layer.get("replica_share") if use_share else None
        vals.append(gpu_max_over_mean(layer["phy2log"], share, loads, gpus))
    return vals


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True, help="path to the deepinfer binary")
    ap.add_argument("--eplb-py", required=True, help="path to DeepSeek's eplb.py (kept outside the repo)")
    ap.add_argument("--layers", type=int, default=43)
    ap.add_argument("--windows", type=int, default=6, help="windows of the drifting traces")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--drift", type=float, default=0.05, help="per-window adjacent-rank swap probability")
    ap.add_argument("--fresh-draws", type=int, default=0,
                    help="drift rows: also score every placement on this many fresh draws of the next window "
                         "per layer (the expected value under the drift model, not just this trace's luck)")
    ap.add_argument("--json-out", default="")
    args = ap.parse_args()

    spec = importlib.util.spec_from_file_location("eplb_ref", args.eplb_py)
    eplb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(eplb)
    import torch  # noqa: E402  (eplb.py needs it too)

    shapes = [("zipf0.5", zipf_weights(EXPERTS, 0.5)), ("zipf1.0", zipf_weights(EXPERTS, 1.0)),
              ("zipf1.5", zipf_weights(EXPERTS, 1.5)), ("hot4x50%", hot_weights(EXPERTS, 4, 0.5))]
    rows = []
    tmp = tempfile.mkdtemp(prefix="eplb_cmp_")
    for gpus in (8, 64, 128):
        for redundant in (1, 4):
            slots = EXPERTS // gpus + redundant
            # Single-window traces: place and score on the same loads.
            for si, (name, weights) in enumerate(shapes):
                trace = make_trace(weights, args.layers, 1, 0.0, 200000, args.seed * 1000 + si)
                tpath = os.path.join(tmp, f"{name}.json")
                with open(tpath, "w") as f:
                    json.dump(trace, f)
                loads = trace["windows"][0]
                ours_w, ms_w = run_ours(args.cli, tpath, gpus, redundant, "weighted", "sum", os.path.join(tmp, "w.json"))
                ours_u, _ = run_ours(args.cli, tpath, gpus, redundant, "uniform", "sum", os.path.join(tmp, "u.json"))
                ref = run_eplb_py(eplb, torch, loads, gpus, redundant)
                ref_layers = [{"phy2log": p} for p in ref]
                rows.append({
                    "trace": name, "gpus": gpus, "redundant": redundant, "slots": slots,
                    "eplb_py": mean(score(ref_layers, loads, gpus, False)),
                    "ours_uniform": mean(score(ours_u["layers"], loads, gpus, False)),
                    "ours_weighted": mean(score(ours_w["layers"], loads, gpus, True)),
                    "worst_layer_margin": max(a - b for a, b in zip(score(ours_w["layers"], loads, gpus, True),
                                                                    score(ref_layers, loads, gpus, False))),
                    "bound": mean([lower_bound(l, gpus, slots) for l in loads]),
                    "eplb_py_dup_replicas": sum(duplicates_on_gpu(p, gpus) for p in ref),
                    "ours_ms": ms_w,
                })
                print(json.dumps(rows[-1]), flush=True)
            # Drifting trace: place from windows < t, score on window t.
            trace = make_trace(zipf_weights(EXPERTS, 1.0), args.layers, args.windows, args.drift, 200000, args.seed * 1000 + 99)
            acc = {"eplb_py": [], "ours_uniform": [], "ours_weighted": [], "ours_weighted_ema": [], "oracle": [],
                   "fresh_eplb_py": [], "fresh_ours_uniform": [], "fresh_ours_weighted": []}
            fresh_rng = random.Random(args.seed * 7919 + gpus * 10 + redundant)
            for t in range(1, args.windows):
                sub = dict(trace, windows=trace["windows"][:t])
                spath = os.path.join(tmp, "drift_sub.json")
                with open(spath, "w") as f:
                    json.dump(sub, f)
                nxt = trace["windows"][t]
                ref = run_eplb_py(eplb, torch, trace["windows"][t - 1], gpus, redundant)
                acc["eplb_py"].append(mean(score([{"phy2log": p} for p in ref], nxt, gpus, False)))
                u, _ = run_ours(args.cli, spath, gpus, redundant, "uniform", "last", os.path.join(tmp, "u.json"))
                acc["ours_uniform"].append(mean(score(u["layers"], nxt, gpus, False)))
                w, _ = run_ours(args.cli, spath, gpus, redundant, "weighted", "last", os.path.join(tmp, "w.json"))
                acc["ours_weighted"].append(mean(score(w["layers"], nxt, gpus, True)))
                e, _ = run_ours(args.cli, spath, gpus, redundant, "weighted", "ema", os.path.join(tmp, "e.json"))
                acc["ours_weighted_ema"].append(mean(score(e["layers"], nxt, gpus, True)))
                last = trace["windows"][t - 1]
                for _ in range(args.fresh_draws):
                    draw = [fresh_next_window(last[l], zipf_weights(EXPERTS, 1.0), args.drift, 200000, fresh_rng)
                            for l in range(len(last))]
                    acc["fresh_eplb_py"].append(mean(score([{"phy2log": p} for p in ref], draw, gpus, False)))
                    acc["fresh_ours_uniform"].append(mean(score(u["layers"], draw, gpus, False)))
                    acc["fresh_ours_weighted"].append(mean(score(w["layers"], draw, gpus, True)))
            rows.append({"trace": f"drift{args.drift} x{args.windows - 1}", "gpus": gpus, "redundant": redundant, "slots": slots,
                         **{k: mean(v) for k, v in acc.items() if v}})
            print(json.dumps(rows[-1]), flush=True)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(rows, f, indent=1)
    if args.fresh_draws:
        print(f"\nDrift rows, expected over {args.fresh_draws} fresh draws of each next window:")
        print("| EP | R | eplb.py | ours uniform | ours weighted |")
        print("|---|---|---|---|---|")
        for r in rows:
            if "fresh_eplb_py" in r:
                print(f"| {r['gpus']} | {r['redundant']} | {r['fresh_eplb_py']:.4f} | {r['fresh_ours_uniform']:.4f} | "
                      f"{r['fresh_ours_weighted']:.4f} |")
    print("\n| trace | EP | R | slots/GPU | eplb.py | ours uniform | ours weighted | ours weighted+EMA | bound |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        f = lambda k: f"{r[k]:.4f}" if k in r else "-"
        print(f"| {r['trace']} | {r['gpus']} | {r['redundant']} | {r['slots']} | {f('eplb_py')} | {f('ours_uniform')} | "
              f"{f('ours_weighted')} | {f('ours_weighted_ema')} | {f('bound')} |")


if __name__ == "__main__":
    sys.exit(main())
