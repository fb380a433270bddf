/* Benchmarks of the raw kernels qkv_dot, qkv_exp and qkv_softmax, for every ISA this host
 * supports, against the peers a user would otherwise pick (optional, compile-time):
 *
 *   dot/<isa>/N               qkv_dot after qkv_isa_select(isa)     N = 256 .. 4Mi
 *   dot/openblas/N            cblas_sdot, one thread
 *   exp/<isa>/N               qkv_exp, x in [-10, 10)
 *   exp/sleef-avx2/N          Sleef_expf8_u10avx2 (and -avx512: Sleef_expf16_u10avx512f)
 *   softmax/<isa>/N           qkv_softmax, logits in [-10, 10), scale 0.125
 *   softmax/sleef3pass-avx2/N max pass, SLEEF exp-store-sum pass, scale pass (and -avx512)
 *
 * Counters: items/s (elements), bytes/s, peak_frac (see bench_util.h); dot also FLOP/s.
 * Bytes counted: dot reads 2n floats; exp reads n and writes n; softmax (three passes,
 * libqkv and peer alike) reads 3n (max pass x, exp pass x, scale pass y) and writes 2n.
 * Buffers are 64-byte aligned and reused by every iteration, so small n runs from L1 and
 * 4Mi (16 MiB per array) from DRAM.
 *
 * Built with baseline flags: the SLEEF peers (sleef_peers.h) live in functions with target
 * attributes and are registered only when qkv_isa_select() accepts that ISA. */
#include "bench_util.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#ifdef QKV_BENCH_HAVE_SLEEF
#include "sleef_peers.h"
#endif
#ifdef QKV_BENCH_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace {

using qkv_bench::Buffer;

constexpr std::size_t kSizes[] = {256, 4096, 65536, 4194304};
constexpr float kSoftmaxScale = 0.125f; /* 1/sqrt(64): attention logits of head size 64 */
/* Nominal FLOPs per element, the same for libqkv and its peers so that peak_frac compares
   them: exp = 1 mul + 8 FMA (range reduction and degree-6 polynomial of exp_core.h);
   softmax = exp + subtract max, multiply by scale, add to sum, multiply by 1/sum. */
constexpr double kExpFlops = 17.0;
constexpr double kSoftmaxFlops = kExpFlops + 4.0;

using DotFn = float (*)(const float *, const float *, std::size_t);
using ExpFn = void (*)(const float *, float *, std::size_t);
using SoftmaxFn = void (*)(const float *, float *, std::size_t, float);

/* One implementation of a kernel. libqkv variants select isa before timing; for peers isa
   only names the FMA peak that peak_frac refers to. */
template <class Fn> struct Variant {
    std::string impl;
    qkv_isa isa;
    bool libqkv;
    Fn fn;
};

template <class Fn> bool prepare(benchmark::State &st, const Variant<Fn> &v)
{
    return !v.libqkv || qkv_bench::select_isa(st, v.isa);
}

void set_counters(benchmark::State &st, std::size_t n, double floats_moved)
{
    const auto iters = static_cast<int64_t>(st.iterations());
    st.SetItemsProcessed(iters * static_cast<int64_t>(n));
    st.SetBytesProcessed(iters * static_cast<int64_t>(floats_moved * sizeof(float)));
}

void bm_dot(benchmark::State &st, const Variant<DotFn> &v, std::size_t n)
{
    if (!prepare(st, v))
        return;
    Buffer a = qkv_bench::alloc_floats(n), b = qkv_bench::alloc_floats(n);
    qkv_bench::fill_uniform(a.get(), n, -1.0f, 1.0f, 1);
    qkv_bench::fill_uniform(b.get(), n, -1.0f, 1.0f, 2);
    for (auto _ : st) {
        float r = v.fn(a.get(), b.get(), n);
        benchmark::DoNotOptimize(r);
    }
    set_counters(st, n, 2.0 * n);
    qkv_bench::set_flop_counters(st, 2.0 * n, v.isa);
}

void bm_exp(benchmark::State &st, const Variant<ExpFn> &v, std::size_t n)
{
    if (!prepare(st, v))
        return;
    Buffer x = qkv_bench::alloc_floats(n), y = qkv_bench::alloc_floats(n);
    qkv_bench::fill_uniform(x.get(), n, -10.0f, 10.0f, 3);
    for (auto _ : st) {
        v.fn(x.get(), y.get(), n);
        benchmark::ClobberMemory();
    }
    set_counters(st, n, 2.0 * n);
    qkv_bench::set_peak_frac(st, kExpFlops * n, v.isa);
}

void bm_softmax(benchmark::State &st, const Variant<SoftmaxFn> &v, std::size_t n)
{
    if (!prepare(st, v))
        return;
    Buffer x = qkv_bench::alloc_floats(n), y = qkv_bench::alloc_floats(n);
    qkv_bench::fill_uniform(x.get(), n, -10.0f, 10.0f, 4);
    for (auto _ : st) {
        v.fn(x.get(), y.get(), n, kSoftmaxScale);
        benchmark::ClobberMemory();
    }
    set_counters(st, n, 5.0 * n);
    qkv_bench::set_peak_frac(st, kSoftmaxFlops * n, v.isa);
}

#ifdef QKV_BENCH_HAVE_OPENBLAS
float openblas_dot(const float *a, const float *b, std::size_t n)
{
    return cblas_sdot(static_cast<blasint>(n), a, 1, b, 1);
}
#endif


/* Registers kernel/impl/N for every size, sizes outermost so that the console shows the
   implementations of one size next to each other. */
template <class Fn>
void register_kernel(const char *kernel, void (*bm)(benchmark::State &, const Variant<Fn> &, std::size_t),
                     const std::vector<Variant<Fn>> &variants)
{
    for (std::size_t n : kSizes)
        for (const Variant<Fn> &v : variants) {
            const std::string name = std::string(kernel) + "/" + v.impl + "/" + std::to_string(n);
            benchmark::RegisterBenchmark(name.c_str(), [bm, v, n](benchmark::State &st) { bm(st, v, n); });
        }
}

void register_all()
{
    std::vector<Variant<DotFn>> dot;
    std::vector<Variant<ExpFn>> exp;
    std::vector<Variant<SoftmaxFn>> softmax;
    for (qkv_isa isa : qkv_bench::host_isas()) {
        dot.push_back({qkv_isa_name(isa), isa, true, qkv_dot});
        exp.push_back({qkv_isa_name(isa), isa, true, qkv_exp});
        softmax.push_back({qkv_isa_name(isa), isa, true, qkv_softmax});
    }
#ifdef QKV_BENCH_HAVE_OPENBLAS
#ifdef QKV_BENCH_HAVE_OPENBLAS_SET_NUM_THREADS
    openblas_set_num_threads(1); /* libqkv kernels are single-threaded */
#endif
    /* OpenBLAS picks its kernel by CPU type: compare with the best ISA's peak */
    dot.push_back({"openblas", qkv_isa_detected(), false, openblas_dot});
#endif
#ifdef QKV_BENCH_HAVE_SLEEF
    if (qkv_bench::isa_available(QKV_ISA_AVX2)) {
        exp.push_back({"sleef-avx2", QKV_ISA_AVX2, false, qkv_bench::sleef_exp_avx2});
        softmax.push_back({"sleef3pass-avx2", QKV_ISA_AVX2, false, qkv_bench::sleef_softmax_avx2});
    }
    if (qkv_bench::isa_available(QKV_ISA_AVX512)) {
        exp.push_back({"sleef-avx512", QKV_ISA_AVX512, false, qkv_bench::sleef_exp_avx512});
        softmax.push_back({"sleef3pass-avx512", QKV_ISA_AVX512, false, qkv_bench::sleef_softmax_avx512});
    }
#endif
    register_kernel("dot", bm_dot, dot);
    register_kernel("exp", bm_exp, exp);
    register_kernel("softmax", bm_softmax, softmax);
}

} // namespace

int main(int argc, char **argv)
{
    return qkv_bench::main(argc, argv, register_all);
}
