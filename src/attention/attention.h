/* Internal to attention/: the fused sdpa kernel on strided operands, shared by qkv_sdpa,
 * qkv_attention_simple, qkv_self_attention and qkv_mha_forward. Baseline flags. */
#ifndef QKV_ATTENTION_H
#define QKV_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "kernels.h"

/* One head: o = softmax(scale q k^T [+ causal mask]) v, row i of q at q + i * ldq, etc.
   n_q, n_kv, d_k, d_v >= 1; ldq, ldk >= d_k; ldv, ldo >= d_v; scale finite and > 0.
   o may be the same view as q (o == q, ldo == ldq, d_v == d_k): the kernel reads a row of
   q only before it writes that row of o (mha.c writes heads in place over Q). */
typedef struct qkv_sdpa_view {
    const float *q, *k, *v;
    float *o;
    size_t n_q, n_kv, d_k, d_v;
    size_t ldq, ldk, ldv, ldo;
    float scale;
    unsigned flags;
} qkv_sdpa_view;

/* Bytes of workspace qkv_sdpa_run needs for heads of d_k x d_v, at any alignment:
   independent of n_q, n_kv and of the ISA. 0 if the size overflows size_t. */
size_t qkv_sdpa_workspace_size(size_t d_k, size_t d_v);

/* Runs the kernel with the kernels of t; ws holds qkv_sdpa_workspace_size(d_k, d_v) bytes.
   Cannot fail. */
void qkv_sdpa_run(const qkv_kernels *t, const qkv_sdpa_view *a, void *ws);

/* qkv_sdpa_run on a workspace allocated and freed here: QKV_ERR_SIZE / QKV_ERR_NOMEM before
   anything is written, else QKV_OK. */
qkv_status qkv_sdpa_alloc_run(const qkv_kernels *t, const qkv_sdpa_view *a);

/* 1 if a contiguous rows x cols float matrix spans at most PTRDIFF_MAX bytes (the bound
   of qkv_gemm) */
static inline int qkv_floats_ok(size_t rows, size_t cols)
{
    return qkv_extent_ok(rows, cols, cols);
}

#endif
