#!/usr/bin/env bash
# Builds the Google Benchmark suite (release, build-bench/), runs every benchmark program
# single-threaded, writes one merged Google Benchmark JSON and prints a summary table
# (scripts/bench_summary.py) and PNG plots (scripts/plot_bench.py) next to the JSON.
#
#   scripts/bench.sh [--quick] [--json FILE] [--filter REGEX]
#
#   --quick         one repetition of 0.05 s per benchmark instead of medians of 3 x 0.2 s
#   --json FILE     merged JSON output (default build-bench/bench.json)
#   --filter REGEX  only benchmarks matching REGEX (Google Benchmark --benchmark_filter)
set -euo pipefail

usage() { sed -n '6,10s/^# \{0,1\}//p' "$0"; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-bench
json=$build/bench.json
quick=0
filter=
while (($#)); do
    case $1 in
    --quick) quick=1 ;;
    --json) json=${2:?--json needs a file}; shift ;;
    --json=*) json=${1#--json=} ;;
    --filter) filter=${2:?--filter needs a regex}; shift ;;
    --filter=*) filter=${1#--filter=} ;;
    -h | --help) usage; exit 0 ;;
    *) echo "bench.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
json=$(realpath -m "$json")

# shellcheck source=scripts/bench_deps.sh
source "$root/scripts/bench_deps.sh"
bench_install_deps

echo "==> configuring $build"
cd "$root"
opts=(--buildtype=release -Dtests=disabled -Dbench=enabled)
[[ -f $build/meson-private/coredata.dat ]] && opts+=(--reconfigure)
mkdir -p "$build"
meson setup "$build" "${opts[@]}" >"$build/setup.log" 2>&1 || { cat "$build/setup.log" >&2; exit 1; }
# the peers found or skipped
sed -nE '/[Bb]enchmark (peers|composites)/,/^$/p' "$build/setup.log"

echo "==> building"
meson compile -C "$build" >"$build/compile.log" 2>&1 || { tail -n 40 "$build/compile.log" >&2; exit 1; }

if ((quick)); then
    run_args=(--benchmark_min_time=0.05 --benchmark_repetitions=1)
else
    # the repetitions of every benchmark spread over the program's run in random order, so a
    # busy spell of a shared host lands on a repetition of libqkv and of its peers alike
    # instead of on whichever rows ran during it; the summary takes their medians
    run_args=(--benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
        --benchmark_enable_random_interleaving=true)
fi
[[ -n $filter ]] && run_args+=("--benchmark_filter=$filter")

mapfile -t programs < <(find "$build/bench" -name '*.p' -prune -o -type f -executable -name 'bench_*' -print | sort)
((${#programs[@]})) || { echo "bench.sh: no benchmark programs in $build/bench" >&2; exit 1; }

out_dir=$(mktemp -d)
trap 'rm -rf "$out_dir"' EXIT
i=0
for prog in "${programs[@]}"; do
    i=$((i + 1))
    name=$(basename "$prog")
    echo "==> [$i/${#programs[@]}] $name"
    # libqkv kernels are single-threaded: keep the peers on one thread too
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 BLIS_NUM_THREADS=1 \
        "$prog" "${run_args[@]}" --benchmark_out="$out_dir/$name.json" --benchmark_out_format=json
done

mkdir -p "$(dirname "$json")"
echo
python3 "$root/scripts/bench_summary.py" --output "$json" "$out_dir"/*.json
echo
echo "JSON: $json"

# PNG plots next to the JSON, with whichever python3 has matplotlib (Debian's has it as
# python3-matplotlib; a python3 earlier on PATH may not)
plotter=
for py in python3 /usr/bin/python3; do
    if command -v "$py" >/dev/null && "$py" -c 'import matplotlib' 2>/dev/null; then
        plotter=$py
        break
    fi
done
if [[ -n $plotter ]]; then
    plot_dir="${json%.json}-plots"
    echo "plots:"
    "$plotter" "$root/scripts/plot_bench.py" "$json" -o "$plot_dir" | sed 's/^/  /'
else
    echo "plots skipped: no python3 with matplotlib (apt-get install python3-matplotlib)"
fi
