/* Attention drivers against a double-precision reference, every ISA:
 * qkv_attention_simple, qkv_sdpa, qkv_self_attention, qkv_mha_forward.
 *
 * Tolerance per output element (o computed from float inputs, r the double reference):
 *   |o - r| <= (4 E_s + (2 n_kv + 64) FLT_EPSILON) max_j |v_jc| + 1e-30
 * E_s = 2 scale d_k FLT_EPSILON max_j sum_p |q_ip k_jp| bounds the error of one float score
 * (the GEMM bound), which perturbs each weight by a factor exp(+-2 E_s); the (2 n_kv + 64)
 * FLT_EPSILON term covers exp (1 ULP), the float sums of P and of P V over n_kv keys and
 * the final division. The projections of self-attention and MHA add the GEMM bound of
 * their inputs, checked with the same formula on the float Q, K, V the reference builds
 * (the reference projects in double, so their rounding enters as 8 d_in FLT_EPSILON
 * relative). Rows with no visible key must be exactly 0.
 * Covered: the 6-token worked example (README.md, "Worked example"), sizes 1, primes and
 * one past each tile (96 queries/keys, 4/5 for the decode path, 128-key decode tiles),
 * d_k != d_v, causal with n_q <, =, > n_kv, logits near 1e4, default and explicit scale,
 * guard pages before and after every output, both MHA weight layouts, biases on and off,
 * cross-attention, workspace exact / one byte short / NULL / unaligned, every bad
 * argument with untouched outputs, and peak RSS of a 16384 x 16384 causal call (best ISA).
 * Extremes: logits of -FLT_MAX in the first KV tile on workspaces pre-filled with 0x00,
 * 0xff, 0x3f (bit-identical results; MHA with a dirty caller workspace too); +inf and NaN
 * in each K and V row hidden by the causal mask (no influence on queries that cannot see
 * it); logits whose q k overflows float but scale q k does not, and logits that overflow;
 * a failing allocation in every driver that allocates (QKV_ERR_NOMEM, outputs untouched). */
#include "common.h"

#include "alloc_hook.h"

#include <sys/resource.h>

#ifdef QKV_TEST_EMULATED
#define BIG 0 /* qemu: the small sizes only */
#else
#define BIG 1
#endif

/* ---- double reference ------------------------------------------------------------- */

typedef struct view {
    const float *q, *k, *v;
    size_t n_q, n_kv, d_k, d_v, ldq, ldk, ldv;
    double scale;
    int causal;
} view;

/* r[i][c] (n_q x d_v, leading d_v) and, per row, the tolerance factor of the header */
static void ref_sdpa(const view *a, double *r, double *tol)
{
    double *s = malloc(a->n_kv * sizeof(double));
    for (size_t i = 0; i < a->n_q; i++) {
        size_t vis = a->n_kv;
        if (a->causal)
            vis = i + 1 + a->n_kv <= a->n_q ? 0 : (i + 1 + a->n_kv - a->n_q < a->n_kv ? i + 1 + a->n_kv - a->n_q : a->n_kv);
        double mx = -INFINITY, es = 0.0;
        for (size_t j = 0; j < vis; j++) {
            double ad;
            s[j] = a->scale * ref_dot(a->q + i * a->ldq, 1, a->k + j * a->ldk, 1, a->d_k, &ad);
            mx = s[j] > mx ? s[j] : mx;
            es = ad > es ? ad : es;
        }
        es = gemm_tol(a->d_k, a->scale, es, 0.0, 0.0); /* the error of one float score */
        double sum = 0.0;
        for (size_t j = 0; j < vis; j++)
            sum += (s[j] = exp(s[j] - mx));
        for (size_t c = 0; c < a->d_v; c++) {
            double acc = 0.0, vmax = 0.0;
            for (size_t j = 0; j < vis; j++) {
                acc += s[j] * a->v[j * a->ldv + c];
                vmax = fabs(a->v[j * a->ldv + c]) > vmax ? fabs(a->v[j * a->ldv + c]) : vmax;
            }
            r[i * a->d_v + c] = vis ? acc / sum : 0.0;
            tol[i * a->d_v + c] = vis ? sdpa_tol(es, a->n_kv, vmax) : 0.0;
        }
    }
    free(s);
}

/* counts elements of o (rows x cols, leading ldo) outside r +- tol; empty rows exactly 0 */
static long compare(const float *o, size_t ldo, const double *r, const double *tol, size_t rows, size_t cols,
                    const char *what)
{
    long bad = 0;
    for (size_t i = 0; i < rows; i++)
        for (size_t c = 0; c < cols; c++) {
            const double e = fabs((double)o[i * ldo + c] - r[i * cols + c]);
            const int ok = tol[i * cols + c] == 0.0 ? o[i * ldo + c] == 0.0f : e <= tol[i * cols + c];
            if (!ok && ++bad <= 3)
                CHECK(0, "%s: [%zu][%zu] = %.9g, ref %.9g, tol %.3g", what, i, c, o[i * ldo + c], r[i * cols + c],
                      tol[i * cols + c]);
        }
    CHECK(bad == 0, "%s: %ld elements off", what, bad);
    return bad;
}

static void fill(float *p, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        p[i] = rng_uniform(lo, hi);
}

static float *alloc_f(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p)
        exit(2);
    return p;
}

/* ---- the worked example: 6 tokens, 3-dimensional embeddings ------------------------- */

static const float kTokens[6][3] = {
    {0.43f, 0.15f, 0.89f}, /* Your    */
    {0.55f, 0.87f, 0.66f}, /* journey */
    {0.57f, 0.85f, 0.64f}, /* starts  */
    {0.22f, 0.58f, 0.33f}, /* with    */
    {0.77f, 0.25f, 0.10f}, /* one     */
    {0.05f, 0.80f, 0.55f}, /* step    */
};

static void test_example(int verbose)
{
    /* by hand: scores w_ij = x_i . x_j, softmax along each row, z_i = sum_j a_ij x_j */
    double a[6][6], z[6][3];
    for (int i = 0; i < 6; i++) {
        double sum = 0.0;
        for (int j = 0; j < 6; j++) {
            a[i][j] = exp((double)kTokens[i][0] * kTokens[j][0] + (double)kTokens[i][1] * kTokens[j][1] +
                          (double)kTokens[i][2] * kTokens[j][2]);
            sum += a[i][j];
        }
        for (int j = 0; j < 6; j++)
            a[i][j] /= sum;
        for (int c = 0; c < 3; c++) {
            z[i][c] = 0.0;
            for (int j = 0; j < 6; j++)
                z[i][c] += a[i][j] * kTokens[j][c];
        }
    }
    float zf[18], wf[36];
    CHECK(qkv_attention_simple(&kTokens[0][0], 6, 3, zf, wf) == QKV_OK, "example status");
    double worst = 0.0;
    for (int i = 0; i < 6; i++) {
        for (int j = 0; j < 6; j++)
            worst = fmax(worst, fabs(wf[i * 6 + j] - a[i][j]));
        for (int c = 0; c < 3; c++)
            worst = fmax(worst, fabs(zf[i * 3 + c] - z[i][c]));
    }
    CHECK(worst <= 1e-6, "example: max error %.3g", worst);
    /* values printed in README.md, "Worked example" */
    CHECK(fabs(a[1][1] - 0.2379) < 5e-5 && fabs(z[1][0] - 0.4419) < 5e-5 && fabs(z[1][1] - 0.6515) < 5e-5 &&
              fabs(z[1][2] - 0.5683) < 5e-5,
          "example: hand values changed");
    if (verbose) {
        printf("  example: weights of \"journey\":");
        for (int j = 0; j < 6; j++)
            printf(" %.4f", a[1][j]);
        printf("\n  example: z(journey) = [%.4f %.4f %.4f], libqkv [%.4f %.4f %.4f], max error %.2g\n", z[1][0],
               z[1][1], z[1][2], zf[3], zf[4], zf[5], worst);
    }
}

/* ---- qkv_sdpa ---------------------------------------------------------------------- */

/* one call with outputs on guard pages (after, then before); inputs uniform in [-amp, amp] */
static void sdpa_case(size_t n_q, size_t n_kv, size_t d_k, size_t d_v, float scale, unsigned flags, float amp)
{
    float *q = alloc_f(n_q * d_k), *k = alloc_f(n_kv * d_k), *v = alloc_f(n_kv * d_v);
    fill(q, n_q * d_k, -amp, amp);
    fill(k, n_kv * d_k, -amp, amp);
    fill(v, n_kv * d_v, -1.0f, 1.0f);
    double *r = malloc(n_q * d_v * sizeof(double)), *tol = malloc(n_q * d_v * sizeof(double));
    const view a = {q, k, v, n_q, n_kv, d_k, d_v, d_k, d_k, d_v,
                    scale > 0.0f ? (double)scale : (double)(float)(1.0 / sqrt((double)d_k)), (flags & QKV_CAUSAL) != 0};
    ref_sdpa(&a, r, tol);
    char what[128];
    snprintf(what, sizeof what, "sdpa %zux%zu d %zu/%zu s %g f %u amp %g", n_q, n_kv, d_k, d_v, scale, flags, amp);
    for (int where = GUARD_AFTER; where <= GUARD_BEFORE; where++) {
        guarded go;
        float *o = guarded_alloc(&go, n_q * d_v, where);
        CHECK(qkv_sdpa(q, k, v, o, n_q, n_kv, d_k, d_v, scale, flags) == QKV_OK, "%s: status", what);
        compare(o, d_v, r, tol, n_q, d_v, what);
        CHECK(guarded_free(&go), "%s: canary", what);
    }
    free(q), free(k), free(v), free(r), free(tol);
}

static void test_sdpa(void)
{
    static const size_t nq[] = {1, 2, 3, 4, 5, 7, 13, 95, 96, 97, 193};
    static const size_t nkv[] = {1, 2, 5, 31, 96, 97, 129, 200};
    static const size_t dims[][2] = {{1, 1}, {3, 5}, {17, 16}, {64, 64}, {65, 33}, {128, 128}};
    for (size_t a = 0; a < sizeof nq / sizeof nq[0]; a++)
        for (size_t b = 0; b < sizeof nkv / sizeof nkv[0]; b++) {
            const size_t d = (a + b) % 6; /* a different head shape for each pair */
            if (!BIG && nq[a] * nkv[b] * dims[d][0] > 200000)
                continue;
            sdpa_case(nq[a], nkv[b], dims[d][0], dims[d][1], 0.0f, 0, 1.0f);
            sdpa_case(nq[a], nkv[b], dims[d][0], dims[d][1], 0.0f, QKV_CAUSAL, 1.0f);
        }
    /* explicit scale, logits near 1e4 (one-hot rows; rows of near-equal large logits) */
    sdpa_case(33, 70, 16, 8, 0.5f, 0, 1.0f);
    sdpa_case(100, 100, 8, 8, 1.0f, 0, 35.0f);
    sdpa_case(100, 250, 64, 64, 1.0f, QKV_CAUSAL, 12.0f);
    sdpa_case(3, 300, 64, 64, 1.0f, QKV_CAUSAL, 12.0f);
    /* causal with n_q > n_kv: the first n_q - n_kv rows see nothing and must be 0 */
    sdpa_case(150, 40, 32, 24, 0.0f, QKV_CAUSAL, 1.0f);
    sdpa_case(4, 2, 8, 8, 0.0f, QKV_CAUSAL, 1.0f);
    /* one past each tile, bigger */
    if (BIG) {
        sdpa_case(289, 385, 64, 64, 0.0f, 0, 1.0f);
        sdpa_case(289, 385, 64, 64, 0.0f, QKV_CAUSAL, 1.0f);
        sdpa_case(1, 1025, 128, 64, 0.0f, 0, 1.0f);
    }
    /* n_q > n_kv causal: exact zeros, and the later rows still normalised */
    {
        float q[10 * 4], k[3 * 4], v[3 * 2], o[10 * 2];
        fill(q, 40, -1, 1), fill(k, 12, -1, 1), fill(v, 6, -1, 1);
        CHECK(qkv_sdpa(q, k, v, o, 10, 3, 4, 2, 0.0f, QKV_CAUSAL) == QKV_OK, "zero rows status");
        int zeros = 1;
        for (int i = 0; i < 7 * 2; i++)
            zeros &= o[i] == 0.0f && !signbit(o[i]);
        CHECK(zeros, "rows without visible keys are not +0");
        /* row 7 sees key 0 only: o = v[0] */
        CHECK(o[14] == v[0] && o[15] == v[1], "row 7 = v[0]: %g %g vs %g %g", o[14], o[15], v[0], v[1]);
    }
    /* NaN in a key reaches every row that sees it, and only those */
    {
        float q[3 * 2] = {1, 0, 0, 1, 1, 1}, k[3 * 2] = {1, 0, NAN, 0, 0, 1}, v[3 * 2] = {1, 2, 3, 4, 5, 6}, o[6];
        CHECK(qkv_sdpa(q, k, v, o, 3, 3, 2, 2, 1.0f, QKV_CAUSAL) == QKV_OK, "NaN status");
        CHECK(o[0] == 1.0f && o[1] == 2.0f && isnan(o[2]) && isnan(o[5]), "NaN rows: %g %g %g %g", o[0], o[1], o[2],
              o[5]);
    }
}

/* ---- extreme inputs: masked keys, -FLT_MAX logits, overflow, dirty memory ------------- */

static int same_bits(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof(float)) == 0;
}

/* Every score of the first KV tile at -FLT_MAX (a finite logit, the mask value of many
   frameworks): the result must not depend on what the workspace held. The call runs on
   workspaces pre-filled with 0x00, 0xff and 0x3f bytes (through the allocation hook) and
   must agree bit for bit, and with the reference. Both paths, one and several KV tiles. */
static void test_neg_flt_max(void)
{
    /* the reproducer: a call that leaves 1e6 in the freed workspace, then the -FLT_MAX row */
    {
        float q = 1.0f, k[3] = {1, 1, 1}, v[3] = {1e6f, 1e6f, 1e6f}, o = 0.0f;
        CHECK(qkv_sdpa(&q, k, v, &o, 1, 3, 1, 1, 1.0f, 0) == QKV_OK, "-FLT_MAX: first call");
        q = -FLT_MAX, v[0] = v[1] = v[2] = 1.0f;
        CHECK(qkv_sdpa(&q, k, v, &o, 1, 3, 1, 1, 1.0f, 0) == QKV_OK && o == 1.0f, "-FLT_MAX logits: o = %.9g, want 1",
              o);
    }
    static const size_t shapes[][2] = {{1, 3}, {2, 130}, {4, 300}, {5, 3}, {7, 200}, {100, 97}};
    static const int fills[3] = {0x00, 0xff, 0x3f};
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        const size_t n_q = shapes[t][0], n_kv = shapes[t][1], d_k = 2, d_v = 3;
        float *q = alloc_f(n_q * d_k), *k = alloc_f(n_kv * d_k), *v = alloc_f(n_kv * d_v);
        for (size_t i = 0; i < n_q * d_k; i++)
            q[i] = i % d_k ? 0.0f : -FLT_MAX;
        for (size_t j = 0; j < n_kv; j++) { /* first tile: score -FLT_MAX; later keys: score 0 */
            k[j * d_k] = j < 96 ? 1.0f : 0.0f;
            k[j * d_k + 1] = rng_uniform(-1, 1);
        }
        fill(v, n_kv * d_v, -1, 1);
        double *r = malloc(n_q * d_v * sizeof(double)), *tol = malloc(n_q * d_v * sizeof(double));
        const view a = {q, k, v, n_q, n_kv, d_k, d_v, d_k, d_k, d_v, 1.0, 0};
        ref_sdpa(&a, r, tol);
        for (unsigned flags = 0; flags <= QKV_CAUSAL; flags++) {
            float *o[3];
            for (int f = 0; f < 3; f++) {
                o[f] = alloc_f(n_q * d_v);
                g_alloc_fill = fills[f];
                CHECK(qkv_sdpa(q, k, v, o[f], n_q, n_kv, d_k, d_v, 1.0f, flags) == QKV_OK, "-FLT_MAX status");
                g_alloc_fill = -1;
            }
            CHECK(same_bits(o[0], o[1], n_q * d_v) && same_bits(o[0], o[2], n_q * d_v),
                  "-FLT_MAX %zux%zu flags %u: result depends on the workspace bytes", n_q, n_kv, flags);
            if (!flags) {
                char what[64];
                snprintf(what, sizeof what, "-FLT_MAX logits %zux%zu", n_q, n_kv);
                compare(o[0], d_v, r, tol, n_q, d_v, what);
            }
            for (int f = 0; f < 3; f++)
                free(o[f]);
        }
        free(q), free(k), free(v), free(r), free(tol);
    }
    /* through MHA with a dirty caller workspace: E = h = 1, Wq = {-FLT_MAX}, the rest 1 */
    {
        const float wq = -FLT_MAX, one = 1.0f, x[3] = {1, 1, 1};
        const qkv_mha m = {1, 1, &wq, &one, &one, &one, NULL, NULL, NULL, NULL, 0, 0};
        for (size_t n_q = 1; n_q <= 3; n_q += 2) {
            const size_t need = qkv_mha_workspace_size(&m, n_q, 3);
            unsigned char *ws = malloc(need);
            float out[3][3];
            for (int f = 0; f < 3; f++) {
                memset(ws, fills[f], need);
                CHECK(qkv_mha_forward(&m, 1, x, n_q, x, 3, 0, out[f], ws, need, NULL) == QKV_OK, "mha -FLT_MAX status");
            }
            int ok = 1;
            for (int f = 0; f < 3; f++)
                for (size_t i = 0; i < n_q; i++)
                    ok &= out[f][i] == 1.0f;
            CHECK(ok, "mha -FLT_MAX n_q %zu: out %g %g %g (zeroed, 0xff, 0x3f ws), want 1", n_q, out[0][0], out[1][0],
                  out[2][0]);
            free(ws);
        }
    }
}

/* A key hidden by the causal mask has no influence: +inf or NaN in every element of one K or
   V row in turn leaves the outputs of the queries that cannot see it bit-identical, and
   the rows without any visible key exact +0. Both paths, tile boundaries, n_q > n_kv. */
static void test_hidden_keys(void)
{
    static const size_t shapes[][4] = {
        {10, 3, 4, 2}, {12, 2, 65, 3}, {12, 2, 17, 5}, {5, 96, 64, 64}, {3, 7, 5, 4}, {4, 2, 8, 8},
        {4, 130, 16, 8}, {97, 100, 8, 33}, {100, 500, 16, 8},
    };
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        const size_t n_q = shapes[t][0], n_kv = shapes[t][1], d_k = shapes[t][2], d_v = shapes[t][3];
        if (!BIG && n_kv > 200)
            continue;
        float *q = alloc_f(n_q * d_k), *k = alloc_f(n_kv * d_k), *v = alloc_f(n_kv * d_v);
        float *o0 = alloc_f(n_q * d_v), *o = alloc_f(n_q * d_v);
        fill(q, n_q * d_k, -1, 1), fill(k, n_kv * d_k, -1, 1), fill(v, n_kv * d_v, -1, 1);
        CHECK(qkv_sdpa(q, k, v, o0, n_q, n_kv, d_k, d_v, 0.0f, QKV_CAUSAL) == QKV_OK, "hidden: status");
        long bad = 0, zero_bad = 0;
        for (size_t j = 0; j < n_kv; j++) {
            /* long KV: the rows around tile edges and every 13th */
            if (n_kv > 100 && j % 13 && j % 96 > 1 && j % 96 < 95 && j + 2 < n_kv)
                continue;
            for (int which = 0; which < 4; which++) {
                float *row = which < 2 ? k + j * d_k : v + j * d_v;
                const size_t len = which < 2 ? d_k : d_v;
                float saved[128];
                memcpy(saved, row, len * sizeof(float));
                for (size_t c = 0; c < len; c++)
                    row[c] = which % 2 ? NAN : INFINITY;
                CHECK(qkv_sdpa(q, k, v, o, n_q, n_kv, d_k, d_v, 0.0f, QKV_CAUSAL) == QKV_OK, "hidden: status");
                memcpy(row, saved, len * sizeof(float));
                for (size_t i = 0; i < n_q; i++) {
                    if (j + n_q <= i + n_kv) /* query i sees key j */
                        continue;
                    if (!same_bits(o + i * d_v, o0 + i * d_v, d_v) && ++bad <= 3)
                        CHECK(0, "hidden %s row %zu = %s changed query %zu (%zux%zu d %zu/%zu): %g vs %g",
                              which < 2 ? "K" : "V", j, which % 2 ? "NaN" : "inf", i, n_q, n_kv, d_k, d_v, o[i * d_v],
                              o0[i * d_v]);
                    if (i + n_kv < n_q)
                        for (size_t c = 0; c < d_v; c++)
                            zero_bad += !(o[i * d_v + c] == 0.0f && !signbit(o[i * d_v + c]));
                }
            }
        }
        CHECK(bad == 0, "hidden keys %zux%zu d %zu/%zu: %ld rows changed", n_q, n_kv, d_k, d_v, bad);
        CHECK(zero_bad == 0, "hidden keys %zux%zu: %ld elements of rows without keys not +0", n_q, n_kv, zero_bad);
        free(q), free(k), free(v), free(o0), free(o);
    }
}

/* The scale is applied to q before the dot products: logits +-1e30 from q k = +-1e40 (which
   overflows float) are fine; a logit that itself overflows float makes its row NaN, one
   that overflows to -inf weighs 0. Both paths. */
static void test_overflow(void)
{
    for (size_t n_q = 1; n_q <= 5; n_q += 4) {
        float q[5] = {1e20f, 1e20f, 1e20f, 1e20f, 1e20f}, o[5];
        const float k[2] = {1e20f, -1e20f}, v[2] = {1.0f, 2.0f};
        int ok = qkv_sdpa(q, k, v, o, n_q, 2, 1, 1, 1e-10f, 0) == QKV_OK;
        for (size_t i = 0; i < n_q; i++)
            ok &= o[i] == 1.0f;
        CHECK(ok, "logits +-1e30 from q k = +-1e40, n_q %zu: o = %g, want 1", n_q, o[0]);
        /* logit 1e40: +inf, the row is NaN */
        const float k2[2] = {1e20f, 1.0f};
        ok = qkv_sdpa(q, k2, v, o, n_q, 2, 1, 1, 1.0f, 0) == QKV_OK;
        for (size_t i = 0; i < n_q; i++)
            ok &= isnan(o[i]);
        CHECK(ok, "logit 1e40 (overflows float), n_q %zu: o = %g, want NaN", n_q, o[0]);
        /* logit -1e40: -inf, weight 0 */
        const float k3[2] = {-1e20f, 1.0f};
        ok = qkv_sdpa(q, k3, v, o, n_q, 2, 1, 1, 1.0f, 0) == QKV_OK;
        for (size_t i = 0; i < n_q; i++)
            ok &= o[i] == 2.0f;
        CHECK(ok, "logit -1e40 (overflows to -inf), n_q %zu: o = %g, want 2", n_q, o[0]);
    }
}

/* an allocation that fails: QKV_ERR_NOMEM, outputs untouched */
static void test_nomem(void)
{
    if (!alloc_hook_works()) {
        printf("  allocation hook replaced (valgrind?): NOMEM checks skipped\n");
        return;
    }
    float x[6 * 4], w[4 * 4], z[6 * 4], wts[36];
    fill(x, 24, -1, 1), fill(w, 16, -1, 1);
    for (int i = 0; i < 24; i++)
        z[i] = 42.0f;
    for (int i = 0; i < 36; i++)
        wts[i] = 42.0f;
    const qkv_mha m = {4, 2, w, w, w, w, NULL, NULL, NULL, NULL, 0, 0};
    g_fail_alloc = 1;
    const qkv_status s1 = qkv_sdpa(x, x, x, z, 6, 6, 4, 4, 0.0f, 0);
    const qkv_status s2 = qkv_sdpa(x, x, x, z, 2, 6, 4, 4, 0.0f, QKV_CAUSAL);
    const qkv_status s3 = qkv_attention_simple(x, 6, 4, z, wts);
    const qkv_status s4 = qkv_self_attention(x, 6, 4, w, w, w, 4, 0, z);
    const qkv_status s5 = qkv_mha_forward(&m, 1, x, 6, NULL, 0, 0, z, NULL, 0, NULL);
    g_fail_alloc = 0;
    CHECK(s1 == QKV_ERR_NOMEM && s2 == QKV_ERR_NOMEM, "sdpa NOMEM: %d %d", (int)s1, (int)s2);
    CHECK(s3 == QKV_ERR_NOMEM, "attention_simple NOMEM: %d", (int)s3);
    CHECK(s4 == QKV_ERR_NOMEM, "self_attention NOMEM: %d", (int)s4);
    CHECK(s5 == QKV_ERR_NOMEM, "mha_forward(ws NULL) NOMEM: %d", (int)s5);
    int untouched = 1;
    for (int i = 0; i < 24; i++)
        untouched &= z[i] == 42.0f;
    for (int i = 0; i < 36; i++)
        untouched &= wts[i] == 42.0f;
    CHECK(untouched, "an output was written when the allocation failed");
}

/* bad arguments: status, and o untouched */
static void test_sdpa_args(void)
{
    float q[8] = {0}, k[8] = {0}, v[8] = {0}, o[8];
    for (int i = 0; i < 8; i++)
        o[i] = 42.0f;
    const size_t huge = SIZE_MAX / 2;
    struct {
        const float *q, *k, *v;
        float *o;
        size_t nq, nkv, dk, dv;
        float s;
        unsigned f;
        qkv_status want;
    } c[] = {
        {NULL, k, v, o, 2, 2, 2, 2, 0, 0, QKV_ERR_ARG},  {q, NULL, v, o, 2, 2, 2, 2, 0, 0, QKV_ERR_ARG},
        {q, k, NULL, o, 2, 2, 2, 2, 0, 0, QKV_ERR_ARG},  {q, k, v, NULL, 2, 2, 2, 2, 0, 0, QKV_ERR_ARG},
        {q, k, v, o, 0, 2, 2, 2, 0, 0, QKV_ERR_ARG},     {q, k, v, o, 2, 0, 2, 2, 0, 0, QKV_ERR_ARG},
        {q, k, v, o, 2, 2, 0, 2, 0, 0, QKV_ERR_ARG},     {q, k, v, o, 2, 2, 2, 0, 0, 0, QKV_ERR_ARG},
        {q, k, v, o, 2, 2, 2, 2, 0, 2, QKV_ERR_ARG},     {q, k, v, o, 2, 2, 2, 2, 0, 0x80000001u, QKV_ERR_ARG},
        {q, k, v, o, 2, 2, 2, 2, NAN, 0, QKV_ERR_ARG},   {q, k, v, o, 2, 2, 2, 2, INFINITY, 0, QKV_ERR_ARG},
        {q, k, v, o, huge, 2, 2, 2, 0, 0, QKV_ERR_SIZE}, {q, k, v, o, 2, huge, 2, 2, 0, 0, QKV_ERR_SIZE},
        {q, k, v, o, 2, 2, huge, 2, 0, 0, QKV_ERR_SIZE}, {q, k, v, o, 2, 2, 2, huge, 0, 0, QKV_ERR_SIZE},
        {q, k, v, o, 3, 2, 2, SIZE_MAX / 8, 0, 0, QKV_ERR_SIZE},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        CHECK(qkv_sdpa(c[i].q, c[i].k, c[i].v, c[i].o, c[i].nq, c[i].nkv, c[i].dk, c[i].dv, c[i].s, c[i].f) ==
                  c[i].want,
              "sdpa bad argument case %zu", i);
    float x[6] = {0}, z[6], w[9], wq[4] = {0};
    for (int i = 0; i < 6; i++)
        z[i] = 42.0f;
    for (int i = 0; i < 9; i++)
        w[i] = 42.0f;
    CHECK(qkv_attention_simple(NULL, 3, 2, z, w) == QKV_ERR_ARG, "simple x NULL");
    CHECK(qkv_attention_simple(x, 3, 2, NULL, w) == QKV_ERR_ARG, "simple z NULL");
    CHECK(qkv_attention_simple(x, 0, 2, z, w) == QKV_ERR_ARG, "simple n 0");
    CHECK(qkv_attention_simple(x, 3, 0, z, w) == QKV_ERR_ARG, "simple d 0");
    CHECK(qkv_attention_simple(x, huge, 2, z, w) == QKV_ERR_SIZE, "simple n huge");
    CHECK(qkv_attention_simple(x, (size_t)1 << 40, 1, z, w) == QKV_ERR_SIZE, "simple n x n overflows");
    CHECK(qkv_self_attention(NULL, 3, 2, wq, wq, wq, 2, 0, z) == QKV_ERR_ARG, "self x NULL");
    CHECK(qkv_self_attention(x, 3, 2, NULL, wq, wq, 2, 0, z) == QKV_ERR_ARG, "self wq NULL");
    CHECK(qkv_self_attention(x, 3, 2, wq, NULL, wq, 2, 0, z) == QKV_ERR_ARG, "self wk NULL");
    CHECK(qkv_self_attention(x, 3, 2, wq, wq, NULL, 2, 0, z) == QKV_ERR_ARG, "self wv NULL");
    CHECK(qkv_self_attention(x, 3, 2, wq, wq, wq, 2, 0, NULL) == QKV_ERR_ARG, "self z NULL");
    CHECK(qkv_self_attention(x, 0, 2, wq, wq, wq, 2, 0, z) == QKV_ERR_ARG, "self n 0");
    CHECK(qkv_self_attention(x, 3, 0, wq, wq, wq, 2, 0, z) == QKV_ERR_ARG, "self d_in 0");
    CHECK(qkv_self_attention(x, 3, 2, wq, wq, wq, 0, 0, z) == QKV_ERR_ARG, "self d_out 0");
    CHECK(qkv_self_attention(x, 3, 2, wq, wq, wq, 2, 4, z) == QKV_ERR_ARG, "self flags");
    CHECK(qkv_self_attention(x, huge, 2, wq, wq, wq, 2, 0, z) == QKV_ERR_SIZE, "self n huge");
    CHECK(qkv_self_attention(x, 3, 2, wq, wq, wq, huge, 0, z) == QKV_ERR_SIZE, "self d_out huge");
    int untouched = 1;
    for (int i = 0; i < 8; i++)
        untouched &= o[i] == 42.0f;
    for (int i = 0; i < 6; i++)
        untouched &= z[i] == 42.0f;
    for (int i = 0; i < 9; i++)
        untouched &= w[i] == 42.0f;
    CHECK(untouched, "an output was written on error");
}

/* qkv_attention_simple with weights against the reference (weights: softmax tolerance) */
static void simple_case(size_t n, size_t d)
{
    float *x = alloc_f(n * d);
    fill(x, n * d, -1.0f, 1.0f);
    double *r = malloc(n * d * sizeof(double)), *tol = malloc(n * d * sizeof(double));
    const view a = {x, x, x, n, n, d, d, d, d, d, 1.0, 0};
    ref_sdpa(&a, r, tol);
    guarded gz, gw;
    float *z = guarded_alloc(&gz, n * d, GUARD_AFTER), *w = guarded_alloc(&gw, n * n, GUARD_BEFORE);
    CHECK(qkv_attention_simple(x, n, d, z, w) == QKV_OK, "simple status");
    compare(z, d, r, tol, n, d, "simple z");
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
        double s[1024], mx = -INFINITY, sum = 0.0;
        for (size_t j = 0; j < n; j++) {
            s[j] = 0.0;
            for (size_t p = 0; p < d; p++)
                s[j] += (double)x[i * d + p] * x[j * d + p];
            mx = s[j] > mx ? s[j] : mx;
        }
        for (size_t j = 0; j < n; j++)
            sum += (s[j] = exp(s[j] - mx));
        for (size_t j = 0; j < n; j++)
            bad += fabs(w[i * n + j] - s[j] / sum) > (s[j] / sum) * (32.0 + 4.0 * d) * FLT_EPSILON + 1e-37;
    }
    CHECK(bad == 0, "simple weights n=%zu d=%zu: %ld off", n, d, bad);
    /* weights NULL: same z */
    float *z2 = alloc_f(n * d);
    CHECK(qkv_attention_simple(x, n, d, z2, NULL) == QKV_OK && memcmp(z, z2, n * d * sizeof(float)) == 0,
          "simple: z differs without weights");
    CHECK(guarded_free(&gz) && guarded_free(&gw), "simple canary");
    free(x), free(r), free(tol), free(z2);
}

/* ---- projections: self-attention and MHA ------------------------------------------- */

/* y (rows x n_out) = x W + b in double; W (n_in x n_out), or (n_out x n_in) if torch */
static void ref_project(const float *x, size_t rows, size_t n_in, const float *w, const float *b, size_t n_out,
                        int torch, float *y)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < n_out; j++) {
            double s = b ? b[j] : 0.0;
            for (size_t p = 0; p < n_in; p++)
                s += (double)x[i * n_in + p] * (torch ? w[j * n_in + p] : w[p * n_out + j]);
            y[i * n_out + j] = (float)s;
        }
}

static void self_case(size_t n, size_t d_in, size_t d_out, unsigned flags)
{
    float *x = alloc_f(n * d_in), *w[3], *p[3], *z = alloc_f(n * d_out);
    fill(x, n * d_in, -1.0f, 1.0f);
    for (int i = 0; i < 3; i++) {
        w[i] = alloc_f(d_in * d_out);
        p[i] = alloc_f(n * d_out);
        fill(w[i], d_in * d_out, -0.5f, 0.5f);
        ref_project(x, n, d_in, w[i], NULL, d_out, 0, p[i]);
    }
    double *r = malloc(n * d_out * sizeof(double)), *tol = malloc(n * d_out * sizeof(double));
    const view a = {p[0], p[1], p[2], n, n, d_out, d_out, d_out, d_out, d_out, (float)(1.0 / sqrt((double)d_out)),
                    (flags & QKV_CAUSAL) != 0};
    ref_sdpa(&a, r, tol);
    for (size_t i = 0; i < n * d_out; i++)
        tol[i] = tol[i] * 2.0 + 16.0 * d_in * FLT_EPSILON; /* + the projections (|v| <= d_in / 2) */
    CHECK(qkv_self_attention(x, n, d_in, w[0], w[1], w[2], d_out, flags, z) == QKV_OK, "self status");
    char what[96];
    snprintf(what, sizeof what, "self-attention n %zu d %zu->%zu f %u", n, d_in, d_out, flags);
    compare(z, d_out, r, tol, n, d_out, what);
    for (int i = 0; i < 3; i++)
        free(w[i]), free(p[i]);
    free(x), free(z), free(r), free(tol);
}

typedef struct mha_fixture {
    qkv_mha m;
    float *w[4], *b[4];
} mha_fixture;

static void mha_make(mha_fixture *f, size_t E, size_t h, int torch, int bias)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < 4; i++) {
        f->w[i] = alloc_f(E * E);
        fill(f->w[i], E * E, -1.0f / sqrtf((float)E), 1.0f / sqrtf((float)E));
        f->b[i] = bias ? alloc_f(E) : NULL;
        if (bias)
            fill(f->b[i], E, -0.2f, 0.2f);
    }
    f->m = (qkv_mha){E, h, f->w[0], f->w[1], f->w[2], f->w[3], f->b[0], f->b[1], f->b[2], f->b[3], torch, 0};
}

static void mha_free(mha_fixture *f)
{
    for (int i = 0; i < 4; i++)
        free(f->w[i]), free(f->b[i]);
}

/* out (batch x n_q x E) in double-then-float, with a per-element tolerance */
static void ref_mha(const qkv_mha *m, size_t batch, const float *x_q, size_t n_q, const float *x_kv, size_t n_kv,
                    unsigned flags, double *r, double *tol)
{
    const size_t E = m->d_model, dh = E / m->n_heads;
    float *q = alloc_f(n_q * E), *k = alloc_f(n_kv * E), *v = alloc_f(n_kv * E), *cat = alloc_f(n_q * E);
    double *hr = malloc(n_q * dh * sizeof(double)), *ht = malloc(n_q * dh * sizeof(double));
    for (size_t b = 0; b < batch; b++) {
        const float *xq = x_q + b * n_q * E, *xkv = x_kv ? x_kv + b * n_kv * E : xq;
        ref_project(xq, n_q, E, m->wq, m->bq, E, m->torch_layout, q);
        ref_project(xkv, n_kv, E, m->wk, m->bk, E, m->torch_layout, k);
        ref_project(xkv, n_kv, E, m->wv, m->bv, E, m->torch_layout, v);
        double cat_tol = 0.0;
        for (size_t h = 0; h < m->n_heads; h++) {
            const view a = {q + h * dh, k + h * dh, v + h * dh, n_q, n_kv, dh, dh, E, E, E,
                            (float)(1.0 / sqrt((double)dh)), (flags & QKV_CAUSAL) != 0};
            ref_sdpa(&a, hr, ht);
            for (size_t i = 0; i < n_q; i++)
                for (size_t c = 0; c < dh; c++) {
                    cat[i * E + h * dh + c] = (float)hr[i * dh + c];
                    /* not fmax(): aarch64-linux-gnu-gcc 12.2 -O3 dies vectorising that fmax
                       reduction (internal compiler error in vect_transform_reduction,
                       tree-vect-loop.cc:7457); same value, the tolerances are never NaN */
                    cat_tol = ht[i * dh + c] > cat_tol ? ht[i * dh + c] : cat_tol;
                }
        }
        /* out = cat Wo + bo, and the head errors through Wo (|w| <= 1/sqrt(E)) */
        for (size_t i = 0; i < n_q; i++)
            for (size_t j = 0; j < E; j++) {
                double s = m->bo ? m->bo[j] : 0.0;
                for (size_t p = 0; p < E; p++)
                    s += (double)cat[i * E + p] * (m->torch_layout ? m->wo[j * E + p] : m->wo[p * E + j]);
                r[(b * n_q + i) * E + j] = s;
                tol[(b * n_q + i) * E + j] = 2.0 * cat_tol * sqrt((double)E) + 64.0 * E * FLT_EPSILON;
            }
    }
    free(q), free(k), free(v), free(cat), free(hr), free(ht);
}

static void mha_case(size_t E, size_t h, size_t batch, size_t n_q, size_t n_kv, int cross, unsigned flags, int torch,
                     int bias)
{
    mha_fixture f;
    mha_make(&f, E, h, torch, bias);
    float *x_q = alloc_f(batch * n_q * E), *x_kv = cross ? alloc_f(batch * n_kv * E) : NULL;
    fill(x_q, batch * n_q * E, -1.0f, 1.0f);
    if (cross)
        fill(x_kv, batch * n_kv * E, -1.0f, 1.0f);
    else
        n_kv = n_q;
    double *r = malloc(batch * n_q * E * sizeof(double)), *tol = malloc(batch * n_q * E * sizeof(double));
    ref_mha(&f.m, batch, x_q, n_q, x_kv, n_kv, flags, r, tol);
    char what[128];
    snprintf(what, sizeof what, "mha E %zu h %zu b %zu %zux%zu %s f %u torch %d bias %d", E, h, batch, n_q, n_kv,
             cross ? "cross" : "self", flags, torch, bias);
    const size_t need = qkv_mha_workspace_size(&f.m, n_q, n_kv);
    CHECK(need > 0, "%s: workspace size 0", what);
    /* exact workspace (and a misaligned one), then NULL */
    unsigned char *ws = malloc(need + 4);
    guarded go;
    float *out = guarded_alloc(&go, batch * n_q * E, GUARD_AFTER);
    CHECK(qkv_mha_forward(&f.m, batch, x_q, n_q, x_kv, cross ? n_kv : 0, flags, out, ws, need, NULL) == QKV_OK,
          "%s: status", what);
    compare(out, E, r, tol, batch * n_q, E, what);
    CHECK(qkv_mha_forward(&f.m, batch, x_q, n_q, x_kv, cross ? n_kv : 0, flags, out, ws + 4, need, NULL) == QKV_OK,
          "%s: misaligned ws", what);
    compare(out, E, r, tol, batch * n_q, E, what);
    /* with a workspace nothing is allocated: a failing allocator changes nothing */
    if (alloc_hook_works()) {
        memset(out, 0, batch * n_q * E * sizeof(float));
        g_fail_alloc = 1;
        const qkv_status st = qkv_mha_forward(&f.m, batch, x_q, n_q, x_kv, cross ? n_kv : 0, flags, out, ws, need, NULL);
        g_fail_alloc = 0;
        CHECK(st == QKV_OK, "%s: allocation with a workspace (status %d)", what, (int)st);
        compare(out, E, r, tol, batch * n_q, E, what);
    }
    memset(out, 0, batch * n_q * E * sizeof(float));
    CHECK(qkv_mha_forward(&f.m, batch, x_q, n_q, x_kv, cross ? n_kv : 0, flags, out, NULL, 0, NULL) == QKV_OK,
          "%s: NULL ws", what);
    compare(out, E, r, tol, batch * n_q, E, what);
    /* one byte short: QKV_ERR_SIZE, nothing written */
    for (size_t i = 0; i < batch * n_q * E; i++)
        out[i] = 42.0f;
    CHECK(qkv_mha_forward(&f.m, batch, x_q, n_q, x_kv, cross ? n_kv : 0, flags, out, ws, need - 1, NULL) == QKV_ERR_SIZE,
          "%s: short ws", what);
    int untouched = 1;
    for (size_t i = 0; i < batch * n_q * E; i++)
        untouched &= out[i] == 42.0f;
    CHECK(untouched, "%s: out written on short ws", what);
    CHECK(guarded_free(&go), "%s: canary", what);
    free(ws), free(x_q), free(x_kv), free(r), free(tol);
    mha_free(&f);
}

static void test_mha_args(void)
{
    mha_fixture f;
    mha_make(&f, 8, 2, 0, 1);
    float x[2 * 3 * 8] = {0}, out[2 * 3 * 8];
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
        out[i] = 42.0f;
    const size_t need = qkv_mha_workspace_size(&f.m, 3, 3);
    unsigned char *ws = malloc(need);
    qkv_mha bad[8];
    for (int i = 0; i < 8; i++)
        bad[i] = f.m;
    bad[0].wq = NULL, bad[1].wk = NULL, bad[2].wv = NULL, bad[3].wo = NULL;
    bad[4].d_model = 0, bad[5].n_heads = 0, bad[6].n_heads = 3, bad[7].torch_layout = 2;
    for (int i = 0; i < 8; i++)
        CHECK(qkv_mha_forward(&bad[i], 2, x, 3, NULL, 0, 0, out, ws, need, NULL) == QKV_ERR_ARG, "mha bad struct %d", i);
    for (int i = 4; i < 7; i++)
        CHECK(qkv_mha_workspace_size(&bad[i], 3, 3) == 0, "mha workspace of bad struct %d", i);
    for (int i = 0; i < 8; i++) /* every struct qkv_mha_forward rejects, NULL weights and layout 2 too */
        CHECK(qkv_mha_workspace_size(&bad[i], 3, 3) == 0, "mha workspace of rejected struct %d", i);
    CHECK(qkv_mha_workspace_size(NULL, 3, 3) == 0 && qkv_mha_workspace_size(&f.m, 0, 3) == 0 &&
              qkv_mha_workspace_size(&f.m, 3, 0) == 0 && qkv_mha_workspace_size(&f.m, SIZE_MAX / 4, 3) == 0,
          "mha workspace of bad sizes");
    CHECK(qkv_mha_forward(NULL, 2, x, 3, NULL, 0, 0, out, ws, need, NULL) == QKV_ERR_ARG, "mha m NULL");
    CHECK(qkv_mha_forward(&f.m, 0, x, 3, NULL, 0, 0, out, ws, need, NULL) == QKV_ERR_ARG, "mha batch 0");
    CHECK(qkv_mha_forward(&f.m, 2, NULL, 3, NULL, 0, 0, out, ws, need, NULL) == QKV_ERR_ARG, "mha x_q NULL");
    CHECK(qkv_mha_forward(&f.m, 2, x, 0, NULL, 0, 0, out, ws, need, NULL) == QKV_ERR_ARG, "mha n_q 0");
    CHECK(qkv_mha_forward(&f.m, 2, x, 3, x, 0, 0, out, ws, need, NULL) == QKV_ERR_ARG, "mha n_kv 0 with x_kv");
    CHECK(qkv_mha_forward(&f.m, 2, x, 3, NULL, 0, 0, NULL, ws, need, NULL) == QKV_ERR_ARG, "mha out NULL");
    CHECK(qkv_mha_forward(&f.m, 2, x, 3, NULL, 0, 2, out, ws, need, NULL) == QKV_ERR_ARG, "mha flags");
    static float xkv[2 * 40 * 8];
    CHECK(qkv_mha_forward(&f.m, 2, x, 3, xkv, 40, 0, out, ws, need, NULL) == QKV_ERR_SIZE, "mha ws for n_kv 3, used 40");
    CHECK(qkv_mha_forward(&f.m, SIZE_MAX / 16, x, 3, NULL, 0, 0, out, ws, need, NULL) == QKV_ERR_SIZE, "mha batch huge");
    CHECK(qkv_mha_forward(&f.m, 2, x, SIZE_MAX / 16, NULL, 0, 0, out, NULL, 0, NULL) == QKV_ERR_SIZE, "mha n_q huge");
    int untouched = 1;
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
        untouched &= out[i] == 42.0f;
    CHECK(untouched, "mha: out written on error");
    free(ws);
    mha_free(&f);
}

#ifndef QKV_TEST_EMULATED
/* 16384 x 16384 causal, d = 64: the peak RSS may grow by the workspace, not by n^2 */
static void test_rss(void)
{
    const size_t n = 16384, d = 64;
    float *q = alloc_f(n * d), *k = alloc_f(n * d), *v = alloc_f(n * d), *o = alloc_f(n * d);
    fill(q, n * d, -1, 1), fill(k, n * d, -1, 1), fill(v, n * d, -1, 1);
    memset(o, 0, n * d * sizeof(float));
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    CHECK(qkv_sdpa(q, k, v, o, n, n, d, d, 0.0f, QKV_CAUSAL) == QKV_OK, "rss: status");
    getrusage(RUSAGE_SELF, &after);
    const long grew_kib = after.ru_maxrss - before.ru_maxrss;
    printf("  16384 x 16384 causal on %s: peak RSS grew by %ld KiB\n", qkv_isa_name(qkv_isa_active()), grew_kib);
    CHECK(grew_kib <= 4096, "peak RSS grew by %ld KiB", grew_kib);
    /* spot check two rows against the reference */
    const size_t rows[2] = {0, n - 1};
    for (int t = 0; t < 2; t++) {
        double r[64], tol[64];
        const view a = {q + rows[t] * d, k, v, 1, rows[t] + 1, d, d, d, d, d, 0.125, 0};
        ref_sdpa(&a, r, tol);
        compare(o + rows[t] * d, d, r, tol, 1, d, "rss spot row");
    }
    free(q), free(k), free(v), free(o);
}
#endif

int main(void)
{
    qkv_isa isas[QKV_ISA_COUNT];
    const int n_isa = isa_list(isas);
    for (int i = 0; i < n_isa; i++) {
        qkv_isa_select(isas[i]);
        printf("  attention on %s\n", qkv_isa_name(isas[i]));
        test_example(i == 0);
        test_sdpa();
        test_sdpa_args();
        simple_case(1, 1);
        simple_case(7, 3);
        simple_case(97, 33);
        self_case(1, 3, 2, 0);
        self_case(50, 20, 16, QKV_CAUSAL);
        self_case(BIG ? 130 : 40, 64, 64, 0);
        mha_case(8, 2, 2, 5, 0, 0, 0, 0, 0);
        mha_case(12, 3, 2, 7, 11, 1, 0, 1, 1);
        mha_case(16, 4, 1, 3, 3, 0, QKV_CAUSAL, 0, 1);
        mha_case(16, 4, 2, 9, 6, 1, QKV_CAUSAL, 1, 0);
        mha_case(BIG ? 64 : 32, BIG ? 4 : 2, 2, BIG ? 100 : 20, BIG ? 130 : 25, 1, 0, 0, 1);
        mha_case(BIG ? 64 : 32, BIG ? 8 : 2, 1, BIG ? 97 : 20, 0, 0, QKV_CAUSAL, 1, 1);
        test_mha_args();
        test_neg_flt_max();
        test_hidden_keys();
        test_overflow();
        test_nomem();
    }
#ifndef QKV_TEST_EMULATED
    /* on the best SIMD ISA under test (the last of the list), not in a scalar-only or valgrind
       run: the 34 GFLOP call takes about a second natively */
    const char *preload = getenv("LD_PRELOAD"); /* valgrind preloads its vgpreload_*.so */
    if (preload && strstr(preload, "vgpreload"))
        printf("  under valgrind: 16384 x 16384 RSS check skipped\n");
    else if (n_isa > 0 && isas[n_isa - 1] != QKV_ISA_SCALAR) {
        qkv_isa_select(isas[n_isa - 1]);
        test_rss();
    }
#endif
    return test_finish("attention");
}
