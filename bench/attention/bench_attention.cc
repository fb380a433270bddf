/* bench_attention: qkv_sdpa on every host ISA against the unfused composite a user would
 * write from library parts, and qkv_mha_forward, all single-threaded.
 *
 * Names: sdpa/<impl>/<N>x<d>/<full|causal> with impl qkv-<isa> or unfused-<sgemm peer>, one
 * composite per SGEMM library found (sgemm_peers.h: unfused-openblas, unfused-blis,
 * unfused-onednn): S = Q K^T by that sgemm into an N x N buffer, a row softmax with SLEEF's
 * widest expf the CPU runs (AVX-512F, else AVX2; sleef_peers.h) or libqkv's qkv_softmax, the causal rows only over their visible prefix,
 * O = P V by the same sgemm. The summary compares with the fastest of them;
 * mha/qkv-<isa>/<n>/E<E>h<h> (self-attention, batch 1, biases, torch_layout 0);
 * decode/qkv-<isa>/<n_kv>x<d>/q<n_q> (the n_q <= 4 path, counter GB/s of K and V streamed).
 * The shapes come from bench/attention/shapes.txt (or the file QKV_BENCH_SHAPES names).
 * FLOPs: sdpa 4 N^2 d (causal: half of it), mha 8 n E^2 (four projections) + 4 n^2 E.
 * Counters FLOP/s and peak_frac (composite: against the best host ISA). Use medians:
 * --benchmark_repetitions=5 --benchmark_report_aggregates_only=true, and
 * OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 (the program also pins each peer to one thread). */
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "qkv.h"
#include "sgemm_peers.h"

#ifdef QKV_BENCH_HAVE_SLEEF
#include "sleef_peers.h"
#endif

namespace {

struct Shape {
    std::size_t n, d;
    bool causal;
};

struct Shapes {
    std::vector<Shape> sdpa;
    std::vector<std::array<std::size_t, 3>> decode; /* n_q, n_kv, d */
    std::vector<std::array<std::size_t, 3>> mha;    /* E, h, n */
};

/* the shapes file: "sdpa N d full|causal", "decode n_q n_kv d", "mha E h n", # comments */
Shapes read_shapes()
{
    const char *env = std::getenv("QKV_BENCH_SHAPES");
    const std::string path = env && *env ? env : QKV_BENCH_SHAPES_FILE;
    std::ifstream in(path);
    if (!in) {
        std::fprintf(stderr, "bench_attention: cannot read shapes file %s\n", path.c_str());
        std::exit(2);
    }
    Shapes out;
    std::string line;
    for (int no = 1; std::getline(in, line); no++) {
        line = line.substr(0, line.find('#'));
        std::istringstream f(line);
        std::string kind, mode;
        std::size_t a = 0, b = 0, c = 0;
        if (!(f >> kind))
            continue;
        bool ok = false;
        if (kind == "sdpa" && (f >> a >> b >> mode) && (mode == "full" || mode == "causal")) {
            out.sdpa.push_back({a, b, mode == "causal"});
            ok = a && b;
        } else if (kind == "attn" || kind == "ragged") {
            continue; /* bench_attention_batched's lines */
        } else if ((kind == "decode" || kind == "mha") && (f >> a >> b >> c)) {
            (kind == "decode" ? out.decode : out.mha).push_back({a, b, c});
            ok = a && b && c && (kind == "decode" ? a <= 4 : a % b == 0);
        }
        if (!ok) {
            std::fprintf(stderr, "bench_attention: %s:%d: bad line: %s\n", path.c_str(), no, line.c_str());
            std::exit(2);
        }
    }
    return out;
}

double sdpa_flops(const Shape &s)
{
    const double f = 4.0 * (double)s.n * (double)s.n * (double)s.d;
    return s.causal ? f / 2.0 : f;
}

/* one row of the composite in place: the widest SLEEF three-pass softmax this CPU runs
   (sleef_peers.h), else libqkv's qkv_softmax */
void softmax_row(float *x, std::size_t n)
{
#ifdef QKV_BENCH_HAVE_SLEEF
    static const qkv_bench::SleefSoftmaxFn sleef = qkv_bench::sleef_softmax_best();
    if (sleef != nullptr) {
        sleef(x, x, n, 1.0f);
        return;
    }
#endif
    qkv_softmax(x, x, n, 1.0f);
}

/* the composite: S = scale Q K^T (full), row softmax (causal: over the visible prefix,
   the rest zeroed), O = P V (full) */
void unfused(qkv_bench::SgemmFn sgemm, const Shape &s, const float *q, const float *k, const float *v, float *o,
             float *scores)
{
    const std::size_t n = s.n;
    sgemm(true, n, n, s.d, 1.0f / std::sqrt((float)s.d), q, k, scores);
    for (std::size_t i = 0; i < n; i++) {
        float *row = scores + i * n;
        const std::size_t vis = s.causal ? i + 1 : n;
        softmax_row(row, vis);
        std::fill(row + vis, row + n, 0.0f);
    }
    sgemm(false, n, s.d, n, 1.0f, scores, v, o);
}

/* libqkv's qkv_sdpa on isa when peer is null, else the unfused composite on peer's sgemm
   (isa then only names the peak that peak_frac refers to) */
void bm_sdpa(benchmark::State &st, const Shape &s, qkv_bench::SgemmFn peer, qkv_isa isa)
{
    const bool is_qkv = peer == nullptr;
    if (is_qkv && !qkv_bench::select_isa(st, isa))
        return;
    const std::size_t n = s.n, d = s.d;
    qkv_bench::Buffer q = qkv_bench::alloc_floats(n * d), k = qkv_bench::alloc_floats(n * d),
                      v = qkv_bench::alloc_floats(n * d), o = qkv_bench::alloc_floats(n * d);
    qkv_bench::fill_uniform(q.get(), n * d, -1.0f, 1.0f, 1);
    qkv_bench::fill_uniform(k.get(), n * d, -1.0f, 1.0f, 2);
    qkv_bench::fill_uniform(v.get(), n * d, -1.0f, 1.0f, 3);
    qkv_bench::Buffer scores = qkv_bench::alloc_floats(is_qkv ? 1 : n * n);
    for (auto _ : st) {
        if (is_qkv) {
            if (qkv_sdpa(q.get(), k.get(), v.get(), o.get(), n, n, d, d, 0.0f, s.causal ? QKV_CAUSAL : 0) != QKV_OK) {
                st.SkipWithError("qkv_sdpa failed");
                return;
            }
        } else {
            unfused(peer, s, q.get(), k.get(), v.get(), o.get(), scores.get());
        }
        benchmark::DoNotOptimize(o.get());
        benchmark::ClobberMemory();
    }
    qkv_bench::set_flop_counters(st, sdpa_flops(s), isa);
}

void bm_decode(benchmark::State &st, std::size_t n_q, std::size_t n_kv, std::size_t d, qkv_isa isa)
{
    if (!qkv_bench::select_isa(st, isa))
        return;
    qkv_bench::Buffer q = qkv_bench::alloc_floats(n_q * d), k = qkv_bench::alloc_floats(n_kv * d),
                      v = qkv_bench::alloc_floats(n_kv * d), o = qkv_bench::alloc_floats(n_q * d);
    qkv_bench::fill_uniform(q.get(), n_q * d, -1.0f, 1.0f, 7);
    qkv_bench::fill_uniform(k.get(), n_kv * d, -1.0f, 1.0f, 8);
    qkv_bench::fill_uniform(v.get(), n_kv * d, -1.0f, 1.0f, 9);
    for (auto _ : st) {
        if (qkv_sdpa(q.get(), k.get(), v.get(), o.get(), n_q, n_kv, d, d, 0.0f, QKV_CAUSAL) != QKV_OK) {
            st.SkipWithError("qkv_sdpa failed");
            return;
        }
        benchmark::DoNotOptimize(o.get());
        benchmark::ClobberMemory();
    }
    st.counters["GB/s"] = benchmark::Counter(2.0 * n_kv * d * sizeof(float), benchmark::Counter::kIsIterationInvariantRate,
                                             benchmark::Counter::kIs1000);
    qkv_bench::set_flop_counters(st, 4.0 * n_q * n_kv * d, isa);
}

void register_all()
{
    const std::vector<qkv_bench::SgemmPeer> peers = qkv_bench::sgemm_peers("bench_attention");
    const qkv_isa best = qkv_isa_detected();
    const Shapes shapes = read_shapes();
    for (const Shape &s : shapes.sdpa) {
        const std::string size = std::to_string(s.n) + "x" + std::to_string(s.d) + (s.causal ? "/causal" : "/full");
        for (qkv_isa isa : qkv_bench::host_isas()) {
            if (isa == QKV_ISA_SCALAR && sdpa_flops(s) > qkv_bench::kScalarMaxFlops)
                continue;
            benchmark::RegisterBenchmark(("sdpa/qkv-" + std::string(qkv_isa_name(isa)) + "/" + size).c_str(),
                                         [s, isa](benchmark::State &st) { bm_sdpa(st, s, nullptr, isa); })
                ->Unit(benchmark::kMillisecond);
        }
        for (const qkv_bench::SgemmPeer &p : peers) {
            const qkv_bench::SgemmFn fn = p.fn;
            benchmark::RegisterBenchmark(("sdpa/unfused-" + std::string(p.name) + "/" + size).c_str(),
                                         [s, fn, best](benchmark::State &st) { bm_sdpa(st, s, fn, best); })
                ->Unit(benchmark::kMillisecond);
        }
    }
    /* a long cache (16384 x 64 K and V: 8 MiB) is beyond L2: streamed from L3 / memory */
    for (const auto &dc : shapes.decode) {
        const std::size_t n_q = dc[0], n_kv = dc[1], d = dc[2];
        for (qkv_isa isa : qkv_bench::host_isas())
            benchmark::RegisterBenchmark(("decode/qkv-" + std::string(qkv_isa_name(isa)) + "/" + std::to_string(n_kv) +
                                          "x" + std::to_string(d) + "/q" + std::to_string(n_q)).c_str(),
                                         [n_q, n_kv, d, isa](benchmark::State &st) { bm_decode(st, n_q, n_kv, d, isa); })
                ->Unit(benchmark::kMicrosecond);
    }
    for (const auto &mc : shapes.mha) {
        const std::size_t E = mc[0], h = mc[1], n = mc[2];
        for (qkv_isa isa : qkv_bench::host_isas()) {
            if (isa == QKV_ISA_SCALAR && n > 128)
                continue;
            benchmark::RegisterBenchmark(("mha/qkv-" + std::string(qkv_isa_name(isa)) + "/" + std::to_string(n) + "/E" +
                                          std::to_string(E) + "h" + std::to_string(h)).c_str(),
                                         [E, h, n, isa](benchmark::State &st) { qkv_bench::bm_mha(st, E, h, n, isa, 1); })
                ->Unit(benchmark::kMillisecond);
        }
    }
}

} // namespace

int main(int argc, char **argv)
{
    return qkv_bench::main(argc, argv, register_all);
}
