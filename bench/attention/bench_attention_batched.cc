/* bench_attention_batched: qkv_attention (the batched core) at 1 and 2 threads, on the best
 * host ISA, against the unfused composite on the SGEMM peers at the same thread count.
 *
 *   attn/qkv-<isa>/<B>x<H>x<KVH>/<n_q>x<n_kv>x<d>/<full|causal>[/w<W>]/t<T>
 *   attn/unfused-<peer>/...           per (item, head): S = scale Q K^T by the peer's sgemm,
 *                                      libqkv's softmax over each row's visible keys, O = P V
 *   ragged/qkv-<isa>/<H>x<KVH>/<n_q>x<d>/<len,len,...>/batched/t<T>   one call over items
 *                                      with those kv_len (capacity the longest)
 *   ragged/qkv-<isa>/.../singles/t<T>  the same items as one call each, one after the other
 *   read/qkv-pool/<MiB>/t<T>           a read loop over the K and V bytes of a decode row
 *   mha/qkv-<isa>/E<E>h<h>/<n>/t<T>   qkv_mha_forward, self-attention of n tokens, biases, on
 *                                      the pool (bench_attention has its 1-thread rows)
 * A trailing /f16 or /bf16: K and V in that type (widened in the kernel), no composite.
 * Layout (B, H, N, D), K and V (B, KVH, N, D). Shapes: `attn`, `ragged` and `mha` lines of
 * bench/attention/shapes.txt. Counters: FLOP/s of the visible scores only (2 (d_k + d_v)
 * per visible (query, key) pair), peak_frac against one core's FMA peak (2 threads can reach
 * 2.0), GB/s of K and V read on decode rows (n_q <= 4). */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "qkv.h"
#include "sgemm_peers.h"

namespace {

struct Attn {
    std::size_t B, H, KVH, n_q, n_kv, d, window;
    bool causal;
    qkv_dtype kv = QKV_F32;
};

struct Mha {
    std::size_t E, h, n;
};

struct Ragged {
    std::size_t H, KVH, n_q, d;
    std::vector<std::size_t> lens;
};

void read_shapes(std::vector<Attn> &attn, std::vector<Ragged> &ragged, std::vector<Mha> &mha)
{
    const char *env = std::getenv("QKV_BENCH_SHAPES");
    const std::string path = env && *env ? env : QKV_BENCH_SHAPES_FILE;
    std::ifstream in(path);
    if (!in) {
        std::fprintf(stderr, "bench_attention_batched: cannot read shapes file %s\n", path.c_str());
        std::exit(2);
    }
    std::string line;
    for (int no = 1; std::getline(in, line); no++) {
        line = line.substr(0, line.find('#'));
        std::istringstream f(line);
        std::string kind, mode;
        if (!(f >> kind) || (kind != "attn" && kind != "ragged" && kind != "mha"))
            continue; /* bench_attention's lines */
        bool ok = false;
        if (kind == "mha") {
            Mha m{};
            ok = (f >> m.E >> m.h >> m.n) && m.h && m.E % m.h == 0 && m.n;
            mha.push_back(m);
        } else if (kind == "attn") {
            Attn a{};
            std::string dtype = "f32";
            ok = (f >> a.B >> a.H >> a.KVH >> a.n_q >> a.n_kv >> a.d >> mode >> a.window) &&
                 (mode == "full" || mode == "causal") && a.B && a.H && a.KVH && a.H % a.KVH == 0 && a.n_q &&
                 a.n_kv && a.d;
            f >> dtype; /* optional: f32 (default), f16, bf16 */
            ok = ok && (dtype == "f32" || dtype == "f16" || dtype == "bf16");
            a.causal = mode == "causal";
            a.kv = dtype == "f16" ? QKV_F16 : dtype == "bf16" ? QKV_BF16 : QKV_F32;
            attn.push_back(a);
        } else {
            Ragged r{};
            std::size_t len;
            ok = (f >> r.H >> r.KVH >> r.n_q >> r.d) && r.H && r.KVH && r.H % r.KVH == 0 && r.n_q && r.d;
            while (f >> len)
                r.lens.push_back(len);
            ok = ok && !r.lens.empty();
            ragged.push_back(r);
        }
        if (!ok) {
            std::fprintf(stderr, "bench_attention_batched: %s:%d: bad line: %s\n", path.c_str(), no, line.c_str());
            std::exit(2);
        }
    }
}

/* the keys query i sees (include/qkv.h), for L keys */
void visible(const Attn &a, std::size_t L, std::size_t i, std::size_t &lo, std::size_t &hi)
{
    const long long p = (long long)i + (long long)L - (long long)a.n_q;
    long long l = 0, h = (long long)L;
    if (a.causal)
        h = std::min(h, p + 1);
    if (a.window) {
        if (!a.causal)
            h = std::min(h, p + (long long)a.window);
        l = std::max(l, p - (long long)a.window + 1);
    }
    lo = (std::size_t)std::max(0LL, l);
    hi = (std::size_t)std::max((long long)lo, h);
}

double useful_flops(const Attn &a, std::size_t L)
{
    double pairs = 0.0;
    for (std::size_t i = 0; i < a.n_q; i++) {
        std::size_t lo, hi;
        visible(a, L, i, lo, hi);
        pairs += (double)(hi - lo);
    }
    return 2.0 * 2.0 * (double)a.d * pairs * (double)(a.B * a.H);
}

qkv_attention_desc make_desc(const Attn &a)
{
    qkv_attention_desc d{};
    d.batch = a.B;
    d.n_heads = a.H;
    d.n_kv_heads = a.KVH;
    d.n_q = a.n_q;
    d.n_kv = a.n_kv;
    d.d_k = d.d_v = a.d;
    const std::size_t qs[3] = {a.H * a.n_q * a.d, a.n_q * a.d, a.d}, ks[3] = {a.KVH * a.n_kv * a.d, a.n_kv * a.d, a.d};
    for (int i = 0; i < 3; i++) {
        d.q_stride[i] = d.o_stride[i] = qs[i];
        d.k_stride[i] = d.v_stride[i] = ks[i];
    }
    d.flags = a.causal ? QKV_CAUSAL : 0;
    d.window = a.window;
    d.kv_dtype = a.kv;
    return d;
}

/* Q, O float; K, V float, then converted in place to the 16-bit type when a.kv says so
   (the 16-bit values fill the first half of the buffer) */
struct Tensors {
    qkv_bench::Buffer q, k, v, o;
    Tensors(const Attn &a)
        : q(qkv_bench::alloc_floats(a.B * a.H * a.n_q * a.d)), k(qkv_bench::alloc_floats(a.B * a.KVH * a.n_kv * a.d)),
          v(qkv_bench::alloc_floats(a.B * a.KVH * a.n_kv * a.d)), o(qkv_bench::alloc_floats(a.B * a.H * a.n_q * a.d))
    {
        const std::size_t nkv = a.B * a.KVH * a.n_kv * a.d;
        qkv_bench::fill_uniform(q.get(), a.B * a.H * a.n_q * a.d, -1, 1, 1);
        qkv_bench::fill_uniform(k.get(), nkv, -1, 1, 2);
        qkv_bench::fill_uniform(v.get(), nkv, -1, 1, 3);
        if (a.kv != QKV_F32) {
            std::vector<std::uint16_t> tmp(nkv);
            for (float *p : {k.get(), v.get()}) {
                qkv_convert(p, QKV_F32, tmp.data(), a.kv, nkv);
                std::memcpy(p, tmp.data(), nkv * sizeof(std::uint16_t));
            }
        }
    }
};

std::size_t kv_bytes(const Attn &a)
{
    return 2 * a.B * a.KVH * a.n_kv * a.d * (a.kv == QKV_F32 ? 4 : 2);
}

void set_counters(benchmark::State &st, const Attn &a, double flops, double kv_bytes, qkv_isa isa)
{
    qkv_bench::set_flop_counters(st, flops, isa);
    if (a.n_q <= 4)
        st.counters["GB/s"] =
            benchmark::Counter(kv_bytes * (double)st.iterations(), benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void bm_qkv(benchmark::State &st, const Attn &a, qkv_isa isa, int threads)
{
    if (!qkv_bench::select_isa(st, isa))
        return;
    const qkv_threadpool *tp = qkv_bench::pool_of(threads);
    const qkv_attention_desc d = make_desc(a);
    const std::size_t ws_size = qkv_attention_workspace_size(&d, (std::size_t)threads);
    qkv_bench::Buffer ws = qkv_bench::alloc_floats(ws_size / sizeof(float) + 1);
    Tensors t(a);
    for (auto _ : st) {
        if (qkv_attention(&d, t.q.get(), t.k.get(), t.v.get(), t.o.get(), nullptr, tp, ws.get(), ws_size) != QKV_OK) {
            st.SkipWithError("qkv_attention failed");
            return;
        }
        benchmark::DoNotOptimize(t.o.get());
        benchmark::ClobberMemory();
    }
    set_counters(st, a, useful_flops(a, a.n_kv), (double)kv_bytes(a), isa);
}

/* per (item, head): S = scale Q K^T, softmax of each row over its visible keys (zeros
   elsewhere), O = P V; the peer at `threads` threads */
void bm_unfused(benchmark::State &st, const Attn &a, qkv_bench::SgemmFn sgemm, qkv_isa isa, int threads)
{
    Tensors t(a);
    qkv_bench::Buffer s = qkv_bench::alloc_floats(a.n_q * a.n_kv);
    const float scale = 1.0f / std::sqrt((float)a.d);
    const std::size_t G = a.H / a.KVH;
    qkv_bench::sgemm_peers_set_threads(threads);
    for (auto _ : st) {
        for (std::size_t b = 0; b < a.B; b++) {
            for (std::size_t h = 0; h < a.H; h++) {
                const float *q = t.q.get() + (b * a.H + h) * a.n_q * a.d;
                const float *k = t.k.get() + (b * a.KVH + h / G) * a.n_kv * a.d;
                const float *v = t.v.get() + (b * a.KVH + h / G) * a.n_kv * a.d;
                sgemm(true, a.n_q, a.n_kv, a.d, scale, q, k, s.get());
                for (std::size_t i = 0; i < a.n_q; i++) {
                    float *row = s.get() + i * a.n_kv;
                    std::size_t lo, hi;
                    visible(a, a.n_kv, i, lo, hi);
                    std::fill(row, row + lo, 0.0f);
                    qkv_softmax(row + lo, row + lo, hi - lo, 1.0f);
                    std::fill(row + hi, row + a.n_kv, 0.0f);
                }
                sgemm(false, a.n_q, a.d, a.n_kv, 1.0f, s.get(), v, t.o.get() + (b * a.H + h) * a.n_q * a.d);
            }
        }
        benchmark::DoNotOptimize(t.o.get());
        benchmark::ClobberMemory();
    }
    qkv_bench::sgemm_peers_set_threads(1);
    set_counters(st, a, useful_flops(a, a.n_kv), 2.0 * (double)(a.B * a.KVH * a.n_kv * a.d * sizeof(float)), isa);
}

/* ragged: one call over len.size() items of kv_len = lens (batched), or one call per item */
void bm_ragged(benchmark::State &st, const Ragged &r, qkv_isa isa, int threads, bool batched)
{
    if (!qkv_bench::select_isa(st, isa))
        return;
    const std::size_t cap = *std::max_element(r.lens.begin(), r.lens.end()), B = r.lens.size();
    const Attn a{B, r.H, r.KVH, r.n_q, cap, r.d, 0, true};
    const qkv_threadpool *tp = qkv_bench::pool_of(threads);
    Tensors t(a);
    qkv_attention_desc d = make_desc(a);
    d.kv_len = r.lens.data();
    const std::size_t ws_size = qkv_attention_workspace_size(&d, (std::size_t)threads);
    qkv_bench::Buffer ws = qkv_bench::alloc_floats(ws_size / sizeof(float) + 1);
    double flops = 0.0, bytes = 0.0;
    for (std::size_t L : r.lens) {
        flops += useful_flops({1, r.H, r.KVH, r.n_q, cap, r.d, 0, true}, L);
        bytes += 2.0 * (double)(r.KVH * L * r.d * sizeof(float));
    }
    for (auto _ : st) {
        if (batched) {
            qkv_attention(&d, t.q.get(), t.k.get(), t.v.get(), t.o.get(), nullptr, tp, ws.get(), ws_size);
        } else {
            for (std::size_t b = 0; b < B; b++) {
                qkv_attention_desc one = d;
                one.batch = 1;
                one.kv_len = nullptr;
                one.n_kv = r.lens[b];
                qkv_attention(&one, t.q.get() + b * d.q_stride[0], t.k.get() + b * d.k_stride[0],
                              t.v.get() + b * d.v_stride[0], t.o.get() + b * d.o_stride[0], nullptr, tp, ws.get(),
                              ws_size);
            }
        }
        benchmark::DoNotOptimize(t.o.get());
        benchmark::ClobberMemory();
    }
    set_counters(st, a, flops, bytes, isa);
}

std::string attn_name(const Attn &a)
{
    return std::to_string(a.B) + "x" + std::to_string(a.H) + "x" + std::to_string(a.KVH) + "/" + std::to_string(a.n_q) +
           "x" + std::to_string(a.n_kv) + "x" + std::to_string(a.d) + (a.causal ? "/causal" : "/full") +
           (a.window ? "/w" + std::to_string(a.window) : "") +
           (a.kv == QKV_F16 ? "/f16" : a.kv == QKV_BF16 ? "/bf16" : "");
}

void register_all()
{
    std::vector<Attn> attn;
    std::vector<Ragged> ragged;
    std::vector<Mha> mha;
    read_shapes(attn, ragged, mha);
    const qkv_isa best = qkv_isa_detected();
    const std::string impl = std::string("qkv-") + qkv_isa_name(best);
    const std::vector<qkv_bench::SgemmPeer> peers = qkv_bench::sgemm_peers("bench_attention_batched");
    std::vector<std::size_t> read_mib;
    for (const Attn &a : attn) {
        for (int t : qkv_bench::thread_counts()) {
            const std::string suffix = "/" + attn_name(a) + "/t" + std::to_string(t);
            benchmark::RegisterBenchmark(("attn/" + impl + suffix).c_str(),
                                         [a, best, t](benchmark::State &st) { bm_qkv(st, a, best, t); })
                ->Unit(benchmark::kMicrosecond)
                ->UseRealTime();
            for (const qkv_bench::SgemmPeer &p : a.kv == QKV_F32 ? peers : std::vector<qkv_bench::SgemmPeer>{}) {
                const qkv_bench::SgemmFn fn = p.fn;
                benchmark::RegisterBenchmark(("attn/unfused-" + std::string(p.name) + suffix).c_str(),
                                             [a, fn, best, t](benchmark::State &st) { bm_unfused(st, a, fn, best, t); })
                    ->Unit(benchmark::kMicrosecond)
                    ->UseRealTime();
            }
        }
        if (a.n_q <= 4) {
            const std::size_t mib = kv_bytes(a) >> 20;
            if (mib && std::find(read_mib.begin(), read_mib.end(), mib) == read_mib.end())
                read_mib.push_back(mib);
        }
    }
    for (std::size_t mib : read_mib)
        for (int t : qkv_bench::thread_counts())
            benchmark::RegisterBenchmark(
                ("read/qkv-pool/" + std::to_string(mib) + "MiB/t" + std::to_string(t)).c_str(),
                [mib, t](benchmark::State &st) { qkv_bench::bm_read(st, mib << 20, t); })
                ->Unit(benchmark::kMicrosecond)
                ->UseRealTime();
    for (const Mha &m : mha)
        for (int t : qkv_bench::thread_counts())
            benchmark::RegisterBenchmark(("mha/" + impl + "/E" + std::to_string(m.E) + "h" + std::to_string(m.h) + "/" +
                                          std::to_string(m.n) + "/t" + std::to_string(t))
                                             .c_str(),
                                         [m, best, t](benchmark::State &st) { qkv_bench::bm_mha(st, m.E, m.h, m.n, best, t); })
                ->Unit(benchmark::kMicrosecond)
                ->UseRealTime();
    for (const Ragged &r : ragged) {
        std::string lens;
        for (std::size_t L : r.lens)
            lens += (lens.empty() ? "" : ",") + std::to_string(L);
        for (int t : qkv_bench::thread_counts())
            for (bool batched : {true, false}) {
                const std::string name = "ragged/" + impl + "/" + std::to_string(r.H) + "x" + std::to_string(r.KVH) +
                                         "/" + std::to_string(r.n_q) + "x" + std::to_string(r.d) + "/" + lens +
                                         (batched ? "/batched" : "/singles") + "/t" + std::to_string(t);
                benchmark::RegisterBenchmark(name.c_str(), [r, best, t, batched](benchmark::State &st) {
                    bm_ragged(st, r, best, t, batched);
                })->Unit(benchmark::kMicrosecond)->UseRealTime();
            }
    }
}

} // namespace

int main(int argc, char **argv)
{
    return qkv_bench::main(argc, argv, register_all);
}
