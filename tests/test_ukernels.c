/* The microkernel contract of src/kernels.h, tested directly on every table this host runs
 * (in the spirit of BLIS's test_gemm_ukr): a broken register tile fails here, at its own
 * contract, instead of three layers up in an attention tolerance.
 *
 *   ukernel      the full MR x NR tile with every operand layout the drivers use:
 *                packed A (rs 1, cs MR), rows of A in place (rs lda, cs 1), transposed A in
 *                place (rs 1, cs lda: sdpa's P read from S^T), C with ldc > NR and the
 *                ldc = NR scratch tile of edge tiles (a zero-padded partial panel), alpha
 *                scaling, beta = 0 over NaN (C never read), beta = 1 and beta = -0.5;
 *                k = 1 .. 300. A and B end at a PROT_NONE page: the kernel reads only the
 *                MR x k elements of A and the k x NR of B it is given.
 *   ukernel_row, ukernel_col   a row of 1 .. 5 tiles over one packed A micropanel (B
 *                micropanels b_step apart), and a column of them over one B micropanel
 *                with packed A, rows of A in place and transposed A in place (A panels
 *                a_step apart), with B packed and packed on the way from a row-major
 *                source (b_src; the micropanels start as NaN): bit-identical to ukernel
 *                tile by tile and within the GEMM tolerance of the double reference, the
 *                micropanels then equal to the source, C's padding untouched, operands
 *                at a PROT_NONE page, beta = 0 over NaN, k = 1 .. 65
 *   ukernel_sup  B in place: every row count m = 1 .. MR and column counts 1 .. NR around
 *                the vector length (masked columns), k = 1 .. 300, A, B and C each ending
 *                at a PROT_NONE page right after their last element, C's leading-dimension
 *                padding untouched, beta = 0 over NaN, beta = -0.5
 *   gemv_t       n and k with every tail up to 2 x 16 + 3, ldb > k, beta = 0 over NaN
 *   gemv_n       the same, incx 1 and 3, and n up to 8 AVX-512 vectors + a tail (every
 *                column block: 8, 4, 2, 1 vectors); gemv_ns the same, n past its 512-column
 *                chunks, and a B of over 8 MiB (read in whole rows of up to 4096 columns):
 *                bit-identical to a call on its last 128-aligned columns, and to calls on
 *                its last 4 and 100 columns (sums held in registers)
 *   gemv_t_multi, gemv_n_multi   1 .. 4 rows of x at once: tails, padded leading
 *                dimensions, beta per row (0 over NaN: not read), B at a guard page,
 *                against the double reference and bit-identical to gemv_t / gemv_n per row;
 *                their F16 and BF16 B forms bit-identical to them on the widened B
 *   softcap      cap tanh(x / cap): tanh within 2 ULP, special values, tails at a guard page
 *   attn_row     the same for one contiguous row: every tail to 70, guard page, masked keys
 *   attn_update  max, rescale and exp of one S^T tile: columns whose max grows, columns
 *                that do not, columns all -inf (masked: zeros, a = 1, never NaN), running
 *                max at -FLT_MAX, rows = 1 and odd rows.
 * Reference: double precision. Tolerance of a GEMM element: 2 k FLT_EPSILON |alpha|
 * sum_p |a_ip b_pj| + 2 FLT_EPSILON |beta c| (+ FLT_MIN); attn_update: 4 ULP on each exp
 * of exp(float(s - mx)) (the kernels' exp is within 2), the rescaled accumulator within
 * 4 ULP, and the sum l within 4 (rows + 1) FLT_EPSILON (l + 1). */
#include "common.h"

#include "kernels.h"

/* fill n floats with values in [-1, 1) */
static void fill(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = rng_uniform(-1, 1);
}

static int close_to(float got, double want, double tol)
{
    return fabs((double)got - want) <= tol;
}

/* one microkernel call on A(i, p) = a[i * rs + p * cs] (rows >= mr_valid are zero in a
   padded panel, so they must give alpha * 0 + beta c) against the double reference */
static void check_ukernel(const qkv_gemm_kernels *g, size_t k, const float *a, size_t rs, size_t cs,
                          const float *b, size_t ldc, float alpha, float beta, const char *layout)
{
    const size_t MR = g->mr, NR = g->nr;
    float *c = malloc(MR * ldc * sizeof(float)), *c0 = malloc(MR * ldc * sizeof(float));
    fill(c0, MR * ldc);
    if (beta == 0.0f)
        for (size_t i = 0; i < MR * ldc; i++)
            c0[i] = NAN; /* never read */
    memcpy(c, c0, MR * ldc * sizeof(float));
    /* c_next: NULL, or one past the end of C (a prefetch hint only: ASan sees any read) */
    g->ukernel(k, a, rs, cs, b, c, ldc, alpha, beta, k % 2 != 0 ? c + MR * ldc : NULL);
    long bad = 0;
    for (size_t i = 0; i < MR; i++) {
        for (size_t j = 0; j < ldc; j++) {
            const float got = c[i * ldc + j];
            if (j >= NR) { /* past the tile: untouched */
                bad += memcmp(&got, &c0[i * ldc + j], sizeof got) != 0;
                continue;
            }
            double mag;
            const double dot = ref_dot(a + i * rs, cs, b + j, NR, k, &mag);
            const double cij = beta == 0.0f ? 0.0 : (double)c0[i * ldc + j];
            bad += !close_to(got, alpha * dot + beta * cij, gemm_tol(k, alpha, mag, beta * cij, FLT_MIN));
        }
    }
    CHECK(bad == 0, "ukernel %zux%zu %s k=%zu ldc=%zu alpha=%g beta=%g: %ld wrong elements", MR, NR, layout, k, ldc,
          alpha, beta, bad);
    free(c);
    free(c0);
}

static void test_ukernel(const qkv_gemm_kernels *g)
{
    const size_t MR = g->mr, NR = g->nr;
    static const size_t ks[] = {1, 2, 3, 7, 16, 64, 65, 96, 300};
    static const float alphas[] = {1.0f, 0.125f, -2.0f};
    static const float betas[] = {0.0f, 1.0f, -0.5f};
    for (size_t ik = 0; ik < sizeof ks / sizeof ks[0]; ik++) {
        const size_t k = ks[ik], lda = k + 5;
        guarded ga_packed, ga_rows, ga_trans, gb;
        /* packed micropanel: element (i, p) at [p MR + i] */
        float *ap = guarded_alloc(&ga_packed, MR * k, GUARD_AFTER);
        /* MR rows of a row-major matrix with lda > k, read in place; the buffer ends right
           after element (MR - 1, k - 1) */
        float *ar = guarded_alloc(&ga_rows, (MR - 1) * lda + k, GUARD_AFTER);
        /* transposed in place: A(i, p) at [p ldt + i] with ldt > MR, ending after (MR-1, k-1) */
        const size_t ldt = MR + 3;
        float *at = guarded_alloc(&ga_trans, (k - 1) * ldt + MR, GUARD_AFTER);
        float *bp = guarded_alloc(&gb, k * NR, GUARD_AFTER);
        fill(ap, MR * k);
        fill(ar, (MR - 1) * lda + k);
        fill(at, (k - 1) * ldt + MR);
        fill(bp, k * NR);
        for (size_t ia = 0; ia < sizeof alphas / sizeof alphas[0]; ia++) {
            for (size_t ib = 0; ib < sizeof betas / sizeof betas[0]; ib++) {
                const float alpha = alphas[ia], beta = betas[ib];
                check_ukernel(g, k, ap, 1, MR, bp, NR, alpha, beta, "packed A");
                check_ukernel(g, k, ar, lda, 1, bp, NR + 7, alpha, beta, "A rows in place");
                check_ukernel(g, k, at, 1, ldt, bp, NR, alpha, beta, "A transposed in place");
            }
        }
        /* an edge panel: the driver zero-pads the rows past the matrix and points C at an
           MR x NR scratch tile with beta = 0 (over garbage) */
        for (size_t valid = MR - 1; valid >= 1; valid--) {
            for (size_t p = 0; p < k; p++)
                for (size_t i = valid; i < MR; i++)
                    ap[p * MR + i] = 0.0f;
            check_ukernel(g, k, ap, 1, MR, bp, NR, 1.0f, 0.0f, "zero-padded edge panel");
        }
        CHECK(guarded_free(&ga_packed) && guarded_free(&ga_rows) && guarded_free(&ga_trans) && guarded_free(&gb),
              "ukernel wrote outside its operands (k=%zu)", k);
    }
}

/* C (rows x cols at ldc, the rest padding) against tile-by-tile ukernel calls (want: C after
   them, bit for bit) and the double reference of C(i, j) = alpha sum_p A(i, p) B(p, j) + beta
   C0(i, j), A(i, p) at ai[i][p cs] for the row i, B(p, j) at bj[j][p NR] */
static long check_tiles(const float *got, const float *want, const float *c0, size_t rows, size_t cols, size_t ldc,
                        size_t len, size_t k, const float *const *ai, size_t cs, const float *const *bj, size_t NR,
                        float alpha, float beta)
{
    long bad = memcmp(got, want, len * sizeof(float)) != 0;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            double mag;
            const double dot = ref_dot(ai[i], cs, bj[j], NR, k, &mag);
            const double cij = beta == 0.0f ? 0.0 : (double)c0[i * ldc + j];
            bad += !close_to(got[i * ldc + j], alpha * dot + beta * cij, gemm_tol(k, alpha, mag, beta * cij, FLT_MIN));
        }
    for (size_t i = 0; i < rows; i++) /* the padding of each row untouched */
        for (size_t j = cols; j < ldc && i * ldc + j < len; j++)
            bad += memcmp(&got[i * ldc + j], &c0[i * ldc + j], sizeof(float)) != 0;
    return bad;
}

/* B for ukernel_row / ukernel_col: `panels` micropanels b_step apart in *bp (guarded), and
   with packs the row-major source they come from in *src (k rows, ldb apart, guarded) while
   *bp holds NaN until the kernel fills it; *ref: the micropanels as they must end up */
static void make_b(size_t k, size_t NR, size_t panels, size_t b_step, int packs, size_t ldb, guarded *gb,
                   guarded *gs, float **bp, float **src, float **ref)
{
    const size_t len = (panels - 1) * b_step + k * NR;
    *bp = guarded_alloc(gb, len, GUARD_AFTER);
    *ref = malloc(len * sizeof(float));
    fill(*ref, len);
    *src = NULL;
    if (packs) {
        *src = guarded_alloc(gs, (k - 1) * ldb + panels * NR, GUARD_AFTER);
        for (size_t t = 0; t < panels; t++)
            for (size_t p = 0; p < k; p++)
                for (size_t j = 0; j < NR; j++)
                    (*src)[p * ldb + t * NR + j] = (*ref)[t * b_step + p * NR + j];
        for (size_t i = 0; i < len; i++)
            (*bp)[i] = NAN;
    } else {
        memcpy(*bp, *ref, len * sizeof(float));
    }
}

/* the micropanels as filled (or left) by the kernel against ref */
static long check_b(const float *bp, const float *ref, size_t k, size_t NR, size_t panels, size_t b_step)
{
    long bad = 0;
    for (size_t t = 0; t < panels; t++)
        bad += memcmp(bp + t * b_step, ref + t * b_step, k * NR * sizeof(float)) != 0;
    return bad;
}

static void test_ukernel_rowcol(const qkv_gemm_kernels *g)
{
    const size_t MR = g->mr, NR = g->nr;
    static const size_t ks[] = {1, 7, 64, 65};
    static const float alphas[] = {1.0f, -0.5f};
    static const float betas[] = {0.0f, 1.0f, 0.25f};
    for (size_t ik = 0; ik < sizeof ks / sizeof ks[0]; ik++)
        for (size_t tiles = 1; tiles <= 5; tiles++)
            for (size_t ia = 0; ia < sizeof alphas / sizeof alphas[0]; ia++)
                for (size_t ib = 0; ib < sizeof betas / sizeof betas[0]; ib++)
                    for (int packs = 0; packs < 2; packs++) {
                        const size_t k = ks[ik];
                        const float alpha = alphas[ia], beta = betas[ib];
                        /* a row: packed A, B micropanels b_step = k NR + 16 apart (or packed
                           on the way from a source of tiles NR + 5 columns), ldc past the row */
                        {
                            const size_t b_step = k * NR + 16, ldb = tiles * NR + 5, ldc = tiles * NR + 3,
                                         len = MR * ldc;
                            guarded ga, gb, gs;
                            float *a = guarded_alloc(&ga, MR * k, GUARD_AFTER), *b, *src, *ref;
                            make_b(k, NR, tiles, b_step, packs, ldb, &gb, &gs, &b, &src, &ref);
                            float *c0 = malloc(len * sizeof(float)), *c = malloc(len * sizeof(float)),
                                  *want = malloc(len * sizeof(float));
                            fill(a, MR * k);
                            fill(c0, len);
                            if (beta == 0.0f)
                                for (size_t i = 0; i < MR; i++)
                                    for (size_t j = 0; j < tiles * NR; j++)
                                        c0[i * ldc + j] = NAN; /* never read */
                            memcpy(c, c0, len * sizeof(float));
                            memcpy(want, c0, len * sizeof(float));
                            g->ukernel_row(tiles, k, a, b, b_step, c, ldc, alpha, beta, src, ldb);
                            for (size_t t = 0; t < tiles; t++)
                                g->ukernel(k, a, 1, MR, ref + t * b_step, want + t * NR, ldc, alpha, beta, NULL);
                            const float *ai[16], *bj[16 * 5 * 4];
                            for (size_t i = 0; i < MR; i++)
                                ai[i] = a + i;
                            for (size_t j = 0; j < tiles * NR; j++)
                                bj[j] = ref + j / NR * b_step + j % NR;
                            long e = check_tiles(c, want, c0, MR, tiles * NR, ldc, len, k, ai, MR, bj, NR, alpha,
                                                 beta);
                            e += check_b(b, ref, k, NR, tiles, b_step);
                            e += !guarded_free(&ga) + !guarded_free(&gb) + (packs && !guarded_free(&gs));
                            CHECK(e == 0, "ukernel_row %zux%zu tiles=%zu k=%zu alpha=%g beta=%g %s: %ld wrong", MR,
                                  NR, tiles, k, alpha, beta, packs ? "packing B" : "B packed", e);
                            free(ref);
                            free(c0);
                            free(c);
                            free(want);
                        }
                        /* a column: one B micropanel; A packed, rows in place, transposed in
                           place (packing B on the way: the first two) */
                        for (int layout = 0; layout < 3 - packs; layout++) {
                            const size_t lda = k + 5, ldt = tiles * MR + 3, ldb = NR + 7, ldc = NR + 5,
                                         len = tiles * MR * ldc;
                            const size_t rs = layout == 1 ? lda : 1, cs = layout == 0 ? MR : layout == 1 ? 1 : ldt;
                            const size_t a_step = layout == 0 ? MR * k : layout == 1 ? MR * lda : MR;
                            const size_t a_len = layout == 0   ? tiles * MR * k
                                                 : layout == 1 ? (tiles * MR - 1) * lda + k
                                                               : (k - 1) * ldt + tiles * MR;
                            guarded ga, gb, gs;
                            float *a = guarded_alloc(&ga, a_len, GUARD_AFTER), *b, *src, *ref;
                            make_b(k, NR, 1, 0, packs, ldb, &gb, &gs, &b, &src, &ref);
                            float *c0 = malloc(len * sizeof(float)), *c = malloc(len * sizeof(float)),
                                  *want = malloc(len * sizeof(float));
                            fill(a, a_len);
                            fill(c0, len);
                            if (beta == 0.0f)
                                for (size_t i = 0; i < tiles * MR; i++)
                                    for (size_t j = 0; j < NR; j++)
                                        c0[i * ldc + j] = NAN;
                            memcpy(c, c0, len * sizeof(float));
                            memcpy(want, c0, len * sizeof(float));
                            /* more: a hint to prefetch the tile below the last, here one past C */
                            g->ukernel_col(tiles, k, a, rs, cs, a_step, b, c, ldc, alpha, beta, (int)(tiles % 2), src,
                                           ldb);
                            for (size_t t = 0; t < tiles; t++)
                                g->ukernel(k, a + t * a_step, rs, cs, ref, want + t * MR * ldc, ldc, alpha, beta, NULL);
                            const float *ai[16 * 5], *bj[16 * 4];
                            for (size_t i = 0; i < tiles * MR; i++)
                                ai[i] = a + i / MR * a_step + i % MR * rs;
                            for (size_t j = 0; j < NR; j++)
                                bj[j] = ref + j;
                            long e = check_tiles(c, want, c0, tiles * MR, NR, ldc, len, k, ai, cs, bj, NR, alpha,
                                                 beta);
                            e += check_b(b, ref, k, NR, 1, 0);
                            e += !guarded_free(&ga) + !guarded_free(&gb) + (packs && !guarded_free(&gs));
                            CHECK(e == 0, "ukernel_col %zux%zu layout %d tiles=%zu k=%zu alpha=%g beta=%g %s: %ld wrong",
                                  MR, NR, layout, tiles, k, alpha, beta, packs ? "packing B" : "B packed", e);
                            free(ref);
                            free(c0);
                            free(c);
                            free(want);
                        }
                    }
}

static void test_ukernel_sup(const qkv_gemm_kernels *g)
{
    const size_t MR = g->mr, NR = g->nr;
    static const size_t ks[] = {1, 3, 17, 64, 300};
    size_t ns[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 24, 31, 33, 47, 48, 63};
    for (size_t ik = 0; ik < sizeof ks / sizeof ks[0]; ik++) {
        const size_t k = ks[ik];
        for (size_t m = 1; m <= MR; m++) {
            for (size_t in = 0; in <= sizeof ns / sizeof ns[0]; in++) {
                const size_t n = in < sizeof ns / sizeof ns[0] ? ns[in] : NR;
                if (n > NR)
                    continue;
                /* kind 0, 1: rows of A in place (cs_a = 1), alpha 1 beta 0 / alpha 0.5 beta -0.5;
                   kind 2: A as a packed micropanel (rs_a = 1, cs_a = MR), the driver's edge
                   tiles in the packed-A order */
                for (int kind = 0; kind < 3; kind++) {
                    const float alpha = kind ? 0.5f : 1.0f, beta = kind ? -0.5f : 0.0f;
                    const size_t lda = k + 5, ldb = n + 3, ldc = n + 2;
                    guarded ga, gb, gc;
                    float *a = guarded_alloc(&ga, (m - 1) * lda + k, GUARD_AFTER);
                    float *b = guarded_alloc(&gb, (k - 1) * ldb + n, GUARD_AFTER);
                    float *c = guarded_alloc(&gc, (m - 1) * ldc + n, GUARD_AFTER);
                    const size_t nc = (m - 1) * ldc + n;
                    float *c0 = malloc(nc * sizeof(float));
                    fill(a, (m - 1) * lda + k);
                    fill(b, (k - 1) * ldb + n);
                    fill(c0, nc);
                    if (beta == 0.0f)
                        for (size_t i = 0; i < m; i++)
                            for (size_t j = 0; j < n; j++)
                                c0[i * ldc + j] = NAN; /* never read */
                    memcpy(c, c0, nc * sizeof(float));
                    guarded gp;
                    float *ap = guarded_alloc(&gp, (k - 1) * MR + m, GUARD_AFTER);
                    for (size_t i = 0; i < m; i++)
                        for (size_t p = 0; p < k; p++)
                            ap[p * MR + i] = a[i * lda + p];
                    if (kind < 2)
                        g->ukernel_sup(m, n, k, a, lda, 1, b, ldb, c, ldc, alpha, beta, k % 2 != 0 ? c + nc : NULL);
                    else
                        g->ukernel_sup(m, n, k, ap, 1, MR, b, ldb, c, ldc, alpha, beta, NULL);
                    long bad = 0;
                    for (size_t i = 0; i < m; i++) {
                        for (size_t j = 0; j < ldc && i * ldc + j < nc; j++) {
                            const float got = c[i * ldc + j];
                            if (j >= n) { /* padding of C: untouched */
                                bad += memcmp(&got, &c0[i * ldc + j], sizeof got) != 0;
                                continue;
                            }
                            double ref = 0.0, mag = 0.0;
                            for (size_t p = 0; p < k; p++) {
                                const double t = (double)a[i * lda + p] * b[p * ldb + j];
                                ref += t;
                                mag += fabs(t);
                            }
                            const double cij = beta == 0.0f ? 0.0 : (double)c0[i * ldc + j];
                            ref = alpha * ref + beta * cij;
                            bad += !close_to(got, ref, 2.0 * (double)k * FLT_EPSILON * fabs(alpha) * mag +
                                                           2.0 * FLT_EPSILON * fabs(beta * cij) + FLT_MIN);
                        }
                    }
                    CHECK(bad == 0, "ukernel_sup m=%zu n=%zu k=%zu beta=%g A %s: %ld wrong elements", m, n, k, beta,
                          kind < 2 ? "rows in place" : "packed", bad);
                    CHECK(guarded_free(&ga) && guarded_free(&gb) && guarded_free(&gc) && guarded_free(&gp),
                          "ukernel_sup wrote outside its operands (m=%zu n=%zu k=%zu)", m, n, k);
                    free(c0);
                }
            }
        }
    }
}

static void test_gemv(const qkv_gemm_kernels *g)
{
    static const size_t ns[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
                                20, 25, 30, 35, 49, 64, 67, 100, 128, 131, 515, 1100};
    for (size_t in = 0; in < sizeof ns / sizeof ns[0]; in++) {
        const size_t n = ns[in];
        for (size_t k = 1; k <= 35; k += (k < 20 ? 1 : 5)) {
            for (int beta_kind = 0; beta_kind < 2; beta_kind++) {
                const float alpha = 0.75f, beta = beta_kind ? 0.5f : 0.0f;
                /* gemv_t: y[j] = alpha sum_p x[p] b[j ldb + p] + beta y[j], ldb > k */
                const size_t ldt = k + 3;
                guarded gx, gb, gy;
                float *x = guarded_alloc(&gx, k * 3, GUARD_AFTER);
                float *b = guarded_alloc(&gb, (n - 1) * ldt + k, GUARD_AFTER);
                float *y = guarded_alloc(&gy, n, GUARD_AFTER);
                float *y0 = malloc(n * sizeof(float));
                fill(x, k * 3);
                fill(b, (n - 1) * ldt + k);
                for (size_t j = 0; j < n; j++)
                    y0[j] = y[j] = beta == 0.0f ? NAN : rng_uniform(-1, 1);
                g->gemv_t(n, k, alpha, x, b, ldt, beta, y);
                long bad = 0;
                for (size_t j = 0; j < n; j++) {
                    double mag;
                    const double ref = ref_dot(x, 1, b + j * ldt, 1, k, &mag);
                    const double yj = beta == 0.0f ? 0.0 : y0[j];
                    bad += !close_to(y[j], alpha * ref + beta * yj, gemm_tol(k, alpha, mag, beta * yj, FLT_MIN));
                }
                CHECK(bad == 0, "gemv_t n=%zu k=%zu beta=%g: %ld wrong", n, k, beta, bad);
                CHECK(guarded_free(&gb), "gemv_t wrote into b");
                /* gemv_n: y[j] = alpha sum_p x[p incx] b[p ldb + j] + beta y[j], ldb > n */
                for (int v = 0; v < 4; v++) { /* gemv_n, then gemv_ns; incx 1 and 3 */
                    const int ns_kind = v >> 1;
                    const size_t incx = v & 1 ? 3 : 1, ldn = n + 2;
                    guarded gbn;
                    float *bn = guarded_alloc(&gbn, (k - 1) * ldn + n, GUARD_AFTER);
                    fill(bn, (k - 1) * ldn + n);
                    for (size_t j = 0; j < n; j++)
                        y0[j] = y[j] = beta == 0.0f ? NAN : rng_uniform(-1, 1);
                    (ns_kind ? g->gemv_ns : g->gemv_n)(n, k, alpha, x, incx, bn, ldn, beta, y);
                    bad = 0;
                    for (size_t j = 0; j < n; j++) {
                        double mag;
                        const double ref = ref_dot(x, incx, bn + j, ldn, k, &mag);
                        const double yj = beta == 0.0f ? 0.0 : y0[j];
                        bad += !close_to(y[j], alpha * ref + beta * yj, gemm_tol(k, alpha, mag, beta * yj, FLT_MIN));
                    }
                    CHECK(bad == 0, "%s n=%zu k=%zu incx=%zu beta=%g: %ld wrong", ns_kind ? "gemv_ns" : "gemv_n", n, k,
                          incx, beta, bad);
                    CHECK(guarded_free(&gbn), "gemv_n / gemv_ns wrote into b");
                }
                CHECK(guarded_free(&gx) && guarded_free(&gy), "gemv wrote outside x or y");
                free(y0);
            }
        }
    }
}

/* gemv_ns on a B of more than 8 MiB, which it reads in rows of up to 4096 columns (4100 x
   520: one long chunk and a tail), against the double reference, and every column
   bit-identical to a call on the 128-aligned columns [3968, 4100) only (B of 270 KiB, read in
   1024-column chunks): the arithmetic of a column must not depend on the chunking. incx 2,
   beta 0.5, ldb n + 5. */
static void test_gemv_ns_long(const qkv_gemm_kernels *g)
{
    const size_t n = 4100, k = 520, ldb = n + 5, incx = 2, j0 = 3968;
    const float alpha = -0.75f, beta = 0.5f;
    float *b = malloc(((k - 1) * ldb + n) * sizeof(float)), *x = malloc(k * incx * sizeof(float));
    float *y0 = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float)), *ys = malloc(n * sizeof(float));
    fill(b, (k - 1) * ldb + n);
    fill(x, k * incx);
    for (size_t j = 0; j < n; j++)
        y0[j] = y[j] = ys[j] = rng_uniform(-1, 1);
    g->gemv_ns(n, k, alpha, x, incx, b, ldb, beta, y);
    g->gemv_ns(n - j0, k, alpha, x, incx, b + j0, ldb, beta, ys + j0);
    long bad = 0;
    for (size_t j = 0; j < n; j++) {
        double mag;
        const double ref = ref_dot(x, incx, b + j, ldb, k, &mag);
        bad += !close_to(y[j], alpha * ref + beta * y0[j], gemm_tol(k, alpha, mag, beta * y0[j], FLT_MIN));
    }
    CHECK(bad == 0, "gemv_ns n=%zu k=%zu (long rows): %ld wrong", n, k, bad);
    CHECK(memcmp(y + j0, ys + j0, (n - j0) * sizeof(float)) == 0 && memcmp(ys, y0, j0 * sizeof(float)) == 0,
          "gemv_ns: columns [%zu, %zu) differ between a whole-row and a 1024-column chunking", j0, n);
    /* ... and to calls on its last 4 and 100 columns alone (at most 8 vectors: the sums in
       registers, gemv_ns_reg), with a row tail (k - 3) */
    for (size_t i = 0; i < 2; i++) {
        const size_t j1 = i ? n - 100 : n - 4, k1 = k - 3;
        memcpy(ys, y0, n * sizeof(float));
        memcpy(y, y0, n * sizeof(float));
        g->gemv_ns(n, k1, alpha, x, incx, b, ldb, beta, y);
        g->gemv_ns(n - j1, k1, alpha, x, incx, b + j1, ldb, beta, ys + j1);
        CHECK(memcmp(y + j1, ys + j1, (n - j1) * sizeof(float)) == 0,
              "gemv_ns: columns [%zu, %zu) differ between a whole-row call and a call on them alone", j1, n);
    }
    free(b);
    free(x);
    free(y0);
    free(y);
    free(ys);
}

/* gemv_t_multi / gemv_n_multi: r = 1 .. 4 rows of x, n and k with tails, padded leading
   dimensions, beta per row (0 over NaN: not read), B ending at a guard page; each row
   within the GEMM bound of the double reference and bit-identical to gemv_t / gemv_n on
   that row alone (kernels.h: a decode row gets the same bits alone or in its GQA group) */
static void test_gemv_multi(const qkv_kernels *t)
{
    const qkv_gemm_kernels *g = t->gemm;
    static const size_t sizes[] = {1, 3, 7, 16, 17, 33, 64, 100, 130};
    const size_t ns = sizeof sizes / sizeof sizes[0];
    long bad = 0, differ = 0;
    for (size_t r = 1; r <= 4; r++) {
        for (size_t in = 0; in < ns; in++) {
            for (size_t ik = 0; ik < ns; ik += (r == 4 ? 1 : 2)) {
                const size_t n = sizes[in], k = sizes[ik], ldx = k + 3, ldy = n + 5;
                float *x = malloc(r * ldx * sizeof(float)), *y = malloc(r * ldy * sizeof(float));
                float *y0 = malloc(r * ldy * sizeof(float)), *y1 = malloc(ldy * sizeof(float)), beta[4];
                fill(x, r * ldx);
                /* t: B is n rows of k (ldb = k + 1) */
                guarded gb;
                const size_t ldt = k + 1;
                float *b = guarded_alloc(&gb, (n - 1) * ldt + k, GUARD_AFTER);
                fill(b, (n - 1) * ldt + k);
                fill(y0, r * ldy);
                memcpy(y, y0, r * ldy * sizeof(float));
                g->gemv_t_multi(r, n, k, x, ldx, b, ldt, y, ldy);
                for (size_t i = 0; i < r; i++) {
                    g->gemv_t(n, k, 1.0f, x + i * ldx, b, ldt, 0.0f, y1);
                    differ += memcmp(y1, y + i * ldy, n * sizeof(float)) != 0;
                    for (size_t j = 0; j < n; j++) { /* and each dot alone: no grouping changes it */
                        float one;
                        g->gemv_t(1, k, 1.0f, x + i * ldx, b + j * ldt, ldt, 0.0f, &one);
                        differ += memcmp(&one, y + i * ldy + j, sizeof one) != 0;
                    }
                    for (size_t j = 0; j < ldy; j++) {
                        if (j >= n) {
                            bad += memcmp(&y[i * ldy + j], &y0[i * ldy + j], sizeof(float)) != 0;
                            continue;
                        }
                        double mag;
                        const double ref = ref_dot(x + i * ldx, 1, b + j * ldt, 1, k, &mag);
                        bad += !close_to(y[i * ldy + j], ref, gemm_tol(k, 1.0, mag, 0.0, FLT_MIN));
                    }
                }
                bad += !guarded_free(&gb);
                /* n: B is k rows of n (ldb = n + 2), y = P B + beta y */
                guarded gn;
                const size_t ldn = n + 2;
                float *bn = guarded_alloc(&gn, (k - 1) * ldn + n, GUARD_AFTER);
                fill(bn, (k - 1) * ldn + n);
                for (size_t i = 0; i < r; i++) {
                    beta[i] = i % 2 ? 0.5f : 0.0f;
                    for (size_t j = 0; j < ldy; j++)
                        y0[i * ldy + j] = beta[i] == 0.0f && j < n ? NAN : rng_uniform(-1, 1);
                }
                memcpy(y, y0, r * ldy * sizeof(float));
                g->gemv_n_multi(r, n, k, x, ldx, bn, ldn, beta, y, ldy);
                for (size_t i = 0; i < r; i++) {
                    memcpy(y1, y0 + i * ldy, ldy * sizeof(float));
                    g->gemv_n(n, k, 1.0f, x + i * ldx, 1, bn, ldn, beta[i], y1);
                    differ += memcmp(y1, y + i * ldy, n * sizeof(float)) != 0;
                    for (size_t j = 0; j < ldy; j++) {
                        if (j >= n) {
                            bad += memcmp(&y[i * ldy + j], &y0[i * ldy + j], sizeof(float)) != 0;
                            continue;
                        }
                        double mag;
                        const double ref = ref_dot(x + i * ldx, 1, bn + j, ldn, k, &mag);
                        const double c0 = beta[i] == 0.0f ? 0.0 : (double)beta[i] * y0[i * ldy + j];
                        bad += !close_to(y[i * ldy + j], ref + c0, gemm_tol(k, 1.0, mag, c0, FLT_MIN));
                    }
                }
                /* the 16-bit B of both kinds, ending at a guard page: the bits of the float
                   kernels on the exactly widened B (B^T rows of k for t, rows of n for n) */
                for (int h = 0; h < 2; h++) {
                    const size_t nt = (n - 1) * ldt + k, nn = (k - 1) * ldn + n;
                    guarded gh, gw;
                    uint16_t *bh = guarded_alloc_u16(&gh, nt > nn ? nt : nn, GUARD_AFTER);
                    float *bw = guarded_alloc(&gw, nt > nn ? nt : nn, GUARD_AFTER);
                    const size_t len = nt > nn ? nt : nn;
                    for (size_t i = 0; i < len; i++)
                        bw[i] = rng_uniform(-2, 2);
                    (h ? t->cvt_f32_bf16 : t->cvt_f32_f16)(bw, bh, len);
                    (h ? t->cvt_bf16_f32 : t->cvt_f16_f32)(bh, bw, len);
                    /* t: B^T ends nt elements in */
                    uint16_t *bht = bh + (len - nt);
                    float *bwt = bw + (len - nt);
                    g->gemv_t_multi(r, n, k, x, ldx, bwt, ldt, y0, ldy);
                    g->gemv_t_multi_h[h](r, n, k, x, ldx, bht, ldt, y, ldy);
                    for (size_t i = 0; i < r; i++)
                        differ += memcmp(y + i * ldy, y0 + i * ldy, n * sizeof(float)) != 0;
                    uint16_t *bhn = bh + (len - nn);
                    float *bwn = bw + (len - nn);
                    for (size_t i = 0; i < r * ldy; i++)
                        y[i] = y0[i] = rng_uniform(-1, 1);
                    g->gemv_n_multi(r, n, k, x, ldx, bwn, ldn, beta, y0, ldy);
                    g->gemv_n_multi_h[h](r, n, k, x, ldx, bhn, ldn, beta, y, ldy);
                    differ += memcmp(y, y0, r * ldy * sizeof(float)) != 0;
                    bad += !guarded_free(&gh) + !guarded_free(&gw);
                }
                bad += !guarded_free(&gn);
                free(x);
                free(y);
                free(y0);
                free(y1);
            }
        }
    }
    CHECK(bad == 0, "gemv_t_multi / gemv_n_multi: %ld wrong elements", bad);
    CHECK(differ == 0, "gemv_t_multi / gemv_n_multi: %ld rows differ from gemv_t / gemv_n on the row alone, or the "
                       "F16/BF16 kernels from the float ones on the widened B", differ);
}

/* COLS queries (a multiple of every ISA's vector length), D_O output columns */
enum { COLS = 48, D_O = 32, LDS = COLS + 16, LDO = D_O + 16 };

static void test_attn_update(const qkv_kernels *t)
{
    static const size_t row_counts[] = {1, 2, 5, 96};
    for (size_t ir = 0; ir < sizeof row_counts / sizeof row_counts[0]; ir++) {
        const size_t rows = row_counts[ir];
        float *s = malloc(rows * LDS * sizeof(float)), *s0 = malloc(rows * LDS * sizeof(float));
        float m[COLS], l[COLS], m0[COLS], l0[COLS];
        float *o = malloc(COLS * LDO * sizeof(float)), *o0 = malloc(COLS * LDO * sizeof(float));
        for (size_t i = 0; i < rows * LDS; i++)
            s0[i] = rng_uniform(-8, 8);
        fill(o0, COLS * LDO);
        for (size_t c = 0; c < COLS; c++) {
            switch (c % 6) {
            case 0: m0[c] = -FLT_MAX; break;                   /* first tile */
            case 1: m0[c] = 20.0f; break;                      /* max does not grow */
            case 2: m0[c] = rng_uniform(-8, 0); break;         /* max grows */
            case 3: m0[c] = rng_uniform(-2, 2); break;         /* either */
            case 4: m0[c] = -FLT_MAX; break;                   /* first tile, all masked below */
            default: m0[c] = 1.5f; break;                      /* masked tile after a visible one */
            }
            l0[c] = m0[c] == -FLT_MAX ? 0.0f : rng_uniform(0.5f, 4);
            if (c % 6 >= 4)
                for (size_t j = 0; j < rows; j++)
                    s0[j * LDS + c] = -INFINITY;
            else if (c % 6 == 3 && rows > 1)
                s0[(rows - 1) * LDS + c] = -INFINITY; /* one masked key */
        }
        memcpy(s, s0, rows * LDS * sizeof(float));
        memcpy(m, m0, sizeof m);
        memcpy(l, l0, sizeof l);
        memcpy(o, o0, COLS * LDO * sizeof(float));
        t->attn_update(rows, COLS, s, LDS, m, l, o, LDO, D_O);
        long bad = 0;
        for (size_t c = 0; c < COLS; c++) {
            double mx = m0[c];
            for (size_t j = 0; j < rows; j++)
                mx = s0[j * LDS + c] > mx ? s0[j * LDS + c] : mx;
            /* the kernel's exp sees the float differences m - mx and s - mx */
            const double a = exp((double)(float)((double)m0[c] - mx));
            double sum = 0.0;
            for (size_t j = 0; j < rows; j++) {
                const double p = exp((double)(float)((double)s0[j * LDS + c] - mx));
                sum += p;
                bad += ulp_error(s[j * LDS + c], p) > 4.0;
            }
            bad += m[c] != (float)mx;
            const double lref = a * l0[c] + sum;
            bad += !close_to(l[c], lref, 4.0 * FLT_EPSILON * (lref + 1.0) * (rows + 1));
            for (size_t d = 0; d < LDO; d++) {
                const float got = o[c * LDO + d];
                if (d >= D_O)
                    bad += memcmp(&got, &o0[c * LDO + d], sizeof got) != 0; /* past d_o: untouched */
                else
                    bad += ulp_error(got, a * o0[c * LDO + d]) > 4.0;
            }
            if (c % 6 >= 4) /* all masked: exact zeros, the accumulator unchanged */
                for (size_t j = 0; j < rows; j++)
                    bad += s[j * LDS + c] != 0.0f || signbit(s[j * LDS + c]);
            for (size_t j = 0; j < rows; j++)
                bad += isnan(s[j * LDS + c]);
        }
        for (size_t j = 0; j < rows; j++)
            for (size_t c = COLS; c < LDS; c++)
                bad += memcmp(&s[j * LDS + c], &s0[j * LDS + c], sizeof(float)) != 0; /* past cols */
        CHECK(bad == 0, "attn_update rows=%zu: %ld wrong values", rows, bad);
        free(s);
        free(s0);
        free(o);
        free(o0);
    }
}

/* attn_row: one contiguous row of n scores (n = 1 .. 70: every tail), guarded at both ends,
   with the running max below, above and at -FLT_MAX, and masked (-inf) keys: max exact, P
   within 4 ULP of exp(s - mx) of the float difference, l within the sum bound, a within 4 ULP */
static void test_attn_row(const qkv_kernels *t)
{
    long bad = 0;
    for (size_t n = 1; n <= 70; n++) {
        for (int mode = 0; mode < 4; mode++) {
            guarded g;
            float *s = guarded_alloc(&g, n, GUARD_AFTER), *s0 = malloc(n * sizeof(float));
            for (size_t j = 0; j < n; j++)
                s0[j] = mode == 3 && j % 3 == 1 ? -INFINITY : rng_uniform(-8, 8);
            const float m0 = mode == 0 ? -FLT_MAX : mode == 1 ? 20.0f : rng_uniform(-4, 4);
            const float l0 = mode == 0 ? 0.0f : rng_uniform(0.5f, 4);
            memcpy(s, s0, n * sizeof(float));
            float m = m0, l = l0;
            const float a = t->attn_row(s, n, &m, &l);
            double mx = m0;
            for (size_t j = 0; j < n; j++)
                mx = s0[j] > mx ? s0[j] : mx;
            const double aref = exp((double)(float)((double)m0 - mx));
            double sum = 0.0;
            for (size_t j = 0; j < n; j++) {
                const double p = exp((double)(float)((double)s0[j] - mx));
                sum += p;
                bad += ulp_error(s[j], p) > 4.0 || (isinf(s0[j]) && s[j] != 0.0f);
            }
            bad += m != (float)mx;
            bad += ulp_error(a, aref) > 4.0;
            const double lref = aref * l0 + sum;
            bad += !close_to(l, lref, 4.0 * FLT_EPSILON * (lref + 1.0) * (n + 1));
            bad += !guarded_free(&g);
            free(s0);
        }
    }
    CHECK(bad == 0, "attn_row: %ld wrong values", bad);
}

/* softcap with cap = 1 is tanh: within 2 ULP of double tanh over a dense sweep of
   [-20, 20] and the special values; with cap = 30, within 4 ULP of 30 tanh(x / 30) (the
   division and the product round once each). Tails: n = 1 .. 2 x 16 + 1 behind a guard page. */
static void test_softcap(const qkv_kernels *t)
{
    double worst = 0.0;
    long bad = 0;
    enum { CHUNK = 4096 };
    float x[CHUNK], y[CHUNK];
    size_t n = 0;
    for (uint32_t u = 0; u < 0x41a00000u; u += 61) { /* |x| < 20, both signs */
        x[n++] = bits_to_float(u);
        x[n++] = -bits_to_float(u);
        if (n == CHUNK || u + 61 >= 0x41a00000u) {
            memcpy(y, x, n * sizeof(float));
            t->softcap(y, n, 1.0f);
            for (size_t i = 0; i < n; i++) {
                const double e = ulp_error(y[i], tanh((double)x[i]));
                worst = e > worst ? e : worst;
                bad += !(e <= 2.0);
            }
            memcpy(y, x, n * sizeof(float));
            t->softcap(y, n, 30.0f);
            for (size_t i = 0; i < n; i++)
                bad += !(ulp_error(y[i], 30.0 * tanh((double)x[i] / 30.0)) <= 4.0);
            n = 0;
        }
    }
    const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-149f, 0.625f, -0.625f, 0x1.3ffffep-1f, 1e30f};
    const float want[] = {0.0f, -0.0f, 1.0f, -1.0f, NAN, 0x1p-149f};
    memcpy(y, special, sizeof special);
    t->softcap(y, sizeof special / sizeof special[0], 1.0f);
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
        if (i < sizeof want / sizeof want[0])
            bad += !(isnan(want[i]) ? isnan(y[i]) : (y[i] == want[i] && signbit(y[i]) == signbit(want[i])));
        else
            bad += !(ulp_error(y[i], tanh((double)special[i])) <= 2.0);
    }
    for (size_t len = 1; len <= 33; len++) {
        guarded g;
        float *p = guarded_alloc(&g, len, GUARD_AFTER);
        for (size_t i = 0; i < len; i++)
            p[i] = rng_uniform(-40, 40);
        memcpy(y, p, len * sizeof(float));
        t->softcap(p, len, 7.0f);
        for (size_t i = 0; i < len; i++)
            bad += !(ulp_error(p[i], 7.0 * tanh((double)y[i] / 7.0)) <= 4.0);
        bad += !guarded_free(&g);
    }
    CHECK(bad == 0, "softcap: %ld values out of bound (worst tanh %.3f ULP)", bad, worst);
    printf("  %s: softcap tanh worst %.3f ULP on [-20, 20]\n", qkv_isa_name(t->isa), worst);
}

int main(void)
{
    qkv_isa isas[QKV_ISA_COUNT];
    const int n_isa = isa_list(isas);
    for (int k = 0; k < n_isa; k++) {
        qkv_isa_select(isas[k]);
        const qkv_kernels *t = qkv_kernels_active();
        const qkv_gemm_blocking b = qkv_gemm_blocking_of(t->gemm);
        printf("  %s: ukernel %zux%zu (MC %zu, KC %zu, NC %zu), ukernel_row, ukernel_col, ukernel_sup, gemv_t, gemv_n, gemv_t_multi, gemv_n_multi (F32, F16, BF16 B), attn_update, attn_row\n",
               qkv_isa_name(isas[k]), t->gemm->mr, t->gemm->nr, b.mc, b.kc, b.nc);
        const qkv_gemm_kernels *g;
        for (size_t j = 0; (g = qkv_gemm_tile_of(t, j)) != NULL; j++) { /* every GEMM tile of the table */
            if (j > 0)
                printf("  %s: second GEMM tile %zux%zu: ukernel, ukernel_row, ukernel_col, ukernel_sup, gemv_t, gemv_n\n", qkv_isa_name(isas[k]),
                       g->mr, g->nr);
            test_ukernel(g);
            test_ukernel_rowcol(g);
            test_ukernel_sup(g);
            test_gemv(g);
            test_gemv_ns_long(g);
        }
        test_gemv_multi(t);
        test_attn_update(t);
        test_attn_row(t);
        test_softcap(t);
    }
    return test_finish("test_ukernels");
}
