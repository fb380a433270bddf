/* qkv_sdpa: scaled dot-product attention of one head, a thin caller of the attention core
 * (attention/core.c: the tiling, the visibility rule, the accuracy and the workspace are
 * described there). */
#include <math.h>

#include "attention/attention.h"

qkv_status qkv_sdpa(const float *q, const float *k, const float *v, float *o, size_t n_q, size_t n_kv, size_t d_k,
                    size_t d_v, float scale, unsigned flags)
{
    if (!q || !k || !v || !o)
        return QKV_ERR_ARG;
    const qkv_attention_desc d = qkv_attention_one_head(n_q, n_kv, d_k, d_v, d_k, d_k, d_v, d_v, scale, flags);
    const qkv_status st = qkv_attention_check(&d);
    if (st != QKV_OK)
        return st;
    return qkv_attention_run(qkv_kernels_active(), &d, q, k, v, o, NULL, NULL, NULL, 0);
}
