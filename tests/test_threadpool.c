/* Threads: the built-in pool, qkv_gemm_ex and qkv_mha_forward on pools.
 *  1. The pool runs task(arg, t) exactly once for every t < n_tasks, for n_tasks up to
 *     n_threads + 3 (libqkv asks for at most n_threads; the contract holds for any count),
 *     pools of 1 .. 7 threads (more threads than cores too) and one per CPU; three threads
 *     calling run() on one pool at once are serialized, not mixed.
 *  2. qkv_gemm_ex on every ISA, odd shapes (blocked, several KC and MC blocks, m == 1 in
 *     both directions, all four transposes): bit-identical for n_threads 1, 2, 3, 4, 7, for
 *     tp == NULL, for a caller pool that runs the tasks one after the other in reverse
 *     order, and to qkv_gemm (which test_gemm holds to the double-precision reference);
 *     with a caller workspace of exactly qkv_gemm_workspace_size() bytes at an odd address.
 *  3. qkv_mha_forward: the same bit-identity over thread counts, self and cross attention.
 *  4. Bad arguments: a tp with run NULL or n_threads 0 is QKV_ERR_ARG, a workspace one byte
 *     short QKV_ERR_SIZE; C and out are untouched.
 *  5. create/destroy 1000 times (ASan's leak check and TSan run this test in test.sh).
 * Runs under ThreadSanitizer in scripts/test.sh. */
#include "common.h"

#include <pthread.h>
#include <stdatomic.h>

#include "kernels.h" /* qkv_gemm_tile_of, qkv_gemm_tile_want: every GEMM tile of a table */

/* ---- 1: the pool ------------------------------------------------------------------- */

enum { MAX_TASKS = 64 };

typedef struct counts {
    atomic_int hits[MAX_TASKS];
} counts;

static void count_task(void *arg, size_t t)
{
    counts *c = arg;
    atomic_fetch_add(&c->hits[t], 1);
}

static void check_pool_runs(qkv_threadpool *tp, const char *what)
{
    for (size_t n_tasks = 1; n_tasks <= tp->n_threads + 3 && n_tasks <= MAX_TASKS; n_tasks++) {
        for (int round = 0; round < 20; round++) {
            counts c;
            for (int i = 0; i < MAX_TASKS; i++)
                atomic_init(&c.hits[i], 0);
            tp->run(tp->pool, count_task, &c, n_tasks);
            int bad = 0;
            for (size_t t = 0; t < MAX_TASKS; t++)
                bad += atomic_load(&c.hits[t]) != (t < n_tasks ? 1 : 0);
            CHECK(bad == 0, "%s: run(%zu tasks) did not call every task exactly once", what, n_tasks);
        }
    }
}

typedef struct caller_arg {
    qkv_threadpool *tp;
    atomic_int *bad;
} caller_arg;

static void *concurrent_caller(void *arg)
{
    caller_arg *ca = arg;
    for (int round = 0; round < 200; round++) {
        counts c;
        for (int i = 0; i < MAX_TASKS; i++)
            atomic_init(&c.hits[i], 0);
        ca->tp->run(ca->tp->pool, count_task, &c, ca->tp->n_threads);
        for (size_t t = 0; t < MAX_TASKS; t++)
            if (atomic_load(&c.hits[t]) != (t < ca->tp->n_threads ? 1 : 0))
                atomic_fetch_add(ca->bad, 1);
    }
    return NULL;
}

static void test_pool(void)
{
    for (size_t n = 1; n <= 7; n++) {
        qkv_threadpool *tp = qkv_threadpool_create(n);
        CHECK(tp != NULL && tp->n_threads == n && tp->run != NULL, "create(%zu)", n);
        if (tp == NULL)
            continue;
        char what[32];
        snprintf(what, sizeof what, "pool of %zu", n);
        check_pool_runs(tp, what);
        qkv_threadpool_destroy(tp);
    }
    qkv_threadpool *all = qkv_threadpool_create(0);
    CHECK(all != NULL && all->n_threads == (size_t)sysconf(_SC_NPROCESSORS_ONLN), "create(0): one per online CPU");
    if (all)
        check_pool_runs(all, "pool of every CPU");
    qkv_threadpool_destroy(all);
    qkv_threadpool_destroy(NULL);

    /* three callers on one pool of 3 threads */
    qkv_threadpool *tp = qkv_threadpool_create(3);
    atomic_int bad;
    atomic_init(&bad, 0);
    caller_arg ca = {tp, &bad};
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, concurrent_caller, &ca);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    CHECK(atomic_load(&bad) == 0, "concurrent run() calls on one pool were mixed (%d)", atomic_load(&bad));
    qkv_threadpool_destroy(tp);

    for (int i = 0; i < 1000; i++) /* no leak, no hang: ASan / TSan / valgrind watch this */
        qkv_threadpool_destroy(qkv_threadpool_create(1 + (size_t)i % 3));
    printf("  pool: 1..7 threads and one per CPU, concurrent callers, 1000 create/destroy\n");
}

/* ---- 2: qkv_gemm_ex ---------------------------------------------------------------- */

typedef struct shape {
    size_t m, n, k;
} shape;

static const shape kShapes[] = {
    {77, 300, 129},   /* odd, one MC block */
    {1000, 45, 70},   /* many row blocks, narrow */
    {1, 5000, 300},   /* m == 1, B of 6 MB: column chunks */
    {40, 40, 40},     /* below the threads threshold */
    {1, 4500, 520},   /* m == 1, B of 9 MB: one task reads whole rows (gemv_ns's long chunks),
                         several tasks a chunk of n / tasks columns each */
    {300, 400, 200},  /* the in-place order with its rows split for items (AVX-512: 4 row
                         blocks x 3 column chunks; chunk by chunk on the scalar table) */
    {100, 90, 700},   /* the narrow order with one row block by shape, which several tasks
                         cut into about a multiple of the task count */
#ifndef QKV_TEST_EMULATED /* under qemu the first five cover the same paths in reasonable time */
    {120, 300, 400},  /* B read in place (AVX-512 table): the blocked order with A in place,
                         regions of C on several tasks */
    {130, 1030, 600}, /* several KC blocks, column chunks */
    {333, 5000, 33},  /* several NC blocks */
    {1, 300, 5000},
    {200, 70, 1021},  /* row-major A of lda 1024 (k + 3): rows crowd an L1 set, so on a
                         half-rate AVX-512 core the packed-A order, a panel at a time */
    {520, 64, 4100},  /* the narrow order with an A of 8.5 MB: several of its long KC
                         blocks (gemm/driver.c NARROW_KC: 3 blocks of 1367) */
#endif
};

static qkv_threadpool *g_pools[8]; /* [n] = built-in pool of n threads, n = 1, 2, 3, 4, 7 */
static const size_t kThreads[] = {1, 2, 3, 4, 7};

static void test_gemm_ex(void)
{
    const qkv_threadpool reverse = {5, reverse_run, NULL};
    for (size_t s = 0; s < sizeof kShapes / sizeof kShapes[0]; s++) {
        const shape sh = kShapes[s];
        for (int tr = 0; tr < 4; tr++) {
            const qkv_trans ta = (qkv_trans)(tr & 1), tb = (qkv_trans)(tr >> 1);
            const size_t lda = (ta ? sh.m : sh.k) + 3, ldb = (tb ? sh.k : sh.n) + 1, ldc = sh.n + 2;
            const size_t na = (ta ? sh.k : sh.m) * lda, nb = (tb ? sh.n : sh.k) * ldb, nc = sh.m * ldc;
            float *a = malloc(na * sizeof(float)), *b = malloc(nb * sizeof(float));
            float *c0 = malloc(nc * sizeof(float)), *ref = malloc(nc * sizeof(float)), *c = malloc(nc * sizeof(float));
            for (size_t i = 0; i < na; i++)
                a[i] = rng_uniform(-1, 1);
            for (size_t i = 0; i < nb; i++)
                b[i] = rng_uniform(-1, 1);
            for (size_t i = 0; i < nc; i++)
                c0[i] = rng_uniform(-1, 1);
            const float alpha = 0.75f, beta = (tr & 1) ? 0.5f : 0.0f;
            memcpy(ref, c0, nc * sizeof(float));
            CHECK(qkv_gemm(ta, tb, sh.m, sh.n, sh.k, alpha, a, lda, b, ldb, beta, ref, ldc) == QKV_OK, "gemm");
            const size_t ws_size = qkv_gemm_workspace_size(sh.m, sh.n, sh.k, 7);
            unsigned char *ws = malloc(ws_size + 1);
            int bad = 0;
            for (size_t i = 0; i <= sizeof kThreads / sizeof kThreads[0] + 1; i++) {
                const qkv_threadpool *tp = i < sizeof kThreads / sizeof kThreads[0] ? g_pools[kThreads[i]]
                                           : i == sizeof kThreads / sizeof kThreads[0] ? NULL
                                                                                       : &reverse;
                memcpy(c, c0, nc * sizeof(float));
                /* the caller's workspace (odd address) for pools, none for tp == NULL */
                const qkv_status st = qkv_gemm_ex(ta, tb, sh.m, sh.n, sh.k, alpha, a, lda, b, ldb, beta, c, ldc, tp,
                                                  tp ? ws + 1 : NULL, tp ? ws_size : 0);
                bad += st != QKV_OK || memcmp(c, ref, nc * sizeof(float)) != 0;
            }
            CHECK(bad == 0, "gemm_ex %zux%zux%zu ta=%d tb=%d: %d thread settings differ from qkv_gemm", sh.m, sh.n,
                  sh.k, (int)ta, (int)tb, bad);
            free(ws);
            free(a);
            free(b);
            free(c0);
            free(ref);
            free(c);
        }
    }
}

/* ---- 4: bad arguments -------------------------------------------------------------- */

static void test_bad_arguments(void)
{
    enum { M = 70, N = 90, K = 80 };
    float *a = calloc(M * K, sizeof(float)), *b = calloc(K * N, sizeof(float)), *c = malloc(M * N * sizeof(float));
    float *c0 = malloc(M * N * sizeof(float));
    for (int i = 0; i < M * N; i++)
        c0[i] = c[i] = rng_uniform(-1, 1);
    const qkv_threadpool no_run = {2, NULL, NULL}, no_threads = {0, reverse_run, NULL};
    CHECK(qkv_gemm_ex(QKV_NOTRANS, QKV_NOTRANS, M, N, K, 1, a, K, b, N, 0, c, N, &no_run, NULL, 0) == QKV_ERR_ARG,
          "tp->run NULL");
    CHECK(qkv_gemm_ex(QKV_NOTRANS, QKV_NOTRANS, M, N, K, 1, a, K, b, N, 0, c, N, &no_threads, NULL, 0) == QKV_ERR_ARG,
          "tp->n_threads 0");
    /* workspace: exactly what the call needs passes, one byte less is QKV_ERR_SIZE */
    /* (B transposed: a small A B with both row-major is read in place and needs none) */
    const qkv_threadpool *tp = g_pools[2];
    const size_t bound = qkv_gemm_workspace_size(M, N, K, 2);
    unsigned char *ws = malloc(bound);
    /* the bound covers every ISA: find this call's own need, the least size in [64, bound]
       that the call takes (a larger one always does), by bisection: a byte at a time it
       took some 46000 calls per ISA, minutes under qemu */
    size_t lo = 64, need = bound;
    while (lo < need) {
        const size_t mid = lo + (need - lo) / 2;
        if (qkv_gemm_ex(QKV_NOTRANS, QKV_TRANS, M, N, K, 1, a, K, b, K, 0, c, N, tp, ws, mid) == QKV_OK)
            need = mid;
        else
            lo = mid + 1;
    }
    memcpy(c, c0, sizeof(float) * M * N);
    CHECK(qkv_gemm_ex(QKV_NOTRANS, QKV_TRANS, M, N, K, 1, a, K, b, K, 0, c, N, tp, ws, need - 1) == QKV_ERR_SIZE,
          "workspace one byte short");
    CHECK(memcmp(c, c0, sizeof(float) * M * N) == 0, "C written on error");
    CHECK(qkv_gemm_ex(QKV_NOTRANS, QKV_TRANS, M, N, K, 1, a, K, b, K, 0, c, N, tp, ws, need) == QKV_OK,
          "workspace of exactly the size needed");
    CHECK(qkv_gemm_workspace_size(1000, 1000, 1000, SIZE_MAX / 2) == 0, "workspace size overflow is 0");
    free(ws);

    /* mha: bad tp, short workspace */
    enum { E = 16, T = 5 };
    float w[4][E * E], x[2 * T * E], out[2 * T * E], out0[2 * T * E];
    for (int i = 0; i < 4 * E * E; i++)
        w[i / (E * E)][i % (E * E)] = rng_uniform(-0.3f, 0.3f);
    for (int i = 0; i < 2 * T * E; i++)
        x[i] = rng_uniform(-1, 1), out0[i] = out[i] = rng_uniform(-1, 1);
    const qkv_mha m = {E, 4, w[0], w[1], w[2], w[3], NULL, NULL, NULL, NULL, 0, 0};
    CHECK(qkv_mha_forward(&m, 2, x, T, NULL, 0, 0, out, NULL, 0, &no_run) == QKV_ERR_ARG, "mha tp->run NULL");
    CHECK(qkv_mha_forward(&m, 2, x, T, NULL, 0, 0, out, NULL, 0, &no_threads) == QKV_ERR_ARG, "mha n_threads 0");
    const size_t mneed = qkv_mha_workspace_size_mt(&m, 2, T, T, 3);
    CHECK(mneed >= qkv_mha_workspace_size(&m, T, T), "mt workspace covers the single-thread one");
    unsigned char *mws = malloc(mneed);
    CHECK(qkv_mha_forward(&m, 2, x, T, NULL, 0, 0, out, mws, mneed - 1, g_pools[3]) == QKV_ERR_SIZE,
          "mha workspace one byte short");
    CHECK(memcmp(out, out0, sizeof out) == 0, "mha out written on error");
    CHECK(qkv_mha_forward(&m, 2, x, T, NULL, 0, 0, out, mws, mneed, g_pools[3]) == QKV_OK, "mha workspace exact");
    CHECK(qkv_mha_workspace_size_mt(NULL, 1, T, T, 2) == 0, "mt size of NULL m");
    free(mws);
    free(a);
    free(b);
    free(c);
    free(c0);
}

/* ---- 3: qkv_mha_forward ------------------------------------------------------------ */

static void test_mha(void)
{
    enum { E = 96, H = 4, NQ = 70, NKV = 130, B = 2 };
    float *w[4], *bias[4];
    for (int i = 0; i < 4; i++) {
        w[i] = malloc(E * E * sizeof(float));
        bias[i] = malloc(E * sizeof(float));
        for (int j = 0; j < E * E; j++)
            w[i][j] = rng_uniform(-0.2f, 0.2f);
        for (int j = 0; j < E; j++)
            bias[i][j] = rng_uniform(-0.1f, 0.1f);
    }
    float *xq = malloc(B * NQ * E * sizeof(float)), *xkv = malloc(B * NKV * E * sizeof(float));
    for (int i = 0; i < B * NQ * E; i++)
        xq[i] = rng_uniform(-1, 1);
    for (int i = 0; i < B * NKV * E; i++)
        xkv[i] = rng_uniform(-1, 1);
    float *ref = malloc(B * NQ * E * sizeof(float)), *out = malloc(B * NQ * E * sizeof(float));
    for (int torch = 0; torch < 2; torch++) {
        const qkv_mha m = {E, H, w[0], w[1], w[2], w[3], bias[0], bias[1], bias[2], bias[3], torch, 0};
        for (int cross = 0; cross < 2; cross++) {
            const unsigned flags = cross ? 0 : QKV_CAUSAL;
            CHECK(qkv_mha_forward(&m, B, xq, NQ, cross ? xkv : NULL, NKV, flags, ref, NULL, 0, NULL) == QKV_OK,
                  "mha");
            int bad = 0;
            for (size_t i = 0; i < sizeof kThreads / sizeof kThreads[0]; i++) {
                memset(out, 0xff, B * NQ * E * sizeof(float));
                bad += qkv_mha_forward(&m, B, xq, NQ, cross ? xkv : NULL, NKV, flags, out, NULL, 0,
                                       g_pools[kThreads[i]]) != QKV_OK ||
                       memcmp(out, ref, B * NQ * E * sizeof(float)) != 0;
            }
            CHECK(bad == 0, "mha torch=%d cross=%d: %d thread counts differ from tp == NULL", torch, cross, bad);
        }
    }
    for (int i = 0; i < 4; i++)
        free(w[i]), free(bias[i]);
    free(xq);
    free(xkv);
    free(ref);
    free(out);
}

int main(void)
{
    test_pool();
    for (size_t i = 0; i < sizeof kThreads / sizeof kThreads[0]; i++)
        g_pools[kThreads[i]] = qkv_threadpool_create(kThreads[i]);
    qkv_isa isas[QKV_ISA_COUNT];
    const int n_isa = isa_list(isas);
    for (int k = 0; k < n_isa; k++) {
        qkv_isa_select(isas[k]);
        const qkv_gemm_kernels *g;
        for (size_t j = 0; (g = qkv_gemm_tile_of(qkv_kernels_active(), j)) != NULL; j++) { /* every GEMM tile */
            qkv_gemm_tile_want(g->mr, g->nr);
            printf("  %s (GEMM tile %zux%zu): gemm_ex and mha bit-identical for n_threads 1, 2, 3, 4, 7, NULL, "
                   "reversed\n",
                   qkv_isa_name(isas[k]), g->mr, g->nr);
            test_gemm_ex();
            test_mha();
        }
        qkv_gemm_tile_want(0, 0);
        test_bad_arguments();
    }
    for (size_t i = 0; i < sizeof kThreads / sizeof kThreads[0]; i++)
        qkv_threadpool_destroy(g_pools[kThreads[i]]);
    return test_finish("test_threadpool");
}
