#!/usr/bin/env python3
"""Blocking sweep for libqkv's GEMM (driven by scripts/tune_gemm.sh).

Times bench_gemm's qkv-<ISA> rows under QKV_GEMM_BLOCKING=mc,kc,nc for a grid around the
blocking the library derives on this machine (the "derived" configuration, timed in every
pass like the others), and prints per shape the best configuration and its speedup over the
derived one, then the configuration with the best geometric-mean speedup over all shapes.
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
    for line in out.splitlines():
        m = re.search(r"gemm blocking (\w+) \(tile (\d+)x(\d+)\): mc,kc,nc = (\d+),(\d+),(\d+)", line)
        if m and m.group(1) == isa:
            return tuple(int(m.group(i)) for i in range(2, 7))
    sys.exit(f"tune_gemm: no derived blocking for {isa} in:\n{out}")


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
        data = json.load(open(f.name))
    return {b["name"].split("/", 2)[2]: b["real_time"] for b in data["benchmarks"]}


def name(c):
    return "default" if c is None else "%d,%d,%d" % c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", default="0.05")
    ap.add_argument("--filter", default=r"[0-9]{2,}x[0-9]+x[0-9]+/N[NT]$")
    a = ap.parse_args()
    probe = subprocess.run([a.bench, "--benchmark_filter=^$"], capture_output=True, text=True,
                           env=dict(os.environ, QKV_GEMM_BLOCKING="show"))
    isa = os.environ.get("QKV_ISA")
    if not isa:
        names = re.findall(r"gemm blocking (\w+) ", probe.stderr)
        isa = names[-1]  # the list is in increasing preference; the best built one this CPU runs is assumed
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


if __name__ == "__main__":
    main()
