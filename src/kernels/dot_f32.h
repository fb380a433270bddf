/* Dot product, instantiated once per ISA by kernels/<isa>.c.
 *
 * Four independent accumulators: an FMA has 4 cycles of latency and the loop is bound by
 * two loads per FMA, so four chains keep one FMA per cycle in flight. The tail is one
 * masked (or buffered) vector filled with 0. Reduction is pairwise: (a0+a1)+(a2+a3), then
 * across lanes. Error <= 2 n FLT_EPSILON sum |a_i b_i| (each lane sums n/(4 VL) terms). */

#include <assert.h>

float QKV_FN(qkv_dot)(const float *a, const float *b, size_t n)
{
    assert(n == 0 || (a != NULL && b != NULL));
    vf acc0 = vf_zero(), acc1 = vf_zero(), acc2 = vf_zero(), acc3 = vf_zero();
    size_t i = 0;
    for (; i + 4 * VL <= n; i += 4 * VL) {
        acc0 = vf_fma(vf_load(a + i), vf_load(b + i), acc0);
        acc1 = vf_fma(vf_load(a + i + VL), vf_load(b + i + VL), acc1);
        acc2 = vf_fma(vf_load(a + i + 2 * VL), vf_load(b + i + 2 * VL), acc2);
        acc3 = vf_fma(vf_load(a + i + 3 * VL), vf_load(b + i + 3 * VL), acc3);
    }
    for (; i + VL <= n; i += VL)
        acc0 = vf_fma(vf_load(a + i), vf_load(b + i), acc0);
    if (i < n)
        acc1 = vf_fma(vf_load_n(a + i, n - i, 0.0f), vf_load_n(b + i, n - i, 0.0f), acc1);
    return vf_reduce_add(vf_add(vf_add(acc0, acc1), vf_add(acc2, acc3)));
}
