/* Soft capping of attention scores (Gemma 2): x[i] = cap * tanh(x[i] / cap), in place,
 * instantiated once per ISA by kernels/<isa>.c. Contract: kernels.h, softcap.
 *
 *   t = x / cap, a = |t|                     one rounding each
 *   a < 0.625:  cap tanh t = x + x t^2 P(t^2) P: degree 5 in t^2, fitted for relative
 *                                             error (2e-10 in double; the float coefficients
 *                                             and the Horner steps dominate); x carries the
 *                                             leading term, so a tiny x loses nothing
 *   a >= 0.625: tanh a = 1 - 2 / (exp(2a) + 1)   exp of the table (<= 1 ULP measured);
 *                                             tanh >= 0.55 there, so the subtraction loses
 *                                             no more than half an ULP; exp(2a) = inf gives 1
 *              then cap copysign(tanh a, t)
 * Accuracy of tanh: within 2 ULP (tests/test_ukernels.c measures it against double tanh);
 * NaN stays NaN, +-inf become +-cap. Tails: vf_load_n / vf_store_n, never past n. */
#include "kernels/exp_core.h"

#define QKV_TANH_SMALL 0x1.4p-1f /* 0.625 */
#define QKV_TANH_P0 (-0x1.555554p-2f)
#define QKV_TANH_P1 (0x1.111068p-3f)
#define QKV_TANH_P2 (-0x1.b9eed4p-5f)
#define QKV_TANH_P3 (0x1.638e34p-6f)
#define QKV_TANH_P4 (-0x1.0c020ap-7f)
#define QKV_TANH_P5 (0x1.190cc0p-9f)

static inline vf QKV_FN(vf_softcap)(vf x, vf cap)
{
    const vf t = vf_div(x, cap), a = vf_abs(t), u = vf_mul(a, a);
    vf p = vf_fma(u, vf_set1(QKV_TANH_P5), vf_set1(QKV_TANH_P4));
    p = vf_fma(u, p, vf_set1(QKV_TANH_P3));
    p = vf_fma(u, p, vf_set1(QKV_TANH_P2));
    p = vf_fma(u, p, vf_set1(QKV_TANH_P1));
    p = vf_fma(u, p, vf_set1(QKV_TANH_P0));
    /* cap (t + t^3 P) = x + x t^2 P: x itself carries the leading term, so a t that is
       subnormal (tiny x) loses nothing */
    const vf small = vf_fma(vf_mul(x, u), p, x);
    const vf e = vf_exp(vf_add(a, a)); /* exp(2a) */
    const vf big = vf_sub(vf_set1(1.0f), vf_div(vf_set1(2.0f), vf_add(e, vf_set1(1.0f))));
    /* the sign of t on both (x + x t^2 P of x = -0 would round to +0) */
    return vf_copysign(vf_lt_select(a, vf_set1(QKV_TANH_SMALL), small, vf_mul(cap, big)), t);
}

void QKV_FN(qkv_softcap)(float *x, size_t n, float cap)
{
    const vf c = vf_set1(cap);
    size_t i = 0;
    for (; i + VL <= n; i += VL)
        vf_store(x + i, QKV_FN(vf_softcap)(vf_load(x + i), c));
    if (i < n)
        vf_store_n(x + i, n - i, QKV_FN(vf_softcap)(vf_load_n(x + i, n - i, 0.0f), c));
}
