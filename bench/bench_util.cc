/* Shared benchmark helpers (see bench_util.h). The ISAs are those of src/isa_list.h (its
 * QKV_ISA_LIST, QKV_ISA_COUNT); nothing here is sized by a count of its own.
 * Compiled with baseline flags: the AVX2 and
 * AVX-512 peak loops carry target attributes and run only after qkv_isa_select() has
 * accepted their ISA, so no wide instruction executes on a CPU without it. */
#include <unistd.h>

#include "bench_util.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <new>
#include <mutex>
#include <random>
#include <string>
#include <time.h>

#include "isa_list.h" /* src/: the one list of ISAs, QKV_ISA_COUNT */

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define QKV_BENCH_X86 1
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace qkv_bench {
namespace {

/* 2 FMA ports x 4 cycles latency need 8 chains in flight; 12 leaves slack for 5-cycle
   FMAs and still fits the 16 (AVX2) or 32 (AVX-512, NEON) vector registers. Named
   variables, not an array: the optimizer barrier below would pin an array to memory. */
constexpr int kChains = 12; /* the indices QKV_BENCH_EACH_CHAIN lists */
#define QKV_BENCH_EACH_CHAIN(X, ...)                                                  \
    X(0, __VA_ARGS__) X(1, __VA_ARGS__) X(2, __VA_ARGS__) X(3, __VA_ARGS__)           \
    X(4, __VA_ARGS__) X(5, __VA_ARGS__) X(6, __VA_ARGS__) X(7, __VA_ARGS__)           \
    X(8, __VA_ARGS__) X(9, __VA_ARGS__) X(10, __VA_ARGS__) X(11, __VA_ARGS__)
/* 4Mi rounds x 12 FMAs: about 10 ms per run for AVX2 at 3 GHz, long against timer noise */
constexpr long kRounds = 1L << 22;
constexpr int kRuns = 7;

volatile float g_sink; /* keeps the chains' results alive */

/* CPU time of this thread, like the benchmarks' CPU time: a preempted run (other work
   on the machine) does not lower the peak. */
double thread_seconds()
{
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Hides a register's value from the optimizer at no cost, so that it can neither fold the
   chains nor pack the scalar ones into SSE vectors. */
#ifdef QKV_BENCH_X86
#define QKV_BENCH_OPAQUE(v) __asm__("" : "+v"(v))
#elif defined(__aarch64__)
#define QKV_BENCH_OPAQUE(v) __asm__("" : "+w"(v))
#else
#define QKV_BENCH_OPAQUE(v) ((void)0)
#endif

#define QKV_BENCH_CHAIN_INIT(j, V, SET1) V acc##j = SET1(1.0f + (float)(j));
#define QKV_BENCH_CHAIN_STEP(j, FMA)                                                  \
    acc##j = FMA(a, b, acc##j);                                                       \
    QKV_BENCH_OPAQUE(acc##j);
#define QKV_BENCH_CHAIN_SUM(j, ADD) sum = ADD(sum, acc##j);

/* acc = a * b + acc on kChains independent registers for kRounds rounds; evaluates to
   FLOP/s. The accumulator is the addend, as in FMLA and VFMADD231, so no register copies;
   a * b = 2^-20 keeps every value normal and below 20. One body for every vector type:
   only the type V, its lane count and the intrinsics differ. */
#define QKV_BENCH_FMA_CHAINS(V, LANES, SET1, FMA, ADD, STOREU)                        \
    QKV_BENCH_EACH_CHAIN(QKV_BENCH_CHAIN_INIT, V, SET1)                               \
    const V a = SET1(0x1p-10f), b = SET1(0x1p-10f);                                   \
    const double t0 = thread_seconds();                                               \
    for (long r = 0; r < kRounds; r++) {                                              \
        QKV_BENCH_EACH_CHAIN(QKV_BENCH_CHAIN_STEP, FMA)                               \
    }                                                                                 \
    const double s = thread_seconds() - t0;                                           \
    V sum = SET1(0.0f);                                                               \
    QKV_BENCH_EACH_CHAIN(QKV_BENCH_CHAIN_SUM, ADD)                                    \
    float lanes[LANES];                                                               \
    STOREU(lanes, sum);                                                               \
    g_sink = lanes[0];                                                                \
    return 2.0 * (LANES) * kChains * kRounds / s

float scalar_set1(float a) { return a; }
float scalar_fma(float a, float b, float c) { return a * b + c; }
float scalar_add(float a, float b) { return a + b; }
void scalar_store(float *p, float a) { *p = a; }

double chains_scalar()
{
    QKV_BENCH_FMA_CHAINS(float, 1, scalar_set1, scalar_fma, scalar_add, scalar_store);
}

#ifdef QKV_BENCH_X86
__attribute__((target("avx2,fma"))) double chains_avx2()
{
    QKV_BENCH_FMA_CHAINS(__m256, 8, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_storeu_ps);
}

__attribute__((target("avx512f"))) double chains_avx512()
{
    QKV_BENCH_FMA_CHAINS(__m512, 16, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_storeu_ps);
}
#endif

#ifdef __aarch64__
float32x4_t neon_fma(float32x4_t a, float32x4_t b, float32x4_t c) { return vfmaq_f32(c, a, b); }

double chains_neon()
{
    QKV_BENCH_FMA_CHAINS(float32x4_t, 4, vdupq_n_f32, neon_fma, vaddq_f32, vst1q_f32);
}
#endif

/* The peak loop of an ISA by its name; an ISA of the list without one (not written yet, or
   not for this architecture) has no peak: its rows get no peak_frac. */
struct Chains {
    const char *isa;
    double (*fn)();
};
constexpr Chains kChainsByIsa[] = {
    {"scalar", chains_scalar},
#ifdef QKV_BENCH_X86
    {"avx2", chains_avx2},
    {"avx512", chains_avx512},
#endif
#ifdef __aarch64__
    {"neon", chains_neon},
#endif
};

double (*chains_for(qkv_isa isa))()
{
    for (const Chains &c : kChainsByIsa)
        if (std::strcmp(c.isa, qkv_isa_name(isa)) == 0)
            return c.fn;
    return nullptr;
}

/* The first run warms up caches and clocks (and the AVX frequency licence); median of the rest. */
double measure_peak(qkv_isa isa)
{
    double (*chains)() = chains_for(isa);
    if (chains == nullptr || !isa_available(isa))
        return 0.0;
    chains();
    std::array<double, kRuns> runs;
    for (double &r : runs)
        r = chains();
    std::nth_element(runs.begin(), runs.begin() + kRuns / 2, runs.end());
    return runs[kRuns / 2];
}

/* every ISA of src/isa_list.h, in its order (increasing preference, scalar first) */
#define QKV_BENCH_LISTED(ID, ...) QKV_ISA_##ID,
constexpr qkv_isa kListedIsas[] = {QKV_ISA_LIST(QKV_BENCH_LISTED)};
#undef QKV_BENCH_LISTED

} // namespace

std::vector<qkv_isa> host_isas()
{
    std::vector<qkv_isa> isas;
    for (qkv_isa isa : kListedIsas)
        if (isa_available(isa))
            isas.push_back(isa);
    return isas;
}

bool isa_available(qkv_isa isa)
{
    const qkv_isa prev = qkv_isa_active();
    const bool ok = qkv_isa_select(isa) == QKV_OK;
    qkv_isa_select(prev);
    return ok;
}

bool select_isa(benchmark::State &st, qkv_isa isa)
{
    if (qkv_isa_select(isa) == QKV_OK)
        return true;
    st.SkipWithError((std::string("ISA not available: ") + qkv_isa_name(isa)).c_str());
    return false;
}

double fma_peak(qkv_isa isa)
{
    /* a function-local static: measured once, thread-safely, for all ISAs together */
    static const std::array<double, QKV_ISA_COUNT> peaks = [] {
        std::array<double, QKV_ISA_COUNT> p{};
        for (qkv_isa isa : kListedIsas)
            if ((unsigned)isa < p.size())
                p[isa] = measure_peak(isa);
        return p;
    }();
    return (unsigned)isa < peaks.size() ? peaks[isa] : 0.0;
}

void set_flop_counters(benchmark::State &st, double flops_per_iter, qkv_isa isa)
{
    st.counters["FLOP/s"] =
        benchmark::Counter(flops_per_iter * (double)st.iterations(), benchmark::Counter::kIsRate);
    set_peak_frac(st, flops_per_iter, isa);
}

void set_peak_frac(benchmark::State &st, double flops_per_iter, qkv_isa isa)
{
    const double peak = fma_peak(isa);
    if (peak > 0.0)
        st.counters["peak_frac"] =
            benchmark::Counter(flops_per_iter * (double)st.iterations() / peak, benchmark::Counter::kIsRate);
}

Buffer alloc_floats(std::size_t n)
{
    /* aligned_alloc wants a size that is a multiple of the alignment */
    const std::size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    float *p = static_cast<float *>(std::aligned_alloc(64, bytes > 0 ? bytes : 64));
    if (p == nullptr)
        throw std::bad_alloc();
    std::memset(p, 0, bytes); /* maps every page now, not in the first timed iteration */
    return Buffer(p);
}

void fill_uniform(float *p, std::size_t n, float lo, float hi, unsigned seed)
{
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    for (std::size_t i = 0; i < n; i++)
        p[i] = dist(gen);
}

std::vector<int> thread_counts()
{
    std::vector<int> t = {1, 2};
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus > 2)
        t.push_back((int)cpus);
    return t;
}

void bm_mha(benchmark::State &st, std::size_t E, std::size_t h, std::size_t n, qkv_isa isa, int threads)
{
    if (!select_isa(st, isa))
        return;
    Buffer w = alloc_floats(4 * E * E), b = alloc_floats(4 * E), x = alloc_floats(n * E), out = alloc_floats(n * E);
    fill_uniform(w.get(), 4 * E * E, -0.05f, 0.05f, 4);
    fill_uniform(b.get(), 4 * E, -0.1f, 0.1f, 5);
    fill_uniform(x.get(), n * E, -1.0f, 1.0f, 6);
    const float *W = w.get(), *B = b.get();
    const qkv_mha m = {E, h, W, W + E * E, W + 2 * E * E, W + 3 * E * E, B, B + E, B + 2 * E, B + 3 * E, 0, 0};
    const qkv_threadpool *tp = pool_of(threads);
    const std::size_t ws_size = qkv_mha_workspace_size_mt(&m, 1, n, n, (std::size_t)threads);
    Buffer ws = alloc_floats(ws_size / sizeof(float) + 1);
    for (auto _ : st) {
        if (qkv_mha_forward(&m, 1, x.get(), n, nullptr, n, 0, out.get(), ws.get(), ws_size, tp) != QKV_OK) {
            st.SkipWithError("qkv_mha_forward failed");
            return;
        }
        benchmark::DoNotOptimize(out.get());
        benchmark::ClobberMemory();
    }
    set_flop_counters(st, 8.0 * n * E * E + 4.0 * n * n * E, isa);
}

const qkv_threadpool *pool_of(int n)
{
    static std::mutex lock;
    static std::vector<qkv_threadpool *> pools;
    if (n <= 1)
        return nullptr;
    std::lock_guard<std::mutex> hold(lock);
    if (pools.size() <= (std::size_t)n)
        pools.resize((std::size_t)n + 1, nullptr);
    if (pools[n] == nullptr)
        pools[n] = qkv_threadpool_create((std::size_t)n);
    return pools[n];
}

namespace {

void empty_task(void *, std::size_t) {}

struct ReadJob {
    const float *p;
    std::size_t n, parts;
    std::vector<float> sums;
};

void read_task(void *arg, std::size_t t)
{
    ReadJob *j = static_cast<ReadJob *>(arg);
    const std::size_t lo = j->n * t / j->parts, hi = j->n * (t + 1) / j->parts;
    /* 32 independent lane sums: the compiler makes vectors of them without reassociating
       anything, so the loop runs at load speed */
    float s[32] = {0};
    std::size_t i = lo;
    for (; i + 32 <= hi; i += 32)
        for (int l = 0; l < 32; l++)
            s[l] += j->p[i + l];
    for (; i < hi; i++)
        s[0] += j->p[i];
    float sum = 0;
    for (float x : s)
        sum += x;
    j->sums[t] = sum;
}

} // namespace

void bm_empty_run(benchmark::State &st, int threads)
{
    const qkv_threadpool *tp = pool_of(threads);
    if (tp == nullptr) {
        st.SkipWithError("no pool");
        return;
    }
    for (auto _ : st)
        tp->run(tp->pool, empty_task, nullptr, (std::size_t)threads);
}

void bm_read(benchmark::State &st, std::size_t bytes, int threads)
{
    const std::size_t n = bytes / sizeof(float);
    Buffer buf = alloc_floats(n);
    fill_uniform(buf.get(), n, -1, 1, 3);
    ReadJob job{buf.get(), n, (std::size_t)threads, std::vector<float>((std::size_t)threads)};
    const qkv_threadpool *tp = pool_of(threads);
    for (auto _ : st) {
        if (tp)
            tp->run(tp->pool, read_task, &job, (std::size_t)threads);
        else
            read_task(&job, 0);
        benchmark::DoNotOptimize(job.sums.data());
    }
    st.counters["GB/s"] = benchmark::Counter((double)bytes * (double)st.iterations(), benchmark::Counter::kIsRate,
                                             benchmark::Counter::kIs1000);
}

int main(int argc, char **argv, void (*register_all)())
{
    /* A default min time passed as a flag, not MinTime(): MinTime() would override an
       explicit --benchmark_min_time and append "/min_time:..." to every name. */
    static char default_min_time[] = "--benchmark_min_time=0.2";
    static const char flag[] = "--benchmark_min_time=";
    std::vector<char *> args(argv, argv + argc);
    if (std::none_of(args.begin(), args.end(),
                     [](const char *a) { return std::strncmp(a, flag, sizeof flag - 1) == 0; }))
        args.insert(args.begin() + 1, default_min_time);
    int nargs = static_cast<int>(args.size());
    args.push_back(nullptr);
    benchmark::Initialize(&nargs, args.data());
    if (benchmark::ReportUnrecognizedArguments(nargs, args.data()))
        return 1;
    benchmark::AddCustomContext("libqkv_version", qkv_version());
    benchmark::AddCustomContext("libqkv_isa_detected", qkv_isa_name(qkv_isa_detected()));
    /* every ISA libqkv knows (src/isa_list.h), built or not: the scripts tell libqkv's
       rows from peers' by these names */
    std::string isa_names;
    for (qkv_isa isa : kListedIsas)
        isa_names += (isa_names.empty() ? "" : ",") + std::string(qkv_isa_name(isa));
    benchmark::AddCustomContext("libqkv_isas", isa_names);
    for (qkv_isa isa : host_isas()) {
        if (fma_peak(isa) <= 0.0)
            continue; /* no peak loop for this ISA: no fma_peak_gflops_<isa>, no peak_frac */
        char gflops[32];
        std::snprintf(gflops, sizeof gflops, "%.2f", fma_peak(isa) * 1e-9);
        benchmark::AddCustomContext(std::string("fma_peak_gflops_") + qkv_isa_name(isa), gflops);
    }
    register_all();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

} // namespace qkv_bench
