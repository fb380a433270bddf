#!/usr/bin/env bash
# Test of scripts/bench_ab.sh on a synthetic slowdown (one command, a few minutes):
#   1. a temporary commit on top of HEAD (made in a throwaway worktree, no branch) whose
#      qkv_exp runs its kernel twice over the whole input: the exp/<isa>/N rows about 2x
#      slower and nothing else (softmax and the drivers call the kernel table, not qkv_exp);
#   2. bench_ab.sh HEAD <that commit> must fail and name exp/<isa>/4096, and no dot row,
#      in its final verdict, after a confirmation pass that ran the flagged rows alone again;
#   3. bench_ab.sh HEAD HEAD (identical revisions) must pass.
# A narrow filter (dot and exp at 4096, every ISA and peer) and 6 alternated rounds of 5
# repetitions keep it short. The verdicts are taken at a 30% threshold, not the tool's 10%
# default: the slowed revision is another binary, and a change in one function moves the
# code of the others, which alone has moved an untouched row by 10% with p < 1e-5 (dot/scalar
# on an AMD EPYC, a CI run), and a shared machine moves whole processes by as much; +100%
# clears 30% by far, and the checks still fail if a slowdown goes unseen or unnamed, or if
# a row that was not slowed is named.
# Exits non-zero on any failed check; the last line says how many checks passed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
filter='^(dot|exp)/[^/]+/4096$'
ab_args=(--filter "$filter" --rounds 6 --repetitions 5 --min-time 0.05 --threshold 0.30)
passed=0
failed=0
check() { # check WHAT CONDITION-STATUS
    if [ "$2" = 0 ]; then echo "ok: $1"; passed=$((passed + 1)); else echo "FAIL: $1"; failed=$((failed + 1)); fi
}

tmp=$root/build-ab/test-slow
slow=
cleanup() {
    git worktree remove --force "$tmp" >/dev/null 2>&1 || true
    if [ -n "$slow" ]; then
        git worktree remove --force "$root/build-ab/src-${slow:0:12}" >/dev/null 2>&1 || true
        rm -rf "$root/build-ab/build-${slow:0:12}" "$root/build-ab/build-${slow:0:12}".*.log
    fi
}
trap cleanup EXIT

# 1. the slowed revision
mkdir -p "$root/build-ab"
git worktree remove --force "$tmp" >/dev/null 2>&1 || rm -rf "$tmp"
git worktree add --force --detach "$tmp" HEAD >/dev/null
sed -i 's|^    qkv_kernels_active()->exp(x, y, n);$|    qkv_kernels_active()->exp(x, y, n); /* test_bench_ab: 2x slower on purpose */\n&|' \
    "$tmp/src/dispatch.c"
if ! grep -q "test_bench_ab: 2x slower" "$tmp/src/dispatch.c"; then
    echo "test_bench_ab: could not find qkv_exp's kernel call in src/dispatch.c to slow it down" >&2
    exit 1
fi
git -C "$tmp" -c user.name=test_bench_ab -c user.email=test_bench_ab@localhost \
    commit -q -am "test_bench_ab: qkv_exp 2x slower (throwaway)"
slow=$(git -C "$tmp" rev-parse HEAD)
echo "== slowed revision ${slow:0:12} (qkv_exp computes everything twice)"

# 2. HEAD against the slowed revision: must fail, naming exp and no dot row
status=0
scripts/bench_ab.sh HEAD "$slow" "${ab_args[@]}" | tee "$root/build-ab/test-slow.log" || status=$?
# the last verdict line is the run's (a first pass and its confirmation pass print one each)
verdict=$(grep '^bench_ab: ' "$root/build-ab/test-slow.log" | tail -n 1 || true)
check "a 2x slower qkv_exp fails (exit 1)" "$([ "$status" = 1 ] && echo 0 || echo 1)"
check "... and the verdict names exp/<isa>/4096" "$(echo "$verdict" | grep -qE 'FAIL: .*exp/(avx2|avx512|neon|scalar)/4096' && echo 0 || echo 1)"
check "... and no dot row or peer" "$(echo "$verdict" | grep -qE 'dot/|sleef|openblas' && echo 1 || echo 0)"
check "... after a confirmation pass of the flagged rows alone" "$(grep -qE '^==> confirmation 1/1: the [0-9]+ flagged benchmarks again' "$root/build-ab/test-slow.log" && echo 0 || echo 1)"

# 3. identical revisions: must pass
status=0
scripts/bench_ab.sh HEAD HEAD "${ab_args[@]}" | tee "$root/build-ab/test-same.log" || status=$?
check "identical revisions (HEAD vs HEAD) pass" "$([ "$status" = 0 ] && grep '^bench_ab: ' "$root/build-ab/test-same.log" | tail -n 1 | grep -q '^bench_ab: PASS' && echo 0 || echo 1)"

echo "test_bench_ab: $passed passed, $failed failed"
[ "$failed" = 0 ]
