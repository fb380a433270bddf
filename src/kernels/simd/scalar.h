/* Vector layer of width 1 in portable C: the scalar ISA instantiates the same kernel
 * templates as AVX2, AVX-512 and NEON, so the fallback computes exactly the same algorithm.
 * No fused multiply-add is assumed (x86-64 baseline has none): vf_fma rounds twice, and
 * exp_core.h then uses a Cody-Waite split whose high part makes n * ln2_hi exact.
 * Compiled with -std=c11, which keeps GCC from contracting a*b+c on any target. */
#ifndef QKV_SIMD_SCALAR_H
#define QKV_SIMD_SCALAR_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define VL 1
#define VF_UNFUSED_FMA 1
typedef float vf;

static inline vf vf_zero(void) { return 0.0f; }
static inline vf vf_set1(float a) { return a; }
static inline vf vf_load(const float *p) { return *p; }
static inline void vf_store(float *p, vf v) { *p = v; }
static inline vf vf_add(vf a, vf b) { return a + b; }
static inline vf vf_sub(vf a, vf b) { return a - b; }
static inline vf vf_mul(vf a, vf b) { return a * b; }
static inline vf vf_fma(vf a, vf b, vf c) { return a * b + c; }
static inline vf vf_fnma(vf a, vf b, vf c) { return c - a * b; }
static inline vf vf_max(vf c, vf x) { return c > x ? c : x; } /* NaN x: comparison false -> x */
static inline vf vf_min(vf c, vf x) { return c < x ? c : x; }
static inline vf vf_div(vf a, vf b) { return a / b; }
static inline vf vf_abs(vf x) { return fabsf(x); }
static inline vf vf_copysign(vf mag, vf sgn) { return copysignf(mag, sgn); }
/* a < b ? x : y per lane (false for NaN) */
static inline vf vf_lt_select(vf a, vf b, vf x, vf y) { return a < b ? x : y; }

/* round to nearest even for |x| < 2^22 (the only use: x / ln2 after clamping); NaN stays */
static inline vf vf_round(vf x)
{
    const float magic = 0x1.8p23f;
    return (x + magic) - magic; /* ISO C, no -ffast-math: evaluated as written */
}

/* p * 2^n, integral n in [-150, 128]: two normal power-of-two factors, one rounding */
static inline vf vf_scale2n(vf p, vf n)
{
    if (n != n)
        return p; /* NaN input: p is already NaN, and (int)NaN would be undefined */
    const int32_t ni = (int32_t)n;
    const int32_t n1 = ni / 2, n2 = ni - n1;
    const uint32_t b1 = (uint32_t)(n1 + 127) << 23, b2 = (uint32_t)(n2 + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    return p * s1 * s2;
}

static inline vf vf_load_n(const float *p, size_t r, float fill) { return r ? *p : fill; }
static inline void vf_store_n(float *p, size_t r, vf v)
{
    if (r)
        *p = v;
}
static inline float vf_reduce_add(vf v) { return v; }
static inline double vf_reduce_add_f64(vf v) { return v; }
static inline float vf_reduce_max(vf v) { return v; }
static inline float vf_reduce_min(vf v) { return v; }

#endif
