/* bench_ukernels: each kernel table's microkernels alone, on operands that stay in L1/L2,
 * so a new register tile or blocking can be tuned without going through qkv_gemm or the
 * attention drivers. Counters: FLOP/s and peak_frac against the in-process FMA peak of the
 * ISA (bench_util.h).
 *
 *   ukernel/qkv-<isa>/packed/k<K>     MR x NR tile, packed A and B micropanels (the driver's
 *                                     transposed-A path and sdpa's P V); qkv-<isa>-<MR>x<NR>:
 *                                     the table's second GEMM tile (kernels.h, AVX2 4 x 24)
 *   ukernel/qkv-<isa>/inplace/k<K>    A read in place, rows of a row-major matrix (the
 *                                     driver's usual path and sdpa's S^T = K Q^T)
 *   ukernel/qkv-<isa>/stream/k<K>     the inner loop of the driver's packed-A order (one
 *                                     ukernel_row call): one
 *                                     packed MR x K micropanel of A against every panel of a
 *                                     packed K x NC block of B (NC: the tile's nc_l2 from
 *                                     this machine's caches, the block the order keeps in
 *                                     L2), C tiles side by side in an MR x NC block. What a
 *                                     large GEMM can reach at most in that order: its rows
 *                                     over this one are the driver's cost (packing, edges,
 *                                     C from memory), this one over packed/k<K> the cost of
 *                                     streaming B from L2
 *   gemv_t/qkv-<isa>/<N>x<K>          y = B x, B n x k row-major (decode scores q K^T)
 *   gemv_n/qkv-<isa>/<N>x<K>          y = x B, B k x n row-major (decode P V)
 *   attn_update/qkv-<isa>/<R>x<C>x<D> one online-softmax step over an R x C S^T tile with a
 *                                     C x D accumulator (nominal 2 R C + C D FLOPs) */
#include <cstring>
#include <string>

#include "bench_util.h"

extern "C" {
#include "kernels.h"
}

namespace {

const qkv_kernels *table_of(benchmark::State &st, qkv_isa isa)
{
    return qkv_bench::select_isa(st, isa) ? qkv_kernels_active() : nullptr;
}

void bench_ukernel(benchmark::State &st, qkv_isa isa, std::size_t tile, std::size_t k, bool inplace)
{
    const qkv_kernels *t = table_of(st, isa);
    if (t == nullptr)
        return;
    const qkv_gemm_kernels *g = qkv_gemm_tile_of(t, tile);
    const std::size_t mr = g->mr, nr = g->nr;
    auto a = qkv_bench::alloc_floats(mr * k), b = qkv_bench::alloc_floats(k * nr), c = qkv_bench::alloc_floats(mr * nr);
    qkv_bench::fill_uniform(a.get(), mr * k, -1, 1, 1);
    qkv_bench::fill_uniform(b.get(), k * nr, -1, 1, 2);
    const std::size_t rs = inplace ? k : 1, cs = inplace ? 1 : mr;
    for (auto _ : st) {
        g->ukernel(k, a.get(), rs, cs, b.get(), c.get(), nr, 1.0f, 1.0f, nullptr);
        benchmark::DoNotOptimize(c.get());
        benchmark::ClobberMemory();
    }
    qkv_bench::set_flop_counters(st, 2.0 * (double)(mr * nr * k), isa);
}

void bench_stream(benchmark::State &st, qkv_isa isa, std::size_t tile, std::size_t k)
{
    const qkv_kernels *t = table_of(st, isa);
    if (t == nullptr)
        return;
    const qkv_gemm_kernels *g = qkv_gemm_tile_of(t, tile);
    const std::size_t mr = g->mr, nr = g->nr, nc = qkv_gemm_blocking_of(g).nc_l2 / nr * nr;
    auto a = qkv_bench::alloc_floats(mr * k), b = qkv_bench::alloc_floats(k * nc), c = qkv_bench::alloc_floats(mr * nc);
    qkv_bench::fill_uniform(a.get(), mr * k, -1, 1, 1);
    qkv_bench::fill_uniform(b.get(), k * nc, -1, 1, 2);
    qkv_bench::fill_uniform(c.get(), mr * nc, -1, 1, 3);
    for (auto _ : st) {
        g->ukernel_row(nc / nr, k, a.get(), b.get(), nr * k, c.get(), nc, 1.0f, 1.0f, nullptr, 0);
        benchmark::DoNotOptimize(c.get());
        benchmark::ClobberMemory();
    }
    qkv_bench::set_flop_counters(st, 2.0 * (double)(mr * nc * k), isa);
    st.counters["nc"] = (double)nc;
}

void bench_gemv(benchmark::State &st, qkv_isa isa, std::size_t n, std::size_t k, bool trans)
{
    const qkv_kernels *t = table_of(st, isa);
    if (t == nullptr)
        return;
    auto x = qkv_bench::alloc_floats(k), b = qkv_bench::alloc_floats(n * k), y = qkv_bench::alloc_floats(n);
    qkv_bench::fill_uniform(x.get(), k, -1, 1, 1);
    qkv_bench::fill_uniform(b.get(), n * k, -1, 1, 2);
    for (auto _ : st) {
        if (trans)
            t->gemm->gemv_t(n, k, 1.0f, x.get(), b.get(), k, 0.0f, y.get());
        else
            t->gemm->gemv_n(n, k, 1.0f, x.get(), 1, b.get(), n, 0.0f, y.get());
        benchmark::DoNotOptimize(y.get());
        benchmark::ClobberMemory();
    }
    qkv_bench::set_flop_counters(st, 2.0 * (double)(n * k), isa);
    st.counters["GB/s"] = benchmark::Counter((double)(n * k * sizeof(float)) * (double)st.iterations(),
                                             benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void bench_attn_update(benchmark::State &st, qkv_isa isa, std::size_t rows, std::size_t cols, std::size_t d_o)
{
    const qkv_kernels *t = table_of(st, isa);
    if (t == nullptr)
        return;
    auto s0 = qkv_bench::alloc_floats(rows * cols), s = qkv_bench::alloc_floats(rows * cols);
    auto m = qkv_bench::alloc_floats(cols), l = qkv_bench::alloc_floats(cols), o = qkv_bench::alloc_floats(cols * d_o);
    qkv_bench::fill_uniform(s0.get(), rows * cols, -4, 4, 1);
    qkv_bench::fill_uniform(o.get(), cols * d_o, -1, 1, 2);
    float grow = 0.0f;
    for (auto _ : st) {
        /* a fresh tile whose max grows a little every step: exp, sums and the O rescale all run */
        st.PauseTiming();
        std::memcpy(s.get(), s0.get(), rows * cols * sizeof(float));
        for (std::size_t i = 0; i < cols; i++)
            m.get()[i] = -4.0f + grow, l.get()[i] = 1.0f;
        grow = grow > 1.0f ? 0.0f : grow + 1e-3f;
        st.ResumeTiming();
        t->attn_update(rows, cols, s.get(), cols, m.get(), l.get(), o.get(), d_o, d_o);
        benchmark::DoNotOptimize(o.get());
        benchmark::ClobberMemory();
    }
    qkv_bench::set_flop_counters(st, 2.0 * (double)(rows * cols) + (double)(cols * d_o), isa);
}

void register_all()
{
    for (qkv_isa isa : qkv_bench::host_isas()) {
        const std::string impl = std::string("qkv-") + qkv_isa_name(isa);
        /* every GEMM tile of the table; the second one (kernels.h) named by its size */
        const qkv_kernels *t = nullptr;
        for (std::size_t i = 0; qkv_kernels_built(i) != nullptr; i++)
            if (qkv_kernels_built(i)->isa == isa)
                t = qkv_kernels_built(i);
        const qkv_gemm_kernels *g;
        for (std::size_t tile = 0; t != nullptr && (g = qkv_gemm_tile_of(t, tile)) != nullptr; tile++) {
            const std::string tile_impl =
                tile == 0 ? impl : impl + "-" + std::to_string(g->mr) + "x" + std::to_string(g->nr);
            for (std::size_t k : {64, 256}) {
                for (bool inplace : {false, true}) {
                    const std::string name =
                        "ukernel/" + tile_impl + (inplace ? "/inplace/k" : "/packed/k") + std::to_string(k);
                    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State &st) {
                        bench_ukernel(st, isa, tile, k, inplace);
                    });
                }
                benchmark::RegisterBenchmark(("ukernel/" + tile_impl + "/stream/k" + std::to_string(k)).c_str(),
                                             [=](benchmark::State &st) { bench_stream(st, isa, tile, k); });
            }
        }
        for (auto nk : {std::pair<std::size_t, std::size_t>{4096, 64}, {1024, 128}}) {
            const std::string size = std::to_string(nk.first) + "x" + std::to_string(nk.second);
            benchmark::RegisterBenchmark(("gemv_t/" + impl + "/" + size).c_str(), [=](benchmark::State &st) {
                bench_gemv(st, isa, nk.first, nk.second, true);
            });
            benchmark::RegisterBenchmark(("gemv_n/" + impl + "/" + std::to_string(nk.second) + "x" +
                                          std::to_string(nk.first))
                                             .c_str(),
                                         [=](benchmark::State &st) { bench_gemv(st, isa, nk.second, nk.first, false); });
        }
        benchmark::RegisterBenchmark(("attn_update/" + impl + "/96x96x64").c_str(),
                                     [=](benchmark::State &st) { bench_attn_update(st, isa, 96, 96, 64); });
    }
}

} // namespace

int main(int argc, char **argv)
{
    return qkv_bench::main(argc, argv, register_all);
}
