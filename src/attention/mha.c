/* Projection-based attention drivers: qkv_self_attention and multi-head attention.
 *
 * qkv_self_attention   Q = X Wq, K = X Wk, V = X Wv by the GEMM, then the attention core
 *                      (attention/core.c) with scale 1/sqrt(d_out). One allocation (Q, K,
 *                      V, the core's and the GEMM's workspace) before z is written.
 * qkv_mha_forward      per batch item (one GEMM per projection over all its tokens):
 *                        Q = x_q Wq + bq,  K = x_kv Wk + bk,  V = x_kv Wv + bv
 *                      (K and V have n_kv_heads heads: GQA/MQA), then one call of the
 *                      attention core over every head: head h reads columns
 *                      [h E/h, (h+1) E/h) of Q and those of KV head h / (h / n_kv_heads)
 *                      of K and V (strides, no copies), and writes its output over its own
 *                      columns of Q, which thus becomes the concatenation of heads (the core
 *                      reads every row of q before it writes that row of o); finally
 *                      out = concat Wo + bo. torch_layout 1 multiplies by W^T (QKV_TRANS).
 *                      Biases are added after each GEMM (beta = 0). The projections and
 *                      the heads run on the caller's pool; results are bit-identical for
 *                      every thread count.
 *                      Workspace (qkv_mha_workspace_size_mt, exact, reused by every batch
 *                      item; one arena, arena.h): Q n_q E, K and V n_kv E_kv floats each,
 *                      the core's workspace for the pool's thread count, the GEMM workspace
 *                      of the largest projection (the bound over every ISA of the build),
 *                      each region 64-byte aligned, plus 64 bytes so that any caller
 *                      pointer can be aligned. Independent of the selected ISA and of
 *                      batch. With it the call allocates nothing and cannot fail once the
 *                      arguments are checked.
 * Accuracy: the GEMM bound per projection, then the core's. */
#include <math.h>
#include <stdlib.h>

#include "attention/attention.h"
#include "threadpool.h"

/* The workspace of qkv_self_attention and qkv_mha_forward, in arena order (arena.h):
   Q (n_q x dq), K and V (n_kv x dkv each) of one batch item, the core's workspace
   (core_bytes) and the GEMM workspace of the largest projection (gemm_bytes, the bound
   over every ISA of the build and the pool's thread count). */
typedef struct proj_ws {
    float *q, *k, *v, *core, *gemm;
    size_t core_bytes, gemm_bytes;
} proj_ws;

static void layout(qkv_arena *ar, size_t n_q, size_t n_kv, size_t dq, size_t dkv, size_t core_bytes,
                   size_t gemm_bytes, proj_ws *w)
{
    w->q = qkv_arena_array(ar, n_q, dq);
    w->k = qkv_arena_array(ar, n_kv, dkv);
    w->v = qkv_arena_array(ar, n_kv, dkv);
    w->core = qkv_arena_floats(ar, core_bytes / sizeof(float));
    w->gemm = qkv_arena_floats(ar, gemm_bytes / sizeof(float));
    w->core_bytes = core_bytes;
    w->gemm_bytes = gemm_bytes;
    if (core_bytes == 0 || gemm_bytes == 0)
        ar->overflow = 1;
}

/* y (rows x n_out) = x (rows x n_in) W [+ b], W stored (n_in x n_out) or, torch, (n_out x n_in),
   on the pool tp; w->gemm holds w->gemm_bytes >= proj_bytes() of the shape, so the GEMM
   neither allocates nor fails (its arguments were all validated by the caller) */
/* y += b on the rows of one item of BIAS_ROWS rows */
enum { BIAS_ROWS = 64 };
typedef struct bias_job {
    float *y;
    const float *b;
    size_t rows, n_out;
} bias_job;

static void bias_rows(void *ctx, size_t item, size_t slot)
{
    const bias_job *j = ctx;
    (void)slot;
    const size_t r1 = qkv_min(j->rows, (item + 1) * BIAS_ROWS);
    for (size_t i = item * BIAS_ROWS; i < r1; i++)
        for (size_t c = 0; c < j->n_out; c++)
            j->y[i * j->n_out + c] += j->b[c];
}

static void project(const qkv_kernels *t, const qkv_threadpool *tp, const float *x, size_t rows, size_t n_in,
                    const float *w, const float *b, size_t n_out, int torch, float *y, const proj_ws *ws)
{
    const qkv_trans tb = torch ? QKV_TRANS : QKV_NOTRANS;
    qkv_gemm_run(qkv_gemm_tile_for(t, QKV_NOTRANS, tb, rows, n_out, n_in), tp, QKV_NOTRANS, tb, rows, n_out, n_in,
                 1.0f, x, n_in, w, torch ? n_in : n_out, 0.0f, y, n_out, ws->gemm, ws->gemm_bytes);
    if (b == NULL)
        return;
    /* the bias on the pool too (an element-wise add: the same bits on any thread) */
    bias_job j = {y, b, rows, n_out};
    qkv_parallel_for(rows * n_out >= (1u << 16) ? tp : NULL, (rows + BIAS_ROWS - 1) / BIAS_ROWS, bias_rows, &j);
}

/* GEMM workspace bytes of a projection of rows x n_in by n_in x n_out on n_threads */
static size_t proj_bytes(size_t rows, size_t n_in, size_t n_out, int torch, size_t n_threads)
{
    return qkv_gemm_ws_bytes(QKV_NOTRANS, torch ? QKV_TRANS : QKV_NOTRANS, rows, n_out, n_in, n_threads);
}

qkv_status qkv_self_attention(const float *x, size_t n, size_t d_in, const float *wq, const float *wk,
                              const float *wv, size_t d_out, unsigned flags, float *z)
{
    if (!x || !wq || !wk || !wv || !z || !n || !d_in || !d_out || (flags & ~QKV_CAUSAL))
        return QKV_ERR_ARG;
    if (!qkv_floats_ok(n, d_in) || !qkv_floats_ok(d_in, d_out) || !qkv_floats_ok(n, d_out))
        return QKV_ERR_SIZE;
    const qkv_attention_desc a = qkv_attention_one_head(n, n, d_out, d_out, d_out, d_out, d_out, d_out,
                                                        (float)(1.0 / sqrt((double)d_out)), flags);
    if (qkv_attention_check(&a) != QKV_OK)
        return QKV_ERR_SIZE;
    qkv_arena ar = qkv_arena_sizer();
    proj_ws w;
    layout(&ar, n, n, d_out, d_out, qkv_attention_workspace_size(&a, 1), proj_bytes(n, d_in, d_out, 0, 1), &w);
    const size_t bytes = qkv_arena_bytes(&ar);
    if (bytes == 0)
        return QKV_ERR_SIZE;
    void *block = aligned_alloc(QKV_ARENA_ALIGN, qkv_round_up(bytes, QKV_ARENA_ALIGN)); /* before z is written */
    if (block == NULL)
        return QKV_ERR_NOMEM;
    ar = qkv_arena_on(block);
    layout(&ar, n, n, d_out, d_out, w.core_bytes, w.gemm_bytes, &w);
    const qkv_kernels *t = qkv_kernels_active(); /* once: the whole call runs on one ISA */
    project(t, NULL, x, n, d_in, wq, NULL, d_out, 0, w.q, &w);
    project(t, NULL, x, n, d_in, wk, NULL, d_out, 0, w.k, &w);
    project(t, NULL, x, n, d_in, wv, NULL, d_out, 0, w.v, &w);
    qkv_attention_run(t, &a, w.q, w.k, w.v, z, NULL, NULL, w.core, w.core_bytes); /* cannot fail now */
    free(block);
    return QKV_OK;
}

/* 1 if m is a valid qkv_mha (the one check of qkv_mha_forward and the workspace sizes) */
static int mha_valid(const qkv_mha *m)
{
    return m && m->wq && m->wk && m->wv && m->wo && (m->torch_layout == 0 || m->torch_layout == 1) && m->d_model &&
           m->n_heads && m->d_model % m->n_heads == 0 &&
           (m->n_kv_heads == 0 || (m->n_kv_heads <= m->n_heads && m->n_heads % m->n_kv_heads == 0));
}

/* columns of K and V: n_kv_heads heads of E/h */
static size_t kv_width(const qkv_mha *m)
{
    return (m->n_kv_heads ? m->n_kv_heads : m->n_heads) * (m->d_model / m->n_heads);
}

/* the core's view of one batch item: every head over the column slices of Q, K, V (rows
   of E and E_kv floats), the output over Q */
static qkv_attention_desc heads_desc(const qkv_mha *m, size_t n_q, size_t n_kv, unsigned flags)
{
    const size_t E = m->d_model, dh = E / m->n_heads, ekv = kv_width(m);
    qkv_attention_desc d = qkv_attention_one_head(n_q, n_kv, dh, dh, E, ekv, ekv, E, (float)(1.0 / sqrt((double)dh)),
                                                  flags);
    d.n_heads = m->n_heads;
    d.n_kv_heads = m->n_kv_heads;
    d.q_stride[1] = d.o_stride[1] = dh;
    d.k_stride[1] = d.v_stride[1] = dh;
    return d;
}

/* the layout of qkv_mha_forward on n_threads; 0 if m is invalid, a size is zero or
   overflows */
static int mha_layout(qkv_arena *ar, const qkv_mha *m, size_t n_q, size_t n_kv, size_t n_threads, proj_ws *w)
{
    if (!mha_valid(m) || !n_q || !n_kv)
        return 0;
    const size_t E = m->d_model, ekv = kv_width(m);
    if (!qkv_floats_ok(n_q, E) || !qkv_floats_ok(n_kv, E) || !qkv_floats_ok(E, E))
        return 0;
    const qkv_attention_desc d = heads_desc(m, n_q, n_kv, 0);
    const int torch = m->torch_layout != 0;
    const size_t gq = proj_bytes(n_q, E, E, torch, n_threads), gkv = proj_bytes(n_kv, E, ekv, torch, n_threads);
    layout(ar, n_q, n_kv, E, ekv, qkv_attention_workspace_size(&d, n_threads),
           gq == 0 || gkv == 0 ? 0 : qkv_max(gq, gkv), w);
    return !ar->overflow;
}

size_t qkv_mha_workspace_size_mt(const qkv_mha *m, size_t batch, size_t n_q, size_t n_kv, size_t n_threads)
{
    qkv_arena ar = qkv_arena_sizer();
    proj_ws w;
    (void)batch; /* the buffers of one batch item are reused by the next */
    return mha_layout(&ar, m, n_q, n_kv, qkv_max(n_threads, 1), &w) ? qkv_arena_bytes(&ar) : 0;
}

size_t qkv_mha_workspace_size(const qkv_mha *m, size_t n_q, size_t n_kv)
{
    return qkv_mha_workspace_size_mt(m, 1, n_q, n_kv, 1);
}

qkv_status qkv_mha_forward(const qkv_mha *m, size_t batch, const float *x_q, size_t n_q, const float *x_kv,
                           size_t n_kv, unsigned flags, float *out, void *ws, size_t ws_size, const qkv_threadpool *tp)
{
    if (!mha_valid(m) || !batch || !x_q || !n_q || !out || (x_kv && !n_kv) || (flags & ~QKV_CAUSAL) ||
        !qkv_threadpool_ok(tp))
        return QKV_ERR_ARG;
    if (!x_kv)
        n_kv = n_q; /* self-attention: the n_kv argument is ignored */
    const size_t E = m->d_model, ekv = kv_width(m), n_threads = tp ? tp->n_threads : 1;
    qkv_arena ar = qkv_arena_sizer();
    proj_ws w;
    if (!mha_layout(&ar, m, n_q, n_kv, n_threads, &w) || !qkv_floats_ok(batch, n_q * E) ||
        !qkv_floats_ok(batch, n_kv * E))
        return QKV_ERR_SIZE;
    const size_t need = qkv_arena_bytes(&ar);
    if (ws && ws_size < need)
        return QKV_ERR_SIZE;
    void *owned = NULL;
    if (!ws) {
        ws = owned = aligned_alloc(QKV_ARENA_ALIGN, need); /* need is a multiple of 64 */
        if (!ws)
            return QKV_ERR_NOMEM;
    }
    ar = qkv_arena_on(ws);
    mha_layout(&ar, m, n_q, n_kv, n_threads, &w);
    const qkv_kernels *t = qkv_kernels_active(); /* once: the whole call runs on one ISA */
    const qkv_attention_desc d = heads_desc(m, n_q, n_kv, flags);
    for (size_t b = 0; b < batch; b++) {
        const float *xq = x_q + b * n_q * E, *xkv = x_kv ? x_kv + b * n_kv * E : xq;
        project(t, tp, xq, n_q, E, m->wq, m->bq, E, m->torch_layout, w.q, &w);
        project(t, tp, xkv, n_kv, E, m->wk, m->bk, ekv, m->torch_layout, w.k, &w);
        project(t, tp, xkv, n_kv, E, m->wv, m->bv, ekv, m->torch_layout, w.v, &w);
        /* every head, written over its own columns of Q: the concatenation */
        qkv_attention_run(t, &d, w.q, w.k, w.v, w.q, NULL, tp, w.core, w.core_bytes);
        project(t, tp, w.q, n_q, E, m->wo, m->bo, E, m->torch_layout, out + b * n_q * E, &w);
    }
    free(owned);
    return QKV_OK;
}
