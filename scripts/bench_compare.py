#!/usr/bin/env python3
"""Compare two libqkv benchmark runs and flag regressions.

    scripts/bench_compare.py BASE.json NEW.json [NEW2.json ...] [--threshold 0.10]
                             [--normalize auto|peak|none] [--shown-only REGEX] [--memory-bound-shown]

For every benchmark in both files, the figure compared is the median CPU time (the
'median' aggregate, or the median of the repetitions). With --normalize peak (the default
when both runs carry an in-process FMA peak, fma_peak_gflops_<isa> in the context), each
time is multiplied by that run's peak: time x machine speed is what a slower or faster
machine does not change, so a uniformly slower machine is not a regression, while one
kernel falling behind the others is. The peak used is that of the best ISA present in
both runs, the one with the highest peak (the same one for every benchmark).

A benchmark regressed when new > base x (1 + threshold). Only libqkv's own rows can regress
(bench_summary.is_libqkv: qkv-<isa> or a bare ISA name, the names the runs' contexts list
in libqkv_isas and fma_peak_gflops_<isa>); peers (OpenBLAS, BLIS, oneDNN,
SLEEF, the unfused composites, any other) are shown, marked "peer", and never counted: a
peer library that is slow on some CPU says nothing about libqkv. Prints a table of changes,
lists benchmarks present in only one file, and exits 1 naming every regression, 0 when
there is none, 2 when an input is missing, empty or not Google Benchmark JSON. Rows that
--shown-only matches are shown, marked "not gated", and not counted either;
--memory-bound-shown does the same for the rows that MEMORY_BOUND names.

Several NEW runs (of one build on one machine, e.g. a second run after a failed check):
each row's figure is the fastest of its runs' (each time x its own run's peak). A busy
neighbour or a stolen vCPU only ever slows a row down, and a quick run measures each row
once, so one run can catch a row in a slow moment; a real regression is slow in every run.
On the AVX2 EPYC VM the same quick run moved single rows by +44% to +74% from one run to
the next (sdpa/qkv-scalar/512x64/causal +65%, a 2048 x 2048 causal attention on two
threads +74%), and one run put exp/scalar/65536 at +88% against its class's baseline, the
next at -3%: with a 2x threshold, one more such spike fails a CI run on noise alone.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_summary import best_isa, fma_peaks, is_libqkv_name, libqkv_isas, medians, time_ns  # noqa: E402


# libqkv's memory-bound rows: they run at the speed of the memory system, not of the FMA
# units, so time x FMA peak does not carry from one CPU of a machine class to another
# (another L3 size, another DRAM, another VM neighbour). Decode and gemv stream the KV cache
# or the matrix; m = 1 GEMM streams B; the batched attention core with one query row per
# head (attn/ and ragged/ rows whose shape starts 1x) streams the KV cache; read/ rows are
# the read loops themselves; dot, exp, softmax and convert over a million elements and more
# (4194304 floats in the quick run: 32 MiB of traffic, beyond every L2, at or beyond a
# 32 MiB L3) stream from L3 or DRAM, whose speed differs from one CPU and VM to another: a
# CI run on another machine of this kind failed on exp/avx2/4194304 alone, +116% time x
# peak against its class's baseline, with the exp code unchanged. With them, the pool's
# empty run (pool/), which measures the wake-up of a thread: the OS's and the hypervisor's
# speed, not the kernels'.
MEMORY_BOUND = (r"^(decode|gemv_[tn]|read|pool)/"
                r"|^gemm/[^/]+/1x[0-9]+x[0-9]+/"
                r"|^(attn|ragged)/[^/]+/[^/]+/1x[0-9]"
                r"|^(dot|exp|softmax|convert)/[^/]+/([^/]+/)?[0-9]{7,}$")


class BadInput(Exception):
    pass


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BadInput(f"{path}: not valid JSON ({e})")
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise BadInput(f"{path}: not Google Benchmark JSON (no 'benchmarks' list)")
    try:
        runs = medians(data["benchmarks"])
        times = {name: time_ns(b) for name, b in runs.items()}
    except (KeyError, TypeError, ValueError) as e:
        raise BadInput(f"{path}: malformed benchmark entry ({e!r})")
    if not times:
        raise BadInput(f"{path}: no benchmark results")
    ctx = data.get("context")
    if not isinstance(ctx, dict):
        ctx = {}
    return times, ctx


def fmt_ns(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base")
    ap.add_argument("new", nargs="+",
                    help="one run, or several runs of the same build on one machine: each row is judged "
                         "by the fastest of them")
    ap.add_argument("--threshold", type=float, default=0.10,
                    help="relative slowdown that counts as a regression (0.10 = 10%%)")
    ap.add_argument("--normalize", choices=("auto", "peak", "none"), default="auto")
    ap.add_argument("--shown-only", metavar="REGEX", default=None,
                    help="libqkv rows whose name matches are shown but not gated (e.g. memory-bound rows, "
                         "whose time x FMA peak does not carry across machines)")
    ap.add_argument("--memory-bound-shown", action="store_true",
                    help="libqkv's memory-bound rows (MEMORY_BOUND: decode, gemv, m = 1 GEMM, attention with "
                         "one query row, the read loops, dot/exp/softmax/convert over a million elements and "
                         "more, and the pool's empty run) are shown but not gated; for a baseline from "
                         "another machine of the class")
    args = ap.parse_args(argv)
    patterns = [p for p in (args.shown_only, MEMORY_BOUND if args.memory_bound_shown else None) if p]
    shown_only = re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None
    try:
        base, base_ctx = load(args.base)
        runs = [load(path) for path in args.new]
    except BadInput as e:
        print(f"bench_compare: {e}", file=sys.stderr)
        return 2

    isas = libqkv_isas(base_ctx, *(ctx for _, ctx in runs))
    base_peaks, run_peaks = fma_peaks(base_ctx), [fma_peaks(ctx) for _, ctx in runs]
    common_isa = best_isa(base_peaks, *run_peaks)
    if args.normalize == "peak" and common_isa is None:
        print("bench_compare: --normalize peak, but the runs share no fma_peak_gflops_* entry", file=sys.stderr)
        return 2
    use_peak = args.normalize != "none" and common_isa is not None
    speed_base = base_peaks[common_isa] if use_peak else 1.0
    speeds = [peaks[common_isa] if use_peak else 1.0 for peaks in run_peaks]
    # each row: its time in the run where time x that run's speed is least, and that speed
    new, speed_of = {}, {}
    for (times, _), speed in zip(runs, speeds):
        for name, t in times.items():
            if name not in new or t * speed < new[name] * speed_of[name]:
                new[name], speed_of[name] = t, speed
    peaks_new = "/".join(f"{s:.1f}" for s in speeds)
    how = (f"time x FMA peak ({common_isa}: base {speed_base:.1f}, new {peaks_new} GFLOP/s)"
           if use_peak else "raw CPU time")
    if len(runs) > 1:
        how += f"; new: the fastest of {len(runs)} runs for each row"
    print(f"comparing {how}; regression = a libqkv row more than {args.threshold:.0%} slower (peers never gate)")

    names = sorted(set(base) & set(new))
    width = max([len(n) for n in names] + [9])
    print(f"{'benchmark':<{width}}  {'base':>10}  {'new':>10}  {'change':>8}")
    regressed = []
    for name in names:
        change = (new[name] * speed_of[name]) / (base[name] * speed_base) - 1.0
        mark = ""
        if not is_libqkv_name(name, isas):
            mark = f"  peer{', slower' if change > args.threshold else ''}"
        elif shown_only and shown_only.search(name):
            mark = f"  not gated{', slower' if change > args.threshold else ''}"
        elif change > args.threshold:
            mark = "  REGRESSED"
            regressed.append((name, change))
        elif change < -args.threshold:
            mark = "  faster"
        print(f"{name:<{width}}  {fmt_ns(base[name]):>10}  {fmt_ns(new[name]):>10}  {change:>+8.1%}{mark}")
    for label, only in (("only in base", set(base) - set(new)), ("only in new", set(new) - set(base))):
        if only:
            print(f"{label} ({len(only)}): {', '.join(sorted(only))}")
    if regressed:
        print(f"{len(regressed)} regression(s) beyond {args.threshold:.0%}:")
        for name, change in regressed:
            print(f"  {name}: {change:+.1%}")
        return 1
    ours = sum(is_libqkv_name(n, isas) for n in names)
    print(f"no regression beyond {args.threshold:.0%} in {ours} libqkv benchmarks ({len(names) - ours} peer rows not gated)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
