/* bench_threads: libqkv on threads, against the peers on as many.
 *
 *   gemm/qkv-<isa>/<M>x<N>x<K>/<NN|NT>/t<T>   qkv_gemm_ex on the built-in pool of T threads
 *                                             (t1: tp == NULL), the best ISA of the host
 *   gemm/<peer>/<M>x<N>x<K>/<NN|NT>/t<T>      OpenBLAS, BLIS, oneDNN set to T threads
 *   gemm/qkv-<isa>/64x64x64/NN/t2             a problem below the threads threshold: must
 *                                             cost what t1 costs
 *   pool/qkv-pool/empty/t<T>                  one run() of an empty task on the built-in pool
 *   read/qkv-pool/<MiB>/t<T>                  a plain read loop over that many bytes, split
 *                                             in T parts on the pool: the memory bandwidth
 *                                             that the m == 1 rows (B streamed once) are
 *                                             held against, in the same binary
 * T is 1 and 2, and the number of online CPUs when larger. Counters: FLOP/s, peak_frac
 * (one core's FMA peak, so 2 threads can reach 2.0), GB/s on m == 1 and read rows. */
#include <string>
#include <vector>

#include "../sgemm_peers.h"
#include "bench_util.h"
#include "qkv.h"

namespace {

struct Shape {
    std::size_t m, n, k;
    bool trans_b;
};

const std::vector<Shape> kShapes = {
    {256, 256, 256, false},    {512, 512, 512, false},   {1024, 1024, 1024, false}, {2048, 2048, 2048, false},
    {1024, 1024, 64, true},    {4096, 64, 4096, false},  /* S = Q K^T, O = P V */
    {96, 96, 1024, false},     /* the narrow order with few rows (a row block per task) */
    {1, 4096, 64, true},       {1, 1024, 1024, false},   {1, 4096, 4096, false}, /* decode */
    {64, 64, 64, false},       /* below the threads threshold */
};

std::string shape_name(const Shape &s)
{
    return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + (s.trans_b ? "/NT" : "/NN");
}

void set_counters(benchmark::State &st, const Shape &s, qkv_isa isa)
{
    qkv_bench::set_flop_counters(st, 2.0 * (double)s.m * (double)s.n * (double)s.k, isa);
    if (s.m == 1)
        st.counters["GB/s"] = benchmark::Counter((double)(s.n * s.k * sizeof(float)) * (double)st.iterations(),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void bm_qkv(benchmark::State &st, qkv_isa isa, Shape s, int threads)
{
    if (!qkv_bench::select_isa(st, isa))
        return;
    const qkv_threadpool *tp = qkv_bench::pool_of(threads);
    if (threads > 1 && tp == nullptr) {
        st.SkipWithError("no pool");
        return;
    }
    const std::size_t ws_size = qkv_gemm_workspace_size(s.m, s.n, s.k, (std::size_t)threads);
    auto a = qkv_bench::alloc_floats(s.m * s.k), b = qkv_bench::alloc_floats(s.k * s.n);
    auto c = qkv_bench::alloc_floats(s.m * s.n), ws = qkv_bench::alloc_floats(ws_size / sizeof(float) + 1);
    qkv_bench::fill_uniform(a.get(), s.m * s.k, -1, 1, 1);
    qkv_bench::fill_uniform(b.get(), s.k * s.n, -1, 1, 2);
    const qkv_trans tb = s.trans_b ? QKV_TRANS : QKV_NOTRANS;
    for (auto _ : st) {
        qkv_gemm_ex(QKV_NOTRANS, tb, s.m, s.n, s.k, 1.0f, a.get(), s.k, b.get(), s.trans_b ? s.k : s.n, 0.0f, c.get(),
                    s.n, tp, ws.get(), ws_size);
        benchmark::DoNotOptimize(c.get());
        benchmark::ClobberMemory();
    }
    set_counters(st, s, isa);
}

void bm_peer(benchmark::State &st, qkv_bench::SgemmFn fn, qkv_isa isa, Shape s, int threads)
{
    qkv_bench::sgemm_peers_set_threads(threads);
    auto a = qkv_bench::alloc_floats(s.m * s.k), b = qkv_bench::alloc_floats(s.k * s.n);
    auto c = qkv_bench::alloc_floats(s.m * s.n);
    qkv_bench::fill_uniform(a.get(), s.m * s.k, -1, 1, 1);
    qkv_bench::fill_uniform(b.get(), s.k * s.n, -1, 1, 2);
    for (auto _ : st) {
        fn(s.trans_b, s.m, s.n, s.k, 1.0f, a.get(), b.get(), c.get());
        benchmark::DoNotOptimize(c.get());
        benchmark::ClobberMemory();
    }
    qkv_bench::sgemm_peers_set_threads(1);
    set_counters(st, s, isa);
}

void register_all()
{
    const qkv_isa best = qkv_isa_detected();
    const std::string impl = std::string("qkv-") + qkv_isa_name(best);
    const std::vector<qkv_bench::SgemmPeer> peers = qkv_bench::sgemm_peers("bench_threads");
    for (int t : qkv_bench::thread_counts()) {
        const std::string suffix = "/t" + std::to_string(t);
        if (t > 1)
            benchmark::RegisterBenchmark(("pool/qkv-pool/empty" + suffix).c_str(),
                                         [t](benchmark::State &st) { qkv_bench::bm_empty_run(st, t); });
        for (std::size_t mib : {4, 64})
            benchmark::RegisterBenchmark(("read/qkv-pool/" + std::to_string(mib) + "MiB" + suffix).c_str(),
                                         [mib, t](benchmark::State &st) { qkv_bench::bm_read(st, mib << 20, t); })
                ->Unit(benchmark::kMicrosecond);
    }
    for (const Shape &s : kShapes) {
        for (int t : qkv_bench::thread_counts()) {
            const std::string suffix = "/" + shape_name(s) + "/t" + std::to_string(t);
            benchmark::RegisterBenchmark(("gemm/" + impl + suffix).c_str(),
                                         [best, s, t](benchmark::State &st) { bm_qkv(st, best, s, t); })
                ->Unit(benchmark::kMicrosecond)
                ->UseRealTime();
            if (s.m == 64)
                continue; /* the threshold row: libqkv against itself only */
            for (const qkv_bench::SgemmPeer &p : peers) {
                const qkv_bench::SgemmFn fn = p.fn;
                benchmark::RegisterBenchmark(("gemm/" + std::string(p.name) + suffix).c_str(),
                                             [fn, best, s, t](benchmark::State &st) { bm_peer(st, fn, best, s, t); })
                    ->Unit(benchmark::kMicrosecond)
                    ->UseRealTime();
            }
        }
    }
}

} // namespace

int main(int argc, char **argv)
{
    return qkv_bench::main(argc, argv, register_all);
}
