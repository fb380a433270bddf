/* The attention core: qkv_attention, and through it qkv_sdpa, qkv_attention_simple,
 * qkv_self_attention and qkv_mha_forward.
 *
 *   O[b, h] = softmax(cap(scale Q[b, h] K[b, g]^T) + mask) V[b, g],   g = h / (H / KVH)
 *
 * Plan (calling thread, shape only). The query heads of one KV head g form its group
 * (G = H / KVH). A tile is `hpt` heads of a group x `qpt` queries, stacked as the rows of
 * one Q tile (at most BR = 96 rows), so every K/V tile is loaded, and widened from F16/BF16,
 * once per group rather than once per head. Tiles are as narrow as the work: n_q = 5 with
 * G = 1 gives 5 rows, computed 16 or 32 columns wide (the microkernel width), not 96.
 * Work items are (batch item, KV head, head chunk, query tile) and, when those are few
 * (decode), also a chunk of the key range (split-KV, flash-decoding): each chunk item leaves
 * a partial (running max m, sum l, unnormalised O) in the workspace, and a second pass
 * merges the chunks of each tile in chunk order. Nothing depends on the thread count, so
 * results are bit-identical for every n_threads.
 *
 * Visibility. With L = kv_len[b] (or n_kv), query i sits at p = i + L - n_q and sees key j
 * iff j < L, j <= p (QKV_CAUSAL) and |j - p| < w (window; with causal p - w < j <= p): one
 * contiguous range [lo, hi) per query. A tile visits only the union of its rows' ranges;
 * KV tiles inside every row's range take the unmasked path, the others (boundary tiles) set
 * each row's hidden scores to -inf before anything reads them, and P V never multiplies a
 * hidden key (pv_block), so a hidden key has no influence whatever its K and V hold. Keys
 * at or past L are never read.
 *
 * Tiled path (more than DECODE_ROWS rows), per KV tile of BC keys (S^T: keys are rows):
 *   S^T = K (scale Q)^T   the table's microkernel, K rows read in place as the A operand
 *                         (F32) or widened into a float tile first (F16/BF16); scale Q^T
 *                         packed once per item into B micropanels (scale folded into Q, so
 *                         only a logit that itself overflows float can overflow)
 *   softcap               c tanh(s / c) on the tile (the table's softcap)
 *   mask                  boundary tiles only
 *   online softmax        the table's attn_update: running max and sum per row, O rescaled
 *                         only when the max grew
 *   O += P V              V tile packed (and widened) into NR-column micropanels; the
 *                         microkernel over the keys every row of an MR-block sees, gemv_n
 *                         over the V rows for the few keys only some of its rows see
 * Decode path (at most DECODE_ROWS rows): per row, scores by gemv_t over its visible part of
 * the K tile, then exp and O = a O + P V by gemv_n; rows that see the same keys of a tile
 * (a GQA group's heads) share one gemv_t_multi and one gemv_n_multi, which read K and V
 * once for all of them. F16/BF16 K and V are read in place and widened in registers by
 * those kernels (only broadcast rows are widened into the slot, once per tile).
 * The end: O / l (l == 0: no visible key, a zero row) and lse = m + log l (-inf without a
 * visible key), or the partial of a chunk.
 *
 * Workspace (one arena, arena.h): the partials (split-KV only), then per task slot the tile
 * scratch: scaled Q^T panels or query copies, S^T, V panels, K tile or edge, the O
 * accumulator, m and l. O(tile) per slot, independent of n_q and n_kv (partials: one row of
 * d_v + 2 floats per tile row and chunk).
 * Accuracy: the GEMM bound on scores and on P V (k FLT_EPSILON sum |a b|) plus one rounding
 * of scale q; exp within 2 ULP; softcap one tanh (2 ULP); F16/BF16 are widened exactly. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "threadpool.h"

enum {
    BR = 96,         /* rows of a Q tile at most: a multiple of every MR and NR */
    BC = 96,         /* keys per KV tile: a multiple of every MR */
    MR_MAX = 16,     /* rows of the K edge scratch, and padding of the P V rows */
    DECODE_ROWS = 4, /* tiles of at most this many rows take the decode path */
    DECODE_KV = 128, /* keys per decode tile */
    SPLIT_ITEMS = 8, /* fewer tile items than this: split the key range */
    SPLIT_MIN = 512   /* keys per split chunk at least */
};

#define TILE_FITS(ID, name, detect, mr, nr) &&BR % (mr) == 0 && BR % (nr) == 0 && BC % (mr) == 0 && (mr) <= MR_MAX
_Static_assert(1 QKV_ISA_LIST(TILE_FITS), "BR, BC and MR_MAX must fit every ISA's GEMM tile (src/isa_list.h)");
#undef TILE_FITS
_Static_assert(DECODE_ROWS * DECODE_KV <= BC * (BR + MR_MAX), "the decode scores fit the S^T scratch");

static size_t elem_size(qkv_dtype t)
{
    return t == QKV_F32 ? 4 : 2;
}

/* ---- the plan ------------------------------------------------------------------------ */

typedef struct plan {
    size_t H, KVH, G;
    size_t hpt, n_hc; /* heads per tile, head chunks per group */
    size_t qpt, n_qt; /* queries per tile, query tiles */
    size_t n_tiles;   /* B KVH n_hc n_qt */
    size_t chunk, n_chunks;
    size_t rows_max;  /* hpt qpt */
} plan;

static plan make_plan(const qkv_attention_desc *d)
{
    plan p;
    p.H = d->n_heads;
    p.KVH = d->n_kv_heads ? d->n_kv_heads : d->n_heads;
    p.G = p.H / p.KVH;
    p.hpt = qkv_min(p.G, BR);
    p.n_hc = (p.G + p.hpt - 1) / p.hpt;
    const size_t q_max = qkv_max(1, BR / p.hpt); /* queries a tile can hold */
    /* whole tiles of q_max queries and a remainder: with the causal diagonal, 96-query
       tiles line up with the 96-key tiles (one masked tile per row of tiles), which evenly
       balanced tiles would not */
    p.qpt = qkv_min(q_max, d->n_q);
    p.n_qt = (d->n_q + p.qpt - 1) / p.qpt;
    p.rows_max = p.hpt * p.qpt;
    p.n_tiles = d->batch * p.KVH * p.n_hc * p.n_qt; /* the caller checked it does not overflow */
    p.chunk = d->n_kv;
    p.n_chunks = 1;
    if (p.n_tiles < SPLIT_ITEMS && d->n_kv >= 2 * SPLIT_MIN) {
        const size_t want = qkv_min((SPLIT_ITEMS + p.n_tiles - 1) / p.n_tiles, d->n_kv / SPLIT_MIN);
        p.chunk = qkv_round_up((d->n_kv + want - 1) / want, DECODE_KV);
        p.n_chunks = (d->n_kv + p.chunk - 1) / p.chunk;
    }
    return p;
}

/* ---- the workspace ------------------------------------------------------------------- */

typedef struct slot_ws {
    float *qt;   /* scale Q^T panels (d_k x BR), or the decode rows' scaled queries */
    float *st;   /* S^T: BC x LDS, or the decode rows' scores */
    float *vp;   /* V tile in NR-column panels (dvp x BC), or the widened decode V tile */
    float *kw;   /* K tile widened (BC + MR_MAX rows x d_k), or the K edge rows */
    float *vw;   /* V tile widened (F16/BF16: BC or DECODE_KV rows x d_v) */
    float *oacc; /* (BR + MR_MAX) x dvp */
    float *m, *l;
} slot_ws;

enum { LDS = BR + MR_MAX }; /* S^T row stride: P V reads up to MR - 1 columns past the rows */

static size_t dv_pad(size_t d_v)
{
    return d_v > SIZE_MAX - BR ? SIZE_MAX : qkv_round_up(d_v, BR); /* a multiple of every NR */
}

/* 1 if K and V rows are read in place as float gemv operands (F32, and a token stride of
   at least the row: not a broadcast); else the decode path copies or widens K/V tiles */
static int kv_in_place(const qkv_attention_desc *d)
{
    return d->kv_dtype == QKV_F32 && d->k_stride[2] >= d->d_k && d->v_stride[2] >= d->d_v;
}

static void slot_layout(qkv_arena *ar, size_t d_k, size_t d_v, int f32, slot_ws *w)
{
    const size_t dvp = dv_pad(d_v);
    w->qt = qkv_arena_array(ar, d_k, BR);
    w->st = qkv_arena_array(ar, BC, LDS);
    w->vp = qkv_arena_array(ar, dvp, BC);
    /* in place: only the K edge rows; else the widened (or copied) K and V tiles */
    w->kw = qkv_arena_array(ar, d_k, f32 ? MR_MAX : qkv_max(BC + MR_MAX, DECODE_KV));
    w->vw = f32 ? NULL : qkv_arena_array(ar, d_v, qkv_max(BC, DECODE_KV));
    w->oacc = qkv_arena_array(ar, dvp, BR + MR_MAX);
    w->m = qkv_arena_floats(ar, BR + MR_MAX);
    w->l = qkv_arena_floats(ar, BR + MR_MAX);
}

typedef struct core_ws {
    float *partials; /* per (tile, chunk): rows_max x (d_v + 2): O rows, then m, then l */
    float *slots;
    size_t slot_floats, part_len;
} core_ws;

static void layout(qkv_arena *ar, const qkv_attention_desc *d, const plan *p, size_t n_slots, core_ws *w)
{
    w->partials = NULL;
    w->part_len = 0;
    if (p->n_chunks > 1) {
        size_t items;
        w->part_len = qkv_round_up(p->rows_max * (d->d_v + 2), 16);
        if (!qkv_mul_ok(p->n_tiles, p->n_chunks, &items)) {
            ar->overflow = 1;
            return;
        }
        w->partials = qkv_arena_array(ar, items, w->part_len);
    }
    qkv_arena one = qkv_arena_sizer();
    slot_ws s;
    slot_layout(&one, d->d_k, d->d_v, kv_in_place(d), &s);
    if (one.overflow) {
        ar->overflow = 1;
        return;
    }
    w->slot_floats = one.used / sizeof(float);
    w->slots = qkv_arena_array(ar, w->slot_floats, n_slots);
}

/* ---- one tile ------------------------------------------------------------------------- */

typedef struct key_range {
    size_t lo, hi; /* empty: lo == hi */
} key_range;

typedef struct core {
    const qkv_kernels *t;
    const qkv_attention_desc *d;
    plan p;
    core_ws w;
    float scale, cap;
    const float *q;
    const unsigned char *k, *v; /* bytes */
    float *o, *lse;
    size_t es; /* bytes per K/V element */
} core;

/* the keys query i of batch item b sees */
static key_range visible(const qkv_attention_desc *d, size_t b, size_t i)
{
    const size_t L = d->kv_len ? d->kv_len[b] : d->n_kv;
    /* p = i + L - n_q may be negative: work with p + n_q = i + L */
    const size_t pn = i + L; /* position + n_q */
    size_t lo = 0, hi = L;
    if (d->flags & QKV_CAUSAL)
        hi = pn + 1 <= d->n_q ? 0 : qkv_min(hi, pn + 1 - d->n_q); /* j <= p */
    if (d->window) {
        /* |j - p| < n_q + L always: a wider window hides nothing, and clamped no sum wraps */
        const size_t w = qkv_min(d->window, d->n_q + L);
        if (!(d->flags & QKV_CAUSAL))
            hi = pn + w <= d->n_q ? 0 : qkv_min(hi, pn + w - d->n_q); /* j < p + w */
        lo = pn + 1 <= d->n_q + w ? 0 : pn + 1 - d->n_q - w; /* j > p - w */
    }
    return (key_range){qkv_min(lo, hi), hi};
}

static key_range clip(key_range r, size_t j0, size_t n) /* to [j0, j0 + n), relative to j0 */
{
    const size_t lo = r.lo > j0 ? r.lo - j0 : 0, hi = r.hi > j0 ? qkv_min(r.hi - j0, n) : 0;
    return (key_range){qkv_min(lo, hi), hi};
}

/* the rows of one item */
typedef struct tile {
    size_t b, g, rows, n_heads, h0, qpt, i0, nq;
    key_range range[BR]; /* per row, clipped to the item's key chunk */
    size_t limit;        /* L of the batch item: keys at or past it are never read */
} tile;

static const float *q_row(const core *c, const tile *tl, size_t r)
{
    const qkv_attention_desc *d = c->d;
    const size_t h = tl->h0 + r / tl->nq, i = tl->i0 + r % tl->nq;
    return c->q + tl->b * d->q_stride[0] + h * d->q_stride[1] + i * d->q_stride[2];
}

static const unsigned char *kv_row(const core *c, const tile *tl, const unsigned char *base, const size_t *stride,
                                   size_t j)
{
    return base + (tl->b * stride[0] + tl->g * stride[1] + j * stride[2]) * c->es;
}

/* n consecutive rows from key j of K or V (n_cols wide) into dst (ld n_cols), widened:
   one call over the whole block where its rows are contiguous (a (B, H, N, D) cache), else
   row by row */
static void widen_rows(const core *c, const tile *tl, int is_v, size_t j, size_t n, float *dst)
{
    const qkv_attention_desc *d = c->d;
    const size_t cols = is_v ? d->d_v : d->d_k;
    const size_t *stride = is_v ? d->v_stride : d->k_stride;
    const size_t rows = stride[2] == cols ? 1 : n, len = stride[2] == cols ? n * cols : cols;
    for (size_t r = 0; r < rows; r++) {
        const unsigned char *src = kv_row(c, tl, is_v ? c->v : c->k, stride, j + r);
        if (d->kv_dtype == QKV_F32) /* a broadcast or overlapping row: copied */
            memcpy(dst + r * cols, src, len * sizeof(float));
        else /* the table's exact widening (F16C, vcvtph2ps, a shift for BF16, NEON fcvtl) */
            (d->kv_dtype == QKV_F16 ? c->t->cvt_f16_f32 : c->t->cvt_bf16_f32)((const uint16_t *)(const void *)src,
                                                                             dst + r * cols, len);
    }
}

/* rows x cols accumulator into o rows (or zeros where l == 0) and lse */
static void finish_rows(const core *c, const tile *tl, const float *acc, size_t ldacc, const float *m, const float *l)
{
    const qkv_attention_desc *d = c->d;
    for (size_t r = 0; r < tl->rows; r++) {
        const size_t h = tl->h0 + r / tl->nq, i = tl->i0 + r % tl->nq;
        float *o = c->o + tl->b * d->o_stride[0] + h * d->o_stride[1] + i * d->o_stride[2];
        const float inv = l[r] == 0.0f ? 0.0f : 1.0f / l[r];
        for (size_t x = 0; x < d->d_v; x++)
            o[x] = acc[r * ldacc + x] * inv;
        if (c->lse)
            c->lse[(tl->b * c->p.H + h) * d->n_q + i] = l[r] == 0.0f ? -INFINITY : m[r] + logf(l[r]);
    }
}

/* The decode tile's K and V rows, as the gemv kernels read them: float (F32 in place, or
   widened/copied into the slot) or 16-bit in place (h = 1 F16, 2 BF16), ld in elements */
typedef struct kv_view {
    const void *k, *v;
    size_t ldk, ldv;
    int h;
} kv_view;

/* s[r * DECODE_KV + j] = q_r . K(lo + j), j < n, for rows rows (1: gemv_t; several: one
   gemv_t_multi, the same bits per row) */
static void dec_scores(const qkv_gemm_kernels *g, const kv_view *t, size_t rows, size_t lo, size_t n, size_t d_k,
                       const float *q, float *s)
{
    if (t->h)
        g->gemv_t_multi_h[t->h - 1](rows, n, d_k, q, d_k, (const uint16_t *)t->k + lo * t->ldk, t->ldk, s, DECODE_KV);
    else if (rows == 1)
        g->gemv_t(n, d_k, 1.0f, q, (const float *)t->k + lo * t->ldk, t->ldk, 0.0f, s);
    else
        g->gemv_t_multi(rows, n, d_k, q, d_k, (const float *)t->k + lo * t->ldk, t->ldk, s, DECODE_KV);
}

/* o_r = a_r o_r + P_r V(lo .. lo + n) for rows rows (o at stride d_v, a_r == 0: not read) */
static void dec_pv(const qkv_gemm_kernels *g, const kv_view *t, size_t rows, size_t lo, size_t n, size_t d_v,
                   const float *p, const float *alpha, float *o)
{
    if (t->h)
        g->gemv_n_multi_h[t->h - 1](rows, d_v, n, p, DECODE_KV, (const uint16_t *)t->v + lo * t->ldv, t->ldv, alpha,
                                    o, d_v);
    else if (rows == 1)
        g->gemv_n(d_v, n, 1.0f, p, 1, (const float *)t->v + lo * t->ldv, t->ldv, alpha[0], o);
    else
        g->gemv_n_multi(rows, d_v, n, p, DECODE_KV, (const float *)t->v + lo * t->ldv, t->ldv, alpha, o, d_v);
}

static void decode_tile(const core *c, const tile *tl, const slot_ws *w, key_range any)
{
    const qkv_attention_desc *d = c->d;
    const qkv_gemm_kernels *g = c->t->gemm;
    float *qs = w->qt, *s = w->st, *oacc = w->oacc, *m = w->m, *l = w->l;
    for (size_t r = 0; r < tl->rows; r++) {
        m[r] = -FLT_MAX;
        l[r] = 0.0f;
        const float *qr = q_row(c, tl, r);
        for (size_t x = 0; x < d->d_k; x++)
            qs[r * d->d_k + x] = c->scale * qr[x];
    }
    memset(oacc, 0, tl->rows * d->d_v * sizeof(float)); /* read by the first gemv_n (beta = a) */
    /* K and V are read in place, F16/BF16 widened in registers, where rows can be gemv
       operands (ld >= row length); a token stride below it (0: broadcast) is widened or
       copied into the slot once per tile for every row */
    const int in_place = d->k_stride[2] >= d->d_k && d->v_stride[2] >= d->d_v;
    const int h = d->kv_dtype == QKV_F16 ? 1 : d->kv_dtype == QKV_BF16 ? 2 : 0;
    for (size_t j0 = any.lo; j0 < any.hi; j0 += DECODE_KV) {
        const size_t n = qkv_min(DECODE_KV, any.hi - j0);
        kv_view t;
        if (in_place) {
            t = (kv_view){kv_row(c, tl, c->k, d->k_stride, j0), kv_row(c, tl, c->v, d->v_stride, j0),
                          d->k_stride[2], d->v_stride[2], h};
        } else {
            widen_rows(c, tl, 0, j0, n, w->kw);
            widen_rows(c, tl, 1, j0, n, w->vw);
            t = (kv_view){w->kw, w->vw, d->d_k, d->d_v, 0};
        }
        /* rows that see the same keys of this tile (the query heads of a GQA group at one
           position always do) share every load of K and V: one gemv_t_multi for their
           scores, one gemv_n_multi for O = a O + P V, row by row the same bits as gemv_t
           and gemv_n (kernels.h), so grouping never changes a result */
        const key_range k0 = clip(tl->range[0], j0, n);
        int shared = tl->rows > 1 && k0.lo < k0.hi;
        for (size_t r = 1; r < tl->rows && shared; r++) {
            const key_range kr = clip(tl->range[r], j0, n);
            shared = kr.lo == k0.lo && kr.hi == k0.hi;
        }
        if (shared)
            dec_scores(g, &t, tl->rows, k0.lo, k0.hi - k0.lo, d->d_k, qs, s);
        float alphas[DECODE_ROWS];
        for (size_t r = 0; r < tl->rows; r++) {
            const key_range kr = clip(tl->range[r], j0, n);
            alphas[r] = 1.0f;
            if (kr.lo == kr.hi)
                continue;
            const size_t bd = kr.hi - kr.lo;
            float *si = s + r * DECODE_KV, *oi = oacc + r * d->d_v;
            if (!shared)
                dec_scores(g, &t, 1, kr.lo, bd, d->d_k, qs + r * d->d_k, si);
            if (c->cap > 0.0f)
                c->t->softcap(si, bd, c->cap);
            const float alpha = c->t->attn_row(si, bd, m + r, l + r); /* P = exp(S - m), l, m */
            alphas[r] = alpha;
            if (!shared)
                dec_pv(g, &t, 1, kr.lo, bd, d->d_v, si, &alpha, oi);
        }
        if (shared)
            dec_pv(g, &t, tl->rows, k0.lo, k0.hi - k0.lo, d->d_v, s, alphas, oacc);
    }
}

/* O[rows r .. r + MR) += P V over the tile's keys, never touching a (row, key) pair the row
   does not see: the microkernel over the keys every row of the block sees (vp: the V tile
   in NR-column micropanels), then for each row the rest of its range by gemv_n over the
   rows of V (vr, leading dimension ldv >= d_v). */
static void pv_block(const qkv_gemm_kernels *g, const tile *tl, size_t r, size_t j0, size_t bc, const float *st,
                     const float *vp, const float *vr, size_t ldv, float *oacc, size_t dvp, size_t d_v)
{
    const size_t MR = g->mr, NR = g->nr, rows = qkv_min(MR, tl->rows - r);
    key_range all = {0, bc}; /* intersection over the block's rows */
    for (size_t i = 0; i < rows; i++) {
        const key_range ri = clip(tl->range[r + i], j0, bc);
        all.lo = qkv_max(all.lo, ri.lo);
        all.hi = qkv_min(all.hi, ri.hi);
    }
    const int common = all.lo < all.hi;
    if (common)
        for (size_t c0 = 0; c0 < dvp; c0 += NR)
            g->ukernel(all.hi - all.lo, st + all.lo * LDS + r, 1, LDS, vp + c0 * bc + all.lo * NR,
                       oacc + r * dvp + c0, dvp, 1.0f, 1.0f, NULL);
    for (size_t i = 0; i < rows; i++) {
        const key_range ri = clip(tl->range[r + i], j0, bc);
        const key_range rest[2] = {{ri.lo, common ? all.lo : ri.hi}, {common ? all.hi : ri.hi, ri.hi}};
        float *oi = oacc + (r + i) * dvp;
        for (int part = 0; part < 2; part++) /* o_i += P(i, lo .. hi) V(lo .. hi, :) */
            if (rest[part].lo < rest[part].hi)
                g->gemv_n(d_v, rest[part].hi - rest[part].lo, 1.0f, st + rest[part].lo * LDS + r + i, LDS,
                          vr + rest[part].lo * ldv, ldv, 1.0f, oi);
    }
}

/* Keys of the KV tile that starts at j0 in [any.lo, any.hi): BC, cut short where the rows'
   common range all starts or ends, so that the keys some rows do not see (a window's
   leading edge, the causal diagonal) fill masked tiles of their own and the keys every row
   sees go unmasked; a piece under BC / 3 keys is not cut off (a 1-key unmasked tile before
   the causal diagonal would cost more than it saves). */
static size_t tile_keys(size_t j0, key_range any, key_range all)
{
    size_t end = qkv_min(j0 + BC, any.hi);
    if (all.lo < all.hi) {
        const size_t cuts[2] = {all.lo, all.hi};
        for (int i = 0; i < 2; i++)
            if (j0 < cuts[i] && cuts[i] < end && cuts[i] - j0 >= BC / 3)
                end = cuts[i];
    }
    return end - j0;
}

static void tiled_tile(const core *c, const tile *tl, const slot_ws *w, key_range any, key_range all)
{
    const qkv_attention_desc *d = c->d;
    const qkv_gemm_kernels *g = c->t->gemm;
    const size_t MR = g->mr, NR = g->nr, d_k = d->d_k, d_v = d->d_v;
    /* query columns of S^T: the rows rounded to a vector, not to NR, so that a few queries
       (n_q 16 against NR 32) do not pay for a whole register tile of columns */
    const size_t W = qkv_round_up(tl->rows, g->vl), dvp = qkv_round_up(d_v, NR);
    float *qt = w->qt, *st = w->st, *vp = w->vp, *oacc = w->oacc, *m = w->m, *l = w->l;
    /* scale Q^T micropanels: element (x, row r) at qt[(r / NR) NR d_k + x NR + r % NR] */
    for (size_t r = 0; r < W; r++) {
        float *dst = qt + (r / NR) * NR * d_k + r % NR;
        const float *qr = r < tl->rows ? q_row(c, tl, r) : NULL;
        for (size_t x = 0; x < d_k; x++)
            dst[x * NR] = qr ? c->scale * qr[x] : 0.0f;
    }
    for (size_t r = 0; r < W; r++) {
        m[r] = -FLT_MAX;
        l[r] = 0.0f;
    }
    memset(oacc, 0, (W + MR) * dvp * sizeof(float));
    memset(st, 0, BC * LDS * sizeof(float)); /* columns past W: read by P V for padding rows only */
    const int f32 = d->kv_dtype == QKV_F32;
    for (size_t j0 = any.lo, bc; j0 < any.hi; j0 += bc) {
        bc = tile_keys(j0, any, all);
        /* S^T = K (scale Q)^T, K as the A operand: F32 rows read in place, except a last
           MR-row block that would reach past the last readable key, which is copied
           zero-padded; F16/BF16 rows widened into a float tile first */
        const size_t rows_k = qkv_round_up(bc, MR);
        const float *kt = NULL;
        if (!f32) {
            const size_t have = qkv_min(rows_k, tl->limit - j0);
            widen_rows(c, tl, 0, j0, have, w->kw);
            memset(w->kw + have * d_k, 0, (rows_k - have) * d_k * sizeof(float));
            kt = w->kw;
        }
        for (size_t r = 0; r < bc; r += MR) {
            const float *kr = kt ? kt + r * d_k : NULL;
            size_t ld = d_k;
            if (!kr && j0 + r + MR <= tl->limit) {
                kr = (const float *)(const void *)kv_row(c, tl, c->k, d->k_stride, j0 + r);
                ld = d->k_stride[2];
            } else if (!kr) {
                const size_t have = tl->limit - j0 - r;
                for (size_t i = 0; i < MR; i++) {
                    if (i < have)
                        memcpy(w->kw + i * d_k, kv_row(c, tl, c->k, d->k_stride, j0 + r + i), d_k * sizeof(float));
                    else
                        memset(w->kw + i * d_k, 0, d_k * sizeof(float));
                }
                kr = w->kw;
            }
            for (size_t c0 = 0; c0 < W; c0 += NR) /* a last panel under NR wide: the masked kernel */
                if (c0 + NR <= W)
                    g->ukernel(d_k, kr, ld, 1, qt + c0 * d_k, st + r * LDS + c0, LDS, 1.0f, 0.0f, NULL);
                else
                    g->ukernel_sup(MR, W - c0, d_k, kr, ld, 1, qt + c0 * d_k, NR, st + r * LDS + c0, LDS, 1.0f, 0.0f,
                                   NULL);
        }
        if (c->cap > 0.0f)
            for (size_t r = 0; r < bc; r++)
                c->t->softcap(st + r * LDS, W, c->cap);
        if (!(all.lo <= j0 && j0 + bc <= all.hi)) { /* boundary tile: hidden scores -inf */
            /* a select along each row of S^T, contiguous (the compiler vectorizes it),
               where stores down its columns would touch one line per score */
            int32_t lo[BR], hi[BR];
            for (size_t r = 0; r < tl->rows; r++) {
                const key_range kr = clip(tl->range[r], j0, bc);
                lo[r] = (int32_t)kr.lo;
                hi[r] = (int32_t)kr.hi;
            }
            for (size_t j = 0; j < bc; j++) {
                float *row = st + j * LDS;
                const int32_t jj = (int32_t)j;
                for (size_t r = 0; r < tl->rows; r++)
                    row[r] = jj < lo[r] || jj >= hi[r] ? -INFINITY : row[r];
            }
        }
        c->t->attn_update(bc, W, st, LDS, m, l, oacc, dvp, dvp);
        /* V tile -> NR-column micropanels, columns past d_v zero */
        const float *vsrc = NULL;
        size_t ldv = d_v;
        if (kv_in_place(d)) {
            vsrc = (const float *)(const void *)kv_row(c, tl, c->v, d->v_stride, j0);
            ldv = d->v_stride[2];
        } else { /* F16/BF16 widened, or F32 rows closer than d_v (broadcast) copied */
            widen_rows(c, tl, 1, j0, bc, w->vw);
            vsrc = w->vw;
        }
        for (size_t c0 = 0; c0 < dvp; c0 += NR) {
            float *dst = vp + c0 * bc;
            const size_t cols = c0 < d_v ? qkv_min(NR, d_v - c0) : 0;
            for (size_t j = 0; j < bc; j++) {
                memcpy(dst + j * NR, vsrc + j * ldv + c0, cols * sizeof(float));
                for (size_t x = cols; x < NR; x++)
                    dst[j * NR + x] = 0.0f;
            }
        }
        for (size_t r = 0; r < tl->rows; r += MR)
            pv_block(g, tl, r, j0, bc, st, vp, vsrc, ldv, oacc, dvp, d_v);
    }
}

/* the rows of tile t = ((b KVH + g) n_hc + hc) n_qt + qt (ranges and limit not set) */
static tile tile_at(const core *c, size_t t)
{
    const plan *p = &c->p;
    const size_t qt = t % p->n_qt, hc = t / p->n_qt % p->n_hc, bg = t / p->n_qt / p->n_hc;
    tile tl;
    tl.g = bg % p->KVH;
    tl.b = bg / p->KVH;
    tl.h0 = tl.g * p->G + hc * p->hpt;
    tl.n_heads = qkv_min(p->hpt, p->G - hc * p->hpt);
    tl.i0 = qt * p->qpt;
    tl.nq = qkv_min(p->qpt, c->d->n_q - tl.i0);
    tl.rows = tl.n_heads * tl.nq;
    tl.limit = 0;
    return tl;
}

/* item = tile index * n_chunks + chunk */
static void run_item(void *ctx, size_t item, size_t slot)
{
    const core *c = ctx;
    const qkv_attention_desc *d = c->d;
    const plan *p = &c->p;
    const size_t chunk = item % p->n_chunks;
    tile tl = tile_at(c, item / p->n_chunks);
    tl.limit = d->kv_len ? d->kv_len[tl.b] : d->n_kv;
    const size_t c0 = chunk * p->chunk, c1 = qkv_min(d->n_kv, c0 + p->chunk);
    key_range any = {SIZE_MAX, 0}, all = {0, SIZE_MAX};
    for (size_t r = 0; r < tl.rows; r++) {
        key_range kr = visible(d, tl.b, tl.i0 + r % tl.nq);
        kr.lo = qkv_max(kr.lo, c0);
        kr.hi = qkv_min(kr.hi, c1);
        if (kr.lo >= kr.hi)
            kr.lo = kr.hi = c0;
        tl.range[r] = kr;
        if (kr.lo < kr.hi) {
            any.lo = qkv_min(any.lo, kr.lo);
            any.hi = qkv_max(any.hi, kr.hi);
        }
        all.lo = qkv_max(all.lo, kr.lo);
        all.hi = qkv_min(all.hi, kr.hi);
    }
    if (any.lo >= any.hi)
        any.lo = any.hi = c0;
    slot_ws w;
    qkv_arena ar = qkv_arena_on(c->w.slots + slot * c->w.slot_floats);
    slot_layout(&ar, d->d_k, d->d_v, kv_in_place(d), &w);
    const int decode = tl.rows <= DECODE_ROWS;
    if (decode)
        decode_tile(c, &tl, &w, any);
    else
        tiled_tile(c, &tl, &w, any, all);
    const size_t ld = decode ? d->d_v : qkv_round_up(d->d_v, c->t->gemm->nr);
    if (p->n_chunks == 1) {
        finish_rows(c, &tl, w.oacc, ld, w.m, w.l);
        return;
    }
    float *part = c->w.partials + item * c->w.part_len; /* O rows, m, l */
    for (size_t r = 0; r < tl.rows; r++)
        memcpy(part + r * d->d_v, w.oacc + r * ld, d->d_v * sizeof(float));
    memcpy(part + tl.rows * d->d_v, w.m, tl.rows * sizeof(float));
    memcpy(part + tl.rows * (d->d_v + 1), w.l, tl.rows * sizeof(float));
}

/* split-KV: the chunks of tile `tile` merged in chunk order:
   M = max m_c, L = sum e_c l_c, O = sum e_c O_c / L with e_c = exp(m_c - M) */
static void merge_tile(void *ctx, size_t tile_index, size_t slot)
{
    const core *c = ctx;
    const qkv_attention_desc *d = c->d;
    const plan *p = &c->p;
    const size_t n = p->n_chunks, d_v = d->d_v;
    const tile tl = tile_at(c, tile_index);
    /* the merged rows go through the slot's accumulator */
    float *acc = c->w.slots + slot * c->w.slot_floats, *m = acc + tl.rows * d_v, *l = m + tl.rows;
    const float *parts = c->w.partials + tile_index * n * c->w.part_len;
    for (size_t r = 0; r < tl.rows; r++) {
        float mx = -FLT_MAX;
        for (size_t ch = 0; ch < n; ch++) {
            const float *pc = parts + ch * c->w.part_len;
            if (pc[tl.rows * (d_v + 1) + r] != 0.0f && pc[tl.rows * d_v + r] > mx)
                mx = pc[tl.rows * d_v + r];
        }
        float sum = 0.0f, *o = acc + r * d_v;
        memset(o, 0, d_v * sizeof(float));
        for (size_t ch = 0; ch < n; ch++) {
            const float *pc = parts + ch * c->w.part_len, lc = pc[tl.rows * (d_v + 1) + r];
            if (lc == 0.0f)
                continue; /* no visible key in this chunk */
            const float e = expf(pc[tl.rows * d_v + r] - mx);
            sum += e * lc;
            for (size_t x = 0; x < d_v; x++)
                o[x] += e * pc[r * d_v + x];
        }
        m[r] = mx;
        l[r] = sum;
    }
    finish_rows(c, &tl, acc, d_v, m, l);
}

/* ---- validation and the public entry ------------------------------------------------- */

/* 1 if a tensor of n_b x n_h x n_t rows of `cols` elements of `es` bytes, laid out by
   stride, spans at most PTRDIFF_MAX bytes */
static int span_ok(const size_t stride[3], size_t n_b, size_t n_h, size_t n_t, size_t cols, size_t es)
{
    const size_t n[3] = {n_b, n_h, n_t};
    size_t span = cols, x;
    for (int i = 0; i < 3; i++) {
        if (!qkv_mul_ok(n[i] - 1, stride[i], &x) || span > SIZE_MAX - x)
            return 0;
        span += x;
    }
    return qkv_mul_ok(span, es, &x) && x <= (size_t)PTRDIFF_MAX;
}

qkv_status qkv_attention_check(const qkv_attention_desc *d)
{
    if (!d || !d->batch || !d->n_heads || !d->n_q || !d->n_kv || !d->d_k || !d->d_v ||
        (d->n_kv_heads && (d->n_kv_heads > d->n_heads || d->n_heads % d->n_kv_heads != 0)) ||
        (d->flags & ~QKV_CAUSAL) || isnan(d->scale) || isinf(d->scale) || !(d->softcap >= 0.0f) ||
        isinf(d->softcap) || (unsigned)d->kv_dtype > QKV_BF16)
        return QKV_ERR_ARG;
    if (d->kv_len)
        for (size_t b = 0; b < d->batch; b++)
            if (d->kv_len[b] > d->n_kv)
                return QKV_ERR_ARG;
    const size_t KVH = d->n_kv_heads ? d->n_kv_heads : d->n_heads, es = elem_size(d->kv_dtype);
    /* an output stride of 0 over more than one element makes outputs overlap */
    if ((d->batch > 1 && !d->o_stride[0]) || (d->n_heads > 1 && !d->o_stride[1]) || (d->n_q > 1 && !d->o_stride[2]))
        return QKV_ERR_ARG;
    size_t tiles;
    if (!span_ok(d->q_stride, d->batch, d->n_heads, d->n_q, d->d_k, 4) ||
        !span_ok(d->k_stride, d->batch, KVH, d->n_kv, d->d_k, es) ||
        !span_ok(d->v_stride, d->batch, KVH, d->n_kv, d->d_v, es) ||
        !span_ok(d->o_stride, d->batch, d->n_heads, d->n_q, d->d_v, 4) ||
        !qkv_mul_ok(d->batch, d->n_heads, &tiles) || !qkv_mul_ok(tiles, d->n_q, &tiles) ||
        !qkv_floats_ok(d->d_k, BR) || !qkv_floats_ok(dv_pad(d->d_v), BR + MR_MAX))
        return QKV_ERR_SIZE;
    return QKV_OK;
}

/* the workspace of a checked d on n_slots slots: bytes, 0 on overflow */
static size_t ws_bytes(const qkv_attention_desc *d, const plan *p, size_t n_slots)
{
    qkv_arena ar = qkv_arena_sizer();
    core_ws w;
    layout(&ar, d, p, n_slots, &w);
    return qkv_arena_bytes(&ar);
}

static size_t slots_for(const plan *p, const qkv_threadpool *tp)
{
    return qkv_tasks_for(tp, p->n_tiles * p->n_chunks);
}

size_t qkv_attention_workspace_size(const qkv_attention_desc *d, size_t n_threads)
{
    if (qkv_attention_check(d) != QKV_OK)
        return 0;
    const plan p = make_plan(d);
    return ws_bytes(d, &p, qkv_min(qkv_max(n_threads, 1), p.n_tiles * p.n_chunks));
}

qkv_status qkv_attention_run(const qkv_kernels *t, const qkv_attention_desc *d, const float *q, const void *k,
                             const void *v, float *o, float *lse, const qkv_threadpool *tp, void *ws, size_t ws_size)
{
    core c = {t, d, make_plan(d), {NULL, NULL, 0, 0}, d->scale > 0.0f ? d->scale : (float)(1.0 / sqrt((double)d->d_k)),
              d->softcap, q, k, v, o, lse, elem_size(d->kv_dtype)};
    const size_t slots = slots_for(&c.p, tp), need = ws_bytes(d, &c.p, slots);
    if (need == 0)
        return QKV_ERR_SIZE;
    void *owned = NULL;
    if (ws == NULL) {
        ws = owned = aligned_alloc(QKV_ARENA_ALIGN, qkv_round_up(need, QKV_ARENA_ALIGN));
        if (ws == NULL)
            return QKV_ERR_NOMEM;
    } else if (ws_size < need) {
        return QKV_ERR_SIZE;
    }
    qkv_arena ar = qkv_arena_on(ws);
    layout(&ar, d, &c.p, slots, &c.w);
    qkv_parallel_for(tp, c.p.n_tiles * c.p.n_chunks, run_item, &c);
    if (c.p.n_chunks > 1)
        qkv_parallel_for(tp, c.p.n_tiles, merge_tile, &c);
    free(owned);
    return QKV_OK;
}

qkv_status qkv_attention(const qkv_attention_desc *d, const float *q, const void *k, const void *v, float *o,
                         float *lse, const qkv_threadpool *tp, void *ws, size_t ws_size)
{
    if (!q || !k || !v || !o || !qkv_threadpool_ok(tp))
        return QKV_ERR_ARG;
    const qkv_status st = qkv_attention_check(d);
    if (st != QKV_OK)
        return st;
    return qkv_attention_run(qkv_kernels_active(), d, q, k, v, o, lse, tp, ws, ws_size);
}
