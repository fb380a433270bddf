/* bench_gemm: qkv_gemm on every host ISA against OpenBLAS cblas_sgemm, BLIS bli_sgemm and
 * oneDNN dnnl_sgemm, all single-threaded, row-major, alpha = 1, beta = 0.
 *
 * Names: gemm/<impl>/<M>x<N>x<K>/<NN|NT>, NT = op(B) transposed (S = Q K^T). Shapes:
 * square 64..2048 and the attention shapes (S = Q K^T with K = 64, O = P V with N = 64,
 * an odd one, and the M = 1 decode pair). Counters: FLOP/s (2 M N K per call) and
 * peak_frac against the in-process FMA peak of the ISA (peers: of the best host ISA).
 * For OpenBLAS's Haswell kernels run with OPENBLAS_CORETYPE=Haswell. Use repetitions and
 * medians, e.g. --benchmark_repetitions=5 --benchmark_report_aggregates_only=true. */
#include <functional>
#include <string>
#include <vector>

#include "bench_util.h"
#include "qkv.h"
#include "sgemm_peers.h"

namespace {

struct Shape {
    std::size_t m, n, k;
    bool trans_b;
};

const std::vector<Shape> kShapes = {
    {64, 64, 64, false},      {128, 128, 128, false},   {256, 256, 256, false},  {512, 512, 512, false},
    {1024, 1024, 1024, false}, {2048, 2048, 2048, false}, /* square */
    {1024, 1024, 64, true},   {1024, 64, 1024, false},  /* S = Q K^T, O = P V */
    {4096, 4096, 64, true},   {4096, 64, 4096, false},  {77, 300, 129, false},  /* odd */
    {1000, 1000, 1000, false}, /* no power-of-two leading dimension */
    {1, 4096, 64, true},      {1, 64, 4096, false},     /* decode */
};

/* C = A op(B), row-major: A m x k (lda = k), B k x n (ldb = n) or n x k (ldb = k), C m x n */
using GemmFn = std::function<void(const Shape &, const float *, const float *, float *)>;

struct Impl {
    std::string name;
    qkv_isa isa; /* qkv: the ISA to select; peers: the ISA whose peak they are measured against */
    bool is_qkv;
    GemmFn fn;
};

void qkv_call(const Shape &s, const float *a, const float *b, float *c)
{
    qkv_gemm(QKV_NOTRANS, s.trans_b ? QKV_TRANS : QKV_NOTRANS, s.m, s.n, s.k, 1.0f, a, s.k, b,
             s.trans_b ? s.k : s.n, 0.0f, c, s.n);
}

void bm_gemm(benchmark::State &st, const Impl &impl, const Shape &s)
{
    if (impl.is_qkv && !qkv_bench::select_isa(st, impl.isa))
        return;
    qkv_bench::Buffer a = qkv_bench::alloc_floats(s.m * s.k), b = qkv_bench::alloc_floats(s.k * s.n),
                      c = qkv_bench::alloc_floats(s.m * s.n);
    qkv_bench::fill_uniform(a.get(), s.m * s.k, -1.0f, 1.0f, 1);
    qkv_bench::fill_uniform(b.get(), s.k * s.n, -1.0f, 1.0f, 2);
    for (auto _ : st) {
        impl.fn(s, a.get(), b.get(), c.get());
        benchmark::DoNotOptimize(c.get());
        benchmark::ClobberMemory();
    }
    qkv_bench::set_flop_counters(st, 2.0 * (double)s.m * (double)s.n * (double)s.k, impl.isa);
}

void register_all()
{
    std::vector<Impl> impls;
    for (qkv_isa isa : qkv_bench::host_isas())
        impls.push_back({std::string("qkv-") + qkv_isa_name(isa), isa, true, qkv_call});
    const qkv_isa best = qkv_isa_detected();
    for (const qkv_bench::SgemmPeer &p : qkv_bench::sgemm_peers("bench_gemm")) {
        const qkv_bench::SgemmFn fn = p.fn;
        impls.push_back({p.name, best, false, [fn](const Shape &s, const float *a, const float *b, float *c) {
                             fn(s.trans_b, s.m, s.n, s.k, 1.0f, a, b, c);
                         }});
    }
    /* shapes outermost: the implementations of one shape sit next to each other */
    for (const Shape &s : kShapes) {
        const double flops = 2.0 * (double)s.m * (double)s.n * (double)s.k;
        for (const Impl &impl : impls) {
            if (impl.is_qkv && impl.isa == QKV_ISA_SCALAR && flops > qkv_bench::kScalarMaxFlops)
                continue;
            const std::string name = "gemm/" + impl.name + "/" + std::to_string(s.m) + "x" + std::to_string(s.n) +
                                     "x" + std::to_string(s.k) + (s.trans_b ? "/NT" : "/NN");
            benchmark::RegisterBenchmark(name.c_str(), [impl, s](benchmark::State &st) { bm_gemm(st, impl, s); })
                ->Unit(benchmark::kMicrosecond);
        }
    }
}

} // namespace

int main(int argc, char **argv)
{
    return qkv_bench::main(argc, argv, register_all);
}
