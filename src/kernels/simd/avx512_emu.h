/* TESTING ONLY: the AVX-512 intrinsics that libqkv's kernels use, in plain C.
 *
 * Built only with meson -Davx512_emulation=true, which compiles the AVX-512 kernel files
 * against this header (with AVX2 flags) and lets dispatch report AVX-512 on any AVX2 CPU.
 * Purpose: run every AVX-512 code path, including masked tails on guard pages, on hosts
 * whose CPU lacks AVX-512. Each function follows the semantics of the Intel Intrinsics
 * Guide for the default MXCSR (round to nearest, no DAZ/FTZ); masked-off lanes are never
 * read or written. Anything a kernel needs beyond this list fails to compile here, which
 * is the point: add it with its exact semantics.
 *
 * GCC's <immintrin.h> declares the real _mm512 names and types even without -mavx512f,
 * so the emulated ones are defined under qkv_emu_ names and the intrinsic names are
 * macros that redirect to them. */
#ifndef QKV_SIMD_AVX512_EMU_H
#define QKV_SIMD_AVX512_EMU_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct qkv_emu_m512 {
    float f[16];
} qkv_emu_m512;
typedef uint16_t qkv_emu_mmask16;

#define __m512 qkv_emu_m512
#define __mmask16 qkv_emu_mmask16

#define QKV_EMU_MAP1(name, expr)                                                                 \
    static inline qkv_emu_m512 qkv_emu_##name(qkv_emu_m512 a)                                     \
    {                                                                                            \
        qkv_emu_m512 r;                                                                          \
        for (int i = 0; i < 16; i++) {                                                           \
            const float x = a.f[i];                                                              \
            r.f[i] = (expr);                                                                     \
        }                                                                                        \
        return r;                                                                                \
    }
#define QKV_EMU_MAP2(name, expr)                                                                 \
    static inline qkv_emu_m512 qkv_emu_##name(qkv_emu_m512 a, qkv_emu_m512 b)                     \
    {                                                                                            \
        qkv_emu_m512 r;                                                                          \
        for (int i = 0; i < 16; i++) {                                                           \
            const float x = a.f[i], y = b.f[i];                                                  \
            r.f[i] = (expr);                                                                     \
        }                                                                                        \
        return r;                                                                                \
    }
#define QKV_EMU_MAP3(name, expr)                                                                 \
    static inline qkv_emu_m512 qkv_emu_##name(qkv_emu_m512 a, qkv_emu_m512 b, qkv_emu_m512 c)     \
    {                                                                                            \
        qkv_emu_m512 r;                                                                          \
        for (int i = 0; i < 16; i++) {                                                           \
            const float x = a.f[i], y = b.f[i], z = c.f[i];                                      \
            r.f[i] = (expr);                                                                     \
        }                                                                                        \
        return r;                                                                                \
    }

static inline float qkv_emu_scalef1(float a, float b)
{
    /* DEST = a * 2^floor(b), with the special cases of VSCALEFPS */
    if (isnan(a) || isnan(b))
        return a + b;
    if (isinf(b))
        return b > 0 ? a * INFINITY : (isinf(a) ? NAN : a * 0.0f);
    float e = floorf(b);
    e = e > 400.0f ? 400.0f : (e < -400.0f ? -400.0f : e); /* beyond: inf or 0 anyway */
    return ldexpf(a, (int)e);
}

QKV_EMU_MAP2(add_ps, x + y)
QKV_EMU_MAP2(sub_ps, x - y)
QKV_EMU_MAP2(mul_ps, x * y)
QKV_EMU_MAP2(div_ps, x / y)
QKV_EMU_MAP2(max_ps, x > y ? x : y) /* second operand when either is NaN */
QKV_EMU_MAP2(min_ps, x < y ? x : y)
QKV_EMU_MAP2(scalef_ps, qkv_emu_scalef1(x, y))
QKV_EMU_MAP3(fmadd_ps, fmaf(x, y, z))
QKV_EMU_MAP3(fnmadd_ps, fmaf(-x, y, z))

/* bitwise logic on the float lanes (AVX512DQ) */
static inline uint32_t qkv_emu_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline float qkv_emu_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
QKV_EMU_MAP2(and_ps, qkv_emu_float(qkv_emu_bits(x) & qkv_emu_bits(y)))
QKV_EMU_MAP2(andnot_ps, qkv_emu_float(~qkv_emu_bits(x) & qkv_emu_bits(y)))
QKV_EMU_MAP2(or_ps, qkv_emu_float(qkv_emu_bits(x) | qkv_emu_bits(y)))

/* only the ordered less-than predicate is emulated */
static inline qkv_emu_mmask16 qkv_emu_cmp_ps_mask(qkv_emu_m512 a, qkv_emu_m512 b, int imm)
{
    qkv_emu_mmask16 k = 0;
    for (int i = 0; i < 16; i++)
        if (imm == _CMP_LT_OQ && a.f[i] < b.f[i])
            k |= (qkv_emu_mmask16)(1u << i);
    return k;
}

static inline qkv_emu_m512 qkv_emu_mask_blend_ps(qkv_emu_mmask16 k, qkv_emu_m512 a, qkv_emu_m512 b)
{
    qkv_emu_m512 r;
    for (int i = 0; i < 16; i++)
        r.f[i] = (k >> i) & 1 ? b.f[i] : a.f[i];
    return r;
}

static inline qkv_emu_m512 qkv_emu_roundscale_ps(qkv_emu_m512 a, int imm)
{
    /* only M = 0 (round to an integer) with round-to-nearest-even is emulated */
    qkv_emu_m512 r;
    for (int i = 0; i < 16; i++)
        r.f[i] = (imm & 0xf3) == 0 ? nearbyintf(a.f[i]) : NAN;
    return r;
}

static inline qkv_emu_m512 qkv_emu_setzero_ps(void)
{
    qkv_emu_m512 r;
    for (int i = 0; i < 16; i++)
        r.f[i] = 0.0f;
    return r;
}

static inline qkv_emu_m512 qkv_emu_set1_ps(float a)
{
    qkv_emu_m512 r;
    for (int i = 0; i < 16; i++)
        r.f[i] = a;
    return r;
}

static inline qkv_emu_m512 qkv_emu_loadu_ps(const void *p)
{
    qkv_emu_m512 r;
    for (int i = 0; i < 16; i++)
        r.f[i] = ((const float *)p)[i];
    return r;
}

static inline void qkv_emu_storeu_ps(void *p, qkv_emu_m512 a)
{
    for (int i = 0; i < 16; i++)
        ((float *)p)[i] = a.f[i];
}

static inline qkv_emu_m512 qkv_emu_mask_loadu_ps(qkv_emu_m512 src, qkv_emu_mmask16 k, const void *p)
{
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1)
            src.f[i] = ((const float *)p)[i];
    return src;
}

static inline void qkv_emu_mask_storeu_ps(void *p, qkv_emu_mmask16 k, qkv_emu_m512 a)
{
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1)
            ((float *)p)[i] = a.f[i];
}

static inline __m256 qkv_emu_castps512_ps256(qkv_emu_m512 a) { return _mm256_loadu_ps(a.f); }

static inline __m256 qkv_emu_extractf32x8_ps(qkv_emu_m512 a, int imm) { return _mm256_loadu_ps(a.f + 8 * (imm & 1)); }

#define _mm512_add_ps qkv_emu_add_ps
#define _mm512_sub_ps qkv_emu_sub_ps
#define _mm512_mul_ps qkv_emu_mul_ps
#define _mm512_div_ps qkv_emu_div_ps
#define _mm512_and_ps qkv_emu_and_ps
#define _mm512_andnot_ps qkv_emu_andnot_ps
#define _mm512_or_ps qkv_emu_or_ps
#define _mm512_cmp_ps_mask qkv_emu_cmp_ps_mask
#define _mm512_mask_blend_ps qkv_emu_mask_blend_ps
#define _mm512_max_ps qkv_emu_max_ps
#define _mm512_min_ps qkv_emu_min_ps
#define _mm512_scalef_ps qkv_emu_scalef_ps
#define _mm512_fmadd_ps qkv_emu_fmadd_ps
#define _mm512_fnmadd_ps qkv_emu_fnmadd_ps
#define _mm512_roundscale_ps qkv_emu_roundscale_ps
#define _mm512_setzero_ps qkv_emu_setzero_ps
#define _mm512_set1_ps qkv_emu_set1_ps
#define _mm512_loadu_ps qkv_emu_loadu_ps
#define _mm512_storeu_ps qkv_emu_storeu_ps
#define _mm512_mask_loadu_ps qkv_emu_mask_loadu_ps
#define _mm512_mask_storeu_ps qkv_emu_mask_storeu_ps
#define _mm512_castps512_ps256 qkv_emu_castps512_ps256
#define _mm512_extractf32x8_ps qkv_emu_extractf32x8_ps

#endif
