/* Internal to attention/: the attention core (core.c) that qkv_attention, qkv_sdpa,
 * qkv_attention_simple, qkv_self_attention and qkv_mha_forward all run. Baseline flags. */
#ifndef QKV_ATTENTION_H
#define QKV_ATTENTION_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arena.h"
#include "kernels.h"

/* QKV_OK if d is a descriptor qkv_attention accepts (every check of include/qkv.h but the
   pointers, tp and ws), else its status */
qkv_status qkv_attention_check(const qkv_attention_desc *d);

/* qkv_attention with the kernels of t on a checked d (qkv_attention_check == QKV_OK) and
   valid pointers and tp. o may alias q (same view, d_v == d_k): every row of q is read
   before the row of o at the same place is written (mha.c writes the heads over Q).
   ws: NULL (allocated here: QKV_ERR_NOMEM) or ws_size bytes of any alignment, at least
   qkv_attention_workspace_size(d, tp's n_threads) (QKV_ERR_SIZE below what the call needs).
   Nothing is written before the workspace is settled. */
qkv_status qkv_attention_run(const qkv_kernels *t, const qkv_attention_desc *d, const float *q, const void *k,
                             const void *v, float *o, float *lse, const qkv_threadpool *tp, void *ws, size_t ws_size);

/* The descriptor of one head: q n_q x d_k, k n_kv x d_k, v n_kv x d_v, o n_q x d_v, rows at
   the given leading dimensions; scale <= 0: 1/sqrt(d_k) */
static inline qkv_attention_desc qkv_attention_one_head(size_t n_q, size_t n_kv, size_t d_k, size_t d_v, size_t ldq,
                                                        size_t ldk, size_t ldv, size_t ldo, float scale,
                                                        unsigned flags)
{
    qkv_attention_desc d;
    memset(&d, 0, sizeof d);
    d.batch = d.n_heads = 1;
    d.n_q = n_q;
    d.n_kv = n_kv;
    d.d_k = d_k;
    d.d_v = d_v;
    d.q_stride[2] = ldq;
    d.k_stride[2] = ldk;
    d.v_stride[2] = ldv;
    d.o_stride[2] = ldo;
    d.scale = scale;
    d.flags = flags;
    d.kv_dtype = QKV_F32;
    return d;
}

/* 1 if a contiguous rows x cols float matrix spans at most PTRDIFF_MAX bytes (the bound
   of qkv_gemm) */
static inline int qkv_floats_ok(size_t rows, size_t cols)
{
    return qkv_extent_ok(rows, cols, cols);
}

#endif
