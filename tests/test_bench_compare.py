#!/usr/bin/env python3
"""Tests of scripts/bench_compare.py on synthetic Google Benchmark JSON:
identical runs pass; one benchmark 2x slower is caught and named; a machine 1.3x slower
in everything, its FMA peak included, is not a regression; repetitions are reduced to
their median (one outlier does not flag); benchmarks in one file only are listed, not
errors; malformed, empty or missing input exits 2. Only libqkv's rows gate: every peer
(OpenBLAS, BLIS, oneDNN, SLEEF, the unfused composites, a peer nobody has named yet) 3x
slower passes, while one libqkv row 3x slower still fails. libqkv's ISA names come from the
runs' contexts (libqkv_isas, fma_peak_gflops_<isa>): an ISA no script names ("sve") gates
when the context lists it and is a peer in a run recorded before libqkv_isas existed; the
peak that normalises is the highest one both runs have. Given several new runs, each row is
judged by its fastest run (each normalised by its own peak): a spike in one run passes, a
row slow in every run fails."""
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "bench_compare.py")
failures = 0


def run(base, new, *extra):
    p = subprocess.run([sys.executable, SCRIPT, base, new, *extra], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def check(cond, what, output=""):
    global failures
    if not cond:
        failures += 1
        print(f"FAIL: {what}\n{output}")
    else:
        print(f"ok: {what}")


def write(dirname, name, times, peak=100.0, reps=1, outlier=None, context=None):
    """times: benchmark name -> cpu_time in ns; reps > 1 writes iteration entries; context:
    entries added to the context (the default one has no libqkv_isas, as the old baselines)."""
    benchmarks = []
    for bname, t in times.items():
        for r in range(reps):
            tt = t * (outlier if (outlier and r == 0 and bname == "dot/avx2/4096") else 1.0)
            benchmarks.append({"name": bname, "run_name": bname, "run_type": "iteration",
                               "repetitions": reps, "repetition_index": r, "iterations": 100,
                               "real_time": tt, "cpu_time": tt, "time_unit": "ns"})
    doc = {"context": {"fma_peak_gflops_avx2": f"{peak:.2f}", "fma_peak_gflops_scalar": f"{peak / 8:.2f}",
                       **(context or {})},
           "benchmarks": benchmarks}
    path = os.path.join(dirname, name)
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def main():
    base_times = {"dot/avx2/4096": 170.0, "exp/avx2/4096": 1460.0, "softmax/avx2/4096": 2540.0,
                  "gemm/qkv-avx2/1024x1024x1024/NN": 2.3e7, "dot/openblas/4096": 177.0}
    # the peers' names as bench/*.cc make them, and one peer that does not exist yet
    peer_times = {"gemm/openblas/1024x1024x1024/NN": 2.4e7, "gemm/blis/1024x1024x1024/NN": 2.3e7,
                  "gemm/onednn/1024x1024x1024/NN": 2.2e7, "exp/sleef-avx2/4096": 2600.0,
                  "softmax/sleef3pass-avx512/4096": 3000.0, "sdpa/unfused-onednn/1024x64/full": 4.4e6,
                  "sdpa/unfused/1024x64/full": 4.4e6, "gemm/mkl/1024x1024x1024/NN": 2.1e7}
    with tempfile.TemporaryDirectory() as d:
        base = write(d, "base.json", base_times, reps=3)
        same = write(d, "same.json", base_times, reps=3)
        rc, out = run(base, same)
        check(rc == 0 and "no regression" in out, "identical runs pass", out)

        slow = dict(base_times)
        slow["exp/avx2/4096"] *= 2.0
        rc, out = run(base, write(d, "slow.json", slow))
        check(rc == 1 and "exp/avx2/4096" in out.split("regression(s)")[-1], "a 2x slowdown is caught and named", out)
        check("softmax/avx2/4096" not in out.split("regression(s)")[-1], "only the slowed benchmark is named", out)

        uniform = {k: v * 1.3 for k, v in base_times.items()}
        rc, out = run(base, write(d, "uniform.json", uniform, peak=100.0 / 1.3))
        check(rc == 0, "a uniformly 1.3x slower machine (peak too) is not a regression", out)
        rc, out = run(base, write(d, "uniform2.json", uniform, peak=100.0 / 1.3), "--normalize", "none")
        check(rc == 1, "... but is one in raw time (--normalize none)", out)

        rc, out = run(base, write(d, "outlier.json", base_times, reps=3, outlier=5.0))
        check(rc == 0, "one outlier repetition does not flag (median)", out)

        gross = dict(base_times)
        gross["softmax/avx2/4096"] *= 1.6
        rc, out = run(base, write(d, "gross.json", gross), "--threshold", "1.0")
        check(rc == 0, "1.6x passes the gross-regression threshold (1.0 = 2x)", out)
        gross["softmax/avx2/4096"] *= 2.0
        rc, out = run(base, write(d, "gross2.json", gross), "--threshold", "1.0")
        check(rc == 1, "3.2x fails the gross-regression threshold", out)

        with_peers = {**base_times, **peer_times}
        pbase = write(d, "pbase.json", with_peers, reps=3)
        peers_slow = {k: v * (1.0 if k in base_times and k != "dot/openblas/4096" else 3.0)
                      for k, v in with_peers.items()}
        rc, out = run(pbase, write(d, "peers_slow.json", peers_slow), "--threshold", "1.0")
        check(rc == 0 and "no regression" in out, "every peer 3x slower (a BLIS without kernels for this CPU) passes", out)
        check(all(f"{k}" in out for k in peer_times) and out.count("peer, slower") == len(peer_times) + 1,
              "... and the slower peers are still shown, marked as peers", out)
        ours_slow = dict(peers_slow)
        ours_slow["gemm/qkv-avx2/1024x1024x1024/NN"] *= 3.0
        rc, out = run(pbase, write(d, "ours_slow.json", ours_slow), "--threshold", "1.0")
        tail = out.split("regression(s)")[-1]
        check(rc == 1 and "gemm/qkv-avx2/1024x1024x1024/NN" in tail and "openblas" not in tail and "blis" not in tail,
              "one libqkv row 3x slower among slow peers fails and only it is named", out)

        mem = {**base_times, "decode/qkv-avx2/16384x64/q1": 1e5, "gemm/qkv-avx2/1x4096x64/NT": 1e4,
               "exp/avx2/4194304": 2e6, "softmax/avx512/4194304": 2e6, "dot/avx512/65536": 3e3}
        mbase = write(d, "mbase.json", mem)
        mem_slow = {**mem, "decode/qkv-avx2/16384x64/q1": 2.6e5, "gemm/qkv-avx2/1x4096x64/NT": 3e4,
                    "exp/avx2/4194304": 4.4e6, "softmax/avx512/4194304": 5e6}
        shown = ("--threshold", "1.0", "--memory-bound-shown")
        rc, out = run(mbase, write(d, "mem_slow.json", mem_slow), *shown)
        check(rc == 0 and out.count("not gated, slower") == 4,
              "memory-bound rows (decode, m = 1, exp/softmax over 4194304 floats) under --memory-bound-shown "
              "are shown as slower but not gated", out)
        rc, out = run(mbase, write(d, "mem_slow.json", mem_slow), "--threshold", "1.0")
        check(rc == 1 and out.count("REGRESSED") == 4, "... and gate without it", out)
        rc, out = run(mbase, write(d, "mem_slow.json", mem_slow), "--threshold", "1.0", "--shown-only", "^decode/")
        check(rc == 1 and out.count("REGRESSED") == 3 and out.count("not gated, slower") == 1,
              "--shown-only REGEX alone shows only the rows it names", out)
        # the shapes' own names: a batch of one sequence and one head (1x1x1) is not one query row
        attn = {"attn/qkv-avx2/1x32x8/1x8192x128/causal/t1/real_time": 4e5, "read/qkv-pool/64MiB/t2": 3e6,
                "pool/qkv-pool/empty/t2": 120.0, "convert/avx2/bf16_f32/1048576": 2e5,
                "attn/qkv-avx2/1x1x1/2048x2048x64/causal/t1/real_time": 2e7,
                "attn/qkv-avx2/1x1x1/17x4096x64/full/t1/real_time": 1e6}
        abase = write(d, "abase.json", {**base_times, **attn})
        attn_slow = {**base_times, **{k: v * 3.0 for k, v in attn.items()}}
        rc, out = run(abase, write(d, "attn_slow.json", attn_slow), *shown)
        tail = out.split("regression(s) beyond 100%:")[-1].split()
        check(rc == 1 and out.count("not gated, slower") == 4 and sorted(tail[0::2]) == [
            "attn/qkv-avx2/1x1x1/17x4096x64/full/t1/real_time:", "attn/qkv-avx2/1x1x1/2048x2048x64/causal/t1/real_time:"],
              "decode attention (one query row), read loops, the empty run and convert over 1048576 elements are not "
              "gated; attention over many query rows gates, batch and heads of one included", out)
        for row in ("exp/avx2/4096", "dot/avx512/65536"):
            slow2 = {**mem_slow, row: mem_slow[row] * 3.0}
            rc, out = run(mbase, write(d, "mem_slow2.json", slow2), *shown, "--shown-only", "^gemv_t/")
            check(rc == 1 and out.split("regression(s) beyond 100%:")[-1].split() == [row + ":", "+200.0%"],
                  f"... while the other rows still gate ({row}, cache-resident)", out)

        # a new ISA no script names: libqkv's when the context lists it, whose peak (the
        # highest both runs have) is the one that normalises
        sve_ctx = {"libqkv_isas": "scalar,sve,avx2,avx512,neon", "fma_peak_gflops_sve": "150.00"}
        sve = {**base_times, "dot/sve/4096": 90.0, "gemm/qkv-sve/1024x1024x1024/NN": 1.5e7}
        sbase = write(d, "sbase.json", sve, context=sve_ctx)
        rc, out = run(sbase, write(d, "ssame.json", sve, context=sve_ctx))
        check(rc == 0 and "(sve: base 150.0" in out and "in 6 libqkv benchmarks" in out,
              "an unknown ISA (sve) listed in libqkv_isas is libqkv's, and its higher peak normalises", out)
        sve_slow = {**sve, "dot/sve/4096": 90.0 * 3.0}
        rc, out = run(sbase, write(d, "sslow.json", sve_slow, context=sve_ctx), "--threshold", "1.0")
        check(rc == 1 and "dot/sve/4096" in out.split("regression(s)")[-1],
              "... so a 3x slower bare-named sve row gates", out)
        rc, out = run(write(d, "sold.json", sve), write(d, "sold_slow.json", sve_slow), "--threshold", "1.0")
        check(rc == 0 and "dot/sve/4096" in out and "peer, slower" in out,
              "... while runs without libqkv_isas (the old baselines) keep the old names: sve is a peer there", out)
        rc, out = run(sbase, write(d, "snew_old.json", sve), "--threshold", "1.0")
        check(rc == 0 and "(avx2: base" in out, "a run with libqkv_isas compares with one without (common peak avx2)", out)

        # several runs of one build on one machine: each row is judged by its fastest run
        spike = {**base_times, "exp/avx2/4096": base_times["exp/avx2/4096"] * 3.0}
        other = {**base_times, "dot/avx2/4096": base_times["dot/avx2/4096"] * 3.0}
        s1, s2 = write(d, "spike.json", spike), write(d, "other.json", other)
        rc, out = run(base, s1, "--threshold", "1.0")
        check(rc == 1, "a row caught in a slow moment (3x) fails a single run", out)
        rc, out = run(base, s1, s2, "--threshold", "1.0")
        check(rc == 0 and "the fastest of 2 runs" in out and "in 4 libqkv benchmarks" in out,
              "... and passes with a second run that measured it at its speed (that run's own spike, on "
              "another row, passes the same way)", out)
        rc, out = run(base, s1, write(d, "spike2.json", spike), "--threshold", "1.0")
        check(rc == 1 and out.split("regression(s) beyond 100%:")[-1].split() == ["exp/avx2/4096:", "+200.0%"],
              "a row 3x slower in every run still fails, named once", out)
        busy = {k: v * 2.5 for k, v in base_times.items()}
        rc, out = run(base, s1, write(d, "busy.json", busy, peak=100.0 / 2.5), "--threshold", "1.0")
        check(rc == 0 and "new 100.0/40.0 GFLOP/s" in out,
              "each run is normalised by its own peak (a second run on a machine 2.5x slower, peak too, clears "
              "the spike)", out)

        # a baseline recorded from several quick runs (bench_summary.py --medians, README): each
        # row the median of its runs, each peak the median of theirs
        summary = os.path.join(os.path.dirname(SCRIPT), "bench_summary.py")
        r1 = write(d, "r1.json", {**base_times, "exp/avx2/4096": base_times["exp/avx2/4096"] * 5.0}, peak=99.0)
        r2 = write(d, "r2.json", base_times, peak=101.0)
        r3 = write(d, "r3.json", {k: v * 1.1 for k, v in base_times.items()}, peak=100.0)
        merged = os.path.join(d, "merged.json")
        p = subprocess.run([sys.executable, summary, r1, r2, r3, "--medians", "-o", merged], capture_output=True,
                           text=True)
        with open(merged) as f:
            doc = json.load(f)
        entries = {b["run_name"]: b for b in doc["benchmarks"]}
        check(p.returncode == 0 and len(doc["benchmarks"]) == len(base_times)
              and doc["context"]["fma_peak_gflops_avx2"] == "100.00"
              and entries["exp/avx2/4096"]["cpu_time"] == base_times["exp/avx2/4096"] * 1.1
              and entries["dot/avx2/4096"]["repetitions"] == 3
              and all(b["aggregate_name"] == "median" for b in doc["benchmarks"]),
              "bench_summary --medians: one median entry per row over the runs (a 5x spike in one run does not "
              "reach the baseline), the median peak", p.stdout + p.stderr + json.dumps(doc)[:2000])
        rc, out = run(merged, write(d, "after.json", base_times), "--threshold", "0.2")
        check(rc == 0 and "in 4 libqkv benchmarks" in out, "... and bench_compare reads it as a baseline", out)
        r4 = write(d, "r4.json", base_times, reps=3, outlier=50.0)  # dot/avx2/4096: one repetition 50x
        p = subprocess.run([sys.executable, summary, r4, r1, r3, "--medians", "-o", merged], capture_output=True,
                           text=True)
        with open(merged) as f:
            entries = {b["run_name"]: b for b in json.load(f)["benchmarks"]}
        check(p.returncode == 0 and entries["dot/avx2/4096"]["cpu_time"] == base_times["dot/avx2/4096"]
              and entries["exp/avx2/4096"]["cpu_time"] == base_times["exp/avx2/4096"] * 1.1,
              "... over each file's own median (a run of 3 repetitions, one of them 50x, counts as one run)",
              p.stdout + p.stderr + json.dumps(entries)[:2000])

        extra = dict(base_times)
        extra["sdpa/avx2/1024x64"] = 1e6
        del extra["dot/openblas/4096"]
        rc, out = run(base, write(d, "extra.json", extra))
        check(rc == 0 and "only in new" in out and "only in base" in out, "one-sided benchmarks are listed", out)

        bad = os.path.join(d, "bad.json")
        with open(bad, "w") as f:
            f.write('{"benchmarks": [')
        rc, out = run(base, bad)
        check(rc == 2 and "bad.json" in out, "malformed JSON exits 2 with a message", out)
        empty = os.path.join(d, "empty.json")
        open(empty, "w").close()
        rc, out = run(empty, base)
        check(rc == 2, "empty file exits 2", out)
        with open(bad, "w") as f:
            json.dump({"benchmarks": []}, f)
        rc, out = run(base, bad)
        check(rc == 2, "no results exits 2", out)
        with open(bad, "w") as f:
            json.dump({"benchmarks": [{"name": "x", "cpu_time": "fast"}]}, f)
        rc, out = run(base, bad)
        check(rc == 2, "a malformed entry exits 2", out)
        rc, out = run(base, os.path.join(d, "missing.json"))
        check(rc == 2, "a missing file exits 2", out)
    print(f"test_bench_compare: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
