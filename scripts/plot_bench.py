#!/usr/bin/env python3
"""PNG plots of a libqkv benchmark run (Google Benchmark JSON from scripts/bench.sh).

    scripts/plot_bench.py FILE.json [-o DIR]

One figure per kernel (dot, exp, softmax, gemm, sdpa, mha, ...): throughput against size,
one line per libqkv ISA (solid) and per peer (dashed). Throughput is GFLOP/s where the
benchmark reports FLOP/s, else elements/s or the inverse of time. Sizes are the part of
the name after kernel/impl/; the x axis is their first number (n, or M for MxNxK, or the
sequence length for attention). Writes DIR/<kernel>.png (DIR defaults to the JSON's
folder) and prints the paths. Needs matplotlib (Debian: python3-matplotlib)."""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_summary import is_libqkv, libqkv_isas, load, medians, time_ns  # noqa: E402


def label(impl, isas):
    return "libqkv " + impl.removeprefix("qkv-") if is_libqkv(impl, isas) else impl


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json")
    ap.add_argument("-o", "--outdir")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_bench: matplotlib is not installed (apt-get install python3-matplotlib)", file=sys.stderr)
        return 2
    data = load([args.json])
    runs = medians(data["benchmarks"])
    isas = libqkv_isas(data["context"])
    if not runs:
        print(f"plot_bench: {args.json}: no benchmark results", file=sys.stderr)
        return 2
    outdir = args.outdir or os.path.dirname(os.path.abspath(args.json))
    os.makedirs(outdir, exist_ok=True)

    # kernel -> (variant, impl) -> [(x, y)]; variant = the size text without its first number
    series, units, shape_of = {}, {}, {}
    for name, b in runs.items():
        parts = name.split("/")
        if len(parts) < 3:
            continue
        kernel, impl, size = parts[0], parts[1], "/".join(parts[2:])
        m = re.match(r"(\d+)(.*)", size)
        if not m:
            continue
        x = int(m.group(1))
        # every dimension equal to the first becomes N: 1024x1024x64/NT -> NxNx64/NT
        variant = re.sub(r"\d+", lambda d: "N" if int(d.group(0)) == x else d.group(0), size)
        if "FLOP/s" in b:
            y, unit = b["FLOP/s"] / 1e9, "GFLOP/s"
        elif "items_per_second" in b:
            y, unit = b["items_per_second"] / 1e9, "G elements/s"
        else:
            y, unit = 1e9 / time_ns(b), "calls/s"
        series.setdefault(kernel, {}).setdefault((variant, impl), []).append((x, y))
        shape_of[(kernel, variant)] = size
        units[kernel] = unit

    for kernel, lines in sorted(series.items()):
        # variants with several sizes get a line panel each; single shapes share a bar panel
        points = {}
        for (v, _), pts in lines.items():
            points.setdefault(v, set()).update(p[0] for p in pts)
        swept = sorted(v for v, xs in points.items() if len(xs) > 1)
        single = sorted(v for v, xs in points.items() if len(xs) == 1)
        panels = len(swept) + (1 if single else 0)
        fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4.2), squeeze=False)
        for ax, variant in zip(axes[0], swept):
            for (v, impl), pts in sorted(lines.items()):
                if v != variant:
                    continue
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                        linestyle="-" if is_libqkv(impl, isas) else "--", label=label(impl, isas))
            ax.set_xscale("log", base=2)
            ax.set_xlabel(f"N in {variant}")
            ax.set_ylabel(units[kernel])
            ax.set_title(f"{kernel} {variant}")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        if single:
            ax = axes[0][-1]
            impls = sorted({impl for (v, impl) in lines if v in single}, key=lambda i: (not is_libqkv(i, isas), i))
            width = 0.8 / len(impls)
            for j, impl in enumerate(impls):
                ys = [dict(lines.get((v, impl), [])).get(next(iter(points[v])), 0.0) for v in single]
                ax.bar([i + j * width for i in range(len(single))], ys, width, label=label(impl, isas))
            shapes = [shape_of[(kernel, v)] for v in single]
            ax.set_xticks([i + 0.4 - width / 2 for i in range(len(single))], shapes, rotation=30, fontsize=7)
            ax.set_ylabel(units[kernel])
            ax.set_title(f"{kernel}: single shapes")
            ax.grid(True, axis="y", alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(outdir, f"{kernel}.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
