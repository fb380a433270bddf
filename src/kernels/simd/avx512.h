/* Vector layer for AVX-512 (F, VL, BW, DQ): 16 float lanes in a __m512.
 * Same names and conventions as simd/avx2.h. Tails use __mmask16 masked loads and stores,
 * which never fault on masked lanes; 2^n uses vscalefps, which handles overflow to inf and
 * gradual underflow in one instruction. */
#ifndef QKV_SIMD_AVX512_H
#define QKV_SIMD_AVX512_H

#include <stddef.h>
#include <stdint.h>
#ifdef QKV_AVX512_EMULATION
#include "kernels/simd/avx512_emu.h" /* test build only: plain-C _mm512 intrinsics on AVX2 hosts */
#else
#include <immintrin.h>
#endif

#define VL 16
typedef __m512 vf;

static inline vf vf_zero(void) { return _mm512_setzero_ps(); }
static inline vf vf_set1(float a) { return _mm512_set1_ps(a); }
static inline vf vf_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void vf_store(float *p, vf v) { _mm512_storeu_ps(p, v); }
static inline vf vf_add(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf vf_fma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
static inline vf vf_fnma(vf a, vf b, vf c) { return _mm512_fnmadd_ps(a, b, c); }
/* vmaxps/vminps return the second operand when either is NaN */
static inline vf vf_max(vf c, vf x) { return _mm512_max_ps(c, x); }
static inline vf vf_min(vf c, vf x) { return _mm512_min_ps(c, x); }
static inline vf vf_div(vf a, vf b) { return _mm512_div_ps(a, b); }
static inline vf vf_abs(vf x) { return _mm512_andnot_ps(_mm512_set1_ps(-0.0f), x); }
static inline vf vf_copysign(vf mag, vf sgn)
{
    const __m512 sign = _mm512_set1_ps(-0.0f);
    return _mm512_or_ps(_mm512_andnot_ps(sign, mag), _mm512_and_ps(sign, sgn));
}
/* a < b ? x : y per lane (false for NaN) */
static inline vf vf_lt_select(vf a, vf b, vf x, vf y)
{
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), y, x);
}
static inline vf vf_round(vf x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

/* p * 2^n, n integral: vscalefps rounds once, including into the denormal range */
static inline vf vf_scale2n(vf p, vf n) { return _mm512_scalef_ps(p, n); }

static inline __mmask16 vm_first(size_t r) { return (__mmask16)((1u << r) - 1u); }

static inline vf vf_load_n(const float *p, size_t r, float fill)
{
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), vm_first(r), p);
}

static inline void vf_store_n(float *p, size_t r, vf v) { _mm512_mask_storeu_ps(p, vm_first(r), v); }

static inline float vf_reduce_add(vf v)
{
    __m256 s = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

/* out[0..3] = vf_reduce_add(a), (b), (c), (d), bit for bit (the same pairing: lanes i and
   i + 8, then i + 4, then i + 2, then i + 1), with the four reductions sharing each shuffle:
   9 shuffles and 5 adds where four vf_reduce_add take 16 and 16 */
#define VF_HAVE_REDUCE_ADD4 1
static inline void vf_reduce_add4(vf a, vf b, vf c, vf d, float *out)
{
    /* lane i + lane i + 8: [a 0..7 | b 0..7], [c | d] */
    const vf ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xee));
    const vf cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xee));
    /* + lane i + 4: one 128-bit block each, [a | b | c | d] */
    const vf u = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xdd));
    const vf w = _mm512_add_ps(u, _mm512_permute_ps(u, 0x4e)); /* + lane i + 2 (movehl) */
    const vf x = _mm512_add_ps(w, _mm512_permute_ps(w, 0xb1)); /* + lane i + 1 (movehdup) */
    const vf sums = _mm512_permutexvar_ps(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0), x);
    _mm_storeu_ps(out, _mm512_castps512_ps128(sums));
}

/* sum of the lanes in double precision (through the two 256-bit halves) */
static inline double vf_reduce_add_f64(vf v)
{
    const __m256 lo = _mm512_castps512_ps256(v), hi = _mm512_extractf32x8_ps(v, 1);
    const __m256d d = _mm256_add_pd(
        _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(lo)), _mm256_cvtps_pd(_mm256_extractf128_ps(lo, 1))),
        _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(hi)), _mm256_cvtps_pd(_mm256_extractf128_ps(hi, 1))));
    const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(d), _mm256_extractf128_pd(d, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

static inline float vf_reduce_max(vf v)
{
    __m256 s = _mm256_max_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

static inline float vf_reduce_min(vf v)
{
    __m256 s = _mm256_min_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 h = _mm_min_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h = _mm_min_ps(h, _mm_movehl_ps(h, h));
    h = _mm_min_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

/* ---- 16-bit floats (kernels/convert_f32.h): vh holds VL binary16 or bfloat16 values ----
 * Tails: __mmask32 masked 16-bit loads and stores on the low half of a ZMM register. */
typedef __m256i vh;

static inline vh vh_load(const uint16_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
static inline void vh_store(uint16_t *p, vh h) { _mm256_storeu_si256((__m256i *)p, h); }
static inline __mmask32 vh_first(size_t r) { return (__mmask32)((1u << r) - 1u); }
/* lanes [0, r) from p, the others 0; touches only p[0..r) */
static inline vh vh_load_n(const uint16_t *p, size_t r)
{
    return _mm512_castsi512_si256(_mm512_maskz_loadu_epi16(vh_first(r), p));
}
static inline void vh_store_n(uint16_t *p, size_t r, vh h)
{
    _mm512_mask_storeu_epi16(p, vh_first(r), _mm512_castsi256_si512(h));
}

/* binary16 -> float, exact (vcvtph2ps; a signaling NaN comes back quiet) */
static inline vf vf_from_f16(vh h) { return _mm512_cvtph_ps(h); }
/* float -> binary16, round to nearest even (vcvtps2ph): overflow to inf, NaN quieted */
static inline vh vh_from_f32_f16(vf v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
/* bfloat16 -> float, exact: the 16 bits become the high half of the float */
static inline vf vf_from_bf16(vh h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
/* float -> bfloat16, round to nearest even on the bits: x + 0x7fff + (bit 16 of x), then
   the high half (a carry out of the mantissa steps the exponent, up to inf); NaN: the high
   half with the quiet bit set, so no payload can round into an infinity */
static inline vh vh_from_f32_bf16(vf v)
{
    const __m512i x = _mm512_castps_si512(v);
    const __m512i hi = _mm512_srli_epi32(x, 16);
    const __m512i bias = _mm512_add_epi32(_mm512_and_si512(hi, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7fff));
    const __m512i rne = _mm512_srli_epi32(_mm512_add_epi32(x, bias), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(rne, nan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40))));
}

#endif
