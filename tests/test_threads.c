/* Thread safety and determinism.
 *  1. 8 threads make their first library calls at the same moment (detection racing) and
 *     compute every kernel; their results must be bit-identical to a later single-threaded
 *     run on the ISA that was active.
 *  2. For every ISA: 8 threads run every kernel concurrently on separate outputs, many
 *     times; every result is bit-identical to the single-threaded one (determinism).
 *  3. One thread switches qkv_isa_select() back and forth while 7 compute: the output of
 *     each kernel call is bit-identical to the single-threaded output of one of the ISAs.
 * "Every kernel" is dot, exp, softmax (in and out of place), gemm, sdpa (causal), mha and
 * self-attention (drivers that resolve the table once per call, so never mix ISAs).
 * Runs under ThreadSanitizer in scripts/test.sh. */
#include "common.h"

#include <pthread.h>
#include <stdatomic.h>

#define NT 8
#define N_DOT 1000
#define N_EXP 4099
#define N_SM 3001
#define GM 37 /* gemm: GM x GN x GK */
#define GN 45
#define GK 70
#define SQ 50 /* sdpa: SQ queries, SKV keys, head size SD */
#define SKV 130
#define SD 16
#define ME 24 /* mha: d_model, 4 heads, MN tokens */
#define MN 9

typedef struct results {
    float dot;
    float exp[N_EXP];
    float sm[N_SM];
    float sm_inplace[N_SM];
    float gemm[GM * GN];
    float sdpa[SQ * SD];
    float mha[MN * ME];
    float self_attn[MN * ME];
} results;

static float in_a[N_DOT], in_b[N_DOT], in_x[N_EXP], in_s[N_SM];
static float g_a[GM * GK], g_b[GK * GN], s_q[SQ * SD], s_k[SKV * SD], s_v[SKV * SD], m_w[4][ME * ME], m_x[MN * ME];
static qkv_mha g_mha;
static results per_thread[NT];
static results reference[QKV_ISA_COUNT];
static int ref_valid[QKV_ISA_COUNT];
static pthread_barrier_t barrier;
static atomic_int stop_switching;

static void compute(results *r)
{
    r->dot = qkv_dot(in_a, in_b, N_DOT);
    qkv_exp(in_x, r->exp, N_EXP);
    qkv_softmax(in_s, r->sm, N_SM, 0.125f);
    memcpy(r->sm_inplace, in_s, sizeof r->sm_inplace);
    qkv_softmax(r->sm_inplace, r->sm_inplace, N_SM, 0.125f);
    if (qkv_gemm(QKV_NOTRANS, QKV_TRANS, GM, GN, GK, 1.0f, g_a, GK, g_b, GK, 0.0f, r->gemm, GN) != QKV_OK ||
        qkv_sdpa(s_q, s_k, s_v, r->sdpa, SQ, SKV, SD, SD, 0.0f, QKV_CAUSAL) != QKV_OK ||
        qkv_mha_forward(&g_mha, 1, m_x, MN, NULL, 0, 0, r->mha, NULL, 0, NULL) != QKV_OK ||
        qkv_self_attention(m_x, MN, ME, m_w[0], m_w[1], m_w[2], ME, QKV_CAUSAL, r->self_attn) != QKV_OK)
        abort();
}

static int same(const results *a, const results *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

/* 1 if each kernel's output in r equals that kernel's output on some ISA: a call loads the
   table once, so while select() races, each call (not each compute()) is from one ISA */
static int each_call_from_one_isa(const results *r)
{
    int dot = 0, ex = 0, sm = 0, smi = 0, ge = 0, sd = 0, mh = 0, sa = 0;
    for (int i = 0; i < QKV_ISA_COUNT; i++) {
        if (!ref_valid[i])
            continue;
        const results *q = &reference[i];
        dot |= memcmp(&r->dot, &q->dot, sizeof r->dot) == 0;
        ex |= memcmp(r->exp, q->exp, sizeof r->exp) == 0;
        sm |= memcmp(r->sm, q->sm, sizeof r->sm) == 0;
        smi |= memcmp(r->sm_inplace, q->sm_inplace, sizeof r->sm_inplace) == 0;
        ge |= memcmp(r->gemm, q->gemm, sizeof r->gemm) == 0;
        sd |= memcmp(r->sdpa, q->sdpa, sizeof r->sdpa) == 0;
        mh |= memcmp(r->mha, q->mha, sizeof r->mha) == 0;
        sa |= memcmp(r->self_attn, q->self_attn, sizeof r->self_attn) == 0;
    }
    /* mha and self-attention make many kernel calls, all through the one table they
       resolve at the start of the call, so each of them too comes from one ISA */
    return dot && ex && sm && smi && ge && sd && mh && sa;
}

static void *first_use(void *arg)
{
    pthread_barrier_wait(&barrier);
    compute(&per_thread[(size_t)arg]);
    return NULL;
}

static atomic_int mismatches;

static void *worker(void *arg)
{
    const qkv_isa want = (qkv_isa)(size_t)arg;
    results *r = malloc(sizeof *r);
    pthread_barrier_wait(&barrier);
    for (int it = 0; it < 20; it++) {
        compute(r);
        if (!same(r, &reference[want]))
            atomic_fetch_add(&mismatches, 1);
    }
    free(r);
    return NULL;
}

static void *mixed_worker(void *arg)
{
    (void)arg;
    results *r = malloc(sizeof *r);
    pthread_barrier_wait(&barrier);
    for (int it = 0; it < 20; it++) {
        compute(r);
        if (!each_call_from_one_isa(r))
            atomic_fetch_add(&mismatches, 1);
    }
    free(r);
    return NULL;
}

static void *switcher(void *arg)
{
    const qkv_isa *isas = arg;
    pthread_barrier_wait(&barrier);
    for (unsigned i = 0; !atomic_load(&stop_switching); i++)
        qkv_isa_select(isas[i % 2]);
    return NULL;
}

int main(void)
{
    for (int i = 0; i < N_DOT; i++)
        in_a[i] = rng_uniform(-1, 1), in_b[i] = rng_uniform(-1, 1);
    for (int i = 0; i < N_EXP; i++)
        in_x[i] = rng_uniform(-90, 90);
    for (int i = 0; i < N_SM; i++)
        in_s[i] = rng_uniform(-50, 50);
    for (int i = 0; i < GM * GK; i++)
        g_a[i] = rng_uniform(-1, 1);
    for (int i = 0; i < GK * GN; i++)
        g_b[i] = rng_uniform(-1, 1);
    for (int i = 0; i < SQ * SD; i++)
        s_q[i] = rng_uniform(-2, 2);
    for (int i = 0; i < SKV * SD; i++)
        s_k[i] = rng_uniform(-2, 2), s_v[i] = rng_uniform(-1, 1);
    for (int w = 0; w < 4; w++)
        for (int i = 0; i < ME * ME; i++)
            m_w[w][i] = rng_uniform(-0.3f, 0.3f);
    for (int i = 0; i < MN * ME; i++)
        m_x[i] = rng_uniform(-1, 1);
    g_mha = (qkv_mha){ME, 4, m_w[0], m_w[1], m_w[2], m_w[3], NULL, NULL, NULL, NULL, 0, 0};

    /* 1: first use raced by NT threads that compute straight away */
    pthread_t t[NT];
    pthread_barrier_init(&barrier, NULL, NT);
    for (size_t i = 0; i < NT; i++)
        pthread_create(&t[i], NULL, first_use, (void *)i);
    for (size_t i = 0; i < NT; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
    const qkv_isa first = qkv_isa_active();

    qkv_isa isas[QKV_ISA_COUNT];
    const int n_isa = isa_list(isas);
    for (int k = 0; k < n_isa; k++) {
        qkv_isa_select(isas[k]);
        compute(&reference[isas[k]]);
        ref_valid[isas[k]] = 1;
    }
    for (int i = 0; i < NT; i++)
        CHECK(same(&per_thread[i], &reference[first]), "first-use thread %d differs from %s", i,
              qkv_isa_name(first));

    /* 2: every ISA, NT threads at once, bit-identical every time */
    for (int k = 0; k < n_isa; k++) {
        qkv_isa_select(isas[k]);
        atomic_store(&mismatches, 0);
        pthread_barrier_init(&barrier, NULL, NT);
        for (size_t i = 0; i < NT; i++)
            pthread_create(&t[i], NULL, worker, (void *)(size_t)isas[k]);
        for (size_t i = 0; i < NT; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&barrier);
        CHECK(atomic_load(&mismatches) == 0, "%d concurrent results differ on %s", atomic_load(&mismatches),
              qkv_isa_name(isas[k]));
        printf("  %s: %d threads x 20 rounds bit-identical\n", qkv_isa_name(isas[k]), NT);
    }

    /* 3: select() racing with computation */
    if (n_isa >= 2) {
        qkv_isa pair[2] = {isas[0], isas[n_isa - 1]};
        atomic_store(&mismatches, 0);
        atomic_store(&stop_switching, 0);
        pthread_barrier_init(&barrier, NULL, NT);
        pthread_create(&t[0], NULL, switcher, pair);
        for (size_t i = 1; i < NT; i++)
            pthread_create(&t[i], NULL, mixed_worker, NULL);
        for (size_t i = 1; i < NT; i++)
            pthread_join(t[i], NULL);
        atomic_store(&stop_switching, 1);
        pthread_join(t[0], NULL);
        pthread_barrier_destroy(&barrier);
        CHECK(atomic_load(&mismatches) == 0, "%d results under switching match no ISA", atomic_load(&mismatches));
        printf("  select() between %s and %s while computing: every call from one ISA\n",
               qkv_isa_name(pair[0]), qkv_isa_name(pair[1]));
    }
    return test_finish("test_threads");
}
