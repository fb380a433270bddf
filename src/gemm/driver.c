/* qkv_gemm: argument checks, the special cases, and the Goto/BLIS five-loop driver.
 *
 *   C = alpha * op(A) * op(B) + beta * C        op(A): m x k, op(B): k x n, row-major
 *
 * Paths, in order:
 *   k == 0 or alpha == 0   C = beta * C (A and B are not read; beta == 0 writes zeros)
 *   m == 1 (decode)        no packing: op(B) transposed -> gemv_t (one dot per output, rows
 *                          of B streamed), else gemv_n (axpys over the rows of B)
 *   small or m skinny, A and B row-major: no packing, ukernel_sup on both in place
 *   otherwise              blocked: for jc (NC columns) / pc (KC depth, pack B) / ic (MC
 *                          rows; pack A if transposed, else read in place) / jr (NR) /
 *                          ir (MR): microkernel on an MR x NR tile
 * The first KC block applies the caller's beta, later blocks accumulate (beta = 1), so
 * beta == 0 never reads C. Edge tiles go through a scratch tile and only their valid part
 * is merged into C, so nothing outside the m x n window of C is read or written.
 * The tile and blocking sizes come from the table the caller resolved (qkv_gemm: the active
 * ISA's, read once per call; drivers pass the one they resolved for the whole call). One workspace
 * (packed A block or edge panel, packed B block, scratch tile; or the gathered x of the
 * m == 1 path) is allocated per call, or supplied by the caller through qkv_gemm_ws().
 * Every macro-tile is an independent work item once B is packed, ready for a
 * caller-supplied thread pool.
 * Compiled with baseline flags: all arithmetic happens in the ISA kernels, except the
 * O(mn) scaling for k == 0 and the edge merge. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "gemm/pack.h"
#include "kernels.h"

/* C = beta * C, beta == 0 without reading C */
static void scale_c(size_t m, size_t n, float beta, float *c, size_t ldc)
{
    if (beta == 1.0f)
        return;
    for (size_t i = 0; i < m; i++) {
        float *ci = c + i * ldc;
        if (beta == 0.0f)
            memset(ci, 0, n * sizeof(float));
        else
            for (size_t j = 0; j < n; j++)
                ci[j] *= beta;
    }
}

/* the valid rows x cols of a scratch tile t (already alpha * AB) into C */
static void merge_tile(size_t rows, size_t cols, const float *t, size_t ldt, float beta, float *c, size_t ldc)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            c[i * ldc + j] = beta == 0.0f ? t[i * ldt + j] : t[i * ldt + j] + beta * c[i * ldc + j];
}

/* The blocking of one call: the ISA's blocking for this machine (qkv_gemm_blocking_of:
   from the cache sizes, fixed at start-up, never from the thread count), blocks no larger
   than the problem; k split into equal KC blocks (k = 300 with KC 256: 150 + 150, not
   256 + 44) so that every block amortizes the microkernel epilogue. */
typedef struct blocking {
    size_t kc, mc, nc;
} blocking;

static blocking plan(const qkv_gemm_kernels *g, size_t m, size_t n, size_t k)
{
    const qkv_gemm_blocking cb = qkv_gemm_blocking_of(g);
    const size_t k_blocks = (k + cb.kc - 1) / cb.kc;
    return (blocking){(k + k_blocks - 1) / k_blocks, qkv_min(cb.mc, qkv_round_up(m, g->mr)),
                      qkv_min(cb.nc, qkv_round_up(n, g->nr))};
}

/* plan() for the blocked loops themselves: a row-major A read in place gets the MC of its
   leading dimension (qkv_gemm_mc_in_place: never more than plan's, so the workspace that
   layout() sized with plan() holds) */
static blocking plan_in_place(const qkv_gemm_kernels *g, qkv_trans ta, size_t lda, size_t m, size_t n, size_t k)
{
    blocking b = plan(g, m, n, k);
    if (ta == QKV_NOTRANS) {
        const qkv_gemm_blocking cb = qkv_gemm_blocking_of(g);
        b.mc = qkv_min(b.mc, qkv_gemm_mc_in_place(&cb, g->mr, lda, b.kc));
    }
    return b;
}

/* The workspace of one call with the kernels g, in arena order: the gathered x of the
   m == 1 path, or the packed A block (or edge panel), packed B block and scratch tile of the
   blocked path. A row-major A is read in place, so only a partial last row panel of it is
   packed (MR x kc); a transposed A is packed whole (mc x kc). */
typedef struct gemm_ws {
    float *x, *ap, *bp, *tile;
} gemm_ws;

static void layout(qkv_arena *ar, const qkv_gemm_kernels *g, qkv_trans ta, qkv_trans tb, size_t m, size_t n,
                   size_t k, gemm_ws *w)
{
    *w = (gemm_ws){NULL, NULL, NULL, NULL};
    if (m == 1) {
        if (ta == QKV_TRANS && tb == QKV_TRANS)
            w->x = qkv_arena_floats(ar, k);
        return;
    }
    const blocking b = plan(g, m, n, k);
    w->ap = qkv_arena_floats(ar, (ta == QKV_TRANS ? b.mc : g->mr) * b.kc);
    w->bp = qkv_arena_floats(ar, b.kc * b.nc);
    w->tile = qkv_arena_floats(ar, g->mr * g->nr);
}

size_t qkv_gemm_workspace_floats(qkv_trans ta, qkv_trans tb, size_t m, size_t n, size_t k)
{
    if (m == 0 || n == 0 || k == 0)
        return 0;
    size_t most = 0;
    for (size_t i = 0; qkv_kernels_built(i) != NULL; i++) {
        qkv_arena ar = qkv_arena_sizer();
        gemm_ws w;
        layout(&ar, qkv_kernels_built(i)->gemm, ta, tb, m, n, k, &w);
        most = qkv_max(most, ar.used / sizeof(float));
    }
    return most;
}

/* m == 1: op(A) is the row a[0..k) (QKV_NOTRANS) or the column a[p * lda] (QKV_TRANS) */
static void gemm_row(const qkv_gemm_kernels *g, qkv_trans ta, qkv_trans tb, size_t n, size_t k, float alpha,
                     const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c, float *x)
{
    const size_t inca = ta == QKV_TRANS ? lda : 1;
    if (tb == QKV_NOTRANS) {
        g->gemv_n(n, k, alpha, a, inca, b, ldb, beta, c);
        return;
    }
    /* gemv_t loads x as vectors: gather a strided column once */
    if (inca != 1) {
        for (size_t p = 0; p < k; p++)
            x[p] = a[p * inca];
        a = x;
    }
    g->gemv_t(n, k, alpha, a, b, ldb, beta, c);
}

/* The A operand of one macro-kernel: row panel ir (a multiple of MR) starts at
   a + ir * step, A(i, p) of it at [i * rs + p * cs]. Panels at or past n_full are the
   packed partial panel edge (rs = 1, cs = MR). */
typedef struct a_block {
    const float *a, *edge;
    size_t rs, cs, step, n_full;
} a_block;

/* mc x nc block of C = alpha * A (mc x kc) * packed B (kc x nc) + beta * C */
static void macro_kernel(const qkv_gemm_kernels *g, size_t mc, size_t nc, size_t kc, float alpha, const a_block *A,
                         const float *bp, float beta, float *c, size_t ldc, float *tile)
{
    const size_t MR = g->mr, NR = g->nr;
    for (size_t jr = 0; jr < nc; jr += NR) {
        const size_t nr = qkv_min(NR, nc - jr);
        const float *b_panel = bp + jr * kc; /* stays in L1 across the ir loop */
        for (size_t ir = 0; ir < mc; ir += MR) {
            const size_t mr = qkv_min(MR, mc - ir);
            const int full = ir < A->n_full;
            const float *a_panel = full ? A->a + ir * A->step : A->edge;
            const size_t rs = full ? A->rs : 1, cs = full ? A->cs : MR;
            float *cij = c + ir * ldc + jr;
            if (mr == MR && nr == NR) {
                g->ukernel(kc, a_panel, rs, cs, b_panel, cij, ldc, alpha, beta);
            } else {
                g->ukernel(kc, a_panel, rs, cs, b_panel, tile, NR, alpha, 0.0f);
                merge_tile(mr, nr, tile, NR, beta, cij, ldc);
            }
        }
    }
}

static void gemm_blocked(const qkv_gemm_kernels *g, qkv_trans ta, qkv_trans tb, size_t m, size_t n, size_t k,
                         float alpha, const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c,
                         size_t ldc, const gemm_ws *w)
{
    const size_t MR = g->mr, NR = g->nr;
    const blocking bl = plan_in_place(g, ta, lda, m, n, k);
    const size_t kc_max = bl.kc, mc_max = bl.mc, nc_max = bl.nc;
    /* A row-major A (QKV_NOTRANS) is read in place: per k step the microkernel broadcasts
       one float from each of MR rows, which walk forward together, so a row panel costs
       MR streams of L1 lines, the same lines packing would have read, without the copy
       (measured on Zen 4: as fast as packing for N >= 512, 1.4x faster at 4096 x 64 x 4096
       where an A panel meets only 4 B panels). Only a partial last row panel is packed, to
       zero-pad it. A
       transposed A would put each k step on its own cache line: that one is packed. */
    const int pack_a = ta == QKV_TRANS;
    float *ap = w->ap, *bp = w->bp, *tile = w->tile;
    const size_t a_rs = ta == QKV_TRANS ? 1 : lda, a_cs = ta == QKV_TRANS ? lda : 1; /* op(A)(i, p) in place */

    for (size_t jc = 0; jc < n; jc += nc_max) {
        const size_t nc = qkv_min(nc_max, n - jc);
        for (size_t pc = 0; pc < k; pc += kc_max) {
            const size_t kc = qkv_min(kc_max, k - pc);
            const float beta_pc = pc == 0 ? beta : 1.0f;
            qkv_gemm_pack_b(tb, kc, nc, tb == QKV_TRANS ? b + jc * ldb + pc : b + pc * ldb + jc, ldb, NR, bp);
            for (size_t ic = 0; ic < m; ic += mc_max) {
                const size_t mc = qkv_min(mc_max, m - ic);
                const float *a_ic = a + ic * a_rs + pc * a_cs; /* op(A)(ic, pc) */
                a_block A;
                if (pack_a) {
                    qkv_gemm_pack_a(ta, mc, kc, a_ic, lda, MR, ap);
                    A = (a_block){ap, ap, 1, MR, kc, mc};
                } else {
                    const size_t n_full = mc - mc % MR;
                    if (n_full < mc)
                        qkv_gemm_pack_a(ta, mc - n_full, kc, a_ic + n_full * a_rs, lda, MR, ap);
                    A = (a_block){a_ic, ap, a_rs, a_cs, a_rs, n_full};
                }
                macro_kernel(g, mc, nc, kc, alpha, &A, bp, beta_pc, c + ic * ldc + jc, ldc, tile);
            }
        }
    }
}

/* Small and skinny problems (the BLIS "sup" idea): with A and B both row-major, the
   microkernel reads both in place (ukernel_sup: A rows and B rows at their leading
   dimensions, edge tiles through masked columns and fewer rows), so nothing is packed, no
   workspace is taken and no edge goes through a scratch tile. Worth it where packing is a
   visible part of the time: everything fits in L2 (m n k up to 160^3: 64^3, 128^3,
   77 x 300 x 129), or m is a few register tiles (each B micropanel is used at most 4
   times, so packing it cannot pay). k stays unblocked: its depth is the whole k, which
   only lengthens each FMA chain (the error bound holds for any k). */
static int small_ok(const qkv_gemm_kernels *g, qkv_trans ta, qkv_trans tb, size_t m, size_t n, size_t k)
{
    if (ta != QKV_NOTRANS || tb != QKV_NOTRANS)
        return 0;
    const double mnk = (double)m * (double)n * (double)k;
    return mnk <= 160.0 * 160.0 * 160.0 || (m <= 4 * g->mr && k <= 4096);
}

static void gemm_small(const qkv_gemm_kernels *g, size_t m, size_t n, size_t k, float alpha, const float *a,
                       size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
    const size_t MR = g->mr, NR = g->nr;
    for (size_t jr = 0; jr < n; jr += NR) { /* a KC x NR panel of B stays in L1 over ir */
        const size_t nr = qkv_min(NR, n - jr);
        for (size_t ir = 0; ir < m; ir += MR)
            g->ukernel_sup(qkv_min(MR, m - ir), nr, k, a + ir * lda, lda, 1, b + jr, ldb, c + ir * ldc + jr, ldc,
                           alpha, beta);
    }
}

qkv_status qkv_gemm(qkv_trans ta, qkv_trans tb, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                    const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
    return qkv_gemm_ws(qkv_kernels_active()->gemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, NULL);
}

qkv_status qkv_gemm_ws(const qkv_gemm_kernels *g, qkv_trans ta, qkv_trans tb, size_t m, size_t n, size_t k,
                       float alpha, const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c,
                       size_t ldc, float *ws)
{
    if ((unsigned)ta > QKV_TRANS || (unsigned)tb > QKV_TRANS)
        return QKV_ERR_ARG;
    /* stored shapes: A is a_rows x a_cols, B is b_rows x b_cols */
    const size_t a_rows = ta == QKV_TRANS ? k : m, a_cols = ta == QKV_TRANS ? m : k;
    const size_t b_rows = tb == QKV_TRANS ? n : k, b_cols = tb == QKV_TRANS ? k : n;
    if (lda < a_cols || ldb < b_cols || ldc < n)
        return QKV_ERR_ARG;
    if (m == 0 || n == 0)
        return QKV_OK;
    if (c == NULL || (k > 0 && (a == NULL || b == NULL)))
        return QKV_ERR_ARG;
    if (!qkv_extent_ok(m, n, ldc) || !qkv_extent_ok(a_rows, a_cols, lda) || !qkv_extent_ok(b_rows, b_cols, ldb))
        return QKV_ERR_SIZE;

    if (k == 0 || alpha == 0.0f) {
        scale_c(m, n, beta, c, ldc);
        return QKV_OK;
    }
    if (m > 1 && small_ok(g, ta, tb, m, n, k)) {
        gemm_small(g, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return QKV_OK;
    }
    qkv_arena ar = qkv_arena_sizer();
    gemm_ws w;
    layout(&ar, g, ta, tb, m, n, k, &w);
    float *owned = NULL;
    if (ws == NULL && ar.used > 0) {
        ws = owned = aligned_alloc(QKV_ARENA_ALIGN, ar.used); /* the driver's one allocator */
        if (ws == NULL)
            return QKV_ERR_NOMEM;
    }
    ar = qkv_arena_on(ws);
    layout(&ar, g, ta, tb, m, n, k, &w);
    if (m == 1)
        gemm_row(g, ta, tb, n, k, alpha, a, lda, b, ldb, beta, c, w.x);
    else
        gemm_blocked(g, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, &w);
    free(owned);
    return QKV_OK;
}
