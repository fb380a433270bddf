#!/usr/bin/env python3
"""A/B verdict for scripts/bench_ab.sh: merges the rounds of each side and applies the
pass/fail rule.

    scripts/bench_ab.py --a A1.json A2.json ... --b B1.json B2.json ... [--threshold 0.10] [--alpha 0.05]
                        [--regressed-out FILE]

Every repetition of every round is one sample (the iteration entries of Google Benchmark's
JSON; aggregates are dropped). Per benchmark, the p-value is Google Benchmark's own U test
(tools/compare.py, gbench.report.get_difference_report(utest=True): a two-sided
Mann-Whitney U test of the CPU times of A against B; Debian ships it in libbenchmark-tools,
found under /usr/share/benchmark or $QKV_GBENCH_TOOLS). The change is median B / median A - 1.

A benchmark regressed when it is libqkv's (bench_summary.is_libqkv_name: peers never gate),
its change exceeds --threshold AND p < --alpha: a slowdown that is both large and
statistically significant. Prints a table (time A, time B, change, p-value) and a final
verdict line; exits 1 on a regression, 0 otherwise, 2 on unusable input. --regressed-out
writes the names of the regressed benchmarks there, one per line (empty on a pass), for
bench_ab.sh's confirmation pass.
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_summary import fmt_time, is_libqkv_name, libqkv_isas, time_ns  # noqa: E402


def gbench_report():
    """Google Benchmark's compare.py library (gbench.report)."""
    for d in filter(None, (os.environ.get("QKV_GBENCH_TOOLS"), "/usr/share/benchmark")):
        if os.path.isfile(os.path.join(d, "gbench", "report.py")):
            sys.path.insert(0, d)
            break
    try:
        from gbench import report  # noqa: E402
    except ImportError as e:
        sys.exit(f"bench_ab: Google Benchmark's compare.py library (gbench) is needed: "
                 f"apt-get install libbenchmark-tools python3-scipy, or set QKV_GBENCH_TOOLS ({e})")
    return report


def merge(paths):
    """One Google Benchmark JSON document with every iteration entry of every file."""
    merged = {"context": {}, "benchmarks": []}
    for path in paths:
        if not os.path.exists(path) or os.path.getsize(path) == 0:
            continue  # a program whose benchmarks the filter left out
        with open(path) as f:
            data = json.load(f)
        merged["context"] = merged["context"] or data.get("context", {})
        merged["benchmarks"].extend(b for b in data.get("benchmarks", [])
                                    if b.get("run_type", "iteration") == "iteration" and not b.get("error_occurred"))
    return merged


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", nargs="+", required=True, help="JSON files of revision A (the base)")
    ap.add_argument("--b", nargs="+", required=True, help="JSON files of revision B (the new one)")
    ap.add_argument("--threshold", type=float, default=0.10, help="slowdown that counts (0.10 = 10%%)")
    ap.add_argument("--alpha", type=float, default=0.05, help="significance level of the U test")
    ap.add_argument("--label-a", default="A")
    ap.add_argument("--label-b", default="B")
    ap.add_argument("--regressed-out", help="write the regressed benchmarks' names to this file, one per line")
    args = ap.parse_args(argv)

    a, b = merge(args.a), merge(args.b)
    if not a["benchmarks"] or not b["benchmarks"]:
        print("bench_ab: no benchmark results on one side (does the filter match anything?)", file=sys.stderr)
        return 2
    isas = libqkv_isas(a["context"], b["context"])
    report = gbench_report()
    diff = report.get_difference_report(a, b, utest=True)

    samples = {"a": {}, "b": {}}
    for side, doc in (("a", a), ("b", b)):
        for e in doc["benchmarks"]:
            samples[side].setdefault(e["name"], []).append(time_ns(e))

    rows, regressed = [], []
    for d in diff:
        name = d["name"]
        if name not in samples["a"] or name not in samples["b"]:
            continue  # OVERALL_GEOMEAN
        ta, tb = statistics.median(samples["a"][name]), statistics.median(samples["b"][name])
        change = tb / ta - 1.0
        p = d["utest"].get("cpu_pvalue") if d["utest"] else None
        ours = is_libqkv_name(name, isas)
        significant = p is not None and p < args.alpha
        if not ours:
            mark = "peer"
        elif change > args.threshold and significant:
            mark = "SLOWER"
            regressed.append((name, change, p))
        elif change < -args.threshold and significant:
            mark = "faster"
        else:
            mark = ""
        n = f"{len(samples['a'][name])}/{len(samples['b'][name])}"
        rows.append([name, fmt_time(ta), fmt_time(tb), f"{change:+.1%}", f"{p:.4f}" if p is not None else "-", n, mark])

    header = ["benchmark", f"time {args.label_a}", f"time {args.label_b}", "change", "p-value", "n", ""]
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(c.ljust(w) if i in (0, 6) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    only = sorted(set(samples["a"]) ^ set(samples["b"]))
    if only:
        print(f"in one revision only ({len(only)}): {', '.join(only)}")
    ours = sum(is_libqkv_name(r[0], isas) for r in rows)
    if args.regressed_out:
        with open(args.regressed_out, "w") as f:
            f.writelines(f"{n}\n" for n, _, _ in regressed)
    rule = f"slower by more than {args.threshold:.0%} with p < {args.alpha:g} (Mann-Whitney U over repetitions)"
    if regressed:
        print(f"bench_ab: FAIL: {len(regressed)} of {ours} libqkv benchmarks {rule}: " +
              ", ".join(f"{n} {c:+.1%} (p={p:.2g})" for n, c, p in regressed))
        return 1
    print(f"bench_ab: PASS: none of {ours} libqkv benchmarks {rule}; {len(rows) - ours} peer rows shown, not gated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
