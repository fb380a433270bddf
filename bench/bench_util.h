/* Shared helpers for the libqkv Google Benchmark programs (bench_kernels, bench/gemm/...).
 *
 * Numbers are made comparable across machines by relating them to an in-process,
 * single-core FMA peak per ISA: every benchmark reports counter "peak_frac" = achieved
 * FLOP/s / peak FLOP/s of the ISA it runs. The peaks also land in the JSON context as
 * "fma_peak_gflops_<isa>".
 *
 * Typical program:
 *
 *     static void register_all() {
 *         for (qkv_isa isa : qkv_bench::host_isas())
 *             benchmark::RegisterBenchmark(name, [=](benchmark::State &st) {
 *                 if (!qkv_bench::select_isa(st, isa))
 *                     return;
 *                 for (auto _ : st) ...;
 *                 qkv_bench::set_flop_counters(st, 2.0 * m * n * k, isa);
 *             });
 *     }
 *     int main(int argc, char **argv) { return qkv_bench::main(argc, argv, register_all); }
 *
 * Name benchmarks kernel/impl/size, impl a qkv_isa_name() (optionally "qkv-" prefixed)
 * for libqkv and anything else for a peer (dot/avx2/4096, gemm/qkv-avx2/64x64x64/NN,
 * gemm/openblas/64x64x64/NN): scripts/bench_summary.py
 * groups by kernel and size and compares libqkv ISAs with the fastest peer.
 * Link with bench_util_dep (bench/meson.build). */
#ifndef QKV_BENCH_UTIL_H
#define QKV_BENCH_UTIL_H

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <vector>

#include "qkv.h"

namespace qkv_bench {

/* The scalar ISA is benchmarked only where one call stays well under a second: calls of
   at most this many FLOPs. */
constexpr double kScalarMaxFlops = 3e8;

/* ISAs that this CPU and this libqkv build support (qkv_isa_select accepts them),
   scalar first. Leaves the active ISA unchanged. */
std::vector<qkv_isa> host_isas();

/* True if qkv_isa_select(isa) succeeds; leaves the active ISA unchanged. */
bool isa_available(qkv_isa isa);

/* Makes isa active for the calling benchmark, or marks it skipped with an error. Call in
   the benchmark body before the timing loop; returns false if the body should return. */
bool select_isa(benchmark::State &st, qkv_isa isa);

/* Single-core FMA peak of isa in FLOP/s (an FMA counts 2): independent multiply-add
   chains in registers, median of several runs, measured once on first use (thread-safe).
   0 if isa is not available or bench_util.cc has no peak loop for it (then its rows get
   no peak_frac and the JSON no fma_peak_gflops_<isa>). The scalar peak is that of
   baseline-compiled float code (mulss + addss on x86-64, which has no FMA in its
   baseline). */
double fma_peak(qkv_isa isa);

/* Counters "FLOP/s" (rate) and "peak_frac" for flops_per_iter operations per iteration,
   relative to fma_peak(isa). Call after the timing loop. */
void set_flop_counters(benchmark::State &st, double flops_per_iter, qkv_isa isa);

/* Only "peak_frac", for kernels whose FLOP count is nominal (exp, softmax). */
void set_peak_frac(benchmark::State &st, double flops_per_iter, qkv_isa isa);

/* Zero-filled float buffer aligned to 64 bytes (a cache line, one AVX-512 vector); the
   zero fill maps its pages before timing starts. Throws std::bad_alloc. */
struct FreeDeleter {
    void operator()(float *p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], FreeDeleter>;
Buffer alloc_floats(std::size_t n);

/* Fills p[0..n) with uniform values in [lo, hi), reproducibly from seed. */
void fill_uniform(float *p, std::size_t n, float lo, float hi, unsigned seed);

/* ---- threads (bench_threads, bench_attention_batched) ---- */

/* the thread counts benchmarked: 1, 2, and the online CPUs when more */
std::vector<int> thread_counts();

/* libqkv's built-in pool of n threads, created on first use and kept; nullptr for n <= 1
   (the calling thread: tp == NULL) */
const qkv_threadpool *pool_of(int n);

/* one run() of an empty task on pool_of(threads): the cost of waking and joining it */
void bm_empty_run(benchmark::State &st, int threads);

/* a plain read loop over `bytes` bytes split in `threads` parts on pool_of(threads),
   counter GB/s: the memory bandwidth memory-bound rows are held against, in the same
   binary */
void bm_read(benchmark::State &st, std::size_t bytes, int threads);

/* qkv_mha_forward, batch 1, self-attention of n tokens with biases (weights and input
   uniform, fixed seeds), on pool_of(threads); counters as set_flop_counters for
   8 n E^2 + 4 n^2 E */
void bm_mha(benchmark::State &st, std::size_t E, std::size_t h, std::size_t n, qkv_isa isa, int threads);

/* Runs a benchmark program: parses the Google Benchmark flags (default min time 0.2 s
   unless --benchmark_min_time is given; so do not set MinTime() on benchmarks), measures
   the FMA peak of every host ISA and adds it to the context, calls register_all() (which
   registers with benchmark::RegisterBenchmark) and runs the benchmarks. */
int main(int argc, char **argv, void (*register_all)());

} // namespace qkv_bench

#endif
