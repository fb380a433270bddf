/* Vectorized exp(x) on one register, written once against the kernels/simd/<isa>.h layer.
 *
 *   x  = clamp(x, -104, 89)           NaN passes through (vf_max/vf_min convention);
 *                                      -104 gives 0 after rounding, 89 gives +inf
 *   n  = round(x / ln2)               nearest integer, in [-150, 128]
 *   t  = x - n*ln2_hi - n*ln2_lo      two-constant Cody-Waite, |t| <= ln2/2
 *   p  = 1 + t + t^2 (c2 + c3 t + c4 t^2 + c5 t^3 + c6 t^4)
 *                                      minimax for relative error on [-ln2/2, ln2/2]:
 *                                      3.8e-9 with these float coefficients, far below 1 ULP
 *   y  = p * 2^n                       vf_scale2n: exact scaling, one rounding at the end
 *
 * Accuracy: the exhaustive sweep in tests/test_exp.c measures at most 1 ULP on
 * [-87.3, 88.7] for AVX2, AVX-512 (emulated) and NEON; the contract is 2 ULP. */
#ifndef QKV_EXP_CORE_H
#define QKV_EXP_CORE_H

#define QKV_EXP_LO (-0x1.ap+6f)        /* -104: exp < 2^-150, rounds to 0 */
#define QKV_EXP_HI (0x1.64p+6f)        /* 89: exp > FLT_MAX, rounds to +inf */
#define QKV_LOG2E (0x1.715476p+0f)     /* 1/ln2 */
#ifdef VF_UNFUSED_FMA
/* no fused multiply-add: 15 significant bits, so n * ln2_hi is exact for |n| <= 512 */
#define QKV_LN2_HI (0x1.62e4p-1f)
#define QKV_LN2_LO (0x1.7f7d1cp-20f)   /* ln2 - QKV_LN2_HI */
#else
#define QKV_LN2_HI (0x1.62e43p-1f)     /* ln2 rounded to float; the FMA keeps n * ln2_hi exact */
#define QKV_LN2_LO (-0x1.05c61p-29f)   /* ln2 - QKV_LN2_HI */
#endif
#define QKV_EXP_C2 (0x1.fffffcp-2f)
#define QKV_EXP_C3 (0x1.555492p-3f)
#define QKV_EXP_C4 (0x1.5558f2p-5f)
#define QKV_EXP_C5 (0x1.1239d4p-7f)
#define QKV_EXP_C6 (0x1.6a245p-10f)

static inline vf vf_exp(vf x)
{
    x = vf_min(vf_set1(QKV_EXP_HI), vf_max(vf_set1(QKV_EXP_LO), x));
    const vf n = vf_round(vf_mul(x, vf_set1(QKV_LOG2E)));
    vf t = vf_fnma(n, vf_set1(QKV_LN2_HI), x);
    t = vf_fnma(n, vf_set1(QKV_LN2_LO), t);
    vf p = vf_fma(vf_set1(QKV_EXP_C6), t, vf_set1(QKV_EXP_C5));
    p = vf_fma(p, t, vf_set1(QKV_EXP_C4));
    p = vf_fma(p, t, vf_set1(QKV_EXP_C3));
    p = vf_fma(p, t, vf_set1(QKV_EXP_C2));
    p = vf_fma(p, t, vf_set1(1.0f));
    p = vf_fma(p, t, vf_set1(1.0f));
    return vf_scale2n(p, n);
}

/* exp for the online-softmax steps of attention (kernels/attn_update_f32.h): the same
 * polynomial on x >= -87, and exactly 0 below (-inf: masked keys), where exp(x) < 1.7e-38
 * would be subnormal or 0. Clamped there, 2^n stays normal, so vf_scale2n never produces a
 * subnormal or underflows: on x86 cores without flush-to-zero every such vector costs a
 * microcode assist, and a masked tile holds thousands of them (measured: attn_update took
 * 35% of a sliding-window run, against 20% of a causal one). Against the true softmax the
 * flushed terms change a sum of at least 1 by less than 2e-38 each. NaN stays NaN. */
#define QKV_EXP_FLUSH (-87.0f)
static inline vf vf_exp_flush(vf x)
{
    const vf y = vf_exp(vf_max(vf_set1(QKV_EXP_FLUSH), x));
    return vf_lt_select(x, vf_set1(QKV_EXP_FLUSH), vf_zero(), y);
}

#endif
