/* Vector layer for AArch64 Advanced SIMD: 4 float lanes in a float32x4_t.
 * Same names and conventions as simd/avx2.h. NEON has no masked loads: a tail of r < 4
 * elements goes through a 4-float stack buffer, so no byte past p[r-1] is touched.
 * vmaxq/vminq return NaN when either operand is NaN, which satisfies the convention. */
#ifndef QKV_SIMD_NEON_H
#define QKV_SIMD_NEON_H

#include <arm_neon.h>
#include <stddef.h>
#include <stdint.h>

#define VL 4
typedef float32x4_t vf;

static inline vf vf_zero(void) { return vdupq_n_f32(0.0f); }
static inline vf vf_set1(float a) { return vdupq_n_f32(a); }
static inline vf vf_load(const float *p) { return vld1q_f32(p); }
static inline void vf_store(float *p, vf v) { vst1q_f32(p, v); }
static inline vf vf_add(vf a, vf b) { return vaddq_f32(a, b); }
static inline vf vf_sub(vf a, vf b) { return vsubq_f32(a, b); }
static inline vf vf_mul(vf a, vf b) { return vmulq_f32(a, b); }
static inline vf vf_fma(vf a, vf b, vf c) { return vfmaq_f32(c, a, b); }
static inline vf vf_fnma(vf a, vf b, vf c) { return vfmsq_f32(c, a, b); }
static inline vf vf_max(vf c, vf x) { return vmaxq_f32(c, x); }
static inline vf vf_min(vf c, vf x) { return vminq_f32(c, x); }
static inline vf vf_div(vf a, vf b) { return vdivq_f32(a, b); }
static inline vf vf_abs(vf x) { return vabsq_f32(x); }
static inline vf vf_copysign(vf mag, vf sgn)
{
    return vbslq_f32(vdupq_n_u32(0x80000000u), sgn, mag); /* sign bit from sgn, the rest from mag */
}
/* a < b ? x : y per lane (false for NaN) */
static inline vf vf_lt_select(vf a, vf b, vf x, vf y) { return vbslq_f32(vcltq_f32(a, b), x, y); }
static inline vf vf_round(vf x) { return vrndnq_f32(x); }

/* p * 2^n for integral n in [-150, 128], split into two normal power-of-two factors as
   in simd/avx2.h so that only the last multiply rounds. */
static inline vf vf_scale2n(vf p, vf n)
{
    const int32x4_t ni = vcvtq_s32_f32(n);
    const int32x4_t n1 = vshrq_n_s32(ni, 1);
    const int32x4_t n2 = vsubq_s32(ni, n1);
    const int32x4_t bias = vdupq_n_s32(127);
    const vf s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
    const vf s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
    return vmulq_f32(vmulq_f32(p, s1), s2);
}

static inline vf vf_load_n(const float *p, size_t r, float fill)
{
    float buf[VL] = {fill, fill, fill, fill};
    for (size_t i = 0; i < r; i++)
        buf[i] = p[i];
    return vld1q_f32(buf);
}

static inline void vf_store_n(float *p, size_t r, vf v)
{
    float buf[VL];
    vst1q_f32(buf, v);
    for (size_t i = 0; i < r; i++)
        p[i] = buf[i];
}

/* Lane-indexed FMA (GEMM microkernel, kernels/gemm_f32.h): c + a[lane] * b with the
   multiplier taken from a lane of a register, so MR = 8 values of A cost 2 registers, not
   8 (the 8 x 12 tile: 24 accumulators + 3 B + 2 A = 29 of 32, no spills). The lane must
   be a constant after unrolling; the switch folds away. */
#define VF_FMA_LANE 1
static inline vf vf_fma_lane(vf a, vf b, int lane, vf c)
{
    switch (lane) {
    case 0: return vfmaq_laneq_f32(c, b, a, 0);
    case 1: return vfmaq_laneq_f32(c, b, a, 1);
    case 2: return vfmaq_laneq_f32(c, b, a, 2);
    default: return vfmaq_laneq_f32(c, b, a, 3);
    }
}

/* v with lane replaced by *p (lane constant after unrolling) */
static inline vf vf_load_lane(const float *p, vf v, int lane)
{
    switch (lane) {
    case 0: return vld1q_lane_f32(p, v, 0);
    case 1: return vld1q_lane_f32(p, v, 1);
    case 2: return vld1q_lane_f32(p, v, 2);
    default: return vld1q_lane_f32(p, v, 3);
    }
}

static inline float vf_reduce_add(vf v) { return vaddvq_f32(v); }
static inline double vf_reduce_add_f64(vf v)
{
    return vaddvq_f64(vaddq_f64(vcvt_f64_f32(vget_low_f32(v)), vcvt_high_f64_f32(v)));
}
static inline float vf_reduce_max(vf v) { return vmaxvq_f32(v); }
static inline float vf_reduce_min(vf v) { return vminvq_f32(v); }

/* ---- 16-bit floats (kernels/convert_f32.h): vh holds VL binary16 or bfloat16 values ----
 * Tails of r < 4 go through a 4-element stack buffer, like the float ones. */
typedef uint16x4_t vh;

static inline vh vh_load(const uint16_t *p) { return vld1_u16(p); }
static inline void vh_store(uint16_t *p, vh h) { vst1_u16(p, h); }
static inline vh vh_load_n(const uint16_t *p, size_t r)
{
    uint16_t buf[VL] = {0, 0, 0, 0};
    for (size_t i = 0; i < r; i++)
        buf[i] = p[i];
    return vld1_u16(buf);
}
static inline void vh_store_n(uint16_t *p, size_t r, vh h)
{
    uint16_t buf[VL];
    vst1_u16(buf, h);
    for (size_t i = 0; i < r; i++)
        p[i] = buf[i];
}

/* binary16 <-> float: fcvtl (exact) and fcvtn (rounds by FPCR: to nearest even, the Linux
   default; overflow to inf, NaN quieted) */
static inline vf vf_from_f16(vh h) { return vcvt_f32_f16(vreinterpret_f16_u16(h)); }
static inline vh vh_from_f32_f16(vf v) { return vreinterpret_u16_f16(vcvt_f16_f32(v)); }
/* bfloat16 -> float, exact: the 16 bits become the high half of the float */
static inline vf vf_from_bf16(vh h) { return vreinterpretq_f32_u32(vshll_n_u16(h, 16)); }
/* float -> bfloat16, round to nearest even on the bits (x + 0x7fff + bit 16 of x, high
   half); NaN: the high half with the quiet bit set */
static inline vh vh_from_f32_bf16(vf v)
{
    const uint32x4_t x = vreinterpretq_u32_f32(v);
    const uint32x4_t bias = vaddq_u32(vandq_u32(vshrq_n_u32(x, 16), vdupq_n_u32(1)), vdupq_n_u32(0x7fff));
    const uint16x4_t rne = vshrn_n_u32(vaddq_u32(x, bias), 16);
    const uint16x4_t qnan = vorr_u16(vshrn_n_u32(x, 16), vdup_n_u16(0x40));
    const uint16x4_t ordered = vmovn_u32(vceqq_f32(v, v)); /* all ones unless NaN */
    return vbsl_u16(ordered, rne, qnan);
}

#endif
