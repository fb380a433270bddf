/* y = softmax(s * x), instantiated once per ISA by softmax/<isa>.c after its simd/<isa>.h.
 *
 * Pass 1  r = max(x) if s >= 0, else min(x)    so that s * (x - r) <= 0 for every x:
 *                                              exp never overflows, even for x = +-1e30
 *                                              or a huge s (x - r may round to -inf: 0).
 * Guard   if s * r == -inf, every scaled entry is -inf (or NaN): zeros, or NaN if any NaN.
 * Pass 2  e = exp(s * (x - r)) stored to y and summed; lane sums are flushed into a double
 *         every QKV_SOFTMAX_BLOCK elements so the sum keeps ~1e-7 relative error at n = 1e6.
 * Pass 3  y *= 1 / sum.
 * NaN: pass 1 ignores NaN lanes on x86 and propagates them on NEON; either way a NaN
 * reaches the sum in pass 2 and the whole row becomes NaN. y == x is fine: pass 2 reads
 * each vector before writing it. */
#include <math.h>

#include "exp/exp_core.h"

#define QKV_SOFTMAX_BLOCK 1024 /* a multiple of 2 * VL for every ISA */

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
    if (n == 0)
        return;
    const float r = row_extreme(x, n, scale >= 0.0f);
    if (scale * r == -INFINITY) {
        float fill = 0.0f;
        for (size_t i = 0; i < n; i++)
            if (x[i] != x[i])
                fill = NAN;
        for (size_t i = 0; i < n; i++)
            y[i] = fill;
        return;
    }
    const vf vr = vf_set1(r), vs = vf_set1(scale);
    double sum = 0.0;
    size_t i = 0;
    while (i < n) {
        const size_t end = n - i > QKV_SOFTMAX_BLOCK ? i + QKV_SOFTMAX_BLOCK : n;
        vf s0 = vf_zero(), s1 = vf_zero();
        for (; i + 2 * VL <= end; i += 2 * VL) {
            const vf e0 = vf_exp(vf_mul(vs, vf_sub(vf_load(x + i), vr)));
            const vf e1 = vf_exp(vf_mul(vs, vf_sub(vf_load(x + i + VL), vr)));
            vf_store(y + i, e0);
            vf_store(y + i + VL, e1);
            s0 = vf_add(s0, e0);
            s1 = vf_add(s1, e1);
        }
        for (; i + VL <= end; i += VL) {
            const vf e = vf_exp(vf_mul(vs, vf_sub(vf_load(x + i), vr)));
            vf_store(y + i, e);
            s0 = vf_add(s0, e);
        }
        if (i < end) {
            /* tail lanes load r, so s * (r - r) = 0 would give exp = 1: mask them out */
            const vf e = vf_exp(vf_mul(vs, vf_sub(vf_load_n(x + i, end - i, r), vr)));
            vf_store_n(y + i, end - i, e);
            s1 = vf_add(s1, vf_load_n(y + i, end - i, 0.0f));
            i = end;
        }
        sum += (double)vf_reduce_add(vf_add(s0, s1));
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
