#!/usr/bin/env python3
"""Blocking sweep for libqkv's GEMM (driven by scripts/tune_gemm.sh).

Times bench_gemm's qkv-<ISA> rows under QKV_GEMM_BLOCKING=mc,kc,nc for a grid around the
blocking the library derives on this machine (the "derived" configuration, timed in every
pass like the others), and prints per shape the best configuration and its speedup over the
derived one, then the configuration with the best geometric-mean speedup over all shapes.
Then it confirms the leaders: each, and the default itself as a control, against the default
in alternating pairs of runs; a leader is named best only where its geometric-mean speedup
beats the largest move of the control.
"""
import argparse
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile


def derived_blocking(bench, isa):
    env = dict(os.environ, QKV_GEMM_BLOCKING="show")
    out = subprocess.run([bench, "--benchmark_filter=^$"], env=env, capture_output=True, text=True).stderr
    # an ISA with two GEMM tiles (AVX2) lists both; QKV_GEMM_BLOCKING tunes the one marked
    # "qkv_gemm's" (the tile of large problems on this core, or the one QKV_GEMM_TILE names)
    found = {}
    for line in out.splitlines():
        m = re.search(r"gemm blocking (\w+) \(tile (\d+)x(\d+)(, qkv_gemm's)?\): mc,kc,nc = (\d+),(\d+),(\d+)", line)
        if m and m.group(1) == isa:
            found[bool(m.group(4))] = tuple(int(m.group(i)) for i in (2, 3, 5, 6, 7))
    if found:
        return found.get(True, found.get(False))
    sys.exit(f"tune_gemm: no derived blocking for {isa} in:\n{out}")


def detected_isa(bench):
    """the best ISA this CPU runs, as the library detects it (the context of a run of one small
    row; a build carries every ISA of its architecture, whatever the CPU runs)"""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [bench, "--benchmark_filter=^gemm/qkv-scalar/64x64x64/NN$", "--benchmark_min_time=0.001",
               f"--benchmark_out={f.name}", "--benchmark_out_format=json"]
        r = subprocess.run(cmd, env={k: v for k, v in os.environ.items() if not k.startswith("QKV_")},
                           capture_output=True, text=True)
        try:
            return json.load(open(f.name))["context"]["libqkv_isa_detected"]
        except (OSError, ValueError, KeyError):
            sys.exit(f"tune_gemm: {' '.join(cmd)} did not say which ISA this CPU runs; set QKV_ISA:\n{r.stderr}")


def grid(mr, nr, mc, kc, nc):
    def mcs(x):
        return max(mr, x // mr * mr)

    def ncs(x):
        return max(nr, min(8192, x // nr * nr))

    def kcs(x):
        return max(16, min(2048, x // 16 * 16))

    configs = {(mc, kc, nc)}
    for kf in (0.5, 0.75, 1.0, 1.5, 2.0):
        for mf in (0.125, 0.25, 0.5, 1.0):
            configs.add((mcs(int(mc * mf)), kcs(int(kc * kf)), nc))
    for nf in (0.5, 2.0):
        configs.add((mc, kc, ncs(int(nc * nf))))
    return sorted(configs)


def run(bench, isa, cfg, flt, min_time):
    """cfg None: the library's own blocking (derived, with MC adjusted for A read in place)"""
    env = dict(os.environ, QKV_ISA=isa)
    env.pop("QKV_GEMM_BLOCKING", None)
    if cfg is not None:
        env["QKV_GEMM_BLOCKING"] = "%d,%d,%d" % cfg
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [bench, f"--benchmark_filter=^gemm/qkv-{isa}/({flt})", f"--benchmark_min_time={min_time}",
               f"--benchmark_out={f.name}", "--benchmark_out_format=json"]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0 or "ignored" in r.stderr:
            sys.exit(f"tune_gemm: {' '.join(cmd)} failed:\n{r.stderr}")
        try:
            rows = json.load(open(f.name))["benchmarks"]
        except (OSError, ValueError, KeyError):
            rows = []
        if not rows:
            sys.exit(f"tune_gemm: no row of {bench} matches ^gemm/qkv-{isa}/({flt})")
    return {b["name"].split("/", 2)[2]: b["real_time"] for b in rows}


def name(c):
    return "default" if c is None else "%d,%d,%d" % c


def confirm(bench, isa, cands, flt, min_time, rounds):
    """Each candidate against the default in alternating pairs of processes (default first in
    even rounds, the candidate first in odd ones), a new random order of candidates each round:
    per candidate and shape the median over rounds of t_default / t_candidate. Paired runs a
    few seconds apart see the same state of a shared machine, which a best-of-the-grid pick
    over separate passes does not (there the luckiest process wins)."""
    ratios = {c: {} for c in cands}
    for r in range(rounds):
        order = cands[:]
        random.Random(1000 + r).shuffle(order)
        for c in order:
            pair = [None, c] if r % 2 == 0 else [c, None]
            res = [run(bench, isa, x, flt, min_time) for x in pair]
            t_def, t_c = (res[0], res[1]) if r % 2 == 0 else (res[1], res[0])
            for shape in t_def:
                ratios[c].setdefault(shape, []).append(t_def[shape] / t_c[shape])
        print(f"confirmation round {r + 1}/{rounds} done", flush=True)
    return {c: {s: statistics.median(v) for s, v in ratios[c].items()} for c in cands}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", default="0.05")
    ap.add_argument("--filter", default=r"[0-9]{2,}x[0-9]+x[0-9]+/N[NT]$")
    ap.add_argument("--confirm-rounds", type=int, default=5)
    ap.add_argument("--confirm-top", type=int, default=3)
    a = ap.parse_args()
    isa = os.environ.get("QKV_ISA") or detected_isa(a.bench)
    mr, nr, mc, kc, nc = derived_blocking(a.bench, isa)
    derived = None  # the default: no QKV_GEMM_BLOCKING
    configs = [derived] + grid(mr, nr, mc, kc, nc)
    print(f"isa {isa}, tile {mr}x{nr}, derived mc,kc,nc = {mc},{kc},{nc} (the default: these, with MC lowered "
          f"for a row-major A read in place with an unfavourable leading dimension; an override is used as "
          f"given); {len(configs)} configurations x {a.rounds} passes", flush=True)
    times = {c: {} for c in configs}
    run(a.bench, isa, derived, a.filter, a.min_time)  # warm-up (frequency, page cache): not counted
    for r in range(a.rounds):
        order = configs[:]
        random.Random(r).shuffle(order)
        for c in order:
            for shape, t in run(a.bench, isa, c, a.filter, a.min_time).items():
                times[c].setdefault(shape, []).append(t)
        print(f"pass {r + 1}/{a.rounds} done", flush=True)
    med = {c: {s: statistics.median(v) for s, v in times[c].items()} for c in configs}
    shapes = list(med[derived])
    print(f"\n{'shape':<22} {'default us':>11} {'best mc,kc,nc':>16} {'best us':>10} {'speedup':>8}")
    for s in shapes:
        best = min(configs, key=lambda c: med[c][s])
        print(f"{s:<22} {med[derived][s]:>11.2f} {name(best):>16} {med[best][s]:>10.2f} "
              f"{med[derived][s] / med[best][s]:>8.3f}")

    def geo(c):
        return math.exp(statistics.mean(math.log(med[derived][s] / med[c][s]) for s in shapes))

    ranked = sorted(configs, key=geo, reverse=True)
    print("\noverall (geometric mean of the speedups over the default):")
    for c in ranked[:5]:
        print(f"  {'(default)' if c is None else 'QKV_GEMM_BLOCKING=' + name(c):<34} {geo(c):.3f}")
    print(f"  the default ranks {ranked.index(derived) + 1} of {len(ranked)}")
    if a.confirm_rounds <= 0:
        return

    # The picks above are the best of many noisy medians, so they are biased towards luck.
    # Confirm the leaders in pairs with the default, and the default against itself as the
    # control: its ratios show how far noise alone moves a pair on this machine.
    cands = [c for c in ranked if c is not None][:a.confirm_top] + [derived]
    print(f"\nconfirming the top {len(cands) - 1} and the default itself (the control) in "
          f"{a.confirm_rounds} rounds of pairs with the default", flush=True)
    conf = confirm(a.bench, isa, cands, a.filter, a.min_time, a.confirm_rounds)
    cols = [("control" if c is None else name(c)) for c in cands]
    print(f"\nspeedup over the default, medians of {a.confirm_rounds} pairs (control: the default against itself)")
    print(f"{'shape':<22} " + " ".join(f"{x:>16}" for x in cols))
    for s in shapes:
        print(f"{s:<22} " + " ".join(f"{conf[c][s]:>16.3f}" for c in cands))
    geos = {c: math.exp(statistics.mean(math.log(conf[c][s]) for s in shapes)) for c in cands}
    print(f"{'geometric mean':<22} " + " ".join(f"{geos[c]:>16.3f}" for c in cands))
    noise = max(abs(math.log(conf[derived][s])) for s in shapes)
    best = max(cands, key=lambda c: geos[c])
    if best is None or math.log(geos[best]) <= noise:
        print(f"\nno candidate beats the default by more than the control moved on its own "
              f"(up to {math.exp(noise):.3f}x): keep the derived blocking")
    else:
        print(f"\nbest after confirmation: QKV_GEMM_BLOCKING={name(best)} at {geos[best]:.3f}x "
              f"(the control moved up to {math.exp(noise):.3f}x on its own)")


if __name__ == "__main__":
    main()
