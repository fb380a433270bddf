/* qkv_gemm against a double-precision reference, for every ISA the host supports.
 *
 * Tolerance (include/qkv.h): |c - ref| <= 2 k FLT_EPSILON |alpha| sum_p |a_ip b_pj| + 2 FLT_EPSILON |beta c0|.
 * Every case runs all four transpose combinations. Shapes: 1x1x1, primes, one below/at/past
 * every tile and blocking size of the active ISA (MR, NR, and the MC, KC, NC in use), the
 * unpacked small/skinny path and its limits, k == 1, several KC
 * blocks, the attention shapes (S = Q K^T with K = 64/128, O = P V with N = 64), and the
 * M = 1 decode path (contiguous and strided x). alpha in {1, -0.5, 0}, beta in {0, 1, 0.5};
 * beta == 0 runs on a C full of NaN. Leading dimensions larger than the width: the padding
 * columns of C must stay bit-identical. A, B and C end (or start) at a PROT_NONE page.
 * Then every bad argument: its status, with C bit-identical; allocation failure included. */
#include "common.h" /* first: it defines _GNU_SOURCE */

#include <stdint.h>

#include "kernels.h"

#include "alloc_hook.h"

typedef struct gemm_case {
    qkv_trans ta, tb;
    size_t m, n, k, lda, ldb, ldc;
    float alpha, beta;
    int where; /* GUARD_AFTER or GUARD_BEFORE */
} gemm_case;

/* floats spanned by a rows x cols matrix with leading dimension ld */
static size_t extent(size_t rows, size_t cols, size_t ld)
{
    return rows && cols ? (rows - 1) * ld + cols : 0;
}

static void fill_random(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = rng_uniform(-1.0f, 1.0f);
}

static void run_case(const gemm_case *t)
{
    const size_t a_rows = t->ta ? t->k : t->m, a_cols = t->ta ? t->m : t->k;
    const size_t b_rows = t->tb ? t->n : t->k, b_cols = t->tb ? t->k : t->n;
    const size_t na = extent(a_rows, a_cols, t->lda), nb = extent(b_rows, b_cols, t->ldb);
    const size_t nc = extent(t->m, t->n, t->ldc);
    guarded ga, gb, gc;
    float *a = guarded_alloc(&ga, na, t->where), *b = guarded_alloc(&gb, nb, t->where);
    float *c = guarded_alloc(&gc, nc, t->where);
    float *c0 = malloc((nc ? nc : 1) * sizeof(float));
    fill_random(a, na);
    fill_random(b, nb);
    for (size_t i = 0; i < nc; i++) /* beta == 0: C must not be read, so poison it */
        c[i] = t->beta == 0.0f ? NAN : rng_uniform(-1.0f, 1.0f);
    memcpy(c0, c, nc * sizeof(float));

    const qkv_status st = qkv_gemm(t->ta, t->tb, t->m, t->n, t->k, t->alpha, a, t->lda, b, t->ldb, t->beta, c, t->ldc);
    CHECK(st == QKV_OK, "status %d", (int)st);

    long bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < t->m; i++) {
        for (size_t j = 0; j < t->n; j++) {
            double tol;
            const double ref = ref_gemm_elem(t->ta, t->tb, a, t->lda, b, t->ldb, t->k, i, j, t->alpha, t->beta,
                                             c0 + i * t->ldc + j, FLT_MIN, &tol);
            const double err = fabs((double)c[i * t->ldc + j] - ref);
            if (!(err <= tol)) {
                if (bad++ == 0)
                    worst = err;
                if (bad == 1)
                    fprintf(stderr, "    C(%zu,%zu) = %.9g, ref %.9g, tol %.3g\n", i, j, c[i * t->ldc + j], ref, tol);
            }
        }
        for (size_t j = t->n; j < t->ldc && i + 1 < t->m && nc > 0; j++) /* padding columns */
            if (float_to_bits(c[i * t->ldc + j]) != float_to_bits(c0[i * t->ldc + j]))
                bad++;
    }
    CHECK(bad == 0, "gemm ta=%d tb=%d m=%zu n=%zu k=%zu ld=%zu/%zu/%zu alpha=%g beta=%g: %ld bad (first err %.3g)",
          (int)t->ta, (int)t->tb, t->m, t->n, t->k, t->lda, t->ldb, t->ldc, t->alpha, t->beta, bad, worst);
    CHECK(guarded_free(&ga) && guarded_free(&gb) && guarded_free(&gc), "canary m=%zu n=%zu k=%zu", t->m, t->n, t->k);
    free(c0);
}

/* one shape: the four transpose combinations, each with all nine (alpha, beta) pairs when
   the shape is small, otherwise with one pair taken in turn from a running counter; the
   counter also rotates the padding of the leading dimensions and the guard side */
static void run_shape(size_t m, size_t n, size_t k, unsigned *counter)
{
    static const float alphas[] = {1.0f, -0.5f, 0.0f}, betas[] = {0.0f, 1.0f, 0.5f};
    static const size_t pads[] = {0, 3, 16};
    const int all = (double)m * n * k <= 100000.0;
    for (int tr = 0; tr < 4; tr++) {
        for (int ab = 0; ab < (all ? 9 : 1); ab++) {
            const unsigned s = (*counter)++;
            const int pair = all ? ab : (int)(s % 9);
            gemm_case t = {(qkv_trans)(tr & 1), (qkv_trans)(tr >> 1), m, n, k, 0, 0, 0,
                           alphas[pair / 3], betas[pair % 3], (int)(s % 2)};
            t.lda = (t.ta ? m : k) + pads[s % 3];
            t.ldb = (t.tb ? k : n) + pads[(s / 3) % 3];
            t.ldc = n + pads[(s / 9) % 3];
            run_case(&t);
        }
    }
}

static void test_shapes(const qkv_gemm_kernels *g)
{
    const qkv_gemm_blocking bl = qkv_gemm_blocking_of(g);
    const size_t MR = g->mr, NR = g->nr, MC = bl.mc, KC = bl.kc, NC = bl.nc;
    unsigned counter = 0;
    /* small and odd */
    static const size_t small[][3] = {{1, 1, 1}, {2, 1, 1}, {1, 2, 3}, {2, 2, 2}, {3, 5, 7}, {7, 11, 13},
                                      {13, 17, 1}, {17, 13, 31}, {31, 37, 41}, {64, 64, 64}, {97, 101, 103}};
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++)
        run_shape(small[i][0], small[i][1], small[i][2], &counter);
    /* around the register tile: MR-1 .. MR+1 x NR-1 .. NR+1 (the scalar tile has MR-1 > 0) */
    for (size_t dm = 0; dm < 3; dm++)
        for (size_t dn = 0; dn < 3; dn++)
            run_shape(MR - 1 + dm + (MR == 1), NR - 1 + dn + (NR == 1), 5 + dm, &counter);
    run_shape(2 * MR + 1, 2 * NR + 1, 1, &counter); /* k == 1 */
    /* around the cache blocking */
    run_shape(MC + 1, NR + 1, 9, &counter);
    run_shape(MC - 1, 2 * NR - 1, KC + 1, &counter);
    run_shape(MR + 1, NR + 1, KC, &counter);
    run_shape(MR + 2, NR + 3, 2 * KC + 7, &counter);
    run_shape(5, NC + 1, 3, &counter);
    run_shape(2 * MC + MR + 1, 3, 17, &counter);
    /* the unpacked path (NN, A and B read in place): m up to 4 MR with long n and k, its
       edge one row past, the m n k <= 160^3 limit on both sides, and blocked NN shapes with
       row and column edges just past it */
    run_shape(4 * MR, 3 * NR + 5, 300, &counter);
    run_shape(4 * MR + 1, 3 * NR + 5, 300, &counter);
    run_shape(MR - 1 + (MR == 1), 2 * NR + 1, 1000, &counter);
    run_shape(160, 160, 160, &counter);
    run_shape(161, 160, 160, &counter);
    run_shape(5 * MR + 1, 16 * NR + 5, 170, &counter);
    /* its last two row tiles cut in halves (sup_rows): MR + MR / 2 rows (two tiles), 2 MR + 2
       (a full tile, then two), and one row past the range (MR, then the rest) */
    run_shape(MR + MR / 2 + (MR == 1), 2 * NR + 3, 40, &counter);
    run_shape(2 * MR + 2, NR + 1, 300, &counter);
    run_shape(MR + MR / 2 + 1, 3 * NR - 1, 33, &counter);
    /* the two orders of the blocked path (gemm/driver.c): A in place below the table's
       pack_a_panels B panels, and at them (with m of at most 32 row panels: in place as
       well since the in-place order splits rows; the bounds in m below), and the packed
       order's NC: nc_l2 at a KC of kc_pa (two NC blocks), wider at a shallower KC (two k
       blocks of about KC / 2: one NC block here; k = 64: NC, so NC + 1 columns make two) */
    const size_t NC_L2 = bl.nc_l2, PA = g->pack_a_panels != 0 ? g->pack_a_panels : 8;
    run_shape(13 * MR + 5, PA * NR - 1, 200, &counter);
    run_shape(13 * MR + 5, PA * NR, 200, &counter);
    run_shape(3 * MR + 1, NC_L2 + 1, KC + 1, &counter);
    run_shape(3 * MR + 1, NC_L2 + 1, bl.kc_pa, &counter);
    run_shape(5 * MR + 1, NC + 1, 64, &counter);
    /* the packed-A order by shape (AVX-512 from 8 B panels, AVX2 6 x 16 from 64): more
       than 32 row panels at pack_a_panels B panels (in place at 32), or twice as many B
       panels whatever m */
    run_shape(32 * MR, PA * NR + 5, 120, &counter);
    run_shape(32 * MR + 1, PA * NR + 5, 120, &counter);
    run_shape(3 * MR + 2, 2 * PA * NR + 1, 90, &counter);
    /* the in-place order with its rows split for items (few column chunks): row block by
       row block, and chunk by chunk where the packed B block is wider than nc_l2 */
    run_shape(300, 400, 200, &counter);
    run_shape(300, NC_L2 + 37 < 1000 ? NC_L2 + 37 : 1000, 150, &counter);
    /* the packed order's KC (kc_pa; above KC on a half-rate core): one depth block and two
       (packed by the width of n alone) */
    run_shape(2 * MR + 1, 2 * PA * NR + 3, bl.kc_pa, &counter);
    run_shape(2 * MR + 1, 2 * PA * NR + 3, bl.kc_pa + 1, &counter);
    /* a row-major A whose rows all fall into one L1 set (lda 1024 floats): the packed-A
       order below pack_a_panels B panels on a half-rate core (bl.pa_crowd), in place
       elsewhere; m n k above the unpacked path's limit */
    gemm_case crowd = {QKV_NOTRANS, QKV_NOTRANS, 13 * MR + 5, 3 * NR + 1, 1000, 1024, 3 * NR + 1, 3 * NR + 1,
                       1.0f, 0.5f, 0};
    run_case(&crowd);
    /* ... with enough rows that an item of that order has several row panels, the last
       one partial (packed and run a panel at a time) */
    crowd.m = 40 * MR + 5;
    run_case(&crowd);
    /* the narrow order (n at most 128, A row-major, op(B) packed whole) with an A of more
       than 8 MiB, whose KC blocks are at least 2048 deep (gemm/driver.c NARROW_KC): one
       depth block, and three of 1367 */
    run_shape(1100, 17, 2000, &counter);
    run_shape(513, 2 * NR + 1, 4100, &counter);
    /* B read in place where the table does (AVX-512: m at most its b_in_place_rows, ldb at
       most 1024, gemm/driver.c; AVX2: the same in the narrow order only), packed elsewhere:
       the narrow order and the blocked one (A in place, 8 B panels and more), edge tiles both
       ways, several k blocks and beta, with ldb just above n, at the limit, and one float
       past it (B packed) */
    const size_t in_place_n[] = {2 * NR + 5, 8 * NR + 5};
    for (size_t i = 0; i < 2; i++) {
        const size_t n_ip = in_place_n[i], ldbs[] = {n_ip + 3, 1024, 1025};
        for (size_t j = 0; j < 3; j++) {
            gemm_case ip = {QKV_NOTRANS, QKV_NOTRANS, 101, n_ip, 1500, 1503, ldbs[j], n_ip, -0.5f, 0.5f, 0};
            run_case(&ip);
        }
    }
    /* k == 0 and the empty shapes */
    run_shape(5, 7, 0, &counter);
    run_shape(0, 7, 5, &counter);
    run_shape(5, 0, 5, &counter);
    /* M = 1 (decode path): n and k around 8 vectors, 4 rows, masked tails */
    static const size_t row_n[] = {1, 3, 4, 5, 33, 63, 64, 65, 127, 129, 131};
    static const size_t row_k[] = {1, 3, 16, 31, 33, 64, 257};
    for (size_t i = 0; i < sizeof row_n / sizeof row_n[0]; i++)
        for (size_t j = 0; j < sizeof row_k / sizeof row_k[0]; j++)
            run_shape(1, row_n[i], row_k[j], &counter);
    /* attention: S = Q K^T (K = 64, 128), O = P V (N = 64, K = M), decode */
#ifdef QKV_TEST_EMULATED
    const size_t L = 128, D = 1024;
#else
    const size_t L = 256, D = 4096;
#endif
    run_shape(L, L, 64, &counter);
    run_shape(L, L + 7, 128, &counter);
    run_shape(L, 64, L, &counter);
    run_shape(1, D, 64, &counter);
    run_shape(1, 64, D, &counter);
#ifndef QKV_TEST_EMULATED
    gemm_case big = {QKV_NOTRANS, QKV_TRANS, 1024, 1024, 64, 64, 64, 1024, 1.0f, 0.0f, GUARD_AFTER};
    run_case(&big); /* the S = Q K^T benchmark shape itself */
#endif
}

/* Every invalid call: its status, and C (with a canary) unchanged. */
static void test_bad_arguments(void)
{
    enum { M = 9, N = 7, K = 5 };
    float a[M * K + 8], b[K * N + 8], c[M * N + 8], c0[M * N + 8];
    fill_random(a, sizeof a / sizeof a[0]);
    fill_random(b, sizeof b / sizeof b[0]);
    fill_random(c0, sizeof c0 / sizeof c0[0]);
    const size_t huge = (size_t)PTRDIFF_MAX / 2;
    const struct {
        int ta, tb;
        size_t m, n, k, lda, ldb, ldc;
        int null_a, null_b, null_c;
        qkv_status want;
    } bad[] = {
        {2, 0, M, N, K, K, N, N, 0, 0, 0, QKV_ERR_ARG},               /* bad trans */
        {0, 2, M, N, K, K, N, N, 0, 0, 0, QKV_ERR_ARG},
        {-1, 0, M, N, K, K, N, N, 0, 0, 0, QKV_ERR_ARG},
        {0, 0, M, N, K, K - 1, N, N, 0, 0, 0, QKV_ERR_ARG},           /* lda < k */
        {1, 0, M, N, K, M - 1, N, N, 0, 0, 0, QKV_ERR_ARG},           /* lda < m (A^T) */
        {0, 0, M, N, K, K, N - 1, N, 0, 0, 0, QKV_ERR_ARG},           /* ldb < n */
        {0, 1, M, N, K, K, K - 1, N, 0, 0, 0, QKV_ERR_ARG},           /* ldb < k (B^T) */
        {0, 0, M, N, K, K, N, N - 1, 0, 0, 0, QKV_ERR_ARG},           /* ldc < n */
        {0, 0, 1, N, K, K, N, N - 1, 0, 0, 0, QKV_ERR_ARG},           /* same, M = 1 path */
        {0, 0, M, N, K, K, N, N, 1, 0, 0, QKV_ERR_ARG},               /* NULL a */
        {0, 0, M, N, K, K, N, N, 0, 1, 0, QKV_ERR_ARG},               /* NULL b */
        {0, 0, M, N, K, K, N, N, 0, 0, 1, QKV_ERR_ARG},               /* NULL c */
        {0, 0, M, N, 0, 0, N, N, 0, 0, 1, QKV_ERR_ARG},               /* NULL c, k == 0 */
        {0, 0, huge, N, K, K, N, N, 0, 0, 0, QKV_ERR_SIZE},           /* C spans > PTRDIFF_MAX */
        {0, 0, M, N, huge, huge, N, N, 0, 0, 0, QKV_ERR_SIZE},        /* A, B span too much */
        {1, 1, M, N, K, huge, huge, N, 0, 0, 0, QKV_ERR_SIZE},        /* huge leading dims */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memcpy(c, c0, sizeof c);
        const qkv_status st = qkv_gemm((qkv_trans)bad[i].ta, (qkv_trans)bad[i].tb, bad[i].m, bad[i].n, bad[i].k, 1.0f,
                                       bad[i].null_a ? NULL : a, bad[i].lda, bad[i].null_b ? NULL : b, bad[i].ldb,
                                       0.0f, bad[i].null_c ? NULL : c, bad[i].ldc);
        CHECK(st == bad[i].want, "bad argument case %zu: status %d, want %d", i, (int)st, (int)bad[i].want);
        CHECK(memcmp(c, c0, sizeof c) == 0, "bad argument case %zu: C modified", i);
    }
    /* nothing to do: QKV_OK without touching anything, NULL allowed */
    CHECK(qkv_gemm(QKV_NOTRANS, QKV_NOTRANS, 0, N, K, 1.0f, NULL, K, NULL, N, 0.0f, NULL, N) == QKV_OK, "m == 0");
    CHECK(qkv_gemm(QKV_NOTRANS, QKV_NOTRANS, M, 0, K, 1.0f, NULL, K, NULL, 0, 0.0f, NULL, 0) == QKV_OK, "n == 0");
    /* k == 0: A and B are not needed; beta == 0 writes zeros over NaN */
    for (size_t i = 0; i < M * N; i++)
        c[i] = NAN;
    CHECK(qkv_gemm(QKV_NOTRANS, QKV_NOTRANS, M, N, 0, 1.0f, NULL, 0, NULL, N, 0.0f, c, N) == QKV_OK, "k == 0");
    int zeros = 1;
    for (size_t i = 0; i < M * N; i++)
        zeros &= float_to_bits(c[i]) == 0;
    CHECK(zeros, "k == 0, beta == 0: C not all +0");
    /* allocation failure: blocked path (B transposed: packed; NN this small takes the
       unpacked path, which allocates nothing), and the M = 1 path that gathers a strided x */
    if (!alloc_hook_works()) {
        printf("  aligned_alloc is not interposable here (valgrind?): QKV_ERR_NOMEM not tested\n");
        return;
    }
    g_fail_alloc = 1;
    memcpy(c, c0, sizeof c);
    CHECK(qkv_gemm(QKV_NOTRANS, QKV_TRANS, M, N, K, 1.0f, a, K, b, K, 0.0f, c, N) == QKV_ERR_NOMEM, "nomem");
    CHECK(memcmp(c, c0, sizeof c) == 0, "nomem: C modified");
    CHECK(qkv_gemm(QKV_NOTRANS, QKV_NOTRANS, M, N, K, 1.0f, a, K, b, N, 0.0f, c, N) == QKV_OK, "unpacked: no allocation");
    memcpy(c, c0, sizeof c);
    CHECK(qkv_gemm(QKV_TRANS, QKV_TRANS, 1, N, K, 1.0f, a, 2, b, K, 0.0f, c, N) == QKV_ERR_NOMEM, "nomem, M = 1");
    CHECK(memcmp(c, c0, sizeof c) == 0, "nomem, M = 1: C modified");
    g_fail_alloc = 0;
}

/* NaN and inf in A propagate to their row only; beta == 0 never reads C */
static void test_special_values(void)
{
    enum { M = 8, N = 20, K = 6 };
    float a[M * K], b[K * N], c[M * N];
    for (size_t i = 0; i < M * K; i++)
        a[i] = 1.0f;
    for (size_t i = 0; i < K * N; i++)
        b[i] = 1.0f;
    a[2 * K + 1] = NAN;
    a[5 * K + 3] = INFINITY;
    for (size_t m = 1; m <= M; m += M - 1) { /* M = 1 path and blocked path */
        CHECK(qkv_gemm(QKV_NOTRANS, QKV_NOTRANS, m, N, K, 1.0f, a + (m == 1 ? 2 * K : 0), K, b, N, 0.0f, c, N) ==
                  QKV_OK, "special");
        for (size_t i = 0; i < m; i++) {
            const size_t row = m == 1 ? 2 : i;
            for (size_t j = 0; j < N; j++) {
                const float v = c[i * N + j];
                if (row == 2)
                    CHECK(isnan(v), "NaN row %zu", row);
                else if (row == 5)
                    CHECK(v == INFINITY, "inf row %zu", row);
                else
                    CHECK(v == (float)K, "finite row %zu: %g", row, v);
            }
        }
    }
}

/* The blocking model (gemm/blocking.h) on cache descriptions of machines of this kind:
   the values its header documents, and on any L1 the two micropanels fit in W1 - 1 ways */
static void test_blocking_model(void)
{
    const qkv_gemm_blocking fb = {.mc = 144, .kc = 384, .nc = 4080, .l2_way = 0, .nc_l2 = 4080, .kc_pa = 384};
    const qkv_cache_level zen3_l1 = {32768, 8, 64}, xeon_l1 = {49152, 12, 64};
    const qkv_caches zen3 = {zen3_l1, {524288, 8, 64}, {16777216, 16, 64}};
    const qkv_caches xeon = {xeon_l1, {2097152, 16, 64}, {0, 0, 0}};
    const qkv_caches unknown_l1 = {{0, 0, 0}, {1048576, 8, 64}, {16777216, 16, 64}};
    qkv_gemm_blocking b = qkv_gemm_blocking_derive(6, 16, &zen3, 0, fb);
    CHECK(b.kc == 320 && b.mc == 306 && b.nc % 16 == 0, "model: 8-way 32 KiB L1, 6x16: KC 320, MC 306");
    CHECK(b.nc_l2 == b.nc && b.nc == 4096,
          "model: 8-way 512 KiB L2, 6x16, KC 320: half the ways hold 192 columns, 12 micropanels, fewer than "
          "QKV_GEMM_L2_PANELS_MIN: the packed-A order's B block from L3, NC_L2 = NC 4096");
    const qkv_caches zen3_no_l3 = {zen3_l1, {524288, 8, 64}, {0, 0, 0}};
    CHECK(qkv_gemm_blocking_derive(6, 16, &zen3_no_l3, 0, fb).nc_l2 == 192,
          "model: the same without an L3: NC_L2 192, half the L2 ways");
    b = qkv_gemm_blocking_derive(6, 16, &xeon, 0, fb);
    CHECK(b.kc == 512 && b.nc == 4080, "model: 12-way 48 KiB L1, 6x16: KC 512 (the paper's split), no L3: NC kept");
    b = qkv_gemm_blocking_derive(12, 32, &xeon, 0, fb);
    CHECK(b.kc == 256 && b.nc_l2 == 1024 && b.kc_pa == 256,
          "model: 12-way 48 KiB L1, 12x32: KC 256 in both orders; 16-way 2 MiB L2: NC_L2 1024");
    CHECK(qkv_gemm_nc_in_l2(&b, 32, 256) == 1024 && qkv_gemm_nc_in_l2(&b, 32, 300) == 1024,
          "model: the packed-A order's NC at KC_PA and deeper: NC_L2");
    CHECK(qkv_gemm_nc_in_l2(&b, 32, 129) == 2016 && qkv_gemm_nc_in_l2(&b, 32, 64) == b.nc,
          "model: a shallower KC widens it in proportion (129: 2016, a multiple of NR), up to NC (64)");
    /* a half-rate core (AMD Zen 4, AVX-512): the packed order's A micropanel in half of L1,
       its B block from L3 like the other order's; the other order unchanged */
    const qkv_caches zen4 = ZEN4_CACHES;
    const qkv_gemm_blocking full = qkv_gemm_blocking_derive(12, 32, &zen4, 0, fb);
    b = qkv_gemm_blocking_derive(12, 32, &zen4, 1, fb);
    CHECK(full.kc == 160 && full.kc_pa == 160 && full.nc_l2 == 800 && full.pa_crowd == 0,
          "model: Zen 4 L1/L2, 12x32, full rate: KC 160, NC_L2 800, A packed by shape only");
    CHECK(qkv_gemm_blocking_derive(12, 32, &zen4, 1, fb).pa_crowd == 4,
          "model: Zen 4 L1, half rate: A packed where more than 4 of its rows share an L1 set");
    CHECK(b.kc == 160 && b.mc == full.mc && b.nc == full.nc && b.kc_pa == 336 && b.nc_l2 == b.nc && b.nc == 4096,
          "model: Zen 4, 12x32, half rate: KC 160, KC_PA 336 (16 KiB of A), NC_L2 = NC 4096");
    b = qkv_gemm_blocking_derive(12, 32, &unknown_l1, 1, fb);
    CHECK(b.kc_pa == b.kc && b.pa_crowd == 0, "model: half rate, L1 unknown: KC_PA = KC, A packed by shape only");
    const qkv_caches unknown = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    b = qkv_gemm_blocking_derive(6, 16, &unknown, 0, fb);
    CHECK(b.mc == fb.mc && b.kc == fb.kc && b.nc == fb.nc && b.kc_pa == fb.kc && b.nc_l2 == fb.nc,
          "model: unknown caches keep the fallback");
    const size_t tiles[][2] = {{4, 4}, {6, 16}, {8, 12}, {12, 32}};
    for (size_t ways = 2; ways <= 16; ways++)
        for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; t++) {
            const qkv_caches c = {{ways * 4096, ways, 64}, {0, 0, 0}, {0, 0, 0}};
            const size_t mr = tiles[t][0], nr = tiles[t][1];
            b = qkv_gemm_blocking_derive(mr, nr, &c, 0, fb);
            const size_t a_ways = (b.kc * mr * 4 + 4095) / 4096, b_ways = (b.kc * nr * 4 + 4095) / 4096;
            CHECK(ways < 3 ? b.kc == fb.kc : a_ways + b_ways <= ways - 1 || b.kc == QKV_GEMM_KC_MIN,
                  "model: the A and B micropanels of KC fit in W1 - 1 ways");
        }
}

/* QKV_GEMM_BLOCKING's parser: a valid text sets MC, KC, NC for both orders and keeps the
   fields it does not name (the L1 facts, the crowding rule) as derived; an invalid one
   leaves everything as it was */
static void test_blocking_parse(void)
{
    const qkv_gemm_blocking derived = {.mc = 1224, .kc = 160, .nc = 4096, .l2_way = 131072, .nc_l2 = 800,
                                       .kc_pa = 336, .pa_crowd = 4, .l1_way = 4096, .l1_line = 64};
    qkv_gemm_blocking b = derived;
    CHECK(qkv_gemm_blocking_parse("216,128,2048", 12, 32, &b) == 1, "parse: valid text accepted");
    CHECK(b.mc == 216 && b.kc == 128 && b.nc == 2048 && b.kc_pa == 128 && b.nc_l2 == 2048 && b.l2_way == 0,
          "parse: MC, KC, NC as given, for both orders, MC not adjusted in place");
    CHECK(b.pa_crowd == derived.pa_crowd && b.l1_way == derived.l1_way && b.l1_line == derived.l1_line,
          "parse: the fields the text does not name keep their derived values");
    const char *bad[] = {"", "216,128", "216,128,2048,1", "210,128,2048", "216,8,2048", "216,4096,2048",
                         "216,128,2040", "216,128,16384", "0,128,2048", "216,,2048", "216,128,2048x",
                         "-216,128,2048", "12345678,128,2048", "show"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = derived;
        CHECK(qkv_gemm_blocking_parse(bad[i], 12, 32, &b) == 0 && memcmp(&b, &derived, sizeof b) == 0,
              "parse: an invalid text is refused and leaves the blocking unchanged");
    }
}

int main(void)
{
    test_blocking_model();
    test_blocking_parse();
    qkv_isa isas[QKV_ISA_COUNT];
    const int n_isa = isa_list(isas);
    for (int i = 0; i < n_isa; i++) {
        CHECK(qkv_isa_select(isas[i]) == QKV_OK, "select");
        /* every GEMM tile of the table (kernels.h: AVX2 has a second one), asked for by
           size, so each one's packing, blocking and edges run here whatever this CPU is */
        const qkv_gemm_kernels *g;
        for (size_t j = 0; (g = qkv_gemm_tile_of(qkv_kernels_active(), j)) != NULL; j++) {
            qkv_gemm_tile_want(g->mr, g->nr);
            CHECK(qkv_gemm_tile_for(qkv_kernels_active(), QKV_NOTRANS, QKV_NOTRANS, 64, 64, 64) == g,
                  "tile %zux%zu asked for, not used", g->mr, g->nr);
            const qkv_gemm_blocking b = qkv_gemm_blocking_of(g);
            printf("  gemm on %s: tile %zux%zu, MC/KC/NC %zu/%zu/%zu\n", qkv_isa_name(isas[i]), g->mr, g->nr, b.mc,
                   b.kc, b.nc);
            test_bad_arguments();
            test_special_values();
            test_shapes(g);
        }
        /* this core's choice: the ISA's tile wherever C is narrow or the problem small */
        qkv_gemm_tile_want(0, 0);
        const qkv_kernels *t = qkv_kernels_active();
        CHECK(qkv_gemm_tile_for(t, QKV_NOTRANS, QKV_NOTRANS, 64, 64, 64) == t->gemm, "small: the ISA's tile");
        CHECK(qkv_gemm_tile_for(t, QKV_NOTRANS, QKV_NOTRANS, 4096, 64, 4096) == t->gemm, "n = 64: the ISA's tile");
        const qkv_gemm_kernels *wide = qkv_gemm_tile_for(t, QKV_NOTRANS, QKV_TRANS, 1024, 1024, 64);
        CHECK(wide == t->gemm || wide == qkv_gemm_tile_of(t, 1), "wide: a tile of the table");
    }
    return test_finish("test_gemm");
}
