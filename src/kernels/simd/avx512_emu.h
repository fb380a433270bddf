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
/* 512 integer bits as 16 dwords or 32 words (lane i of d = words 2i, 2i + 1: x86 order) */
typedef union qkv_emu_m512i {
    uint32_t d[16];
    uint16_t w[32];
} qkv_emu_m512i;
typedef uint32_t qkv_emu_mmask32;

#define __m512 qkv_emu_m512
#define __mmask16 qkv_emu_mmask16
#define __m512i qkv_emu_m512i
#define __mmask32 qkv_emu_mmask32
#define __m512bh qkv_emu_m512i /* 32 bfloat16: the result of vcvtne2ps2bf16 */

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

/* only the predicates the kernels use are emulated: _CMP_LT_OQ (ordered less-than) and
   _CMP_UNORD_Q (either operand NaN); any other gives an empty mask */
static inline qkv_emu_mmask16 qkv_emu_cmp_ps_mask(qkv_emu_m512 a, qkv_emu_m512 b, int imm)
{
    qkv_emu_mmask16 k = 0;
    for (int i = 0; i < 16; i++)
        if ((imm == _CMP_LT_OQ && a.f[i] < b.f[i]) || (imm == _CMP_UNORD_Q && (isnan(a.f[i]) || isnan(b.f[i]))))
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

/* 128-bit blocks: r = [a.block(imm[1:0]), a.block(imm[3:2]), b.block(imm[5:4]), b.block(imm[7:6])] */
static inline qkv_emu_m512 qkv_emu_shuffle_f32x4(qkv_emu_m512 a, qkv_emu_m512 b, int imm)
{
    qkv_emu_m512 r;
    for (int blk = 0; blk < 4; blk++) {
        const qkv_emu_m512 *src = blk < 2 ? &a : &b;
        const int sel = (imm >> (2 * blk)) & 3;
        for (int i = 0; i < 4; i++)
            r.f[4 * blk + i] = src->f[4 * sel + i];
    }
    return r;
}

/* within each 128-bit block: r[i] = a[block + imm[2i + 1:2i]] */
static inline qkv_emu_m512 qkv_emu_permute_ps(qkv_emu_m512 a, int imm)
{
    qkv_emu_m512 r;
    for (int i = 0; i < 16; i++)
        r.f[i] = a.f[(i & ~3) + ((imm >> (2 * (i & 3))) & 3)];
    return r;
}

static inline qkv_emu_m512 qkv_emu_permutexvar_ps(qkv_emu_m512i idx, qkv_emu_m512 a)
{
    qkv_emu_m512 r;
    for (int i = 0; i < 16; i++)
        r.f[i] = a.f[idx.d[i] & 15];
    return r;
}

/* e15 first, as _mm512_set_epi32 takes them */
static inline qkv_emu_m512i qkv_emu_set_epi32(int e15, int e14, int e13, int e12, int e11, int e10, int e9, int e8,
                                             int e7, int e6, int e5, int e4, int e3, int e2, int e1, int e0)
{
    const int e[16] = {e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11, e12, e13, e14, e15};
    qkv_emu_m512i r;
    for (int i = 0; i < 16; i++)
        r.d[i] = (uint32_t)e[i];
    return r;
}

static inline __m128 qkv_emu_castps512_ps128(qkv_emu_m512 a) { return _mm_loadu_ps(a.f); }

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

/* ---- integer lanes and 16-bit floats (kernels/convert_f32.h, kernels/avx512_bf16.c) ---- */

static inline float qkv_emu_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline uint32_t qkv_emu_u32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

#define QKV_EMU_MAPI2(name, expr)                                                                \
    static inline qkv_emu_m512i qkv_emu_##name(qkv_emu_m512i a, qkv_emu_m512i b)                  \
    {                                                                                            \
        qkv_emu_m512i r;                                                                         \
        for (int i = 0; i < 16; i++) {                                                           \
            const uint32_t x = a.d[i], y = b.d[i];                                               \
            r.d[i] = (expr);                                                                     \
        }                                                                                        \
        return r;                                                                                \
    }
QKV_EMU_MAPI2(add_epi32, x + y)
QKV_EMU_MAPI2(and_si512, x & y)
QKV_EMU_MAPI2(or_si512, x | y)

static inline qkv_emu_m512i qkv_emu_set1_epi32(int a)
{
    qkv_emu_m512i r;
    for (int i = 0; i < 16; i++)
        r.d[i] = (uint32_t)a;
    return r;
}

/* logical shifts by an immediate; counts above 31 give 0 */
static inline qkv_emu_m512i qkv_emu_srli_epi32(qkv_emu_m512i a, unsigned imm)
{
    for (int i = 0; i < 16; i++)
        a.d[i] = imm > 31 ? 0 : a.d[i] >> imm;
    return a;
}
static inline qkv_emu_m512i qkv_emu_slli_epi32(qkv_emu_m512i a, unsigned imm)
{
    for (int i = 0; i < 16; i++)
        a.d[i] = imm > 31 ? 0 : a.d[i] << imm;
    return a;
}

static inline qkv_emu_m512i qkv_emu_mask_mov_epi32(qkv_emu_m512i src, qkv_emu_mmask16 k, qkv_emu_m512i a)
{
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1)
            src.d[i] = a.d[i];
    return src;
}

static inline qkv_emu_m512i qkv_emu_castps_si512(qkv_emu_m512 a)
{
    qkv_emu_m512i r;
    for (int i = 0; i < 16; i++)
        r.d[i] = qkv_emu_u32(a.f[i]);
    return r;
}
static inline qkv_emu_m512 qkv_emu_castsi512_ps(qkv_emu_m512i a)
{
    qkv_emu_m512 r;
    for (int i = 0; i < 16; i++)
        r.f[i] = qkv_emu_f32(a.d[i]);
    return r;
}
static inline __m256i qkv_emu_castsi512_si256(qkv_emu_m512i a) { return _mm256_loadu_si256((const __m256i *)a.w); }
/* the upper 256 bits are undefined for the real cast; zero here */
static inline qkv_emu_m512i qkv_emu_castsi256_si512(__m256i a)
{
    qkv_emu_m512i r = {{0}};
    _mm256_storeu_si256((__m256i *)r.w, a);
    return r;
}

/* vpmovzxwd: 16 words -> 16 dwords, zero-extended */
static inline qkv_emu_m512i qkv_emu_cvtepu16_epi32(__m256i a)
{
    uint16_t w[16];
    _mm256_storeu_si256((__m256i *)w, a);
    qkv_emu_m512i r;
    for (int i = 0; i < 16; i++)
        r.d[i] = w[i];
    return r;
}
/* vpmovdw: 16 dwords -> 16 words, truncated */
static inline __m256i qkv_emu_cvtepi32_epi16(qkv_emu_m512i a)
{
    uint16_t w[16];
    for (int i = 0; i < 16; i++)
        w[i] = (uint16_t)a.d[i];
    return _mm256_loadu_si256((const __m256i *)w);
}

static inline qkv_emu_m512i qkv_emu_maskz_loadu_epi16(qkv_emu_mmask32 k, const void *p)
{
    qkv_emu_m512i r = {{0}};
    for (int i = 0; i < 32; i++)
        if ((k >> i) & 1)
            r.w[i] = ((const uint16_t *)p)[i];
    return r;
}
static inline void qkv_emu_mask_storeu_epi16(void *p, qkv_emu_mmask32 k, qkv_emu_m512i a)
{
    for (int i = 0; i < 32; i++)
        if ((k >> i) & 1)
            ((uint16_t *)p)[i] = a.w[i];
}

/* vcvtph2ps: binary16 -> binary32, exact; a NaN keeps sign and payload and is made quiet */
static inline qkv_emu_m512 qkv_emu_cvtph_ps(__m256i a)
{
    uint16_t w[16];
    _mm256_storeu_si256((__m256i *)w, a);
    qkv_emu_m512 r;
    for (int i = 0; i < 16; i++) {
        const int e = (w[i] >> 10) & 0x1f, m = w[i] & 0x3ff;
        const float mag = e == 0x1f ? (m ? qkv_emu_f32(0x7fc00000u | (uint32_t)m << 13) : INFINITY)
                          : e == 0  ? ldexpf((float)m, -24)
                                    : ldexpf((float)(m | 0x400), e - 25);
        r.f[i] = (w[i] & 0x8000) ? -mag : mag;
    }
    return r;
}

/* vcvtps2ph with imm rounding to nearest even (0, or 8 = no exceptions; others are not
   emulated and give NaN): the nearest binary16 by its neighbours in double; ties to the
   even pattern; |x| >= 65520 -> inf; a NaN keeps sign and high payload bits, made quiet */
static inline uint16_t qkv_emu_f32_to_f16(float x, int imm)
{
    const uint16_t sign = (uint16_t)((qkv_emu_u32(x) >> 16) & 0x8000);
    if ((imm & 7) != 0)
        return 0x7e00;
    if (isnan(x))
        return (uint16_t)(sign | 0x7e00 | ((qkv_emu_u32(x) >> 13) & 0x3ff));
    const double a = fabs((double)x);
    if (a >= 65520.0)
        return (uint16_t)(sign | 0x7c00);
    /* spacing of binary16 values at a: 2^-24 below 2^-14, else 2^(exponent - 10) */
    int e;
    frexp(a, &e); /* a in [2^(e-1), 2^e) */
    const double ulp = a < 0x1p-14 ? 0x1p-24 : ldexp(1.0, e - 11);
    const double q = floor(a / ulp), rem = a - q * ulp; /* exact: a is a float */
    double lo = q * ulp;
    if (rem > ulp / 2 || (rem == ulp / 2 && fmod(q, 2.0) != 0))
        lo += ulp;
    /* encode lo (a multiple of ulp, at most 65504 or exactly 65536 -> inf pattern) */
    uint16_t bits;
    if (lo < 0x1p-14)
        bits = (uint16_t)(lo / 0x1p-24);
    else {
        frexp(lo, &e);
        bits = (uint16_t)(((e - 1 + 15) << 10) | ((uint16_t)(ldexp(lo, 11 - e)) & 0x3ff));
    }
    return (uint16_t)(sign | bits);
}
static inline __m256i qkv_emu_cvtps_ph(qkv_emu_m512 a, int imm)
{
    uint16_t w[16];
    for (int i = 0; i < 16; i++)
        w[i] = qkv_emu_f32_to_f16(a.f[i], imm);
    return _mm256_loadu_si256((const __m256i *)w);
}

/* vcvtneps2bf16, the Intel pseudo-code: NaN -> high half with the quiet bit; a denormal
   input -> zero of its sign (DAZ); else round to nearest even on the bits */
static inline __m256i qkv_emu_cvtneps_pbh(qkv_emu_m512 a)
{
    uint16_t w[16];
    for (int i = 0; i < 16; i++) {
        const uint32_t x = qkv_emu_u32(a.f[i]);
        if (isnan(a.f[i]))
            w[i] = (uint16_t)((x >> 16) | 0x40);
        else if ((x & 0x7f800000u) == 0)
            w[i] = (uint16_t)((x >> 16) & 0x8000);
        else
            w[i] = (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
    }
    return _mm256_loadu_si256((const __m256i *)w);
}
/* vcvtne2ps2bf16: 32 bfloat16, words 0..15 from b and 16..31 from a, each as
   vcvtneps2bf16 rounds it */
static inline qkv_emu_m512i qkv_emu_cvtne2ps_pbh(qkv_emu_m512 a, qkv_emu_m512 b)
{
    qkv_emu_m512i r;
    const __m256i lo = qkv_emu_cvtneps_pbh(b), hi = qkv_emu_cvtneps_pbh(a);
    memcpy(r.w, &lo, sizeof lo);
    memcpy(r.w + 16, &hi, sizeof hi);
    return r;
}

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
#undef _mm512_shuffle_f32x4
#define _mm512_shuffle_f32x4 qkv_emu_shuffle_f32x4
#undef _mm512_permute_ps
#define _mm512_permute_ps qkv_emu_permute_ps
#define _mm512_permutexvar_ps qkv_emu_permutexvar_ps
#define _mm512_set_epi32 qkv_emu_set_epi32
#define _mm512_castps512_ps128 qkv_emu_castps512_ps128
#define _mm512_add_epi32 qkv_emu_add_epi32
#define _mm512_and_si512 qkv_emu_and_si512
#define _mm512_or_si512 qkv_emu_or_si512
#define _mm512_set1_epi32 qkv_emu_set1_epi32
#define _mm512_srli_epi32 qkv_emu_srli_epi32
#define _mm512_slli_epi32 qkv_emu_slli_epi32
#define _mm512_mask_mov_epi32 qkv_emu_mask_mov_epi32
#define _mm512_castps_si512 qkv_emu_castps_si512
#define _mm512_castsi512_ps qkv_emu_castsi512_ps
#define _mm512_castsi512_si256 qkv_emu_castsi512_si256
#define _mm512_castsi256_si512 qkv_emu_castsi256_si512
#define _mm512_cvtepu16_epi32 qkv_emu_cvtepu16_epi32
#define _mm512_cvtepi32_epi16 qkv_emu_cvtepi32_epi16
#define _mm512_maskz_loadu_epi16 qkv_emu_maskz_loadu_epi16
#define _mm512_mask_storeu_epi16 qkv_emu_mask_storeu_epi16
#define _mm512_cvtph_ps qkv_emu_cvtph_ps
#define _mm512_cvtps_ph qkv_emu_cvtps_ph
#define _mm512_cvtneps_pbh qkv_emu_cvtneps_pbh
#define _mm512_cvtne2ps_pbh qkv_emu_cvtne2ps_pbh

#endif
