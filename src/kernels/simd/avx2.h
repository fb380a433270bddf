/* Vector layer for AVX2 + FMA: 8 float lanes in a __m256.
 *
 * The kernel templates (the kernels/<op>_f32.h files) are
 * written once against this small set of operations; simd/avx512.h, simd/neon.h and simd/scalar.h give
 * the same names for 16 and 4 lanes. Conventions every layer keeps:
 *   vf_max(c, x), vf_min(c, x)   return x when x is NaN (NaN in the second operand wins)
 *   vf_load_n(p, r, fill)        lanes [0, r) from p, the others = fill; touches only p[0..r)
 *   vf_store_n(p, r, v)          writes only p[0..r)
 * Tails use _mm256_maskload_ps / _mm256_maskstore_ps, which never fault on masked lanes. */
#ifndef QKV_SIMD_AVX2_H
#define QKV_SIMD_AVX2_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#define VL 8
typedef __m256 vf;

static inline vf vf_zero(void) { return _mm256_setzero_ps(); }
static inline vf vf_set1(float a) { return _mm256_set1_ps(a); }
static inline vf vf_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void vf_store(float *p, vf v) { _mm256_storeu_ps(p, v); }
static inline vf vf_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
/* a * b + c, one rounding */
static inline vf vf_fma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
/* c - a * b, one rounding */
static inline vf vf_fnma(vf a, vf b, vf c) { return _mm256_fnmadd_ps(a, b, c); }
/* maxps/minps return the second operand when either is NaN */
static inline vf vf_max(vf c, vf x) { return _mm256_max_ps(c, x); }
static inline vf vf_min(vf c, vf x) { return _mm256_min_ps(c, x); }
static inline vf vf_div(vf a, vf b) { return _mm256_div_ps(a, b); }
static inline vf vf_abs(vf x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
static inline vf vf_copysign(vf mag, vf sgn)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    return _mm256_or_ps(_mm256_andnot_ps(sign, mag), _mm256_and_ps(sign, sgn));
}
/* a < b ? x : y per lane (false for NaN) */
static inline vf vf_lt_select(vf a, vf b, vf x, vf y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LT_OQ)); }
/* round to nearest integer, ties to even */
static inline vf vf_round(vf x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

/* p * 2^n for integral n in [-150, 128] (overflow -> inf, underflow -> denormal or 0):
   2^n is split as 2^(n>>1) * 2^(n - (n>>1)), both factors normal floats built by writing
   the biased exponent, so each multiply is exact until the last one rounds once. */
static inline vf vf_scale2n(vf p, vf n)
{
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i n1 = _mm256_srai_epi32(ni, 1);
    const __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const vf s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const vf s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

/* mask with lanes [0, r) set, 0 <= r <= 8 */
static inline __m256i vm_first(size_t r)
{
    static const int32_t bits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(bits + 8 - r));
}

static inline vf vf_load_n(const float *p, size_t r, float fill)
{
    const __m256i m = vm_first(r);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
}

static inline void vf_store_n(float *p, size_t r, vf v) { _mm256_maskstore_ps(p, vm_first(r), v); }

static inline float vf_reduce_add(vf v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* sum of the lanes in double precision: each lane converts exactly, the adds are exact
   to far below float precision */
static inline double vf_reduce_add_f64(vf v)
{
    const __m256d d = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(d), _mm256_extractf128_pd(d, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

/* NaN lanes are ignored unless every lane is NaN */
static inline float vf_reduce_max(vf v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline float vf_reduce_min(vf v)
{
    __m128 s = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_min_ps(s, _mm_movehl_ps(s, s));
    s = _mm_min_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* ---- 16-bit floats (kernels/convert_f32.h): vh holds VL binary16 or bfloat16 values ----
 * No 16-bit masked loads in AVX2: a tail of r < 8 goes through an 8-element stack buffer. */
typedef __m128i vh;

static inline vh vh_load(const uint16_t *p) { return _mm_loadu_si128((const __m128i *)p); }
static inline void vh_store(uint16_t *p, vh h) { _mm_storeu_si128((__m128i *)p, h); }
static inline vh vh_load_n(const uint16_t *p, size_t r)
{
    uint16_t buf[VL] = {0};
    for (size_t i = 0; i < r; i++)
        buf[i] = p[i];
    return _mm_loadu_si128((const __m128i *)buf);
}
static inline void vh_store_n(uint16_t *p, size_t r, vh h)
{
    uint16_t buf[VL];
    _mm_storeu_si128((__m128i *)buf, h);
    for (size_t i = 0; i < r; i++)
        p[i] = buf[i];
}

/* binary16 <-> float with F16C: exact widening, round-to-nearest-even narrowing */
static inline vf vf_from_f16(vh h) { return _mm256_cvtph_ps(h); }
static inline vh vh_from_f32_f16(vf v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
/* bfloat16 -> float, exact: the 16 bits become the high half of the float */
static inline vf vf_from_bf16(vh h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
/* float -> bfloat16, round to nearest even on the bits (x + 0x7fff + bit 16 of x, high
   half); NaN: the high half with the quiet bit set. The 32-bit results are < 2^16, so the
   signed-saturating pack is exact. */
static inline vh vh_from_f32_bf16(vf v)
{
    const __m256i x = _mm256_castps_si256(v);
    const __m256i hi = _mm256_srli_epi32(x, 16);
    const __m256i bias = _mm256_add_epi32(_mm256_and_si256(hi, _mm256_set1_epi32(1)), _mm256_set1_epi32(0x7fff));
    const __m256i rne = _mm256_srli_epi32(_mm256_add_epi32(x, bias), 16);
    const __m256i qnan = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
    const __m256i r = _mm256_blendv_epi8(rne, qnan, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

/* vh_from_f32_bf16 on 4 VL floats at once, for the conversion loop (kernels/convert_f32.h,
   VH_BF16_BLOCK): one unordered compare per vector tells whether the block holds a NaN;
   without one (the case that matters) the rounding needs no NaN select, and two vectors
   share one 256-bit pack (in-lane, so a vpermq puts the halves back in order). Same bits
   as vh_from_f32_bf16 on every input. */
#define VH_BF16_BLOCK (4 * VL)
static inline __m256i vh_bf16_rne_finite(__m256i x)
{
    const __m256i bit = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    return _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), bit), 16);
}
static inline __m256i vh_bf16_pack2(__m256i lo, __m256i hi)
{
    return _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8);
}
static inline void vh_from_f32_bf16_block(const float *src, uint16_t *dst)
{
    const vf a = vf_load(src), b = vf_load(src + VL), c = vf_load(src + 2 * VL), d = vf_load(src + 3 * VL);
    const __m256 nan = _mm256_or_ps(_mm256_or_ps(_mm256_cmp_ps(a, a, _CMP_UNORD_Q), _mm256_cmp_ps(b, b, _CMP_UNORD_Q)),
                                    _mm256_or_ps(_mm256_cmp_ps(c, c, _CMP_UNORD_Q), _mm256_cmp_ps(d, d, _CMP_UNORD_Q)));
    if (__builtin_expect(_mm256_testz_ps(nan, nan), 1)) {
        const __m256i ra = vh_bf16_rne_finite(_mm256_castps_si256(a)), rb = vh_bf16_rne_finite(_mm256_castps_si256(b));
        const __m256i rc = vh_bf16_rne_finite(_mm256_castps_si256(c)), rd = vh_bf16_rne_finite(_mm256_castps_si256(d));
        _mm256_storeu_si256((__m256i *)dst, vh_bf16_pack2(ra, rb));
        _mm256_storeu_si256((__m256i *)(dst + 2 * VL), vh_bf16_pack2(rc, rd));
    } else {
        vh_store(dst, vh_from_f32_bf16(a));
        vh_store(dst + VL, vh_from_f32_bf16(b));
        vh_store(dst + 2 * VL, vh_from_f32_bf16(c));
        vh_store(dst + 3 * VL, vh_from_f32_bf16(d));
    }
}

#endif
