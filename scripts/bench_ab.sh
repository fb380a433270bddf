#!/usr/bin/env bash
# A/B performance regression check between two git revisions on this machine.
#
#   scripts/bench_ab.sh BASE_REF [NEW_REF] [--quick] [--filter REGEX] [--rounds N]
#                       [--repetitions N] [--min-time S] [--threshold F] [--alpha P] [--confirm N]
#
#   NEW_REF          default HEAD (committed work only; for uncommitted changes pass
#                    "$(git stash create)", a commit of the working tree that leaves it alone)
#   --quick          a representative subset (one or two sizes per kernel and driver),
#                    5 rounds x 5 repetitions of 0.05 s: a few minutes on 2 cores
#   --filter REGEX   only benchmarks matching REGEX (Google Benchmark --benchmark_filter)
#   --rounds N       A/B alternations (default 3; quick 5)
#   --repetitions N  repetitions per benchmark and round (default 5)
#   --min-time S     Google Benchmark --benchmark_min_time per repetition (default 0.1; quick 0.05)
#   --threshold F    slowdown that counts (default 0.10 = 10%)
#   --alpha P        significance level (default 0.05)
#   --confirm N      confirmation passes of what a pass flags (default 1; 0: none)
#
# Both revisions are checked out as git worktrees under build-ab/ and built there (release,
# benchmarks on, tests off; kept for the next run). Then every round runs each benchmark
# program of A and of B, alternately (A B in odd rounds, B A in even ones, so neither side
# always runs first or while the machine is in one state), each run with repetitions.
# scripts/bench_ab.py pools each side's repetitions, tests A against B with Google
# Benchmark's own Mann-Whitney U test (compare.py's library, libbenchmark-tools) and fails
# (exit 1) only when a libqkv benchmark is slower by more than the threshold AND p < alpha,
# in the first pass and again in each confirmation pass: the benchmarks a pass flags run
# again, alone, in fresh processes (the same rounds and repetitions), and only those flagged
# every time fail. A shared host can slow one side for minutes, every round alike (then the
# rounds do not help and the U test finds a shift in the code it did not change); a
# regression in the code reproduces, a busy spell rarely lands on the same side twice.
# Peer rows (OpenBLAS, BLIS, oneDNN, SLEEF, the unfused composites) are shown, never gate.
# The default benchmark set is the whole suite: long (about an hour on 2 cores).
set -euo pipefail

usage() { sed -n '4,18s/^# \{0,1\}//p' "$0"; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
refs=()
quick=0
filter=
rounds=
reps=5
min_time=
threshold=0.10
alpha=0.05
confirm=1
while (($#)); do
    case $1 in
    --quick) quick=1 ;;
    --filter) filter=${2:?--filter needs a regex}; shift ;;
    --filter=*) filter=${1#--filter=} ;;
    --rounds) rounds=${2:?--rounds needs a number}; shift ;;
    --rounds=*) rounds=${1#--rounds=} ;;
    --repetitions) reps=${2:?--repetitions needs a number}; shift ;;
    --repetitions=*) reps=${1#--repetitions=} ;;
    --min-time) min_time=${2:?--min-time needs seconds}; shift ;;
    --min-time=*) min_time=${1#--min-time=} ;;
    --threshold) threshold=${2:?--threshold needs a fraction}; shift ;;
    --threshold=*) threshold=${1#--threshold=} ;;
    --alpha) alpha=${2:?--alpha needs a p-value}; shift ;;
    --alpha=*) alpha=${1#--alpha=} ;;
    --confirm) confirm=${2:?--confirm needs a number}; shift ;;
    --confirm=*) confirm=${1#--confirm=} ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "bench_ab.sh: unknown option: $1" >&2; usage >&2; exit 2 ;;
    *) refs+=("$1") ;;
    esac
    shift
done
((${#refs[@]} >= 1 && ${#refs[@]} <= 2)) || { usage >&2; exit 2; }
[[ $confirm =~ ^[0-9]+$ ]] || { echo "bench_ab.sh: --confirm needs a number, not $confirm" >&2; exit 2; }
base_ref=${refs[0]}
new_ref=${refs[1]:-HEAD}
[[ -n $new_ref ]] || new_ref=HEAD # "$(git stash create)" on a clean tree is empty
# the representative subset of --quick: every implementation (libqkv ISAs and peers) of
# one small and one mid size per kernel, the attention-shaped GEMMs and one shape per driver
quick_filter='^(dot|exp|softmax)/[^/]+/4096$|^gemm/[^/]+/(256x256x256/NN|1024x1024x64/NT|1x4096x64/NT)$'
quick_filter+='|^sdpa/[^/]+/(256x64/causal|1024x64/full)$|^decode/[^/]+/2048x128/q1$|^mha/[^/]+/128/E512h8$'
if ((quick)); then
    filter=${filter:-$quick_filter}
    rounds=${rounds:-5}
    min_time=${min_time:-0.05}
fi
rounds=${rounds:-3}
min_time=${min_time:-0.1}

# shellcheck source=scripts/bench_deps.sh
source "$root/scripts/bench_deps.sh"
bench_install_deps git libbenchmark-tools python3-scipy
command -v git >/dev/null || { echo "bench_ab.sh: git not found" >&2; exit 1; }

cd "$root"
sha_a=$(git rev-parse --verify --quiet "$base_ref^{commit}") || { echo "bench_ab.sh: unknown revision $base_ref" >&2; exit 2; }
sha_b=$(git rev-parse --verify --quiet "$new_ref^{commit}") || { echo "bench_ab.sh: unknown revision $new_ref" >&2; exit 2; }
ab=$root/build-ab
mkdir -p "$ab"

# build_rev SHA: worktree build-ab/src-SHA, build dir build-ab/build-SHA (both reused)
build_rev() {
    local sha=$1 short=${1:0:12}
    local src=$ab/src-$short build=$ab/build-$short
    if [[ ! -e $src/.git ]]; then
        # --force: also when an earlier build-ab/ was deleted without git worktree prune
        git worktree add --force --detach "$src" "$sha" >/dev/null 2>&1 ||
            { echo "bench_ab.sh: git worktree add $src $sha failed" >&2; exit 1; }
    fi
    if [[ ! -f $build/meson-private/coredata.dat ]]; then
        meson setup "$build" "$src" --buildtype=release -Dtests=disabled -Dbench=enabled >"$build.setup.log" 2>&1 ||
            { cat "$build.setup.log" >&2; exit 1; }
    fi
    meson compile -C "$build" >"$build.compile.log" 2>&1 || { tail -n 40 "$build.compile.log" >&2; exit 1; }
}

echo "==> A = $base_ref (${sha_a:0:12}), B = $new_ref (${sha_b:0:12})"
echo "==> building both in $ab"
build_rev "$sha_a"
build_rev "$sha_b"
build_a=$ab/build-${sha_a:0:12}
build_b=$ab/build-${sha_b:0:12}

# the benchmark programs, by name; each side runs its own build of them
mapfile -t programs < <(find "$build_a/bench" -name '*.p' -prune -o -type f -executable -name 'bench_*' -printf '%P\n' | sort)
((${#programs[@]})) || { echo "bench_ab.sh: no benchmark programs in $build_a/bench" >&2; exit 1; }
# pick FILTER: the programs with a benchmark that FILTER (a regex, empty: all) selects,
# in either revision, into `selected`; their Google Benchmark filter into `filter_args`
pick() {
    filter_args=()
    [[ -n $1 ]] && filter_args=("--benchmark_filter=$1")
    selected=()
    local prog build
    for prog in "${programs[@]}"; do
        for build in "$build_a" "$build_b"; do
            if [[ -x $build/bench/$prog ]] && [[ -n $("$build/bench/$prog" --benchmark_list_tests "${filter_args[@]}" 2>/dev/null) ]]; then
                selected+=("$prog")
                break
            fi
        done
    done
}
# run SIDE BUILD ROUND PROG: one program of one side, into $out
run() {
    local name=${4//\//_}
    # libqkv's kernels are single-threaded: keep the peers on one thread too
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 BLIS_NUM_THREADS=1 \
        "$2/bench/$4" "--benchmark_min_time=$min_time" "--benchmark_repetitions=$reps" "${filter_args[@]}" \
        --benchmark_out="$out/$1-r$3-$name.json" --benchmark_out_format=json >"$out/$1-r$3-$name.log" 2>&1 ||
        { tail -n 20 "$out/$1-r$3-$name.log" >&2; echo "bench_ab.sh: $4 of $1 failed" >&2; exit 1; }
}
# measure: the rounds of the selected programs, alternated, into $out
measure() {
    mkdir -p "$out"
    local r prog start=$SECONDS
    for ((r = 1; r <= rounds; r++)); do
        for prog in "${selected[@]}"; do
            if ((r % 2)); then
                run A "$build_a" "$r" "$prog"; run B "$build_b" "$r" "$prog"
            else
                run B "$build_b" "$r" "$prog"; run A "$build_a" "$r" "$prog"
            fi
        done
        echo "    round $r/$rounds done ($((SECONDS - start)) s)"
    done
}

pick "$filter"
((${#selected[@]})) || { echo "bench_ab.sh: no benchmark matches ${filter:-(all)}" >&2; exit 2; }
first=$ab/run-$(date +%Y%m%d-%H%M%S)
out=$first
echo "==> $rounds rounds x ${#selected[@]} programs (${selected[*]##*/}), $reps repetitions of ${min_time} s${filter:+, filter $filter}"
measure

# the U test needs scipy: whichever python3 has it (Debian's has it as python3-scipy; a
# python3 earlier on PATH may not)
py=python3
for candidate in python3 /usr/bin/python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import scipy' 2>/dev/null; then
        py=$candidate
        break
    fi
done
# verdict: bench_ab.py on the JSON in $out; the regressed names into $out/regressed.txt
verdict() {
    echo "==> A = $base_ref (${sha_a:0:12}), B = $new_ref (${sha_b:0:12}); JSON in ${out#"$root"/}"
    "$py" "$root/scripts/bench_ab.py" --a "$out"/A-*.json --b "$out"/B-*.json --threshold "$threshold" \
        --alpha "$alpha" --label-a A --label-b B --regressed-out "$out/regressed.txt"
}
status=0
verdict || status=$?
flagged=()
for ((pass = 1; status == 1 && pass <= confirm; pass++)); do
    mapfile -t flagged <"$out/regressed.txt"
    # exactly these names (Google Benchmark filters with ECMAScript regexes)
    regex=$(printf '%s\n' "${flagged[@]}" | sed 's/[][\.*^$+?(){}|]/\\&/g' | paste -sd '|')
    pick "^($regex)\$"
    out=$first-confirm$pass
    echo "==> confirmation $pass/$confirm: the ${#flagged[@]} flagged benchmarks again, in fresh processes ($rounds rounds x ${#selected[@]} programs)"
    measure
    status=0
    verdict || status=$?
done
if ((status == 1 && confirm > 0)); then
    mapfile -t flagged <"$out/regressed.txt"
    echo "bench_ab: FAIL: ${#flagged[@]} libqkv benchmarks slower in the first pass and in $confirm confirmation pass(es): ${flagged[*]}"
elif ((status == 0 && ${#flagged[@]} > 0)); then
    echo "bench_ab: PASS: the first pass flagged ${flagged[*]}, which confirmation pass $((pass - 1)) did not reproduce (the tables above show both passes)"
fi
exit "$status"
