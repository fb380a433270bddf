/* y = softmax(s * x), instantiated once per ISA by kernels/<isa>.c.
 *
 * Pass 1  r = max(x) if s >= 0, else min(x)    so that s (x - r) <= 0 for every x.
 * Guard   s = +-inf, or r = -inf with s > 0 (+inf with s < 0): every scaled entry is
 *         infinite or NaN; the row is zeros if each s x[i] is -inf, NaN otherwise. (Not the
 *         test s * r == -inf: for finite s and r that product may merely overflow.)
 * Pass 2  e = exp((x/2 - r/2) * 2s) stored to y and summed. Halving (exact, one rounding in
 *         the subtraction) keeps x - r from overflowing when x and r are +-3e38 apart and s
 *         is small; the product can only overflow to -inf, whose weight is 0 anyway. For
 *         |s| > FLT_MAX/2, 2s would overflow, and (x - r) s is used: there any overflow of
 *         x - r means an argument far below -FLT_MAX. The float lane sums are flushed into a
 *         double every QKV_SOFTMAX_BLOCK elements: each lane then adds at most 8 positive
 *         terms, so the sum is within 8 float roundings (5e-7) for any n and any data, even
 *         the equal-valued rows where rounding errors do not cancel. Costs ~3%.
 * Pass 3  y *= 1 / sum.
 * NaN: pass 1 ignores NaN lanes on x86 and propagates them on NEON; either way a NaN
 * reaches the sum in pass 2 and the whole row becomes NaN. y == x is fine: pass 2 reads
 * each vector before writing it. */
#include <assert.h>
#include <math.h>

#include "kernels/exp_core.h"

#define QKV_SOFTMAX_BLOCK (16 * VL) /* 8 iterations of 2 vectors */

static float row_extreme(const float *x, size_t n, int want_max)
{
    /* vf_max(x, acc): acc survives when x is NaN on x86 */
    vf acc0 = vf_set1(want_max ? -INFINITY : INFINITY), acc1 = acc0;
    size_t i = 0;
    if (want_max) {
        for (; i + 2 * VL <= n; i += 2 * VL) {
            acc0 = vf_max(vf_load(x + i), acc0);
            acc1 = vf_max(vf_load(x + i + VL), acc1);
        }
        for (; i + VL <= n; i += VL)
            acc0 = vf_max(vf_load(x + i), acc0);
        if (i < n)
            acc1 = vf_max(vf_load_n(x + i, n - i, -INFINITY), acc1);
        return vf_reduce_max(vf_max(acc0, acc1));
    }
    for (; i + 2 * VL <= n; i += 2 * VL) {
        acc0 = vf_min(vf_load(x + i), acc0);
        acc1 = vf_min(vf_load(x + i + VL), acc1);
    }
    for (; i + VL <= n; i += VL)
        acc0 = vf_min(vf_load(x + i), acc0);
    if (i < n)
        acc1 = vf_min(vf_load_n(x + i, n - i, INFINITY), acc1);
    return vf_reduce_min(vf_min(acc0, acc1));
}

void QKV_FN(qkv_softmax)(const float *x, float *y, size_t n, float scale)
{
    assert(n == 0 || (x != NULL && y != NULL));
    if (n == 0)
        return;
    const float r = row_extreme(x, n, scale >= 0.0f);
    if (isinf(scale) || (scale > 0.0f && r == -INFINITY) || (scale < 0.0f && r == INFINITY)) {
        /* every scaled entry is infinite or NaN: zeros only if each one is -inf. An integer
           AND, not a float conditional reduction "if (...) fill = NAN": GCC 12's -O3 loop
           vectoriser lost the NaN of that reduction (release builds returned zeros for
           rows that must be NaN, scalar and AVX2 instances). */
        int all_neg_inf = 1;
        for (size_t i = 0; i < n; i++)
            all_neg_inf &= scale * x[i] == -INFINITY;
        const float fill = all_neg_inf ? 0.0f : NAN;
        for (size_t i = 0; i < n; i++)
            y[i] = fill;
        return;
    }
    const float half = fabsf(scale) <= 0x1.fffffep+126f ? 0.5f : 1.0f;
    const vf vh = vf_set1(half), vr = vf_set1(-r * half), vs = vf_set1(scale / half);
    double sum = 0.0;
    size_t i = 0;
    while (i < n) {
        const size_t end = n - i > QKV_SOFTMAX_BLOCK ? i + QKV_SOFTMAX_BLOCK : n;
        vf s0 = vf_zero(), s1 = vf_zero();
        for (; i + 2 * VL <= end; i += 2 * VL) {
            const vf e0 = vf_exp(vf_mul(vf_fma(vf_load(x + i), vh, vr), vs));
            const vf e1 = vf_exp(vf_mul(vf_fma(vf_load(x + i + VL), vh, vr), vs));
            vf_store(y + i, e0);
            vf_store(y + i + VL, e1);
            s0 = vf_add(s0, e0);
            s1 = vf_add(s1, e1);
        }
        for (; i + VL <= end; i += VL) {
            const vf e = vf_exp(vf_mul(vf_fma(vf_load(x + i), vh, vr), vs));
            vf_store(y + i, e);
            s0 = vf_add(s0, e);
        }
        if (i < end) {
            /* tail lanes load r, which gives exp(0) = 1: only the stored lanes enter the sum */
            const vf e = vf_exp(vf_mul(vf_fma(vf_load_n(x + i, end - i, r), vh, vr), vs));
            vf_store_n(y + i, end - i, e);
            s1 = vf_add(s1, vf_load_n(y + i, end - i, 0.0f));
            i = end;
        }
        sum += vf_reduce_add_f64(vf_add(s0, s1));
    }
    const vf inv = vf_set1((float)(1.0 / sum));
    i = 0;
    for (; i + 2 * VL <= n; i += 2 * VL) {
        vf_store(y + i, vf_mul(vf_load(y + i), inv));
        vf_store(y + i + VL, vf_mul(vf_load(y + i + VL), inv));
    }
    for (; i + VL <= n; i += VL)
        vf_store(y + i, vf_mul(vf_load(y + i), inv));
    if (i < n)
        vf_store_n(y + i, n - i, vf_mul(vf_load_n(y + i, n - i, 0.0f), inv));
}
