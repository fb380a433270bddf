#!/usr/bin/env bash
# Run one libFuzzer target for a while: scripts/fuzz.sh TARGET SECONDS
#   TARGET: softmax_exp, gemm, ... (tests/fuzz/fuzz_TARGET.c)
# Builds build-fuzz/ with clang, ASan and UBSan; the corpus grows in build-fuzz/corpus/TARGET,
# seeded from tests/fuzz/corpus/TARGET. A crash leaves its input in build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: scripts/fuzz.sh TARGET SECONDS}
seconds=${2:-60}
dir=build-fuzz
if [ ! -d "$dir" ]; then
    CC=clang CXX=clang++ meson setup "$dir" -Dbench=disabled -Dfuzz=enabled \
        -Db_sanitize=address,undefined -Db_lundef=false \
        "-Dc_args=-fsanitize=fuzzer-no-link -fno-sanitize-recover=all" >/dev/null
fi
ninja -C "$dir" "tests/fuzz/fuzz_$target" >/dev/null
mkdir -p "$dir/corpus/$target"
cd "$dir"
exec "./tests/fuzz/fuzz_$target" -max_total_time="$seconds" -max_len=16384 -print_final_stats=1 \
    "corpus/$target" "../tests/fuzz/corpus/$target"
