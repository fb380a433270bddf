/* One online-softmax step of the fused attention (attention/core.c), instantiated once per
 * ISA by kernels/<isa>.c (through kernels/instantiate.h). Contract: kernels.h, attn_update.
 *
 * The score tile is S^T: rows are keys j, columns are queries i, so the per-query running
 * max m, sum l and rescale factor a are vectors along a row and every step is vertical:
 *   mx   = max(m, max_j S[j, :])        two chains (even/odd rows) hide the maxps latency
 *   a    = exp(m - mx)                  1 where the max did not grow, 0 on the first tile
 *   P    = exp(S - mx), stored over S   -inf (masked) scores give exactly 0
 *   l    = a l + sum_j P[j, :]          two chains again
 *   O[i] *= a[i]                        only the rows whose max grew (a != 1)
 * m is kept >= -FLT_MAX (never -inf), so a query whose keys are all masked sees
 * exp(-inf - (-FLT_MAX)) = 0 and a = exp(0) = 1: never exp(-inf - -inf) = NaN.
 * Tiles: cols and d_o are multiples of VL (the driver pads them), so there are no tails.
 * Accuracy: vf_exp_flush (exp_core.h: vf_exp, <= 2 ULP, the qkv_exp contract, and exactly 0
 * where exp(x) < 1.7e-38, x < -87: no subnormal results, which cost microcode assists);
 * sums of at most a tile of terms in float. */
#include <assert.h>
#include <float.h>
#include <math.h>

#include "kernels/exp_core.h"

void QKV_FN(qkv_attn_update)(size_t rows, size_t cols, float *s, size_t lds, float *m, float *l, float *o,
                             size_t ldo, size_t d_o)
{
    assert(rows >= 1 && cols % VL == 0 && d_o % VL == 0);
    for (size_t c = 0; c < cols; c += VL) {
        float *sc = s + c;
        vf mx0 = vf_load(m + c), mx1 = vf_set1(-FLT_MAX);
        size_t j = 0;
        for (; j + 2 <= rows; j += 2) {
            mx0 = vf_max(vf_load(sc + j * lds), mx0);
            mx1 = vf_max(vf_load(sc + (j + 1) * lds), mx1);
        }
        if (j < rows)
            mx0 = vf_max(vf_load(sc + j * lds), mx0);
        const vf mx = vf_max(mx0, mx1);
        const vf a = vf_exp_flush(vf_sub(vf_load(m + c), mx));
        vf_store(m + c, mx);
        vf sum0 = vf_zero(), sum1 = vf_zero();
        for (j = 0; j + 2 <= rows; j += 2) {
            const vf p0 = vf_exp_flush(vf_sub(vf_load(sc + j * lds), mx));
            const vf p1 = vf_exp_flush(vf_sub(vf_load(sc + (j + 1) * lds), mx));
            vf_store(sc + j * lds, p0);
            vf_store(sc + (j + 1) * lds, p1);
            sum0 = vf_add(sum0, p0);
            sum1 = vf_add(sum1, p1);
        }
        if (j < rows) {
            const vf p0 = vf_exp_flush(vf_sub(vf_load(sc + j * lds), mx));
            vf_store(sc + j * lds, p0);
            sum0 = vf_add(sum0, p0);
        }
        vf_store(l + c, vf_fma(a, vf_load(l + c), vf_add(sum0, sum1)));
        float av[VL];
        vf_store(av, a);
        for (size_t i = 0; i < VL; i++) {
            if (av[i] == 1.0f)
                continue;
            const vf ai = vf_set1(av[i]);
            float *oi = o + (c + i) * ldo;
            for (size_t t = 0; t < d_o; t += VL)
                vf_store(oi + t, vf_mul(ai, vf_load(oi + t)));
        }
    }
}

/* One row of scores, keys contiguous (the decode path): the same step for a single query.
   The row's max as qkv_softmax takes it (row_extreme), P = exp(s - mx) in place with the
   sum in two chains (tail lanes loaded as -inf: exp gives 0). */
float QKV_FN(qkv_attn_row)(float *s, size_t n, float *m, float *l)
{
    assert(n >= 1 && *m >= -FLT_MAX);
    const float rmax = row_extreme(s, n, 1); /* kernels/softmax_f32.h */
    const float mxs = rmax > *m ? rmax : *m;
    const vf mx = vf_set1(mxs);
    vf sum0 = vf_zero(), sum1 = vf_zero();
    size_t j = 0;
    for (; j + 2 * VL <= n; j += 2 * VL) {
        const vf p0 = vf_exp_flush(vf_sub(vf_load(s + j), mx)), p1 = vf_exp_flush(vf_sub(vf_load(s + j + VL), mx));
        vf_store(s + j, p0);
        vf_store(s + j + VL, p1);
        sum0 = vf_add(sum0, p0);
        sum1 = vf_add(sum1, p1);
    }
    for (; j + VL <= n; j += VL) {
        const vf p0 = vf_exp_flush(vf_sub(vf_load(s + j), mx));
        vf_store(s + j, p0);
        sum0 = vf_add(sum0, p0);
    }
    if (j < n) {
        const vf p1 = vf_exp_flush(vf_sub(vf_load_n(s + j, n - j, -INFINITY), mx));
        vf_store_n(s + j, n - j, p1);
        sum1 = vf_add(sum1, p1);
    }
    float a[VL];
    vf_store(a, vf_exp_flush(vf_sub(vf_set1(*m), mx)));
    *l = a[0] * *l + vf_reduce_add(vf_add(sum0, sum1));
    *m = mxs;
    return a[0];
}
