/* qkv_attention_simple: the textbook weightless self-attention.
 *
 *   W = softmax(X X^T) row-wise,  Z = W X          X: n x d, no scaling
 *
 * Z comes from the attention core (attention/core.c) with q = k = v = X and scale 1, so no
 * n x n buffer is needed when the weights are not asked for. If they are, each row of W is
 * n dot products (the table's dot) followed by the table's softmax, written straight into
 * the caller's n x n array. The core's workspace is allocated before any output is written
 * (so QKV_ERR_NOMEM leaves z and weights untouched); the weights pass allocates nothing.
 * Accuracy: as qkv_sdpa, and the weights as qkv_dot + qkv_softmax. */

#include "attention/attention.h"

qkv_status qkv_attention_simple(const float *x, size_t n, size_t d, float *z, float *weights)
{
    if (!x || !z || !n || !d)
        return QKV_ERR_ARG;
    if (!qkv_floats_ok(n, d) || (weights && !qkv_floats_ok(n, n)))
        return QKV_ERR_SIZE;
    const qkv_kernels *t = qkv_kernels_active(); /* once: the whole call runs on one ISA */
    const qkv_attention_desc a = qkv_attention_one_head(n, n, d, d, d, d, d, d, 1.0f, 0);
    const qkv_status st = qkv_attention_check(&a);
    if (st != QKV_OK)
        return st;
    const qkv_status run = qkv_attention_run(t, &a, x, x, x, z, NULL, NULL, NULL, 0); /* fails before writing */
    if (run != QKV_OK)
        return run;
    if (weights) {
        for (size_t i = 0; i < n; i++) {
            float *wi = weights + i * n;
            for (size_t j = 0; j < n; j++)
                wi[j] = t->dot(x + i * d, x + j * d, d); /* (X X^T)_ij */
            t->softmax(wi, wi, n, 1.0f);
        }
    }
    return QKV_OK;
}
