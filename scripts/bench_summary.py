#!/usr/bin/env python3
"""Summarise Google Benchmark JSON from the libqkv benchmark programs.

Benchmarks are named kernel/impl/size (dot/avx2/4096, exp/sleef-avx2/65536,
gemm/qkv-avx2/64x64x64/NN). Which rows are libqkv's is decided by one rule, is_libqkv()
below, that bench_compare.py, bench_ab.py and plot_bench.py share: an impl "qkv-<anything>"
or a bare libqkv ISA name is libqkv; every other impl (openblas, blis, onednn, sleef-*,
sleef3pass-*, unfused-*, and any peer added later) is a peer. The ISA names come from the
run itself (libqkv_isas(): the context's libqkv_isas and fma_peak_gflops_<isa> entries), so
an ISA added to src/isa_list.h needs no change here. For each
kernel and size the table lists every libqkv ISA, fastest first and the best marked '*',
with its median CPU time, rate (GFLOP/s when the benchmark reports FLOP/s, else Gelem/s),
GB/s, % of the single-core FMA peak, the fastest of the peers present (with how many were
measured) and ratio = that peer's time / libqkv time (> 1: libqkv is faster).

Several input files (one per benchmark program) can be merged into one with --output. With
--medians, the files are runs of the same benchmarks (a baseline recorded from several quick
runs, README): the output holds one entry per benchmark, the median over the files of each
file's median, and each fma_peak_gflops_<isa> of the context is the median of the files'.
"""
import argparse
import json
import os
import re
import statistics
import sys

# The ISAs of runs recorded before the context carried libqkv_isas (the committed
# baselines of 0.2): only such a run falls back to this list.
LEGACY_ISAS = ("scalar", "avx2", "avx512", "neon")
PEAK_PREFIX = "fma_peak_gflops_"
TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def time_ns(entry):
    """The time of one benchmark entry in ns: wall-clock time for benchmarks registered with
    UseRealTime (multi-threaded ones: Google Benchmark appends /real_time to their names,
    and their CPU time is only the calling thread's), CPU time otherwise."""
    name = entry.get("run_name", entry.get("name", ""))
    key = "real_time" if name.endswith("/real_time") else "cpu_time"
    return float(entry[key]) * TO_NS[entry.get("time_unit", "ns")]


def read_runs(paths):
    """(path, run) for each file in paths that holds a run, in order; the others are
    reported and skipped."""
    for path in paths:
        # Google Benchmark leaves an empty file when --benchmark_filter matched nothing
        if not os.path.exists(path) or os.path.getsize(path) == 0:
            print(f"bench_summary: {path}: no results", file=sys.stderr)
            continue
        with open(path) as f:
            yield path, json.load(f)


def merge(runs):
    """Merged {"context", "benchmarks"} of runs ((path, run) pairs): the context of the
    first run, plus every run's fma_peak_* entries (each program measures the peak itself)."""
    merged = {"context": {}, "benchmarks": []}
    for _, data in runs:
        ctx = data.get("context", {})
        if not merged["context"]:
            merged["context"] = dict(ctx)
        merged["context"].update({k: v for k, v in ctx.items() if k.startswith(PEAK_PREFIX)})
        merged["benchmarks"].extend(data.get("benchmarks", []))
    return merged


def load(paths):
    """The runs in the files paths merged (merge())."""
    return merge(read_runs(paths))


def medians(benchmarks):
    """run_name -> one entry: the 'median' aggregate if the run had repetitions reported as
    aggregates, else the per-field median of its iteration entries."""
    aggregates, iterations = {}, {}
    for b in benchmarks:
        if b.get("error_occurred"):
            continue
        name = b.get("run_name", b["name"])
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                aggregates[name] = b
        else:
            iterations.setdefault(name, []).append(b)
    result = dict(aggregates)
    for name, runs in iterations.items():
        if name in result:
            continue
        entry = dict(runs[0])
        for key, value in runs[0].items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                entry[key] = statistics.median(r[key] for r in runs)
        result[name] = entry
    return result


def parse(name, entry):
    parts = name.split("/")
    if len(parts) < 3:
        return None
    return {
        "kernel": parts[0],
        "impl": parts[1],
        "size": "/".join(p for p in parts[2:] if p != "real_time"),
        "ns": time_ns(entry),
        "flops": entry.get("FLOP/s"),
        "items": entry.get("items_per_second"),
        "bytes": entry.get("bytes_per_second"),
        "peak": entry.get("peak_frac"),
    }


def fma_peaks(ctx):
    """isa -> the run's in-process FMA peak in GFLOP/s, from its fma_peak_gflops_<isa>
    context entries (malformed and non-positive values are left out: no peak)."""
    peaks = {}
    for key, value in (ctx or {}).items():
        if key.startswith(PEAK_PREFIX) and len(key) > len(PEAK_PREFIX):
            try:
                peak = float(value)
            except (TypeError, ValueError):
                continue
            if peak > 0.0:
                peaks[key[len(PEAK_PREFIX):]] = peak
    return peaks


def libqkv_isas(*contexts):
    """The names of libqkv's ISAs according to the runs' contexts: each run's libqkv_isas
    entry ("scalar,avx2,...": every ISA of src/isa_list.h, built or not) and the ISAs it
    measured a peak for; a run without libqkv_isas (recorded before it existed) adds
    LEGACY_ISAS."""
    names = set()
    for ctx in contexts:
        ctx = ctx or {}
        listed = ctx.get("libqkv_isas")
        if isinstance(listed, str) and listed.strip():
            names.update(n.strip() for n in listed.split(",") if n.strip())
        else:
            names.update(LEGACY_ISAS)
        names.update(fma_peaks(ctx))
    return frozenset(names)


def best_isa(*peak_maps):
    """The ISA with the highest FMA peak among those every map (fma_peaks() of each run)
    has, or None: the machine speed that compares runs."""
    common = set.intersection(*(set(p) for p in peak_maps)) if peak_maps else set()
    return max(sorted(common), key=lambda isa: sum(p[isa] for p in peak_maps), default=None)


def is_libqkv(impl, isas):
    """The one rule for "is this libqkv's own row": impl (the second part of a benchmark
    name) is qkv-<isa> or a bare libqkv ISA name (isas: libqkv_isas() of the runs).
    Anything else is a peer, so a new peer is a peer by default; name new libqkv
    benchmarks qkv-<isa>."""
    return impl.startswith("qkv-") or impl in isas


def is_libqkv_name(name, isas):
    """is_libqkv() for a whole benchmark name (kernel/impl/size...); a name without an
    impl part is not libqkv's."""
    parts = name.split("/")
    return len(parts) >= 2 and is_libqkv(parts[1], isas)


def size_key(size):
    """Natural order: 64x64x64 before 128x128x128."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", size)]


def fmt_time(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def fmt_rate(r):
    if r["flops"] is not None:
        return f"{r['flops'] * 1e-9:.3g} GFLOP/s"
    if r["items"] is not None:
        return f"{r['items'] * 1e-9:.3g} Gelem/s"
    return "-"


def table(rows, isas):
    header = ["kernel", "n", "libqkv", "time", "rate", "GB/s", "%peak", "best peer", "peer time", "ratio"]
    groups = {}
    for r in rows:
        groups.setdefault((r["kernel"], r["size"]), []).append(r)
    lines = []
    for kernel, size in sorted(groups, key=lambda g: (g[0], size_key(g[1]))):
        group = groups[(kernel, size)]
        ours = sorted((r for r in group if is_libqkv(r["impl"], isas)), key=lambda r: r["ns"])
        peers = [r for r in group if not is_libqkv(r["impl"], isas)]
        peer = min(peers, key=lambda r: r["ns"], default=None)
        for rank, r in enumerate(ours):
            lines.append([
                kernel if rank == 0 else "",
                size if rank == 0 else "",
                r["impl"] + ("*" if rank == 0 else ""),
                fmt_time(r["ns"]),
                fmt_rate(r),
                f"{r['bytes'] * 1e-9:.1f}" if r["bytes"] is not None else "-",
                f"{r['peak'] * 100:.1f}" if r["peak"] is not None else "-",
                f"{peer['impl']} (of {len(peers)})" if peer else "-",
                fmt_time(peer["ns"]) if peer else "-",
                f"{peer['ns'] / r['ns']:.2f}" if peer else "-",
            ])
    widths = [max(len(row[i]) for row in [header] + lines) for i in range(len(header))]
    numeric = {3, 4, 5, 6, 8, 9}
    out = []
    for row in [header] + lines:
        cells = [c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        out.append("  ".join(cells).rstrip())
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def median_runs(runs):
    """runs ((path, run) pairs, read_runs()) as one run: per benchmark one 'median'
    aggregate entry, the per-field median over the runs of each run's own median
    (medians(): its median aggregate, or the median of its repetitions), repetitions = the
    number of runs that have it; the context merge()'s, with the FMA peaks the medians of
    the runs'."""
    runs = list(runs)  # read twice: here and by merge()
    per_file, peaks = [], {}
    for _, run in runs:
        per_file.append(medians(run.get("benchmarks", [])))
        for isa, peak in fma_peaks(run.get("context", {})).items():
            peaks.setdefault(isa, []).append(peak)
    benchmarks = []
    for name in dict.fromkeys(n for m in per_file for n in m):
        entries = [dict(m[name], run_type="iteration") for m in per_file if name in m]
        entry = dict(medians(entries)[name], name=name + "_median", run_name=name, run_type="aggregate",
                     aggregate_name="median", repetitions=len(entries))
        entry.pop("repetition_index", None)
        benchmarks.append(entry)
    context = merge(runs)["context"]
    context.update({PEAK_PREFIX + isa: f"{statistics.median(v):.2f}" for isa, v in peaks.items()})
    return {"context": context, "benchmarks": benchmarks}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="Google Benchmark JSON files (--benchmark_out)")
    ap.add_argument("-o", "--output", help="write the merged JSON here")
    ap.add_argument("--medians", action="store_true",
                    help="with -o: the files are runs of the same benchmarks; write one median entry per "
                         "benchmark and the median of the runs' FMA peaks")
    args = ap.parse_args()

    runs = list(read_runs(args.files))
    data = merge(runs)
    if args.output:
        out = median_runs(runs) if args.medians else data
        with open(args.output, "w") as f:
            json.dump(out, f, indent=None if args.medians else 2)
    rows = [r for r in (parse(n, e) for n, e in medians(data["benchmarks"]).items()) if r]
    if not rows:
        print("bench_summary: no benchmark results", file=sys.stderr)
        return 1

    ctx = data["context"]
    peaks = ", ".join(f"{isa} {peak:.1f}" for isa, peak in sorted(fma_peaks(ctx).items()))
    print(f"host: {ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs at "
          f"{ctx.get('mhz_per_cpu', '?')} MHz; libqkv {ctx.get('libqkv_version', '?')}, "
          f"detected ISA {ctx.get('libqkv_isa_detected', '?')}")
    print(f"single-core FMA peak (GFLOP/s): {peaks or '-'}")
    print("time: median CPU time per call; best peer = the fastest peer measured for that kernel and size;")
    print("ratio = best peer time / libqkv time (> 1: libqkv faster)")
    print()
    print(table(rows, libqkv_isas(ctx)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
