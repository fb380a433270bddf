/* y[i] = exp(x[i]) over an array, instantiated once per ISA by kernels/<isa>.c.
 * Two vectors per iteration give the scheduler two independent dependency
 * chains of ~20 operations; a masked (or buffered) tail never touches x[n] or y[n].
 * y == x works because each vector is loaded before it is stored. */
#include "kernels/exp_core.h"

#include <assert.h>

void QKV_FN(qkv_exp)(const float *x, float *y, size_t n)
{
    assert(n == 0 || (x != NULL && y != NULL));
    size_t i = 0;
    for (; i + 2 * VL <= n; i += 2 * VL) {
        const vf a = vf_exp(vf_load(x + i));
        const vf b = vf_exp(vf_load(x + i + VL));
        vf_store(y + i, a);
        vf_store(y + i + VL, b);
    }
    if (i + VL <= n) {
        vf_store(y + i, vf_exp(vf_load(x + i)));
        i += VL;
    }
    if (i < n)
        vf_store_n(y + i, n - i, vf_exp(vf_load_n(x + i, n - i, 0.0f)));
}
