/* qkv_sdpa: scaled dot-product attention in one fused pass, FlashAttention-2 style.
 *
 *   O = softmax(scale Q K^T [+ causal mask]) V     Q: n_q x d_k, K: n_kv x d_k, V: n_kv x d_v
 *
 * Visibility. Query i sees the keys of one contiguous range [lo_i, hi_i) (key_range(); the
 * causal mask gives lo_i = 0, hi_i = i + 1 + n_kv - n_q clamped to [0, n_kv]). A key outside
 * it has no influence at all, whatever K or V hold there (a KV cache holds garbage past the
 * current position): its score is overwritten by -inf before anything reads it, and no
 * product with its V row is ever formed (0 x inf would be NaN).
 *
 * Scale. It is folded into Q where Q is packed (scale q rounded once per element), not
 * applied to the float dot product: q k itself may overflow float while the logit
 * scale q k does not. Only a product (scale q_p) k_p or a sum of them beyond FLT_MAX
 * overflows; a score of +inf or NaN then makes the row NaN, one of -inf weighs 0.
 *
 * Tiled path (n_q > 4). Q row tiles of BR = 96 queries x KV tiles of BC = 96 keys. Per Q
 * tile, scale Q^T is packed once into the GEMM B micropanels (d_k x NR, zero-padded
 * queries); the KV tiles cover the union of the tile's key ranges. Per KV tile:
 *   S^T = K (scale Q)^T  BC x BR scores by the table's GEMM microkernel: K rows read in
 *                        place as the A operand (a partial last row panel is copied to a
 *                        zero-padded scratch), so K is never packed or transposed
 *   mask                 in a boundary tile (some query does not see every key of it) each
 *                        query's hidden scores are set to -inf
 *   online softmax       the table's attn_update (kernels/attn_update_f32.h): per
 *                        query running max m and sum l, P = exp(S - m) over S, O rescaled
 *                        only when m grew; S^T makes all of it vertical vector code
 *   O += P V             per MR-row block of queries, the microkernel over the keys every
 *                        query of the block sees (A = P read in place from S^T, rs 1, cs BR,
 *                        the packed-A layout; B = the V tile packed into NR-column
 *                        micropanels), then the few keys only some queries of the block see
 *                        (fewer than MR per query on the causal diagonal) by an exact loop
 *                        per query; a wholly visible tile is the microkernel alone
 * then O / l once per Q tile; a query with no visible key has l = 0 and gets zeros.
 * Why S^T and not S: K then serves as the in-place A operand (no per-tile transpose of K),
 * Q^T is packed once per Q tile, and the softmax runs along vector lanes, not reductions.
 * BR = BC = 96 is a multiple of every ISA's MR and NR (checked at compile time against
 * src/isa_list.h), so all microkernel calls are full tiles; the S^T tile (36 KiB) and a V
 * panel stay in L1/L2. The table's GEMM microkernel is used rather than a fused per-ISA
 * tile kernel so that the register tiling of every ISA lives in one place.
 *
 * Decode path (n_q <= 4). The tile above would be 96 / n_q times too tall. Instead the KV
 * tiles (DECODE_KV = 128 keys) are streamed once; for each query, scale q is copied to the
 * workspace, its row of scores comes from gemv_t, the softmax step is a scalar max plus the
 * table's exp, and O = a O + P V is one gemv_n with beta = a over an accumulator zeroed
 * first (a = 1 when every score so far is -FLT_MAX). K and V tiles stay in cache across the
 * <= 4 queries.
 *
 * Workspace (qkv_sdpa_workspace_size, bytes, independent of n_q, n_kv and the ISA):
 *   Q^T panels 96 d_k + S^T 96 x 96 + V panels 96 x rup96(d_v) + K edge 16 d_k
 *   + O accumulator 96 x rup96(d_v) + m, l 2 x 96 floats, each rounded up to 16 floats,
 *   + 64 bytes so that any workspace pointer can be aligned.
 * Accuracy: scores and P V carry the GEMM bound (k FLT_EPSILON sum |a b|) plus one rounding
 * of scale q; exp <= 2 ULP (the qkv_exp contract); weights are relative to the running max,
 * so logits of any finite magnitude are safe. */
#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"

enum {
    BR = 96,       /* queries per tile: a multiple of every MR and NR (and vector length) */
    BC = 96,       /* keys per tile: a multiple of every MR */
    MR_MAX = 16,   /* rows of the K edge scratch */
    DECODE_Q = 4,  /* n_q up to this takes the decode path */
    DECODE_KV = 128 /* keys per decode tile; DECODE_Q x DECODE_KV <= BR x BC */
};

/* Full microkernel tiles only: BR and BC hold whole MR x NR tiles of every ISA, the K edge
   scratch holds MR rows, and rup96(d_v) of the workspace is a multiple of NR. */
#define TILE_FITS(ID, name, detect, mr, nr) &&BR % (mr) == 0 && BR % (nr) == 0 && BC % (mr) == 0 && (mr) <= MR_MAX
_Static_assert(1 QKV_ISA_LIST(TILE_FITS), "BR, BC and MR_MAX must fit every ISA's GEMM tile (src/isa_list.h)");
#undef TILE_FITS
_Static_assert(DECODE_Q * DECODE_KV <= BR * BC && DECODE_Q <= BR, "the decode path uses the tiled workspace");

/* The workspace, in arena order (arena.h): Q^T panels, S^T tile, V panels, K edge, O
   accumulator, m and l. rup96(d_v) columns keep every NR-wide V panel and O column block
   whole. */
typedef struct sdpa_ws {
    float *qt, *st, *vp, *kp, *oacc, *m, *l;
} sdpa_ws;

static void layout(qkv_arena *ar, size_t d_k, size_t d_v, sdpa_ws *w)
{
    const size_t dvp = d_v > SIZE_MAX - BR ? SIZE_MAX : qkv_round_up(d_v, BR);
    w->qt = qkv_arena_array(ar, d_k, BR);
    w->st = qkv_arena_array(ar, BC, BR);
    w->vp = qkv_arena_array(ar, dvp, BC);
    w->kp = qkv_arena_array(ar, d_k, MR_MAX);
    w->oacc = qkv_arena_array(ar, dvp, BR);
    w->m = qkv_arena_floats(ar, BR);
    w->l = qkv_arena_floats(ar, BR);
}

size_t qkv_sdpa_workspace_size(size_t d_k, size_t d_v)
{
    qkv_arena ar = qkv_arena_sizer();
    sdpa_ws w;
    layout(&ar, d_k, d_v, &w);
    return qkv_arena_bytes(&ar);
}

/* the keys query i sees, [lo, hi): causal j <= i + n_kv - n_q, clamped to [0, n_kv];
   an empty range has lo == hi */
typedef struct key_range {
    size_t lo, hi;
} key_range;

static key_range visible(const qkv_sdpa_view *a, size_t i)
{
    key_range r = {0, a->n_kv};
    if (a->flags & QKV_CAUSAL)
        r.hi = i + 1 + a->n_kv <= a->n_q ? 0 : qkv_min(a->n_kv, i + 1 + a->n_kv - a->n_q);
    return r;
}

/* r clipped to the tile [j0, j0 + bc), relative to j0 (empty: lo == hi) */
static key_range clip(key_range r, size_t j0, size_t bc)
{
    const size_t lo = r.lo > j0 ? r.lo - j0 : 0, hi = r.hi > j0 ? qkv_min(r.hi - j0, bc) : 0;
    return (key_range){qkv_min(lo, hi), hi};
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

static void sdpa_decode(const qkv_kernels *t, const qkv_sdpa_view *a, const sdpa_ws *w)
{
    const qkv_gemm_kernels *g = t->gemm;
    float *qs = w->qt, *s = w->st, *oacc = w->oacc, *m = w->m, *l = w->l;
    size_t kv_lo = a->n_kv, kv_hi = 0;
    for (size_t i = 0; i < a->n_q; i++) {
        const key_range r = visible(a, i);
        if (r.lo < r.hi) {
            kv_lo = qkv_min(kv_lo, r.lo);
            kv_hi = r.hi > kv_hi ? r.hi : kv_hi;
        }
        m[i] = -FLT_MAX;
        l[i] = 0.0f;
        for (size_t p = 0; p < a->d_k; p++)
            qs[i * a->d_k + p] = a->scale * a->q[i * a->ldq + p]; /* every row of q before o */
    }
    memset(oacc, 0, a->n_q * a->d_v * sizeof(float)); /* read by the first gemv_n (beta = a) */
    for (size_t j0 = kv_lo; j0 < kv_hi; j0 += DECODE_KV) {
        for (size_t i = 0; i < a->n_q; i++) {
            const key_range r = clip(visible(a, i), j0, DECODE_KV);
            if (r.lo == r.hi)
                continue;
            const size_t bd = r.hi - r.lo, j = j0 + r.lo;
            float *si = s + i * DECODE_KV, *oi = oacc + i * a->d_v;
            /* s = K_tile (scale q_i) */
            g->gemv_t(bd, a->d_k, 1.0f, qs + i * a->d_k, a->k + j * a->ldk, a->ldk, 0.0f, si);
            float mx = m[i];
            for (size_t c = 0; c < bd; c++)
                mx = si[c] > mx ? si[c] : mx;
            float alpha = m[i] - mx; /* a = exp(m - mx): 1 if the max did not grow */
            for (size_t c = 0; c < bd; c++)
                si[c] -= mx;
            t->exp(si, si, bd);
            t->exp(&alpha, &alpha, 1);
            float sum = 0.0f;
            for (size_t c = 0; c < bd; c++)
                sum += si[c];
            l[i] = alpha * l[i] + sum;
            m[i] = mx;
            /* o_i = P V_tile + a o_i */
            g->gemv_n(a->d_v, bd, 1.0f, si, 1, a->v + j * a->ldv, a->ldv, alpha, oi);
        }
    }
    normalise(a->n_q, a->d_v, oacc, a->d_v, l, a->o, a->ldo);
}

/* S^T (bc x BR, rows rounded up to MR) = K[j0 .. j0 + bc) (scale Q)^T, qt = packed scale Q^T */
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
            g->ukernel(d_k, kr, ld, 1, qt + c * d_k, st + r * BR + c, BR, 1.0f, 0.0f);
    }
}

/* O[rows r .. r + MR) += P V over the tile's keys, never touching a (query, key) pair the
   query does not see: the microkernel over the keys every real query of the block sees, an
   exact loop for the rest of each query's range. vp: the V tile in NR-column micropanels. */
static void pv_block(const qkv_gemm_kernels *g, const qkv_sdpa_view *a, size_t i0, size_t br, size_t r, size_t j0,
                     size_t bc, const float *st, const float *vp, float *oacc, size_t dvp)
{
    const size_t MR = g->mr, NR = g->nr, rows = qkv_min(MR, br - r);
    key_range all = {0, bc}; /* intersection over the block's real queries */
    for (size_t i = 0; i < rows; i++) {
        const key_range ri = clip(visible(a, i0 + r + i), j0, bc);
        all.lo = ri.lo > all.lo ? ri.lo : all.lo;
        all.hi = qkv_min(all.hi, ri.hi);
    }
    const int common = all.lo < all.hi;
    if (common)
        for (size_t c0 = 0; c0 < dvp; c0 += NR)
            g->ukernel(all.hi - all.lo, st + all.lo * BR + r, 1, BR, vp + c0 * bc + all.lo * NR,
                       oacc + r * dvp + c0, dvp, 1.0f, 1.0f);
    for (size_t i = 0; i < rows; i++) {
        const key_range ri = clip(visible(a, i0 + r + i), j0, bc);
        /* the rest of the query's range: around the common part, or all of it */
        const key_range rest[2] = {{ri.lo, common ? all.lo : ri.hi}, {common ? all.hi : ri.hi, ri.hi}};
        float *oi = oacc + (r + i) * dvp;
        for (int part = 0; part < 2; part++)
            for (size_t j = rest[part].lo; j < rest[part].hi; j++) {
                const float p = st[j * BR + r + i], *vj = a->v + (j0 + j) * a->ldv;
                for (size_t c = 0; c < a->d_v; c++)
                    oi[c] += p * vj[c];
            }
    }
}

static void sdpa_tiled(const qkv_kernels *t, const qkv_sdpa_view *a, const sdpa_ws *w)
{
    const qkv_gemm_kernels *g = t->gemm;
    const size_t MR = g->mr, NR = g->nr, d_k = a->d_k, d_v = a->d_v;
    const size_t dvp = qkv_round_up(d_v, NR);
    assert(BR % MR == 0 && BR % NR == 0 && BC % MR == 0 && MR <= MR_MAX); /* see TILE_FITS */
    float *qt = w->qt, *st = w->st, *vp = w->vp, *kp = w->kp, *oacc = w->oacc;
    float *m = w->m, *l = w->l;

    for (size_t i0 = 0; i0 < a->n_q; i0 += BR) {
        const size_t br = qkv_min(BR, a->n_q - i0);
        /* scale Q^T micropanels: element (p, query c) at qt[(c / NR) NR d_k + p NR + c % NR] */
        for (size_t c = 0; c < BR; c++) {
            float *dst = qt + (c / NR) * NR * d_k + c % NR;
            for (size_t p = 0; p < d_k; p++)
                dst[p * NR] = c < br ? a->scale * a->q[(i0 + c) * a->ldq + p] : 0.0f;
        }
        for (size_t i = 0; i < BR; i++) {
            m[i] = -FLT_MAX;
            l[i] = 0.0f;
        }
        memset(oacc, 0, BR * dvp * sizeof(float));
        /* the union of the tile's key ranges, and their intersection (wholly visible keys) */
        key_range any = {a->n_kv, 0}, all = {0, a->n_kv};
        for (size_t i = 0; i < br; i++) {
            const key_range r = visible(a, i0 + i);
            if (r.lo < r.hi) {
                any.lo = qkv_min(any.lo, r.lo);
                any.hi = r.hi > any.hi ? r.hi : any.hi;
            }
            all.lo = r.lo > all.lo ? r.lo : all.lo;
            all.hi = qkv_min(all.hi, r.hi);
        }
        for (size_t j0 = any.lo; j0 < any.hi; j0 += BC) {
            const size_t bc = qkv_min(BC, any.hi - j0);
            scores(g, a, j0, bc, qt, kp, st);
            if (!(all.lo <= j0 && j0 + bc <= all.hi)) {
                /* boundary tile: each query's hidden scores -inf, before anything reads them */
                for (size_t c = 0; c < br; c++) {
                    const key_range r = clip(visible(a, i0 + c), j0, bc);
                    for (size_t j = 0; j < bc; j++)
                        if (j < r.lo || j >= r.hi)
                            st[j * BR + c] = -INFINITY;
                }
            }
            t->attn_update(bc, BR, st, BR, m, l, oacc, dvp, dvp);
            /* V tile -> NR-column micropanels, columns past d_v zero */
            for (size_t c0 = 0; c0 < dvp; c0 += NR) {
                float *dst = vp + c0 * bc;
                const size_t cols = qkv_min(NR, d_v - c0);
                for (size_t p = 0; p < bc; p++) {
                    const float *src = a->v + (j0 + p) * a->ldv + c0;
                    memcpy(dst + p * NR, src, cols * sizeof(float));
                    for (size_t c = cols; c < NR; c++)
                        dst[p * NR + c] = 0.0f;
                }
            }
            for (size_t r = 0; r < br; r += MR)
                pv_block(g, a, i0, br, r, j0, bc, st, vp, oacc, dvp);
        }
        normalise(br, d_v, oacc, dvp, l, a->o + i0 * a->ldo, a->ldo);
    }
}

void qkv_sdpa_run(const qkv_kernels *t, const qkv_sdpa_view *a, void *ws)
{
    qkv_arena ar = qkv_arena_on(ws);
    sdpa_ws w;
    layout(&ar, a->d_k, a->d_v, &w);
    if (a->n_q <= DECODE_Q)
        sdpa_decode(t, a, &w);
    else
        sdpa_tiled(t, a, &w);
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
    void *ws = aligned_alloc(QKV_ARENA_ALIGN, qkv_round_up(bytes, QKV_ARENA_ALIGN));
    if (ws == NULL)
        return QKV_ERR_NOMEM;
    qkv_sdpa_run(t, a, ws);
    free(ws);
    return QKV_OK;
}
