#!/usr/bin/env bash
# GEMM blocking sweep on this machine for one ISA: builds the benchmarks (release,
# build-bench/, as scripts/bench.sh), reads the blocking libqkv derives from the cache sizes
# (QKV_GEMM_BLOCKING=show), then times bench_gemm's shapes under a grid of
# QKV_GEMM_BLOCKING=mc,kc,nc around it and prints the best blocking per shape and overall,
# each with its speedup over the derived default, then confirms the overall leaders in
# pairs of runs with the default, next to the default paired with itself as a control for
# the noise of the machine (scripts/tune_gemm.py).
#
#   [QKV_ISA=avx2|avx512|neon] scripts/tune_gemm.sh [--rounds N] [--min-time S] [--filter REGEX]
#                                                   [--confirm-rounds N] [--confirm-top N]
#
#   QKV_ISA            the ISA to tune (default: the best one this CPU runs)
#   --rounds N         grid passes; every configuration is timed once per pass, in a new
#                      random order each pass, and the median over passes counts (default 3)
#   --min-time S       Google Benchmark --benchmark_min_time per measurement (default 0.05)
#   --filter REGEX     shapes (the part of the name after gemm/qkv-<isa>/), default: all but m = 1
#   --confirm-rounds N rounds of pairs with the default for the leaders (default 5; 0: none)
#   --confirm-top N    leaders of the grid to confirm (default 3)
# About 15 minutes on 2 cores with the defaults.
set -euo pipefail

usage() { sed -n '10,21s/^# \{0,1\}//p' "$0"; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-bench
args=()
while (($#)); do
    case $1 in
    --rounds | --min-time | --filter | --confirm-rounds | --confirm-top) args+=("$1" "${2:?$1 needs a value}"); shift ;;
    --rounds=* | --min-time=* | --filter=* | --confirm-rounds=* | --confirm-top=*) args+=("$1") ;;
    -h | --help) usage; exit 0 ;;
    *) echo "tune_gemm.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

# shellcheck source=scripts/bench_deps.sh
source "$root/scripts/bench_deps.sh"
bench_install_deps

cd "$root"
opts=(--buildtype=release -Dtests=disabled -Dbench=enabled)
[[ -f $build/meson-private/coredata.dat ]] && opts+=(--reconfigure)
mkdir -p "$build"
meson setup "$build" "${opts[@]}" >"$build/setup.log" 2>&1 || { cat "$build/setup.log" >&2; exit 1; }
meson compile -C "$build" >"$build/compile.log" 2>&1 || { tail -n 40 "$build/compile.log" >&2; exit 1; }

exec python3 "$root/scripts/tune_gemm.py" --bench "$build/bench/gemm/bench_gemm" "${args[@]}"
