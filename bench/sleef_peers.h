/* The SLEEF peers, in one place (bench_kernels and the unfused attention composites of
 * bench_attention): per x86 vector width, an exp loop on SLEEF's vector expf u10 with a
 * scalar tail, and the three-pass softmax a user would write on it (max pass,
 * exp-store-sum pass, scale pass). Include only with QKV_BENCH_HAVE_SLEEF (x86-64).
 *
 *   qkv_bench::sleef_exp_avx2 / _avx512 (x, y, n)          y = exp(x)
 *   qkv_bench::sleef_softmax_avx2 / _avx512 (x, y, n, s)   y = softmax(s x), y == x allowed
 *   qkv_bench::sleef_softmax_best()                        the widest one this CPU runs
 *
 * The functions carry target attributes, so the including file keeps baseline flags; call
 * one only on a CPU that runs its ISA. */
#ifndef QKV_BENCH_SLEEF_PEERS_H
#define QKV_BENCH_SLEEF_PEERS_H

#include <algorithm>
#include <cmath>
#include <cstddef>

#include <immintrin.h>
#include <sleef.h>

#include "qkv.h"

/* sleef.h declares these only when the file itself is compiled with -mavx / -mavx512f */
extern "C" __m256 Sleef_expf8_u10avx2(__m256);
extern "C" __m512 Sleef_expf16_u10avx512f(__m512);

namespace qkv_bench {

/* The peers for one vector width W (intrinsic prefix P: _mm256 or _mm512, vector type V)
   and its SLEEF exp EXP, named sleef_exp_<SUFFIX> and sleef_softmax_<SUFFIX>. */
#define QKV_SLEEF_PEERS(SUFFIX, TARGET, V, W, P, EXP)                                              \
    __attribute__((target(TARGET))) inline void sleef_exp_##SUFFIX(const float *x, float *y,      \
                                                                   std::size_t n)                 \
    {                                                                                              \
        std::size_t i = 0;                                                                         \
        for (; i + (W) <= n; i += (W))                                                             \
            P##_storeu_ps(y + i, EXP(P##_loadu_ps(x + i)));                                        \
        for (; i < n; i++)                                                                         \
            y[i] = Sleef_expf_u10(x[i]);                                                           \
    }                                                                                              \
    __attribute__((target(TARGET))) inline void sleef_softmax_##SUFFIX(const float *x, float *y,  \
                                                                       std::size_t n, float s)    \
    {                                                                                              \
        alignas(64) float lane[W];                                                                 \
        V vmax = P##_set1_ps(-INFINITY);                                                           \
        std::size_t i = 0;                                                                         \
        for (; i + (W) <= n; i += (W))                                                             \
            vmax = P##_max_ps(vmax, P##_loadu_ps(x + i));                                          \
        P##_store_ps(lane, vmax);                                                                  \
        float m = *std::max_element(lane, lane + (W));                                             \
        for (; i < n; i++)                                                                         \
            m = std::max(m, x[i]);                                                                 \
        const V vm = P##_set1_ps(m), vs = P##_set1_ps(s);                                          \
        V vsum = P##_setzero_ps();                                                                 \
        for (i = 0; i + (W) <= n; i += (W)) {                                                      \
            const V e = EXP(P##_mul_ps(vs, P##_sub_ps(P##_loadu_ps(x + i), vm)));                  \
            P##_storeu_ps(y + i, e);                                                               \
            vsum = P##_add_ps(vsum, e);                                                            \
        }                                                                                          \
        P##_store_ps(lane, vsum);                                                                  \
        double sum = 0.0;                                                                          \
        for (float l : lane)                                                                       \
            sum += l;                                                                              \
        for (; i < n; i++) {                                                                       \
            y[i] = Sleef_expf_u10(s * (x[i] - m));                                                 \
            sum += y[i];                                                                           \
        }                                                                                          \
        const float inv = static_cast<float>(1.0 / sum);                                           \
        const V vinv = P##_set1_ps(inv);                                                           \
        for (i = 0; i + (W) <= n; i += (W))                                                        \
            P##_storeu_ps(y + i, P##_mul_ps(P##_loadu_ps(y + i), vinv));                           \
        for (; i < n; i++)                                                                         \
            y[i] *= inv;                                                                           \
    }

QKV_SLEEF_PEERS(avx2, "avx2,fma", __m256, 8, _mm256, Sleef_expf8_u10avx2)
/* GCC 12 flags _mm512_undefined_ps() inside _mm512_max_ps (GCC bug 105593, fixed in 13) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
QKV_SLEEF_PEERS(avx512, "avx512f", __m512, 16, _mm512, Sleef_expf16_u10avx512f)
#pragma GCC diagnostic pop
#undef QKV_SLEEF_PEERS

using SleefSoftmaxFn = void (*)(const float *, float *, std::size_t, float);

/* The widest SLEEF softmax this CPU runs (AVX-512F, else AVX2 + FMA; the CPU's own
   features, with OS support, so it holds in a libqkv build without those ISAs too), or
   nullptr when it runs neither. */
inline SleefSoftmaxFn sleef_softmax_best()
{
    if (__builtin_cpu_supports("avx512f"))
        return sleef_softmax_avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return sleef_softmax_avx2;
    return nullptr;
}

} // namespace qkv_bench

#endif
