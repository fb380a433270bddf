/* qkv_attention (the batched attention core) against a double-precision reference, every ISA.
 *
 * Reference and tolerance: tests/attn_ref.h. Per output element of row (b, h, i), column c:
 *   |o - ref| <= (4 E_s + (2 n_vis + 64) FLT_EPSILON) max_j |v_jc| + 1e-30,
 *   E_s = 2 (d_k + 1) FLT_EPSILON scale max_j sum_p |q_p k_jp| + 8 FLT_EPSILON max_j |capped s_j|
 * (the GEMM bound on one score, the rounding of scale q and the softcap's tanh, carried by the
 * softmax weights as a relative error; the n_vis term covers exp and the float sums over the
 * n_vis visible keys), and |lse - ref| <= 2 E_s + (2 n_vis + 64) FLT_EPSILON + 4 FLT_EPSILON |ref|.
 * A row without a visible key must be exactly +0 with lse exactly -inf.
 * Derived comparisons: the lse merge of two half-key calls is held to the sum of the three
 * calls' tolerances plus the halves' lse tolerances times max|v|; GQA against the same call on
 * repeated K/V heads (n_kv_heads = 0) is held to the two tolerances (the tiles stack the
 * heads differently, so bit identity is not promised; the test prints how many rows were);
 * F16/BF16 K/V against the F32 call on the exactly widened tensors, the F32 tolerance.
 * Bit-identical: every thread count 1..4 (qkv_threadpool_create and a pool that runs its
 * tasks in reverse order), tp == NULL, exact and misaligned workspaces; the outputs of
 * queries that cannot see a key whose K or V row holds +inf or NaN (causal, window, kv_len),
 * F16 too.
 * Covered: B, H with n_kv_heads 0, H, H/2, H/4, 1 (and G > 96 rows); the (B, H, N, D) and
 * (B, N, H, D) layouts, padded strides and broadcast (0) strides of Q, K, V; n_q 1..20,
 * 95..97, 200; n_kv 1 .. 5000 (split-KV decode); head sizes 1, 3, 17, 64, 65, 128, d_k != d_v;
 * causal with n_kv <, =, > n_q; windows 1, 7, 128 and SIZE_MAX, with and without causal;
 * softcap 5, 30, 50; default and explicit scale; kv_len NULL, full, zeros, mixed; keys past
 * kv_len[b] never read (guard page right after the last visible K and V row, F32 and F16);
 * every bad argument (status, o and lse untouched); workspace sizes; allocation failure. */
#include "common.h"

#include "attn_ref.h"

#ifndef QKV_TEST_EMULATED
#include "alloc_hook.h"
#else /* linked statically under qemu (threads), where the hook would collide with libc */
static volatile int g_fail_alloc;
static int alloc_hook_works(void)
{
    return 0;
}
#endif

#ifdef QKV_TEST_EMULATED
#define BIG 0 /* qemu: the small sizes only */
#else
#define BIG 1
#endif

enum { MAXB = 8 };

/* ---- tensors in the layouts models use --------------------------------------------- */

enum { L_BHND, L_BNHD, L_PAD, L_BC_B, L_BC_H, L_BC_T, L_COUNT };
static const char *const kLayout[L_COUNT] = {"bhnd", "bnhd", "pad", "bcast-b", "bcast-h", "bcast-t"};

/* element strides of a (B, Hx, N, D) tensor in layout l; returns the elements it spans */
static size_t layout_strides(int l, size_t B, size_t Hx, size_t N, size_t D, size_t s[3])
{
    switch (l) {
    case L_BNHD:
        s[0] = N * Hx * D, s[1] = D, s[2] = Hx * D;
        break;
    case L_PAD: /* rows padded by 3, heads by 5, items by 7 elements */
        s[2] = D + 3, s[1] = N * (D + 3) + 5, s[0] = Hx * s[1] + 7;
        break;
    case L_BC_B: /* every item the same */
        s[0] = 0, s[1] = N * D, s[2] = D;
        break;
    case L_BC_H: /* every head the same */
        s[0] = N * D, s[1] = 0, s[2] = D;
        break;
    case L_BC_T: /* every token the same */
        s[0] = Hx * D, s[1] = D, s[2] = 0;
        break;
    default:
        s[0] = Hx * N * D, s[1] = N * D, s[2] = D;
    }
    return (B - 1) * s[0] + (Hx - 1) * s[1] + (N - 1) * s[2] + D;
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        exit(2);
    return p;
}

static void fill(float *p, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        p[i] = rng_uniform(lo, hi);
}

typedef struct acase {
    size_t B, H, KVH, n_q, n_kv, d_k, d_v;
    int lq, lk, lv, lo;
    unsigned flags;
    size_t window;
    float softcap, scale;
    int kvlen; /* 0 NULL, 1 all n_kv, 2 all zero, 3 mixed (zero, full, partial) */
    float amp; /* Q and K uniform in [-amp, amp] (0: 1) */
    qkv_dtype dt;
} acase;

typedef struct prob {
    acase c;
    qkv_attention_desc d;
    size_t kvl[MAXB];
    float *q, *k, *v;         /* k, v: float (the exact widening of k16, v16 for F16/BF16) */
    uint16_t *k16, *v16;      /* F16/BF16 K and V, same layout */
    size_t nq, nk, nv, no, nl; /* elements */
} prob;

static uint16_t encode(qkv_dtype t, float f)
{
    return t == QKV_F16 ? ref_f16_encode(f) : ref_bf16_encode(f);
}

static float decode(qkv_dtype t, uint16_t h)
{
    return t == QKV_F16 ? ref_f16_decode(h) : ref_bf16_decode(h);
}

static void prob_make(prob *p, const acase *c)
{
    memset(p, 0, sizeof *p);
    p->c = *c;
    qkv_attention_desc *d = &p->d;
    const size_t KVH = c->KVH ? c->KVH : c->H;
    d->batch = c->B, d->n_heads = c->H, d->n_kv_heads = c->KVH, d->n_q = c->n_q, d->n_kv = c->n_kv;
    d->d_k = c->d_k, d->d_v = c->d_v, d->scale = c->scale, d->flags = c->flags, d->window = c->window;
    d->softcap = c->softcap, d->kv_dtype = c->dt;
    p->nq = layout_strides(c->lq, c->B, c->H, c->n_q, c->d_k, d->q_stride);
    p->nk = layout_strides(c->lk, c->B, KVH, c->n_kv, c->d_k, d->k_stride);
    p->nv = layout_strides(c->lv, c->B, KVH, c->n_kv, c->d_v, d->v_stride);
    p->no = layout_strides(c->lo, c->B, c->H, c->n_q, c->d_v, d->o_stride);
    p->nl = c->B * c->H * c->n_q;
    if (c->kvlen) {
        for (size_t b = 0; b < c->B; b++) {
            const size_t part = c->n_kv > 1 ? 1 + rng_u64() % (c->n_kv - 1) : c->n_kv;
            p->kvl[b] = c->kvlen == 1 ? c->n_kv : c->kvlen == 2 ? 0 : b % 3 == 0 ? 0 : b % 3 == 1 ? c->n_kv : part;
        }
        d->kv_len = p->kvl;
    }
    const float amp = c->amp > 0.0f ? c->amp : 1.0f;
    p->q = xmalloc(p->nq * sizeof(float));
    p->k = xmalloc(p->nk * sizeof(float));
    p->v = xmalloc(p->nv * sizeof(float));
    fill(p->q, p->nq, -amp, amp);
    fill(p->k, p->nk, -amp, amp);
    fill(p->v, p->nv, -1.0f, 1.0f);
    if (c->dt != QKV_F32) {
        p->k16 = xmalloc(p->nk * 2);
        p->v16 = xmalloc(p->nv * 2);
        for (size_t i = 0; i < p->nk; i++)
            p->k[i] = decode(c->dt, p->k16[i] = encode(c->dt, p->k[i]));
        for (size_t i = 0; i < p->nv; i++)
            p->v[i] = decode(c->dt, p->v16[i] = encode(c->dt, p->v[i]));
    }
}

static void prob_free(prob *p)
{
    free(p->q), free(p->k), free(p->v), free(p->k16), free(p->v16);
}

static const void *kin(const prob *p)
{
    return p->d.kv_dtype == QKV_F32 ? (const void *)p->k : (const void *)p->k16;
}

static const void *vin(const prob *p)
{
    return p->d.kv_dtype == QKV_F32 ? (const void *)p->v : (const void *)p->v16;
}

static float *o_elem(const prob *p, float *o, size_t b, size_t h, size_t i)
{
    return o + b * p->d.o_stride[0] + h * p->d.o_stride[1] + i * p->d.o_stride[2];
}

static void case_name(const acase *c, char *buf, size_t n)
{
    snprintf(buf, n, "B%zu H%zu/%zu %zux%zu d%zu/%zu q:%s k:%s v:%s o:%s f%u w%zu cap%g s%g kvlen%d dt%d", c->B, c->H,
             c->KVH, c->n_q, c->n_kv, c->d_k, c->d_v, kLayout[c->lq], kLayout[c->lk], kLayout[c->lv], kLayout[c->lo],
             c->flags, c->window, c->softcap, c->scale, c->kvlen, (int)c->dt);
}

/* o and lse against the reference; the elements of o no output names keep 42 */
static long prob_compare(const prob *p, const float *o, const float *lse, const char *what)
{
    const qkv_attention_desc *d = &p->d;
    double *s = xmalloc(d->n_kv * sizeof(double)), *r = xmalloc(d->d_v * sizeof(double));
    double *tol = xmalloc(d->d_v * sizeof(double));
    unsigned char *named = calloc(p->no, 1);
    long bad = 0;
    for (size_t b = 0; b < d->batch; b++)
        for (size_t h = 0; h < d->n_heads; h++)
            for (size_t i = 0; i < d->n_q; i++) {
                double rl, tl;
                ref_row(d, p->q, p->k, p->v, b, h, i, s, r, tol, &rl, &tl);
                const float *oi = o_elem(p, (float *)o, b, h, i);
                for (size_t c = 0; c < d->d_v; c++) {
                    named[oi - o + c] = 1;
                    const int ok = tol[c] == 0.0 ? (oi[c] == 0.0f && !signbit(oi[c]))
                                                 : fabs((double)oi[c] - r[c]) <= tol[c];
                    if (!ok && ++bad <= 3)
                        CHECK(0, "%s: o[%zu,%zu,%zu][%zu] = %.9g, ref %.9g, tol %.3g", what, b, h, i, c, oi[c], r[c],
                              tol[c]);
                }
                if (lse) {
                    const float l = lse[(b * d->n_heads + h) * d->n_q + i];
                    const int ok = tl == 0.0 ? (isinf(l) && l < 0) : fabs((double)l - rl) <= tl;
                    if (!ok && ++bad <= 3)
                        CHECK(0, "%s: lse[%zu,%zu,%zu] = %.9g, ref %.9g, tol %.3g", what, b, h, i, l, rl, tl);
                }
            }
    long stray = 0;
    for (size_t x = 0; x < p->no; x++)
        stray += !named[x] && o[x] != 42.0f;
    CHECK(bad == 0, "%s: %ld outputs off", what, bad);
    CHECK(stray == 0, "%s: %ld elements between the outputs written", what, stray);
    free(s), free(r), free(tol), free(named);
    return bad;
}

static void set42(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = 42.0f;
}

static int all42(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (x[i] != 42.0f)
            return 0;
    return 1;
}

static int same_bits(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof(float)) == 0;
}

/* ---- pools --------------------------------------------------------------------------- */

static qkv_threadpool *g_pool[5]; /* [n]: n threads, 1..4 */

/* ---- one case: reference, guard page after O, threads bit-identical ---------------- */

static void run_case(const acase *c, int threads)
{
    prob p;
    prob_make(&p, c);
    char what[256];
    case_name(c, what, sizeof what);
    guarded go, gl;
    float *o = guarded_alloc(&go, p.no, GUARD_AFTER), *lse = guarded_alloc(&gl, p.nl, GUARD_AFTER);
    set42(o, p.no);
    const qkv_status st = qkv_attention(&p.d, p.q, kin(&p), vin(&p), o, lse, NULL, NULL, 0);
    CHECK(st == QKV_OK, "%s: status %d", what, (int)st);
    if (st == QKV_OK)
        prob_compare(&p, o, lse, what);
    if (threads) {
        float *o2 = xmalloc(p.no * sizeof(float)), *l2 = xmalloc(p.nl * sizeof(float));
        const qkv_threadpool rev = {3, reverse_run, NULL};
        const qkv_threadpool *tps[2] = {g_pool[threads], &rev};
        for (int t = 0; t < 2; t++) {
            const size_t need = qkv_attention_workspace_size(&p.d, tps[t]->n_threads);
            unsigned char *ws = xmalloc(need + 7);
            set42(o2, p.no);
            const qkv_status st2 = qkv_attention(&p.d, p.q, kin(&p), vin(&p), o2, l2, tps[t], ws + 7, need);
            CHECK(st2 == QKV_OK && same_bits(o, o2, p.no) && same_bits(lse, l2, p.nl),
                  "%s: %zu threads%s (misaligned exact workspace) differ from tp NULL (status %d)", what,
                  tps[t]->n_threads, t ? " reversed" : "", (int)st2);
            free(ws);
        }
        free(o2), free(l2);
    }
    CHECK(guarded_free(&go) && guarded_free(&gl), "%s: canary", what);
    prob_free(&p);
}

static const size_t kDims[][2] = {{1, 1}, {3, 5}, {17, 16}, {64, 64}, {65, 33}, {128, 128}, {16, 3}};
enum { N_DIMS = sizeof kDims / sizeof kDims[0] };

static acase mk(size_t B, size_t H, size_t KVH, size_t n_q, size_t n_kv, size_t dd)
{
    acase c;
    memset(&c, 0, sizeof c);
    c.B = B, c.H = H, c.KVH = KVH, c.n_q = n_q, c.n_kv = n_kv;
    c.d_k = kDims[dd % N_DIMS][0], c.d_v = kDims[dd % N_DIMS][1];
    return c;
}

static void test_shapes(void)
{
    size_t t = 0; /* rotates layouts, head sizes and options */
    /* heads and GQA groups, layouts */
    static const size_t kvh[] = {0, 8, 4, 2, 1};
    static const size_t nqs[] = {1, 3, 7, 20};
    static const size_t nkvs[] = {1, 50, 200};
    for (size_t a = 0; a < 5; a++)
        for (size_t x = 0; x < 4; x++)
            for (size_t y = 0; y < 3; y++, t++) {
                acase c = mk(2, 8, kvh[a], nqs[x], nkvs[y], t % 4);
                c.lq = (int)(t % L_COUNT), c.lk = (int)((t / 2) % L_COUNT), c.lv = (int)((t / 3 + 1) % L_COUNT);
                c.lo = (int)(t % 3);
                c.flags = t % 2 ? QKV_CAUSAL : 0;
                c.kvlen = (int)(t % 4);
                c.scale = t % 5 == 0 ? 0.3f : t % 5 == 1 ? -1.0f : 0.0f;
                run_case(&c, t % 7 == 0 ? 1 + (int)(t % 4) : 0);
            }
    /* n_q 1..20 over one MQA group of 4 heads (rows 4..80: decode and tiled paths) */
    for (size_t n_q = 1; n_q <= 20; n_q++, t++) {
        acase c = mk(1, 4, n_q % 2 ? 1 : 0, n_q, 1 + (n_q * 37) % 130, t);
        c.lq = c.lk = c.lv = c.lo = (int)(n_q % 2);
        c.flags = n_q % 3 ? QKV_CAUSAL : 0;
        run_case(&c, 0);
    }
    /* one past each Q tile, n_q 200, causal with n_kv <, =, > n_q */
    static const size_t big_q[][2] = {{95, 100}, {96, 96}, {97, 300}, {200, 50}, {200, 200}, {97, 20}, {20, 7}};
    for (size_t i = 0; i < sizeof big_q / sizeof big_q[0]; i++, t++)
        for (unsigned f = 0; f <= QKV_CAUSAL; f++) {
            acase c = mk(1, 2, 1, big_q[i][0], big_q[i][1], t);
            c.lq = c.lo = L_BNHD, c.lk = c.lv = L_PAD;
            c.flags = f;
            run_case(&c, i == 2 ? 2 : 0);
        }
    /* head sizes, every one on both paths */
    for (size_t dd = 0; dd < N_DIMS; dd++, t++) {
        acase c = mk(2, 2, 0, 2, 130, dd);
        run_case(&c, 0);
        c = mk(1, 3, 1, 33, 97, dd);
        c.flags = QKV_CAUSAL;
        run_case(&c, 0);
    }
    /* windows with and without causal (SIZE_MAX: no limit) */
    static const size_t wins[] = {1, 7, 128, SIZE_MAX};
    for (size_t w = 0; w < 4; w++)
        for (unsigned f = 0; f <= QKV_CAUSAL; f++, t++) {
            acase c = mk(2, 4, 2, w % 2 ? 130 : 3, 300, t);
            c.window = wins[w], c.flags = f, c.kvlen = f ? 3 : 0;
            run_case(&c, 0);
            c = mk(1, 1, 0, 1, 40, t);
            c.window = wins[w], c.flags = f;
            run_case(&c, 0);
        }
    /* softcap, scores well past the cap */
    static const float caps[] = {5.0f, 30.0f, 50.0f};
    for (int i = 0; i < 3; i++, t++) {
        acase c = mk(1, 4, 2, i == 1 ? 2 : 50, 150, 3);
        c.softcap = caps[i], c.amp = 3.0f, c.scale = i == 2 ? 1.0f : 0.0f, c.flags = i == 0 ? QKV_CAUSAL : 0;
        run_case(&c, 0);
    }
    /* kv_len all zeros, all full, mixed */
    for (int m = 1; m <= 3; m++, t++) {
        acase c = mk(5, 2, 1, m == 3 ? 9 : 2, 260, t);
        c.kvlen = m, c.flags = m == 3 ? QKV_CAUSAL : 0;
        run_case(&c, 2);
    }
    /* more than 96 heads in a group: head chunks */
    {
        acase c = mk(1, 100, 1, 2, 30, 2);
        c.flags = QKV_CAUSAL;
        run_case(&c, 3);
    }
    if (!BIG)
        return;
    /* long KV: split-KV decode (few tiles), a few tiles, window and kv_len on the split */
    static const size_t longkv[][5] = {
        /* B, H, KVH, n_q, n_kv */
        {1, 1, 0, 1, 5000}, {1, 4, 1, 1, 4097}, {1, 2, 0, 5, 3000}, {2, 2, 1, 2, 1024}, {1, 8, 2, 1, 2000},
        {1, 1, 0, 130, 1100},
    };
    for (size_t i = 0; i < sizeof longkv / sizeof longkv[0]; i++, t++) {
        acase c = mk(longkv[i][0], longkv[i][1], longkv[i][2], longkv[i][3], longkv[i][4], i % 2 ? 5 : 3);
        run_case(&c, 4);
        c.flags = QKV_CAUSAL, c.window = i % 2 ? 128 : 0, c.kvlen = i % 2 ? 0 : 3, c.softcap = i == 0 ? 30.0f : 0.0f;
        run_case(&c, 0);
    }
}

/* ---- merging two half-key calls by lse equals the whole call ---------------------- */

static void merge_case(size_t B, size_t H, size_t KVH, size_t n_q, size_t n_kv, size_t dd, float cap)
{
    acase c = mk(B, H, KVH, n_q, n_kv, dd);
    c.softcap = cap;
    c.lk = L_BNHD;
    prob p;
    prob_make(&p, &c);
    char what[256];
    case_name(&c, what, sizeof what);
    const size_t half = n_kv / 2;
    qkv_attention_desc d1 = p.d, d2 = p.d;
    d1.n_kv = half, d2.n_kv = n_kv - half;
    float *o1 = xmalloc(p.no * sizeof(float)), *o2 = xmalloc(p.no * sizeof(float));
    float *l1 = xmalloc(p.nl * sizeof(float)), *l2 = xmalloc(p.nl * sizeof(float));
    CHECK(qkv_attention(&d1, p.q, p.k, p.v, o1, l1, NULL, NULL, 0) == QKV_OK &&
              qkv_attention(&d2, p.q, p.k + half * p.d.k_stride[2], p.v + half * p.d.v_stride[2], o2, l2, NULL, NULL,
                            0) == QKV_OK,
          "merge %s: status", what);
    prob p1 = p, p2 = p; /* the halves' references */
    p1.d = d1, p2.d = d2, p2.k = p.k + half * p.d.k_stride[2], p2.v = p.v + half * p.d.v_stride[2];
    double *s = xmalloc(n_kv * sizeof(double)), *dv = xmalloc(3 * 2 * c.d_v * sizeof(double));
    double *r = dv, *tol = r + c.d_v, *r1 = tol + c.d_v, *t1 = r1 + c.d_v, *r2 = t1 + c.d_v, *t2 = r2 + c.d_v;
    long bad = 0;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t i = 0; i < n_q; i++) {
                double rl, tl, rl1, tl1, rl2, tl2, vmax = 0.0;
                ref_row(&p.d, p.q, p.k, p.v, b, h, i, s, r, tol, &rl, &tl);
                ref_row(&p1.d, p1.q, p1.k, p1.v, b, h, i, s, r1, t1, &rl1, &tl1);
                ref_row(&p2.d, p2.q, p2.k, p2.v, b, h, i, s, r2, t2, &rl2, &tl2);
                const size_t x = (b * H + h) * n_q + i;
                const double a = l1[x], bb = l2[x], m = fmax(a, bb);
                const double lse = m + log(exp(a - m) + exp(bb - m)), w1 = exp(a - lse), w2 = exp(bb - lse);
                const float *oa = o_elem(&p, o1, b, h, i), *ob = o_elem(&p, o2, b, h, i);
                const size_t g = h / (KVH ? H / KVH : 1);
                /* not fmax(): aarch64-linux-gnu-gcc 12.2 -O3 dies vectorising an fmax reduction
                   (internal compiler error in vect_transform_reduction, tree-vect-loop.cc:7457);
                   the same value for the finite V of this test */
                for (size_t j = 0; j < n_kv; j++)
                    for (size_t cc = 0; cc < c.d_v; cc++) {
                        const double av =
                            fabs(p.v[b * p.d.v_stride[0] + g * p.d.v_stride[1] + j * p.d.v_stride[2] + cc]);
                        vmax = av > vmax ? av : vmax;
                    }
                for (size_t cc = 0; cc < c.d_v; cc++) {
                    const double o = w1 * oa[cc] + w2 * ob[cc];
                    const double tt = tol[cc] + t1[cc] + t2[cc] + 4.0 * (tl1 + tl2) * vmax;
                    if (!(fabs(o - r[cc]) <= tt) && ++bad <= 3)
                        CHECK(0, "merge %s: o[%zu,%zu,%zu][%zu] = %.9g, whole ref %.9g, tol %.3g", what, b, h, i, cc, o,
                              r[cc], tt);
                }
                if (!(fabs(lse - rl) <= tl + tl1 + tl2) && ++bad <= 3)
                    CHECK(0, "merge %s: lse %.9g, whole ref %.9g", what, lse, rl);
            }
    CHECK(bad == 0, "merge %s: %ld off", what, bad);
    free(o1), free(o2), free(l1), free(l2), free(s), free(dv);
    prob_free(&p);
}

static void test_lse_merge(void)
{
    merge_case(2, 4, 2, 3, 64, 3, 0.0f);
    merge_case(1, 2, 0, 100, 200, 4, 0.0f);
    merge_case(1, 4, 1, 1, 7, 1, 20.0f);
    merge_case(2, 2, 0, 9, 33, 2, 0.0f);
    if (BIG)
        merge_case(1, 1, 0, 1, 4000, 5, 0.0f); /* each half on the split-KV path */
}

/* ---- GQA equals the call on repeated K/V heads --------------------------------------- */

static void gqa_case(size_t B, size_t H, size_t KVH, size_t n_q, size_t n_kv, size_t dd, unsigned flags, int kvlen)
{
    acase c = mk(B, H, KVH, n_q, n_kv, dd);
    c.flags = flags, c.kvlen = kvlen;
    prob p;
    prob_make(&p, &c);
    acase cr = c;
    cr.KVH = 0;
    prob rp; /* the same problem with H K/V heads */
    prob_make(&rp, &cr);
    memcpy(rp.q, p.q, p.nq * sizeof(float));
    memcpy(rp.kvl, p.kvl, sizeof p.kvl);
    const size_t G = H / KVH;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t j = 0; j < n_kv; j++) {
                memcpy(rp.k + b * rp.d.k_stride[0] + h * rp.d.k_stride[1] + j * rp.d.k_stride[2],
                       p.k + b * p.d.k_stride[0] + (h / G) * p.d.k_stride[1] + j * p.d.k_stride[2], c.d_k * sizeof(float));
                memcpy(rp.v + b * rp.d.v_stride[0] + h * rp.d.v_stride[1] + j * rp.d.v_stride[2],
                       p.v + b * p.d.v_stride[0] + (h / G) * p.d.v_stride[1] + j * p.d.v_stride[2], c.d_v * sizeof(float));
            }
    char what[256];
    case_name(&c, what, sizeof what);
    float *o = xmalloc(p.no * sizeof(float)), *o2 = xmalloc(p.no * sizeof(float));
    float *l = xmalloc(p.nl * sizeof(float)), *l2 = xmalloc(p.nl * sizeof(float));
    set42(o, p.no), set42(o2, p.no);
    CHECK(qkv_attention(&p.d, p.q, p.k, p.v, o, l, g_pool[2], NULL, 0) == QKV_OK &&
              qkv_attention(&rp.d, rp.q, rp.k, rp.v, o2, l2, NULL, NULL, 0) == QKV_OK,
          "gqa %s: status", what);
    double *s = xmalloc(n_kv * sizeof(double)), *r = xmalloc(2 * c.d_v * sizeof(double)), *tol = r + c.d_v;
    long bad = 0, same = 0;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t i = 0; i < n_q; i++) {
                double rl, tl;
                ref_row(&p.d, p.q, p.k, p.v, b, h, i, s, r, tol, &rl, &tl);
                const float *a = o_elem(&p, o, b, h, i), *e = o_elem(&p, o2, b, h, i);
                same += same_bits(a, e, c.d_v);
                for (size_t cc = 0; cc < c.d_v; cc++)
                    if (!(fabs((double)a[cc] - e[cc]) <= 2.0 * tol[cc]) && ++bad <= 3)
                        CHECK(0, "gqa %s: o[%zu,%zu,%zu][%zu] = %.9g, repeated heads %.9g, tol %.3g", what, b, h, i, cc,
                              a[cc], e[cc], 2.0 * tol[cc]);
            }
    CHECK(bad == 0, "gqa %s: %ld off", what, bad);
    prob_compare(&p, o, l, what);
    printf("    gqa %s: %ld of %zu rows bit-identical to repeated heads\n", what, same, B * H * n_q);
    free(o), free(o2), free(l), free(l2), free(s), free(r);
    prob_free(&p), prob_free(&rp);
}

static void test_gqa(void)
{
    gqa_case(2, 8, 2, 1, 300, 3, 0, 0);
    gqa_case(1, 8, 1, 5, 100, 4, QKV_CAUSAL, 0);
    gqa_case(3, 6, 3, 40, 130, 2, QKV_CAUSAL, 3);
    gqa_case(1, 4, 2, 2, BIG ? 3000 : 600, 3, 0, 0);
}

/* ---- thread counts: bit-identical to tp == NULL ---------------------------------------- */

static void test_threads(void)
{
    static const size_t shapes[][6] = {
        /* B, H, KVH, n_q, n_kv, dims */
        {1, 1, 0, 1, 5000, 5}, {1, 8, 2, 1, 3000, 3}, {2, 8, 4, 33, 200, 4}, {1, 2, 0, 300, 250, 3},
        {3, 4, 1, 2, 2048, 2}, {2, 4, 0, 7, 5, 1},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        if (!BIG && shapes[s][4] > 1000)
            continue;
        acase c = mk(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], shapes[s][4], shapes[s][5]);
        c.flags = s % 2 ? QKV_CAUSAL : 0, c.kvlen = s == 4 ? 3 : 0, c.window = s == 2 ? 64 : 0;
        prob p;
        prob_make(&p, &c);
        char what[256];
        case_name(&c, what, sizeof what);
        float *o0 = xmalloc(p.no * sizeof(float)), *l0 = xmalloc(p.nl * sizeof(float));
        float *o = xmalloc(p.no * sizeof(float)), *l = xmalloc(p.nl * sizeof(float));
        set42(o0, p.no), set42(o, p.no);
        CHECK(qkv_attention(&p.d, p.q, p.k, p.v, o0, l0, NULL, NULL, 0) == QKV_OK, "threads %s: status", what);
        if (s == 0 || s == 2)
            prob_compare(&p, o0, l0, what);
        for (size_t n = 1; n <= 4; n++)
            for (int with_ws = 0; with_ws < 2; with_ws++) {
                const size_t need = qkv_attention_workspace_size(&p.d, n);
                void *ws = with_ws ? xmalloc(need) : NULL;
                const qkv_status st = qkv_attention(&p.d, p.q, p.k, p.v, o, l, g_pool[n], ws, with_ws ? need : 0);
                CHECK(st == QKV_OK && same_bits(o, o0, p.no) && same_bits(l, l0, p.nl),
                      "threads %s: %zu threads (ws %d) not bit-identical to tp NULL", what, n, with_ws);
                free(ws);
            }
        free(o0), free(l0), free(o), free(l);
        prob_free(&p);
    }
}

/* ---- hidden keys have no influence ----------------------------------------------------- */

static void hidden_case(acase c)
{
    c.lk = c.lv = L_BHND;
    prob p;
    prob_make(&p, &c);
    char what[256];
    case_name(&c, what, sizeof what);
    const size_t KVH = c.KVH ? c.KVH : c.H;
    float *o0 = xmalloc(p.no * sizeof(float)), *o = xmalloc(p.no * sizeof(float));
    float *l0 = xmalloc(p.nl * sizeof(float)), *l = xmalloc(p.nl * sizeof(float));
    CHECK(qkv_attention(&p.d, p.q, kin(&p), vin(&p), o0, l0, NULL, NULL, 0) == QKV_OK, "hidden %s: status", what);
    prob_compare(&p, o0, l0, what);
    /* keys around the tile edges (96, 128, the split chunks), the ends of the ranges */
    size_t js[32], nj = 0;
    static const size_t fixed[] = {0, 1, 2, 6, 7, 95, 96, 97, 127, 128, 191, 192, 511, 512, 1023, 1024, 1151, 1152};
    for (size_t x = 0; x < sizeof fixed / sizeof fixed[0]; x++)
        if (fixed[x] < c.n_kv)
            js[nj++] = fixed[x];
    for (size_t b = 0; b < c.B && nj < 28; b++) {
        const size_t L = p.d.kv_len ? p.kvl[b] : c.n_kv;
        if (L < c.n_kv)
            js[nj++] = L;
        if (L > 0)
            js[nj++] = L - 1;
    }
    js[nj++] = c.n_kv - 1;
    js[nj++] = rng_u64() % c.n_kv;
    long bad = 0, checked = 0;
    for (size_t x = 0; x < nj; x++) {
        const size_t j = js[x];
        for (int which = 0; which < 4; which++) {
            const int is_v = which >= 2;
            const float val = which % 2 ? NAN : INFINITY;
            const size_t len = is_v ? c.d_v : c.d_k;
            const size_t *st = is_v ? p.d.v_stride : p.d.k_stride;
            float *base = is_v ? p.v : p.k;
            uint16_t *b16 = is_v ? p.v16 : p.k16;
            float *saved = xmalloc(c.B * KVH * len * sizeof(float));
            uint16_t *saved16 = xmalloc(c.B * KVH * len * 2);
            for (size_t b = 0; b < c.B; b++)
                for (size_t g = 0; g < KVH; g++) {
                    const size_t off = b * st[0] + g * st[1] + j * st[2], at = (b * KVH + g) * len;
                    memcpy(saved + at, base + off, len * sizeof(float));
                    for (size_t e = 0; e < len; e++)
                        base[off + e] = val;
                    if (b16) {
                        memcpy(saved16 + at, b16 + off, len * 2);
                        for (size_t e = 0; e < len; e++)
                            b16[off + e] = encode(c.dt, val);
                    }
                }
            CHECK(qkv_attention(&p.d, p.q, kin(&p), vin(&p), o, l, NULL, NULL, 0) == QKV_OK, "hidden %s: status", what);
            for (size_t b = 0; b < c.B; b++)
                for (size_t g = 0; g < KVH; g++) {
                    const size_t off = b * st[0] + g * st[1] + j * st[2], at = (b * KVH + g) * len;
                    memcpy(base + off, saved + at, len * sizeof(float));
                    if (b16)
                        memcpy(b16 + off, saved16 + at, len * 2);
                }
            free(saved), free(saved16);
            for (size_t b = 0; b < c.B; b++)
                for (size_t i = 0; i < c.n_q; i++) {
                    if (ref_visible(&p.d, b, i, j))
                        continue;
                    for (size_t h = 0; h < c.H; h++) {
                        checked++;
                        const size_t li = (b * c.H + h) * c.n_q + i;
                        if ((!same_bits(o_elem(&p, o, b, h, i), o_elem(&p, o0, b, h, i), c.d_v) ||
                             !same_bits(l + li, l0 + li, 1)) &&
                            ++bad <= 3)
                            CHECK(0, "hidden %s: %s row %zu = %s changed query (%zu,%zu,%zu): %g vs %g", what,
                                  is_v ? "V" : "K", j, which % 2 ? "NaN" : "inf", b, h, i, *o_elem(&p, o, b, h, i),
                                  *o_elem(&p, o0, b, h, i));
                    }
                }
        }
    }
    CHECK(bad == 0, "hidden %s: %ld of %ld rows changed", what, bad, checked);
    free(o0), free(o), free(l0), free(l);
    prob_free(&p);
}

static void test_hidden(void)
{
    for (int dt = QKV_F32; dt <= QKV_BF16; dt++) {
        acase c = mk(1, 2, 1, 100, 150, 2); /* causal, tiled */
        c.flags = QKV_CAUSAL, c.dt = (qkv_dtype)dt;
        hidden_case(c);
        c = mk(2, 4, 1, 1, 300, 3); /* causal decode (4 rows), n_q < n_kv: nothing hidden but past L */
        c.flags = QKV_CAUSAL, c.kvlen = 3, c.dt = (qkv_dtype)dt;
        hidden_case(c);
        c = mk(1, 2, 0, 50, 200, 4); /* window 7, not causal */
        c.window = 7, c.dt = (qkv_dtype)dt;
        hidden_case(c);
        c = mk(3, 2, 2, 9, 140, 1); /* kv_len mixed, window 128 causal */
        c.window = 128, c.flags = QKV_CAUSAL, c.kvlen = 3, c.dt = (qkv_dtype)dt;
        hidden_case(c);
        c = mk(1, 1, 0, 20, 10, 2); /* n_kv < n_q causal: rows without keys */
        c.flags = QKV_CAUSAL, c.dt = (qkv_dtype)dt;
        hidden_case(c);
        if (BIG) {
            c = mk(1, 1, 0, 1, 2000, 3); /* split-KV with a window */
            c.window = 128, c.flags = QKV_CAUSAL, c.dt = (qkv_dtype)dt;
            hidden_case(c);
            c = mk(1, 2, 1, 3, 1300, 2); /* split-KV, kv_len */
            c.kvlen = 3, c.dt = (qkv_dtype)dt;
            c.B = 3;
            hidden_case(c);
        }
    }
}

/* ---- keys past kv_len[b] are never read ------------------------------------------------- */

/* es-byte elements ending exactly at a PROT_NONE page */
static void *guarded_bytes(guarded *g, size_t n_elems, size_t es)
{
    const size_t nf = (n_elems * es + 3) / 4;
    float *f = guarded_alloc(g, nf, GUARD_AFTER);
    return (unsigned char *)f + (nf * 4 - n_elems * es);
}

static void guard_case(size_t B, size_t H, size_t KVH, size_t n_q, size_t n_kv, size_t dd, int lk, qkv_dtype dt,
                       unsigned flags)
{
    acase c = mk(B, H, KVH, n_q, n_kv, dd);
    c.lk = c.lv = lk, c.kvlen = 3, c.dt = dt, c.flags = flags;
    prob p;
    prob_make(&p, &c);
    if (p.kvl[B - 1] == 0 || p.kvl[B - 1] == n_kv) /* the last item ends early, after some keys */
        p.kvl[B - 1] = n_kv / 2 + 1;
    char what[256];
    case_name(&c, what, sizeof what);
    const size_t kh = KVH ? KVH : H, es = dt == QKV_F32 ? 4 : 2;
    /* K and V buffers end right before element (B - 1, kh - 1, kv_len[B - 1]) */
    const size_t end_k = (B - 1) * p.d.k_stride[0] + (kh - 1) * p.d.k_stride[1] + p.kvl[B - 1] * p.d.k_stride[2];
    const size_t end_v = (B - 1) * p.d.v_stride[0] + (kh - 1) * p.d.v_stride[1] + p.kvl[B - 1] * p.d.v_stride[2];
    guarded gk, gv;
    unsigned char *k = guarded_bytes(&gk, end_k, es), *v = guarded_bytes(&gv, end_v, es);
    memcpy(k, kin(&p), end_k * es);
    memcpy(v, vin(&p), end_v * es);
    float *o = xmalloc(p.no * sizeof(float)), *l = xmalloc(p.nl * sizeof(float));
    set42(o, p.no);
    CHECK(qkv_attention(&p.d, p.q, k, v, o, l, g_pool[2], NULL, 0) == QKV_OK, "guard %s: status", what);
    prob_compare(&p, o, l, what);
    CHECK(guarded_free(&gk) && guarded_free(&gv), "guard %s: canary", what);
    free(o), free(l);
    prob_free(&p);
}

static void test_guard(void)
{
    for (int dt = QKV_F32; dt <= QKV_BF16; dt++) {
        guard_case(2, 2, 0, 3, 40, 2, L_BHND, (qkv_dtype)dt, 0);        /* decode */
        guard_case(3, 4, 2, 50, 300, 4, L_BHND, (qkv_dtype)dt, 0);      /* tiled */
        guard_case(3, 4, 1, 130, 200, 6, L_BNHD, (qkv_dtype)dt, 0);     /* tiled, interleaved */
        guard_case(2, 1, 0, 97, 100, 1, L_BHND, (qkv_dtype)dt, QKV_CAUSAL);
        guard_case(2, 2, 1, 5, 9, 3, L_BHND, (qkv_dtype)dt, QKV_CAUSAL);
        if (BIG) {
            guard_case(2, 1, 0, 1, 5000, 5, L_BHND, (qkv_dtype)dt, 0); /* split-KV */
            guard_case(1, 2, 1, 2, 3001, 3, L_BNHD, (qkv_dtype)dt, 0);
            guard_case(1, 1, 0, 20, 1500, 2, L_BHND, (qkv_dtype)dt, QKV_CAUSAL);
        }
    }
}

/* ---- F16 and BF16 K/V against the F32 call on the widened tensors ----------------------- */

static void test_f16_codec(void)
{
    /* exhaustive: every binary16 decodes and encodes back (NaN stays NaN) */
    long bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        const float f = ref_f16_decode((uint16_t)h);
        const uint16_t back = ref_f16_encode(f);
        bad += isnan(f) ? !isnan(ref_f16_decode(back)) : back != h;
    }
    CHECK(bad == 0, "f16 codec: %ld values do not round-trip", bad);
    CHECK(ref_f16_encode(1.0f + 0x1p-11f) == 0x3c00 && ref_f16_encode(1.0f + 0x3p-11f) == 0x3c02 &&
              ref_f16_encode(65519.0f) == 0x7bff && ref_f16_encode(65520.0f) == 0x7c00 &&
              ref_f16_encode(0x1p-25f) == 0 && ref_f16_encode(0x3p-26f) == 1 && ref_f16_decode(1) == 0x1p-24f,
          "f16 codec: rounding");
    CHECK(ref_bf16_encode(1.0f + 0x1p-8f) == 0x3f80 && ref_bf16_encode(1.0f + 0x3p-8f) == 0x3f82 &&
              ref_bf16_decode(0x3f81) == 1.0f + 0x1p-7f,
          "bf16 codec: rounding");
}

static void f16_case(acase c, int specials)
{
    prob p;
    prob_make(&p, &c);
    char what[256];
    case_name(&c, what, sizeof what);
    if (specials) { /* f16 subnormals and large values in K; an inf and a NaN in visible V rows */
        for (size_t x = 0; x < p.nk; x += 7) {
            const float f = x % 2 ? 3e-6f * (float)(x % 13) : (c.dt == QKV_F16 ? 600.0f : 1e30f);
            p.k16[x] = encode(c.dt, x % 14 == 0 ? f : f * 1e-6f);
            p.k[x] = decode(c.dt, p.k16[x]);
        }
        p.v16[0] = encode(c.dt, INFINITY), p.v[0] = INFINITY;
        p.v16[p.nv - 1] = encode(c.dt, NAN), p.v[p.nv - 1] = decode(c.dt, p.v16[p.nv - 1]);
    }
    float *o = xmalloc(p.no * sizeof(float)), *o32 = xmalloc(p.no * sizeof(float));
    float *l = xmalloc(p.nl * sizeof(float)), *l32 = xmalloc(p.nl * sizeof(float));
    set42(o, p.no), set42(o32, p.no);
    qkv_attention_desc d32 = p.d;
    d32.kv_dtype = QKV_F32;
    CHECK(qkv_attention(&p.d, p.q, p.k16, p.v16, o, l, NULL, NULL, 0) == QKV_OK &&
              qkv_attention(&d32, p.q, p.k, p.v, o32, l32, NULL, NULL, 0) == QKV_OK,
          "%s: status", what);
    if (!specials) {
        prob_compare(&p, o, l, what);
        prob_compare(&p, o32, l32, what);
    }
    double *s = xmalloc(c.n_kv * sizeof(double)), *r = xmalloc(2 * c.d_v * sizeof(double)), *tol = r + c.d_v;
    long bad = 0, same = 0, rows = 0;
    for (size_t b = 0; b < c.B; b++)
        for (size_t h = 0; h < c.H; h++)
            for (size_t i = 0; i < c.n_q; i++) {
                double rl, tl;
                ref_row(&p.d, p.q, p.k, p.v, b, h, i, s, r, tol, &rl, &tl);
                const float *a = o_elem(&p, o, b, h, i), *e = o_elem(&p, o32, b, h, i);
                same += same_bits(a, e, c.d_v);
                rows++;
                for (size_t cc = 0; cc < c.d_v; cc++) {
                    int ok;
                    if (isnan(e[cc]) || isinf(e[cc]))
                        ok = isnan(e[cc]) ? isnan(a[cc]) : a[cc] == e[cc]; /* inf, NaN as in F32 */
                    else
                        ok = fabs((double)a[cc] - e[cc]) <= 2.0 * tol[cc] || (isnan(tol[cc]) && isnan(a[cc]));
                    if (!ok && ++bad <= 3)
                        CHECK(0, "%s: o[%zu,%zu,%zu][%zu] = %.9g, F32 call %.9g, tol %.3g", what, b, h, i, cc, a[cc],
                              e[cc], 2.0 * tol[cc]);
                }
                const size_t li = (b * c.H + h) * c.n_q + i;
                if (!(l[li] == l32[li] || fabs((double)l[li] - l32[li]) <= 2.0 * tl || (isnan(l[li]) && isnan(l32[li]))) &&
                    ++bad <= 3)
                    CHECK(0, "%s: lse %g vs F32 %g", what, l[li], l32[li]);
            }
    CHECK(bad == 0, "%s: %ld off the F32 call", what, bad);
    printf("    %s%s: %ld of %ld rows bit-identical to the F32 call\n", what, specials ? " specials" : "", same, rows);
    free(o), free(o32), free(l), free(l32), free(s), free(r);
    prob_free(&p);
}

static void test_f16(void)
{
    test_f16_codec();
    for (int dt = QKV_F16; dt <= QKV_BF16; dt++)
        for (int sp = 0; sp < 2; sp++) {
            acase c = mk(2, 4, 2, 3, 200, 3); /* decode */
            c.dt = (qkv_dtype)dt;
            f16_case(c, sp);
            c = mk(1, 2, 0, 100, 150, 4); /* tiled, causal, interleaved and padded */
            c.dt = (qkv_dtype)dt, c.flags = QKV_CAUSAL, c.lk = L_BNHD, c.lv = L_PAD;
            f16_case(c, sp);
            c = mk(2, 2, 1, 17, 77, 2); /* odd sizes, window, kv_len, softcap, broadcast */
            c.dt = (qkv_dtype)dt, c.window = 7, c.kvlen = 3, c.softcap = 5.0f, c.lk = L_BC_B, c.lv = L_BC_H;
            f16_case(c, sp);
            if (BIG) {
                c = mk(1, 1, 0, 1, 3000, 5); /* split-KV */
                c.dt = (qkv_dtype)dt;
                f16_case(c, sp);
            }
        }
}

/* ---- bad arguments, workspace, allocation failure ------------------------------------- */

static void test_args(void)
{
    acase c = mk(2, 4, 2, 3, 5, 2);
    c.kvlen = 1;
    prob p;
    prob_make(&p, &c);
    float *o = xmalloc(p.no * sizeof(float)), *l = xmalloc(p.nl * sizeof(float));
    set42(o, p.no), set42(l, p.nl);
    const qkv_attention_desc good = p.d;
    const size_t need = qkv_attention_workspace_size(&good, 1);
    unsigned char *ws = xmalloc(need + 64);
    CHECK(need > 0, "workspace size of a valid desc is 0");
    CHECK(qkv_attention_workspace_size(&good, 0) == need, "workspace_size: 0 threads is not 1");
    enum { N_BAD = 40 };
    qkv_attention_desc bad[N_BAD];
    qkv_status want[N_BAD];
    size_t kvl_bad[MAXB];
    memcpy(kvl_bad, p.kvl, sizeof kvl_bad);
    kvl_bad[1] = c.n_kv + 1;
    int n = 0;
#define BAD(stmt, status)    \
    do {                     \
        bad[n] = good;       \
        qkv_attention_desc *d = &bad[n]; \
        stmt;                \
        want[n++] = status;  \
    } while (0)
    BAD(d->batch = 0, QKV_ERR_ARG);
    BAD(d->n_heads = 0, QKV_ERR_ARG);
    BAD(d->n_q = 0, QKV_ERR_ARG);
    BAD(d->n_kv = 0, QKV_ERR_ARG);
    BAD(d->d_k = 0, QKV_ERR_ARG);
    BAD(d->d_v = 0, QKV_ERR_ARG);
    BAD(d->n_kv_heads = 3, QKV_ERR_ARG);
    BAD(d->n_kv_heads = 8, QKV_ERR_ARG);
    BAD(d->flags = 2, QKV_ERR_ARG);
    BAD(d->flags = 0x80000001u, QKV_ERR_ARG);
    BAD(d->scale = NAN, QKV_ERR_ARG);
    BAD(d->scale = INFINITY, QKV_ERR_ARG);
    BAD(d->scale = -INFINITY, QKV_ERR_ARG);
    BAD(d->softcap = NAN, QKV_ERR_ARG);
    BAD(d->softcap = INFINITY, QKV_ERR_ARG);
    BAD(d->softcap = -1.0f, QKV_ERR_ARG);
    BAD(d->kv_len = kvl_bad, QKV_ERR_ARG);
    BAD(d->kv_dtype = (qkv_dtype)7, QKV_ERR_ARG);
    BAD(d->kv_dtype = (qkv_dtype)3, QKV_ERR_ARG);
    BAD(d->o_stride[0] = 0, QKV_ERR_ARG);
    BAD(d->o_stride[1] = 0, QKV_ERR_ARG);
    BAD(d->o_stride[2] = 0, QKV_ERR_ARG);
    BAD(d->q_stride[0] = SIZE_MAX / 2, QKV_ERR_SIZE);
    BAD(d->k_stride[1] = SIZE_MAX / 3, QKV_ERR_SIZE);
    BAD(d->v_stride[2] = (size_t)PTRDIFF_MAX / 8, QKV_ERR_SIZE); /* 4 (n_kv - 1) stride bytes overflow */
    BAD(d->o_stride[2] = (size_t)PTRDIFF_MAX / 4, QKV_ERR_SIZE);
    BAD((d->kv_dtype = QKV_F16, d->k_stride[2] = (size_t)PTRDIFF_MAX / 6), QKV_ERR_SIZE);
    BAD(d->d_v = SIZE_MAX / 2, QKV_ERR_SIZE);
    BAD(d->d_k = (size_t)PTRDIFF_MAX, QKV_ERR_SIZE);
    BAD((d->batch = SIZE_MAX / 4, d->q_stride[0] = d->k_stride[0] = d->v_stride[0] = 0, d->o_stride[0] = 1,
         d->kv_len = NULL),
        QKV_ERR_SIZE); /* inputs broadcast over the items, O's span overflows */
#undef BAD
    for (int i = 0; i < n; i++) {
        const qkv_status st = qkv_attention(&bad[i], p.q, p.k, p.v, o, l, NULL, ws, need);
        CHECK(st == want[i], "bad desc %d: status %d, want %d", i, (int)st, (int)want[i]);
        CHECK(qkv_attention(&bad[i], p.q, p.k, p.v, o, l, g_pool[2], NULL, 0) == want[i], "bad desc %d (ws NULL, tp)", i);
        CHECK(qkv_attention_workspace_size(&bad[i], 1) == 0 && qkv_attention_workspace_size(&bad[i], 4) == 0,
              "workspace_size of bad desc %d is not 0", i);
        CHECK(all42(o, p.no) && all42(l, p.nl), "bad desc %d: an output was written", i);
    }
    CHECK(qkv_attention_workspace_size(NULL, 1) == 0, "workspace_size(NULL)");
    /* B = 1, H = 1, n_q = 1: zero O strides over one element are fine */
    {
        qkv_attention_desc d1 = good;
        d1.batch = 1, d1.n_heads = 1, d1.n_kv_heads = 0, d1.n_q = 1, d1.o_stride[0] = d1.o_stride[1] = d1.o_stride[2] = 0;
        float o1[16];
        CHECK(qkv_attention(&d1, p.q, p.k, p.v, o1, NULL, NULL, NULL, 0) == QKV_OK, "zero O strides over one row");
    }
    const qkv_threadpool no_run = {2, NULL, NULL}, no_threads = {0, g_pool[2]->run, g_pool[2]->pool};
    struct {
        const qkv_attention_desc *d;
        const float *q;
        const void *k, *v;
        float *o;
        const qkv_threadpool *tp;
        const char *what;
    } a[] = {
        {NULL, p.q, p.k, p.v, o, NULL, "desc NULL"},   {&good, NULL, p.k, p.v, o, NULL, "q NULL"},
        {&good, p.q, NULL, p.v, o, NULL, "k NULL"},    {&good, p.q, p.k, NULL, o, NULL, "v NULL"},
        {&good, p.q, p.k, p.v, NULL, NULL, "o NULL"},  {&good, p.q, p.k, p.v, o, &no_run, "tp run NULL"},
        {&good, p.q, p.k, p.v, o, &no_threads, "tp n_threads 0"},
    };
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
        CHECK(qkv_attention(a[i].d, a[i].q, a[i].k, a[i].v, a[i].o, l, a[i].tp, ws, need) == QKV_ERR_ARG, "%s",
              a[i].what);
        CHECK(all42(o, p.no) && all42(l, p.nl), "%s: an output was written", a[i].what);
    }
    /* workspace: one byte short of what the call needs, per thread count; then exact */
    for (size_t t = 1; t <= 4; t++) {
        const qkv_threadpool *tp = t == 1 ? NULL : g_pool[t];
        const size_t nt = qkv_attention_workspace_size(&good, t);
        unsigned char *w = xmalloc(nt);
        CHECK(qkv_attention(&good, p.q, p.k, p.v, o, l, tp, w, nt - 1) == QKV_ERR_SIZE, "ws one byte short, %zu threads",
              t);
        CHECK(all42(o, p.no) && all42(l, p.nl), "ws short, %zu threads: an output was written", t);
        free(w);
    }
    /* and for a split-KV shape (the partials) */
    {
        acase cs = mk(1, 1, 0, 1, 3000, 0); /* d_k = d_v = 1 */
        prob ps;
        prob_make(&ps, &cs);
        float os[1], ls[1];
        for (size_t t = 1; t <= 4; t++) {
            os[0] = ls[0] = 42.0f;
            const size_t nt = qkv_attention_workspace_size(&ps.d, t);
            unsigned char *w = xmalloc(nt);
            CHECK(qkv_attention(&ps.d, ps.q, ps.k, ps.v, os, ls, g_pool[t], w, nt - 1) == QKV_ERR_SIZE &&
                      os[0] == 42.0f && ls[0] == 42.0f,
                  "split ws one byte short, %zu threads", t);
            CHECK(qkv_attention(&ps.d, ps.q, ps.k, ps.v, os, ls, g_pool[t], w, nt) == QKV_OK, "split ws exact, %zu", t);
            free(w);
        }
        prob_free(&ps);
    }
    /* allocation failure without a workspace: NOMEM, nothing written; with one: no allocation */
    if (alloc_hook_works()) {
        g_fail_alloc = 1;
        const qkv_status s1 = qkv_attention(&good, p.q, p.k, p.v, o, l, NULL, NULL, 0);
        const qkv_status s2 = qkv_attention(&good, p.q, p.k, p.v, o, l, g_pool[3], NULL, 0);
        g_fail_alloc = 0;
        CHECK(s1 == QKV_ERR_NOMEM && s2 == QKV_ERR_NOMEM, "allocation failure: %d %d", (int)s1, (int)s2);
        CHECK(all42(o, p.no) && all42(l, p.nl), "allocation failure: an output was written");
        g_fail_alloc = 1;
        const qkv_status s3 = qkv_attention(&good, p.q, p.k, p.v, o, l, NULL, ws, need);
        g_fail_alloc = 0;
        CHECK(s3 == QKV_OK, "with a workspace the call allocated (status %d)", (int)s3);
        prob_compare(&p, o, l, "args: valid call");
    } else {
        printf("  allocation hook replaced (valgrind?): NOMEM checks skipped\n");
    }
    free(ws), free(o), free(l);
    prob_free(&p);
}

int main(void)
{
    for (size_t n = 1; n <= 4; n++) {
        g_pool[n] = qkv_threadpool_create(n);
        if (!g_pool[n]) {
            fprintf(stderr, "qkv_threadpool_create(%zu) failed\n", n);
            return 2;
        }
    }
    qkv_isa isas[QKV_ISA_COUNT];
    const int n_isa = isa_list(isas);
    for (int i = 0; i < n_isa; i++) {
        qkv_isa_select(isas[i]);
        printf("  attention core on %s\n", qkv_isa_name(isas[i]));
        test_args();
        test_shapes();
        test_lse_merge();
        test_gqa();
        test_threads();
        test_hidden();
        test_guard();
        test_f16();
    }
    for (size_t n = 1; n <= 4; n++)
        qkv_threadpool_destroy(g_pool[n]);
    return test_finish("attention_core");
}
