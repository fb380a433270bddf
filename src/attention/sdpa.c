/* qkv_sdpa: scaled dot-product attention in one fused pass, FlashAttention-2 style.
 *
 *   O = softmax(scale Q K^T [+ causal mask]) V     Q: n_q x d_k, K: n_kv x d_k, V: n_kv x d_v
 *
 * Tiled path (n_q > 4). Q row tiles of BR = 96 queries x KV tiles of BC = 96 keys. Per Q
 * tile, Q^T is packed once into the GEMM B micropanels (d_k x NR, zero-padded queries).
 * Per KV tile:
 *   S^T = scale K Q^T    BC x BR scores by the table's GEMM microkernel: K rows read in
 *                        place as the A operand (a partial last row panel is copied to a
 *                        zero-padded scratch), so K is never packed or transposed
 *   causal mask          tiles past the diagonal are never visited; in the diagonal tiles
 *                        the hidden scores (key j > query i + n_kv - n_q) are set to -inf
 *   online softmax       the table's attn_update (kernels/attn_update_f32.h): per
 *                        query running max m and sum l, P = exp(S - m) over S, O rescaled
 *                        only when m grew; S^T makes all of it vertical vector code
 *   O += P V             microkernel again: A = P read in place from S^T (rs 1, cs BR, the
 *                        packed-A layout), B = the V tile packed into NR-column micropanels
 * then O / l once per Q tile; a query with no visible key has l = 0 and gets zeros.
 * Why S^T and not S: K then serves as the in-place A operand (no per-tile transpose of K),
 * Q^T is packed once per Q tile, and the softmax runs along vector lanes, not reductions.
 * BR = BC = 96 is a multiple of every ISA's MR (4, 6, 8, 12) and NR (4, 12, 16, 32), so all
 * microkernel calls are full tiles; the S^T tile (36 KiB) and a V panel stay in L1/L2.
 * Why the table's GEMM microkernel rather than a fused per-ISA tile kernel: it already runs
 * at ~0.87 of FMA peak on these shapes (k = 64 and k = 96); profiled at 4096 x 64 (AVX2)
 * the microkernel takes 77% of the time, attn_update 16%, packing and masking 7%, so a
 * fused kernel could only save the S^T round trip through L1 while duplicating the
 * register tiling of every ISA. Measured (AVX2, one core): 0.72 of peak, 1.35x an
 * OpenBLAS + SLEEF unfused composite at N = 4096 (bench/attention).
 *
 * Decode path (n_q <= 4). The tile above would be 96 / n_q times too tall. Instead the KV
 * tiles (BD = 128 keys) are streamed once; for each query the row of scores comes from
 * gemv_t, the softmax step is a scalar max plus the table's exp, and O = a O + P V is one
 * gemv_n with beta = a. K and V tiles stay in cache across the <= 4 queries.
 *
 * Workspace (qkv_sdpa_workspace_size, bytes, independent of n_q, n_kv and the ISA):
 *   Q^T panels 96 d_k + S^T 96 x 96 + V panels 96 x rup96(d_v) + K edge 16 d_k
 *   + O accumulator 96 x rup96(d_v) + m, l 2 x 96 floats  (d = 64: 137 KiB).
 * Accuracy: scores and P V carry the GEMM bound (k FLT_EPSILON sum |a b|); exp <= 1 ULP;
 * weights are relative to the running max, so logits of any magnitude are safe. */
#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"

enum {
    BR = 96,       /* queries per tile: a multiple of every MR and NR (and vector length) */
    BC = 96,       /* keys per tile: a multiple of every MR (48 .. 192 measured within 3%) */
    MR_MAX = 16,   /* rows of the K edge scratch */
    DECODE_Q = 4,  /* n_q up to this takes the decode path */
    DECODE_KV = 128 /* keys per decode tile; DECODE_Q x DECODE_KV <= BR x BC */
};

static size_t min_size(size_t x, size_t y)
{
    return x < y ? x : y;
}

static size_t round_up(size_t x, size_t m)
{
    return (x + m - 1) / m * m;
}

/* float offsets of the workspace regions, each a multiple of 16 floats (64 bytes) */
typedef struct ws_layout {
    size_t qt, st, vp, kp, oacc, m, l, total;
} ws_layout;

/* 0 on overflow */
static int layout(size_t d_k, size_t d_v, ws_layout *w)
{
    size_t qt, vp, kp, off = 0;
    size_t oacc;
    if (d_v > SIZE_MAX - BR || !qkv_mul_ok(round_up(d_v, BR), BC, &vp) || !qkv_mul_ok(round_up(d_v, BR), BR, &oacc) ||
        !qkv_mul_ok(d_k, BR, &qt) ||
        !qkv_mul_ok(d_k, MR_MAX, &kp))
        return 0;
    const size_t len[7] = {qt, BC * BR, vp, kp, oacc, BR, BR};
    size_t *dst[7] = {&w->qt, &w->st, &w->vp, &w->kp, &w->oacc, &w->m, &w->l};
    for (int i = 0; i < 7; i++) {
        *dst[i] = off;
        const size_t n = round_up(len[i], 16);
        if (n < len[i] || off > SIZE_MAX - n)
            return 0;
        off += n;
    }
    w->total = off;
    return 1;
}

size_t qkv_sdpa_workspace_size(size_t d_k, size_t d_v)
{
    ws_layout w;
    size_t bytes;
    if (!layout(d_k, d_v, &w) || !qkv_mul_ok(w.total, sizeof(float), &bytes))
        return 0;
    return bytes;
}

/* number of keys query i sees: j <= i + n_kv - n_q, clamped to [0, n_kv] */
static size_t visible(const qkv_sdpa_view *a, size_t i)
{
    if (!(a->flags & QKV_CAUSAL))
        return a->n_kv;
    if (i + 1 + a->n_kv <= a->n_q)
        return 0;
    return min_size(a->n_kv, i + 1 + a->n_kv - a->n_q);
}

/* rows x cols accumulator (leading dimension ldacc) divided by l into o; l == 0 (no
   visible key) gives zeros, a NaN l propagates */
static void normalise(size_t rows, size_t cols, const float *acc, size_t ldacc, const float *l, float *o, size_t ldo)
{
    for (size_t i = 0; i < rows; i++) {
        const float inv = l[i] == 0.0f ? 0.0f : 1.0f / l[i];
        for (size_t c = 0; c < cols; c++)
            o[i * ldo + c] = acc[i * ldacc + c] * inv;
    }
}

static void sdpa_decode(const qkv_kernels *t, const qkv_sdpa_view *a, float *ws, const ws_layout *w)
{
    const qkv_gemm_kernels *g = t->gemm;
    float *s = ws + w->st, *oacc = ws + w->oacc, *m = ws + w->m, *l = ws + w->l;
    size_t kv_end = 0;
    for (size_t i = 0; i < a->n_q; i++) {
        m[i] = -FLT_MAX;
        l[i] = 0.0f;
        kv_end = visible(a, i) > kv_end ? visible(a, i) : kv_end;
    }
    for (size_t j0 = 0; j0 < kv_end; j0 += DECODE_KV) {
        for (size_t i = 0; i < a->n_q; i++) {
            const size_t vis = visible(a, i);
            if (vis <= j0)
                continue;
            const size_t bd = min_size(DECODE_KV, vis - j0);
            float *si = s + i * DECODE_KV, *oi = oacc + i * a->d_v;
            /* s = scale K_tile q_i */
            g->gemv_t(bd, a->d_k, a->scale, a->q + i * a->ldq, a->k + j0 * a->ldk, a->ldk, 0.0f, si);
            float mx = m[i];
            for (size_t j = 0; j < bd; j++)
                mx = si[j] > mx ? si[j] : mx;
            float alpha = m[i] - mx; /* a = exp(m - mx): 0 on the first tile (m = -FLT_MAX) */
            for (size_t j = 0; j < bd; j++)
                si[j] -= mx;
            t->exp(si, si, bd);
            t->exp(&alpha, &alpha, 1);
            float sum = 0.0f;
            for (size_t j = 0; j < bd; j++)
                sum += si[j];
            l[i] = alpha * l[i] + sum;
            m[i] = mx;
            /* o_i = P V_tile + a o_i; beta == 0 (first tile) never reads o_i */
            g->gemv_n(a->d_v, bd, 1.0f, si, 1, a->v + j0 * a->ldv, a->ldv, alpha, oi);
        }
    }
    for (size_t i = 0; i < a->n_q; i++)
        if (visible(a, i) == 0)
            memset(oacc + i * a->d_v, 0, a->d_v * sizeof(float)); /* never written above */
    normalise(a->n_q, a->d_v, oacc, a->d_v, l, a->o, a->ldo);
}

/* S^T (bc x BR, rows rounded up to MR) = scale K[j0 .. j0 + bc) Q^T */
static void scores(const qkv_gemm_kernels *g, const qkv_sdpa_view *a, size_t j0, size_t bc, const float *qt,
                   float *kp, float *st)
{
    const size_t MR = g->mr, NR = g->nr, d_k = a->d_k;
    for (size_t r = 0; r < bc; r += MR) {
        const float *kr = a->k + (j0 + r) * a->ldk;
        size_t ld = a->ldk;
        if (j0 + r + MR > a->n_kv) { /* last rows of K: zero-padded copy, never read past n_kv */
            const size_t rows = a->n_kv - j0 - r;
            for (size_t i = 0; i < MR; i++)
                for (size_t p = 0; p < d_k; p++)
                    kp[i * d_k + p] = i < rows ? kr[i * a->ldk + p] : 0.0f;
            kr = kp;
            ld = d_k;
        }
        for (size_t c = 0; c < BR; c += NR)
            g->ukernel(d_k, kr, ld, 1, qt + c * d_k, st + r * BR + c, BR, a->scale, 0.0f);
    }
}

static void sdpa_tiled(const qkv_kernels *t, const qkv_sdpa_view *a, float *ws, const ws_layout *w)
{
    const qkv_gemm_kernels *g = t->gemm;
    const size_t MR = g->mr, NR = g->nr, d_k = a->d_k, d_v = a->d_v;
    const size_t dvp = round_up(d_v, NR);
    assert(BR % MR == 0 && BR % NR == 0 && BC % MR == 0 && MR <= MR_MAX);
    float *qt = ws + w->qt, *st = ws + w->st, *vp = ws + w->vp, *kp = ws + w->kp, *oacc = ws + w->oacc;
    float *m = ws + w->m, *l = ws + w->l;

    for (size_t i0 = 0; i0 < a->n_q; i0 += BR) {
        const size_t br = min_size(BR, a->n_q - i0);
        /* Q^T micropanels: element (p, query c) at qt[(c / NR) NR d_k + p NR + c % NR] */
        for (size_t c = 0; c < BR; c++) {
            float *dst = qt + (c / NR) * NR * d_k + c % NR;
            for (size_t p = 0; p < d_k; p++)
                dst[p * NR] = c < br ? a->q[(i0 + c) * a->ldq + p] : 0.0f;
        }
        for (size_t i = 0; i < BR; i++) {
            m[i] = -FLT_MAX;
            l[i] = 0.0f;
        }
        memset(oacc, 0, BR * dvp * sizeof(float));
        const size_t rows_pv = round_up(br, MR);
        const size_t kv_end = visible(a, i0 + br - 1); /* the last query sees the most keys */
        for (size_t j0 = 0; j0 < kv_end; j0 += BC) {
            const size_t bc = min_size(BC, kv_end - j0);
            scores(g, a, j0, bc, qt, kp, st);
            if (a->flags & QKV_CAUSAL) {
                /* key j is hidden from queries i < j + n_q - n_kv: a prefix of row j */
                for (size_t r = 0; r < bc; r++) {
                    const size_t first = j0 + r + a->n_q; /* first visible query + n_kv */
                    if (first <= i0 + a->n_kv)
                        continue;
                    const size_t hidden = min_size(BR, first - a->n_kv - i0);
                    for (size_t c = 0; c < hidden; c++)
                        st[r * BR + c] = -INFINITY;
                }
            }
            t->attn_update(bc, BR, st, BR, m, l, oacc, dvp, dvp);
            /* V tile -> NR-column micropanels, columns past d_v zero */
            for (size_t c0 = 0; c0 < dvp; c0 += NR) {
                float *dst = vp + c0 * bc;
                const size_t cols = min_size(NR, d_v - c0);
                for (size_t p = 0; p < bc; p++) {
                    const float *src = a->v + (j0 + p) * a->ldv + c0;
                    memcpy(dst + p * NR, src, cols * sizeof(float));
                    for (size_t c = cols; c < NR; c++)
                        dst[p * NR + c] = 0.0f;
                }
            }
            for (size_t r = 0; r < rows_pv; r += MR)
                for (size_t c0 = 0; c0 < dvp; c0 += NR)
                    g->ukernel(bc, st + r, 1, BR, vp + c0 * bc, oacc + r * dvp + c0, dvp, 1.0f, 1.0f);
        }
        normalise(br, d_v, oacc, dvp, l, a->o + i0 * a->ldo, a->ldo);
    }
}

void qkv_sdpa_run(const qkv_kernels *t, const qkv_sdpa_view *a, float *ws)
{
    ws_layout w;
    const int ok = layout(a->d_k, a->d_v, &w);
    assert(ok);
    (void)ok;
    if (a->n_q <= DECODE_Q)
        sdpa_decode(t, a, ws, &w);
    else
        sdpa_tiled(t, a, ws, &w);
}

qkv_status qkv_sdpa(const float *q, const float *k, const float *v, float *o, size_t n_q, size_t n_kv, size_t d_k,
                    size_t d_v, float scale, unsigned flags)
{
    if (!q || !k || !v || !o || !n_q || !n_kv || !d_k || !d_v || (flags & ~QKV_CAUSAL) || isnan(scale) ||
        isinf(scale))
        return QKV_ERR_ARG;
    if (!qkv_floats_ok(n_q, d_k) || !qkv_floats_ok(n_kv, d_k) || !qkv_floats_ok(n_kv, d_v) ||
        !qkv_floats_ok(n_q, d_v))
        return QKV_ERR_SIZE;
    const qkv_sdpa_view a = {q, k, v, o, n_q, n_kv, d_k, d_v, d_k, d_k, d_v, d_v,
                             scale > 0.0f ? scale : (float)(1.0 / sqrt((double)d_k)), flags};
    return qkv_sdpa_alloc_run(qkv_kernels_active(), &a);
}

qkv_status qkv_sdpa_alloc_run(const qkv_kernels *t, const qkv_sdpa_view *a)
{
    const size_t bytes = qkv_sdpa_workspace_size(a->d_k, a->d_v);
    if (bytes == 0)
        return QKV_ERR_SIZE;
    float *ws = aligned_alloc(64, bytes);
    if (ws == NULL)
        return QKV_ERR_NOMEM;
    qkv_sdpa_run(t, a, ws);
    free(ws);
    return QKV_OK;
}
