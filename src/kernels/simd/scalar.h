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

/* ---- 16-bit floats (kernels/convert_f32.h): from the IEEE 754 definitions -------------
 * binary16: sign, 5 exponent bits (bias 15), 10 mantissa bits; bfloat16: the high half of a
 * binary32. These are the reference the SIMD layers match bit for bit (NaNs are returned
 * quiet, as vcvtph2ps, vcvtps2ph and fcvtl/fcvtn do). */
typedef uint16_t vh;

static inline vh vh_load(const uint16_t *p) { return *p; }
static inline void vh_store(uint16_t *p, vh h) { *p = h; }
static inline vh vh_load_n(const uint16_t *p, size_t r) { return r ? *p : 0; }
static inline void vh_store_n(uint16_t *p, size_t r, vh h)
{
    if (r)
        *p = h;
}

static inline float vf_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline uint32_t vf_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* binary16 -> binary32, exact: rebias the exponent (15 -> 127); a subnormal m 2^-24 is
   normalized; inf and NaN keep their payload (NaN made quiet) */
static inline vf vf_from_f16(vh h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)
        return vf_from_bits(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0));
    if (e == 0) {
        if (m == 0)
            return vf_from_bits(sign);
        e = 1; /* m 2^-24 = (m / 2^10) 2^(1 - 15): shift m up until its leading bit is bit 10 */
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        m &= 0x3ffu;
    }
    return vf_from_bits(sign | ((e + 127 - 15) << 23) | (m << 13));
}

/* binary32 -> binary16, round to nearest even. |x| >= 65520 (halfway from 65504, the
   largest binary16, to 2^16, ties to the even 2^16) overflows to inf; below 2^-14 the
   result is subnormal: |x| in units of 2^-24, rounded */
static inline vh vh_from_f32_f16(vf v)
{
    const uint32_t x = vf_bits(v), ax = x & 0x7fffffffu;
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    if (ax > 0x7f800000u) /* NaN: quiet, the high 10 payload bits kept */
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u) /* 65520 and above, inf included */
        return (uint16_t)(sign | 0x7c00u);
    if (ax >= 0x38800000u) { /* normal: rebias, drop 13 mantissa bits with RNE */
        const uint32_t r = ax - ((127u - 15u) << 23);
        return (uint16_t)(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
    }
    if (ax <= 0x33000000u) /* at most 2^-25, half the smallest subnormal: ties to 0 */
        return sign;
    /* |x| = m 2^(e - 150) = (m >> s) 2^-24 with s = 126 - e in [14, 24] */
    const uint32_t m = (ax & 0x7fffffu) | 0x800000u, s = 126u - (ax >> 23);
    const uint32_t q = m >> s, rem = m & ((1u << s) - 1u), half = 1u << (s - 1);
    return (uint16_t)(sign | (q + (rem > half || (rem == half && (q & 1u)))));
}

/* bfloat16 -> binary32, exact */
static inline vf vf_from_bf16(vh h) { return vf_from_bits((uint32_t)h << 16); }

/* binary32 -> bfloat16, round to nearest even: add 0x7fff plus the lowest kept bit, keep
   the high half (a carry steps the exponent, up to inf); NaN: quiet, high payload kept */
static inline vh vh_from_f32_bf16(vf v)
{
    const uint32_t x = vf_bits(v);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

#endif
