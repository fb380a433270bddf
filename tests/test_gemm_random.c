/* Randomised GEMM: shapes drawn around the thresholds of each table's tiles (register tile,
 * cache blocking, the driver's orders), every ISA and every tile, each case run as
 *   qkv_gemm, then qkv_gemm_ex with tp == NULL, the built-in pool of 2 and 3 threads and
 *   caller pools of 4 and 7 threads that run their tasks sequentially in reverse order,
 *   each with exactly the workspace qkv_gemm_workspace_size() gives for its thread count;
 * every qkv_gemm_ex result must be bit-identical to qkv_gemm's, padding of C included, and
 * qkv_gemm's result within the GEMM bound of oracles.h (gemm_tol, slack FLT_MIN) of a double
 * reference: every element where m n k <= 2e6, else 2000 elements drawn at random plus the
 * four corners; the padding columns and the float past C keep their bits.
 * The fixed lists of test_gemm.c and test_threadpool.c pin the paths one at a time; this one
 * crosses them (transposes, leading dimensions that crowd an L1 set, alpha, beta, NaN in a
 * write-only C, thread counts) on shapes nobody picked. The generator is deterministic
 * (tests/common.h), so a failure names a case that reproduces; argument 1 sets the number of
 * cases per tile (default 60, 30 under qemu, where m n k stays below 4e6).
 * The same cases run again under blockings other than this machine's (qkv_gemm_blocking_want),
 * so that every machine tests the paths another one takes: the blocking an AMD Zen 4 derives
 * for a half-rate core (its A packed MR rows at a time where they crowd an L1 set, a deeper KC
 * and a wider NC for the packed-A order), then blockings drawn as QKV_GEMM_BLOCKING would set
 * them (tiny to large MC, KC, NC: many partial blocks), on this machine's and Zen 4's. */
#include "common.h"

#include "gemm/blocking.h"
#include "kernels.h"

#ifdef QKV_TEST_EMULATED
#define CASES_DEFAULT 30
#define MNK_MAX 4.0e6 /* qemu: many times slower than the host */
#else
#define CASES_DEFAULT 60
#define MNK_MAX 2.5e7
#endif
#define FULL_CHECK_MNK 2.0e6
#define SAMPLES 2000

static size_t pick(size_t lo, size_t hi) /* uniform in [lo, hi] */
{
    return lo + (size_t)(rng_u64() % (hi - lo + 1));
}

/* a value at most one off x (never below 1) */
static size_t near(size_t x)
{
    const size_t d = pick(0, 2);
    return x + d >= 2 ? x + d - 1 : 1;
}

typedef struct limits {
    size_t mr, nr, mc, kc, nc_l2, kc_pa, pa;
    int crowd; /* the blocking packs a row-major A whose rows crowd an L1 set: draw such an lda
                  half of the time */
} limits;

static size_t draw_m(const limits *l)
{
    switch (pick(0, 6)) {
    case 0: return 1; /* the decode path */
    case 1: return pick(2, 4 * l->mr);
    case 2: return near(l->mr * pick(1, 40));
    case 3: return near(32 * l->mr); /* the packed-A order by shape (PA_MIN_PANELS) */
    case 4: return near(l->mc);
    case 5: return pick(100, 1100);
    default: return pick(1, 300);
    }
}

static size_t draw_n(const limits *l)
{
    switch (pick(0, 7)) {
    case 0: return pick(1, 3 * l->nr);
    case 1: return near(l->nr * pick(1, 40));
    case 2: return near(l->pa * l->nr); /* the packed-A order by shape */
    case 3: return near(2 * l->pa * l->nr);
    case 4: return near(l->nc_l2 < 1200 ? l->nc_l2 : 1200);
    case 5: return near(128); /* the narrow order's limit */
    case 6: return pick(300, 1300);
    default: return pick(1, 300);
    }
}

static size_t draw_k(const limits *l)
{
    switch (pick(0, 6)) {
    case 0: return pick(1, 3);
    case 1: return pick(4, 70);
    case 2: return near(l->kc);
    case 3: return near(l->kc_pa);
    case 4: return near(2 * l->kc + 3);
    case 5: return pick(700, 4200); /* long k: the narrow order's deep KC blocks */
    default: return pick(1, 600);
    }
}

/* the next multiple of 1024 floats from `cols`: rows 4 KiB apart or a multiple of that,
   which share an L1 set */
static size_t crowding_ld(size_t cols)
{
    return (cols + 1023) / 1024 * 1024;
}

/* the leading dimension of a matrix of `cols` columns: as tight as it gets, a little
   padding, or (rarely) the next multiple of 1024 floats, whose rows share an L1 set */
static size_t draw_ld(size_t cols)
{
    switch (pick(0, 5)) {
    case 0:
    case 1: return cols;
    case 2: return cols + 1;
    case 3: return cols + pick(2, 40);
    case 4: return cols <= 4096 ? crowding_ld(cols) : cols;
    default: return cols + 16;
    }
}

static qkv_threadpool *g_pool2, *g_pool3;

static void run_tile(const limits *l, size_t cases, size_t *done)
{
    static const float alphas[] = {1.0f, 1.0f, -0.5f, 0.0f, 3.0f}, betas[] = {0.0f, 0.0f, 1.0f, 0.5f, -2.0f};
    const qkv_threadpool rev4 = {4, reverse_run, NULL}, rev7 = {7, reverse_run, NULL};
    const qkv_threadpool *pools[] = {NULL, g_pool2, g_pool3, &rev4, &rev7};
    for (size_t c = 0; c < cases;) {
        size_t m = draw_m(l), n = draw_n(l), k = draw_k(l);
        if ((double)m * (double)n * (double)k > MNK_MAX)
            continue; /* drawn again: the bound keeps the run short, not the shapes small */
        c++;
        const qkv_trans ta = (qkv_trans)pick(0, 1), tb = (qkv_trans)pick(0, 1);
        const size_t a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
        const int crowd = l->crowd && !ta && a_cols <= 4096 && pick(0, 1);
        const size_t lda = crowd ? crowding_ld(a_cols) : draw_ld(a_cols);
        const size_t ldb = draw_ld(b_cols), ldc = draw_ld(n);
        const float alpha = alphas[pick(0, 4)], beta = betas[pick(0, 4)];
        const int nan_c = beta == 0.0f && pick(0, 1);
        const size_t na = a_rows * lda, nb = b_rows * ldb, nc = m * ldc + 1; /* + the float past C */
        float *a = malloc(na * sizeof(float)), *b = malloc(nb * sizeof(float)), *c0 = malloc(nc * sizeof(float));
        float *ref = malloc(nc * sizeof(float)), *out = malloc(nc * sizeof(float));
        const size_t ws_size = qkv_gemm_workspace_size(m, n, k, 7);
        unsigned char *ws = malloc(ws_size + 1);
        if (!a || !b || !c0 || !ref || !out || !ws) {
            CHECK(0, "out of memory");
            exit(1);
        }
        for (size_t i = 0; i < na; i++)
            a[i] = rng_uniform(-2, 2);
        for (size_t i = 0; i < nb; i++)
            b[i] = rng_uniform(-2, 2);
        for (size_t i = 0; i < nc; i++)
            c0[i] = nan_c && i + 1 < nc && i % ldc < n ? NAN : rng_uniform(-2, 2);
        char what[160];
        snprintf(what, sizeof what, "case %zu: %c%c %zux%zux%zu lda %zu ldb %zu ldc %zu alpha %g beta %g%s", *done,
                 ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, lda, ldb, ldc, alpha, beta, nan_c ? " (NaN C)" : "");
        (*done)++;

        memcpy(ref, c0, nc * sizeof(float));
        CHECK(qkv_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, ref, ldc) == QKV_OK, "%s: status", what);
        /* every thread setting: the bits of qkv_gemm */
        int differ = 0;
        for (size_t p = 0; p < sizeof pools / sizeof pools[0]; p++) {
            const qkv_threadpool *tp = pools[p];
            const size_t need = qkv_gemm_workspace_size(m, n, k, tp ? tp->n_threads : 1);
            memcpy(out, c0, nc * sizeof(float));
            /* an odd workspace address, of exactly the size asked for */
            const qkv_status st = qkv_gemm_ex(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, out, ldc, tp, ws + 1, need);
            differ += st != QKV_OK || memcmp(out, ref, nc * sizeof(float)) != 0;
        }
        CHECK(differ == 0, "%s: %d of 5 thread settings differ from qkv_gemm", what, differ);
        /* qkv_gemm against the double reference */
        const int full = (double)m * (double)n * (double)k <= FULL_CHECK_MNK;
        const size_t samples = full ? m * n : SAMPLES + 4;
        long bad = 0;
        for (size_t s = 0; s < samples; s++) {
            size_t i, j;
            if (full) {
                i = s / n;
                j = s % n;
            } else if (s < 4) { /* the corners */
                i = s & 1 ? m - 1 : 0;
                j = s & 2 ? n - 1 : 0;
            } else {
                i = pick(0, m - 1);
                j = pick(0, n - 1);
            }
            double tol;
            const double want = ref_gemm_elem(ta, tb, a, lda, b, ldb, k, i, j, alpha, beta, c0 + i * ldc + j, FLT_MIN, &tol);
            const double got = ref[i * ldc + j];
            if (!(fabs(got - want) <= tol) && bad++ == 0)
                fprintf(stderr, "    %s: C(%zu,%zu) = %.9g, reference %.9g\n", what, i, j, got, want);
        }
        for (size_t i = 0; i < m; i++)
            for (size_t j = n; j < ldc; j++)
                bad += float_to_bits(ref[i * ldc + j]) != float_to_bits(c0[i * ldc + j]);
        bad += float_to_bits(ref[nc - 1]) != float_to_bits(c0[nc - 1]);
        CHECK(bad == 0, "%s: %ld elements off the reference or padding written", what, bad);
        free(a);
        free(b);
        free(c0);
        free(ref);
        free(out);
        free(ws);
    }
}

/* the cases of run_tile under blocking bl of tile g (qkv_gemm_blocking_want) */
static void run_blocking(const qkv_gemm_kernels *g, const qkv_gemm_blocking *bl, size_t cases, size_t *done,
                         const char *isa, const char *what)
{
    qkv_gemm_blocking_want(g, bl);
    const qkv_gemm_blocking b = qkv_gemm_blocking_of(g);
    const limits l = {g->mr, g->nr, b.mc, b.kc, b.nc_l2, b.kc_pa, g->pack_a_panels != 0 ? g->pack_a_panels : 8,
                      b.pa_crowd != 0 && g->pack_a_panels != 0};
    const long before = g_failures;
    run_tile(&l, cases, done);
    printf("  %s tile %zux%zu, %s (mc,kc,nc %zu,%zu,%zu; packed-A order kc,nc %zu,%zu%s): %zu random cases, %s\n", isa,
           g->mr, g->nr, what, b.mc, b.kc, b.nc, b.kc_pa, b.nc_l2, l.crowd ? ", A packed where rows crowd" : "",
           cases, g_failures == before ? "all bit-identical across thread settings and within the bound" : "FAILURES above");
}

int main(int argc, char **argv)
{
    const size_t cases = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : CASES_DEFAULT;
    g_pool2 = qkv_threadpool_create(2);
    g_pool3 = qkv_threadpool_create(3);
    CHECK(g_pool2 != NULL && g_pool3 != NULL, "pools");
    if (!g_pool2 || !g_pool3)
        return test_finish("test_gemm_random");
    qkv_isa isas[QKV_ISA_COUNT];
    const int n_isa = isa_list(isas);
    size_t done = 0;
    for (int i = 0; i < n_isa; i++) {
        CHECK(qkv_isa_select(isas[i]) == QKV_OK, "select");
        const qkv_gemm_kernels *g;
        for (size_t j = 0; (g = qkv_gemm_tile_of(qkv_kernels_active(), j)) != NULL; j++) {
            qkv_gemm_tile_want(g->mr, g->nr);
            const char *isa = qkv_isa_name(isas[i]);
            const qkv_gemm_blocking mine = qkv_gemm_blocking_of(g);
            run_blocking(g, NULL, cases, &done, isa, "this machine's blocking");
            const qkv_caches zen4 = ZEN4_CACHES; /* AMD Zen 4, a half-rate core */
            const qkv_gemm_blocking half = qkv_gemm_blocking_derive(g->mr, g->nr, &zen4, 1, qkv_gemm_blocking_fallback(g));
            CHECK(half.pa_crowd != 0 && half.kc_pa > half.kc, "%s tile %zux%zu: Zen 4's half-rate blocking", isa,
                  g->mr, g->nr);
            run_blocking(g, &half, cases, &done, isa, "Zen 4's half-rate blocking");
            for (int r = 0; r < 4; r++) { /* the tuning knob's blockings */
                qkv_gemm_blocking bl = r % 2 ? half : mine;
                char text[64];
                snprintf(text, sizeof text, "%zu,%zu,%zu", g->mr * pick(1, 64), pick(QKV_GEMM_KC_MIN, 700),
                         g->nr * pick(1, 64));
                CHECK(qkv_gemm_blocking_parse(text, g->mr, g->nr, &bl), "%s: a valid blocking", text);
                char what[160];
                snprintf(what, sizeof what, "QKV_GEMM_BLOCKING=%s on %s", text, r % 2 ? "Zen 4's" : "this machine's");
                run_blocking(g, &bl, (cases + 7) / 8, &done, isa, what);
            }
            qkv_gemm_blocking_want(g, NULL);
        }
        qkv_gemm_tile_want(0, 0);
    }
    qkv_threadpool_destroy(g_pool2);
    qkv_threadpool_destroy(g_pool3);
    return test_finish("test_gemm_random");
}
