/* Projection-based attention drivers: qkv_self_attention and multi-head attention.
 *
 * qkv_self_attention   Q = X Wq, K = X Wk, V = X Wv by qkv_gemm, then the fused sdpa
 *                      kernel (attention/sdpa.c) with scale 1/sqrt(d_out).
 *                      Workspace: 3 n d_out floats + the sdpa tile workspace + GEMM
 *                      packing, one allocation before z is written.
 * qkv_mha_forward      per batch item (one GEMM per projection over all its tokens):
 *                        Q = x_q Wq + bq,  K = x_kv Wk + bk,  V = x_kv Wv + bv
 *                      then per head h the sdpa kernel on the column slice
 *                      [h E/h, (h+1) E/h) of Q, K, V (leading dimension E, no copies),
 *                      its output written in place over the same slice of Q, which thus
 *                      becomes the concatenation of heads (the kernel reads a row of q
 *                      before it writes that row of o); finally out = concat Wo + bo.
 *                      torch_layout 1 multiplies by W^T through qkv_gemm's QKV_TRANS.
 *                      Biases are added after each GEMM (beta = 0).
 *                      Workspace (qkv_mha_workspace_size, exact, reused by every batch
 *                      item): Q n_q E, K and V n_kv E floats each, the sdpa tile workspace
 *                      for heads of E/h, the GEMM packing of the largest projection (the
 *                      bound over every ISA of the build: qkv_gemm_workspace_floats), each
 *                      region rounded up to 64 bytes, plus 64 bytes so that any caller
 *                      pointer can be aligned. Independent of the selected ISA and of
 *                      batch. With it the call allocates nothing and cannot fail once the
 *                      arguments are checked.
 * Every work item (batch x head) is independent: ready for a caller's thread pool.
 * Accuracy: qkv_gemm's bound per projection, then qkv_sdpa's. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "attention/attention.h"

static size_t round_up64(size_t bytes)
{
    return (bytes + 63) / 64 * 64;
}

/* sum of the regions, each rounded up to 64 bytes; 0 on overflow */
static size_t regions_bytes(const size_t *floats, int count)
{
    size_t total = 0;
    for (int i = 0; i < count; i++) {
        size_t b;
        if (!qkv_mul_ok(floats[i], sizeof(float), &b) || b > SIZE_MAX - 64 || total > SIZE_MAX - round_up64(b))
            return 0;
        total += round_up64(b);
    }
    return total;
}

/* the regions of regions_bytes() carved out of base, in order */
static void carve(float *base, const size_t *floats, int count, float **out)
{
    for (int i = 0; i < count; i++) {
        out[i] = base;
        base += round_up64(floats[i] * sizeof(float)) / sizeof(float);
    }
}

/* y (rows x n_out) = x (rows x n_in) W [+ b], W stored (n_in x n_out) or, torch, (n_out x n_in);
   gws: qkv_gemm_workspace_floats() of the shape, so the GEMM neither allocates nor fails
   (its arguments were all validated by the caller) */
static void project(const qkv_kernels *t, const float *x, size_t rows, size_t n_in, const float *w, const float *b,
                    size_t n_out, int torch, float *y, float *gws)
{
    qkv_gemm_ws(t->gemm, QKV_NOTRANS, torch ? QKV_TRANS : QKV_NOTRANS, rows, n_out, n_in, 1.0f, x, n_in, w,
                torch ? n_in : n_out, 0.0f, y, n_out, gws);
    if (b == NULL)
        return;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < n_out; j++)
            y[i * n_out + j] += b[j];
}

/* GEMM workspace floats of a projection of rows x n_in by n_in x n_out */
static size_t project_ws(size_t rows, size_t n_in, size_t n_out, int torch)
{
    return qkv_gemm_workspace_floats(QKV_NOTRANS, torch ? QKV_TRANS : QKV_NOTRANS, rows, n_out, n_in);
}

qkv_status qkv_self_attention(const float *x, size_t n, size_t d_in, const float *wq, const float *wk,
                              const float *wv, size_t d_out, unsigned flags, float *z)
{
    if (!x || !wq || !wk || !wv || !z || !n || !d_in || !d_out || (flags & ~QKV_CAUSAL))
        return QKV_ERR_ARG;
    size_t nd;
    if (!qkv_floats_ok(n, d_in) || !qkv_floats_ok(d_in, d_out) || !qkv_floats_ok(n, d_out) ||
        !qkv_mul_ok(n, d_out, &nd))
        return QKV_ERR_SIZE;
    const size_t sdpa_bytes = qkv_sdpa_workspace_size(d_out, d_out);
    const size_t regions[5] = {nd, nd, nd, sdpa_bytes / sizeof(float), project_ws(n, d_in, d_out, 0)};
    const size_t bytes = regions_bytes(regions, 5);
    if (sdpa_bytes == 0 || bytes == 0)
        return QKV_ERR_SIZE;
    float *ws = aligned_alloc(64, bytes); /* everything, before z is written */
    if (ws == NULL)
        return QKV_ERR_NOMEM;
    float *p[5];
    carve(ws, regions, 5, p);
    float *q = p[0], *k = p[1], *v = p[2], *tile = p[3], *gws = p[4];
    const qkv_kernels *t = qkv_kernels_active(); /* once: the whole call runs on one ISA */
    project(t, x, n, d_in, wq, NULL, d_out, 0, q, gws);
    project(t, x, n, d_in, wk, NULL, d_out, 0, k, gws);
    project(t, x, n, d_in, wv, NULL, d_out, 0, v, gws);
    const qkv_sdpa_view a = {q, k, v, z, n, n, d_out, d_out, d_out, d_out, d_out, d_out,
                             (float)(1.0 / sqrt((double)d_out)), flags};
    qkv_sdpa_run(t, &a, tile);
    free(ws);
    return QKV_OK;
}

/* 1 if m is a valid qkv_mha (the one check of qkv_mha_forward and qkv_mha_workspace_size) */
static int mha_valid(const qkv_mha *m)
{
    return m && m->wq && m->wk && m->wv && m->wo && (m->torch_layout == 0 || m->torch_layout == 1) && m->d_model &&
           m->n_heads && m->d_model % m->n_heads == 0;
}

/* region sizes in floats (Q, K, V of one batch item, sdpa tile, GEMM packing for the
   largest projection); 0 if m is invalid or a size overflows */
static int mha_regions(const qkv_mha *m, size_t n_q, size_t n_kv, size_t r[5])
{
    if (!mha_valid(m) || !n_q || !n_kv)
        return 0;
    const size_t E = m->d_model, dh = E / m->n_heads;
    if (!qkv_floats_ok(n_q, E) || !qkv_floats_ok(n_kv, E) || !qkv_floats_ok(E, E))
        return 0;
    const size_t sdpa_bytes = qkv_sdpa_workspace_size(dh, dh);
    if (sdpa_bytes == 0)
        return 0;
    r[0] = n_q * E;
    r[1] = r[2] = n_kv * E;
    r[3] = sdpa_bytes / sizeof(float);
    const int torch = m->torch_layout != 0;
    const size_t gq = project_ws(n_q, E, E, torch), gkv = project_ws(n_kv, E, E, torch);
    r[4] = gq > gkv ? gq : gkv;
    return 1;
}

size_t qkv_mha_workspace_size(const qkv_mha *m, size_t n_q, size_t n_kv)
{
    size_t r[5];
    if (!mha_regions(m, n_q, n_kv, r))
        return 0;
    const size_t b = regions_bytes(r, 5);
    return b == 0 || b > SIZE_MAX - 64 ? 0 : b + 64;
}

qkv_status qkv_mha_forward(const qkv_mha *m, size_t batch, const float *x_q, size_t n_q, const float *x_kv,
                           size_t n_kv, unsigned flags, float *out, void *ws, size_t ws_size)
{
    if (!mha_valid(m) || !batch || !x_q || !n_q || !out || (x_kv && !n_kv) || (flags & ~QKV_CAUSAL))
        return QKV_ERR_ARG;
    if (!x_kv)
        n_kv = n_q; /* self-attention: the n_kv argument is ignored */
    const size_t E = m->d_model, dh = E / m->n_heads;
    const size_t need = qkv_mha_workspace_size(m, n_q, n_kv);
    if (need == 0 || !qkv_floats_ok(batch, n_q * E) || !qkv_floats_ok(batch, n_kv * E))
        return QKV_ERR_SIZE;
    if (ws && ws_size < need)
        return QKV_ERR_SIZE;
    void *owned = NULL;
    if (!ws) {
        ws = owned = aligned_alloc(64, need); /* need is a multiple of 64 */
        if (!ws)
            return QKV_ERR_NOMEM;
    }
    size_t r[5];
    mha_regions(m, n_q, n_kv, r);
    float *p[5];
    carve((float *)(((uintptr_t)ws + 63) & ~(uintptr_t)63), r, 5, p);
    float *q = p[0], *k = p[1], *v = p[2], *tile = p[3], *gws = p[4];
    const qkv_kernels *t = qkv_kernels_active(); /* once: the whole call runs on one ISA */
    const float scale = (float)(1.0 / sqrt((double)dh));
    for (size_t b = 0; b < batch; b++) {
        const float *xq = x_q + b * n_q * E, *xkv = x_kv ? x_kv + b * n_kv * E : xq;
        project(t, xq, n_q, E, m->wq, m->bq, E, m->torch_layout, q, gws);
        project(t, xkv, n_kv, E, m->wk, m->bk, E, m->torch_layout, k, gws);
        project(t, xkv, n_kv, E, m->wv, m->bv, E, m->torch_layout, v, gws);
        for (size_t h = 0; h < m->n_heads; h++) {
            const size_t c = h * dh;
            const qkv_sdpa_view a = {q + c, k + c, v + c, q + c, n_q, n_kv, dh, dh, E, E, E, E, scale, flags};
            qkv_sdpa_run(t, &a, tile); /* head h over its own slice of Q: the concatenation */
        }
        project(t, q, n_q, E, m->wo, m->bo, E, m->torch_layout, out + b * n_q * E, gws);
    }
    free(owned);
    return QKV_OK;
}
