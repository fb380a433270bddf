/* qkv_exp against double-precision exp() and against SLEEF's Sleef_expf_u10, every ISA.
 *
 * Dense sweep: every float bit pattern whose index is a multiple of the stride (default 13
 * natively, 61 under emulation; QKV_EXP_STRIDE=1 makes it exhaustive), all 2^32 patterns
 * in range, NaNs and infinities included. Contract checked per value:
 *   x in [-87.3, 88.7]   ULP error vs exact exp <= 2, and within 3 ULP of SLEEF u10
 *   x > 88.7             within 2 ULP, or +inf once exp(x) > FLT_MAX
 *   x < -87.3            within 2 ULP of the (denormal) result, or 0 (flush allowed)
 *   NaN -> NaN, exp(-inf) = 0, exp(+inf) = +inf
 * Prints the worst ULP per ISA. Then lengths 0..33 and in-place calls on guard pages. */
#include "common.h"

#ifdef QKV_TEST_HAVE_SLEEF
#include <sleef.h>
#endif

#define CHUNK 65536

int main(void)
{
    qkv_isa isas[QKV_ISA_COUNT];
    const int n_isa = isa_list(isas);
    double worst[QKV_ISA_COUNT] = {0}, worst_sleef = 0.0, worst_vs_sleef[QKV_ISA_COUNT] = {0};
    float worst_x[QKV_ISA_COUNT] = {0};
    long bad[QKV_ISA_COUNT] = {0};

#ifdef QKV_TEST_EMULATED
    uint64_t stride = 61;
#else
    uint64_t stride = 13;
#endif
    const char *env = getenv("QKV_EXP_STRIDE");
    if (env && atoi(env) > 0)
        stride = (uint64_t)atoi(env);

    float *x = malloc(CHUNK * sizeof(float)), *y = malloc(CHUNK * sizeof(float));
    double *ref = malloc(CHUNK * sizeof(double));
    uint64_t total = 0;
    for (uint64_t u = 0; u <= 0xffffffffull;) {
        size_t n = 0;
        for (; n < CHUNK && u <= 0xffffffffull; n++, u += stride) {
            x[n] = bits_to_float((uint32_t)u);
            ref[n] = exp((double)x[n]);
        }
        total += n;
        for (int k = 0; k < n_isa; k++) {
            qkv_isa_select(isas[k]);
            qkv_exp(x, y, n);
            for (size_t i = 0; i < n; i++) {
                const float xi = x[i];
                const double e = ulp_error(y[i], ref[i]);
                int ok;
                if (isnan(xi))
                    ok = isnan(y[i]);
                else if (xi >= -87.3f && xi <= 88.7f)
                    ok = e <= 2.0;
                else if (xi > 88.7f)
                    ok = e <= 2.0 || (y[i] == INFINITY && ref[i] > FLT_MAX);
                else
                    ok = e <= 2.0 || y[i] == 0.0f;
                if (!ok && ++bad[k] <= 5)
                    CHECK(0, "exp(%a) = %a, exact %a, %.2f ULP", xi, y[i], ref[i], e);
                if (xi >= -87.3f && xi <= 88.7f && e > worst[k]) {
                    worst[k] = e;
                    worst_x[k] = xi;
                }
#ifdef QKV_TEST_HAVE_SLEEF
                if (xi >= -87.3f && xi <= 88.7f) {
                    const float s = Sleef_expf_u10(xi);
                    const double es = ulp_error(y[i], (double)s);
                    if (es > worst_vs_sleef[k])
                        worst_vs_sleef[k] = es;
                    if (k == 0 && ulp_error(s, ref[i]) > worst_sleef)
                        worst_sleef = ulp_error(s, ref[i]);
                }
#endif
            }
        }
    }
    for (int k = 0; k < n_isa; k++) {
        CHECK(bad[k] == 0, "%ld values out of contract on %s", bad[k], qkv_isa_name(isas[k]));
        printf("  exp %-7s worst %.3f ULP on [-87.3, 88.7] at x = %a (%llu values, stride %llu)",
               qkv_isa_name(isas[k]), worst[k], worst_x[k], (unsigned long long)total,
               (unsigned long long)stride);
#ifdef QKV_TEST_HAVE_SLEEF
        printf("; max distance to SLEEF u10 %.3f ULP", worst_vs_sleef[k]);
        CHECK(worst_vs_sleef[k] <= 3.0, "distance to SLEEF %.3f", worst_vs_sleef[k]);
#endif
        printf("\n");
    }
#ifdef QKV_TEST_HAVE_SLEEF
    printf("  oracle: SLEEF Sleef_expf_u10 worst %.3f ULP vs double exp\n", worst_sleef);
#else
    printf("  oracle: SLEEF not found at build time; compared with double exp only\n");
#endif
    free(x);
    free(y);
    free(ref);

    static const float specials[] = {
        -INFINITY, INFINITY, NAN, -NAN, 0.0f, -0.0f, 1.0f, -1.0f, FLT_MIN, -FLT_MIN, 0x1p-149f,
        88.72283f, 88.72284f, 88.7f, 89.0f, 100.0f, 1e30f, FLT_MAX, -87.33654f, -87.3f, -103.97f,
        -103.98f, -104.0f, -1e30f, -FLT_MAX, 0x1.62e43p-1f, -0x1.62e43p-1f, 0.34657359f, -0.34657359f,
    };
    const size_t ns = sizeof specials / sizeof specials[0];
    for (int k = 0; k < n_isa; k++) {
        qkv_isa_select(isas[k]);
        float out[sizeof specials / sizeof specials[0]];
        qkv_exp(specials, out, ns);
        CHECK(out[0] == 0.0f && !signbit(out[0]), "exp(-inf) = %a", out[0]);
        CHECK(out[1] == INFINITY, "exp(inf) = %a", out[1]);
        CHECK(isnan(out[2]) && isnan(out[3]), "exp(nan)");
        CHECK(out[4] == 1.0f && out[5] == 1.0f, "exp(0)");
        CHECK(out[12] == INFINITY && out[14] == INFINITY && out[15] == INFINITY && out[16] == INFINITY &&
                  out[17] == INFINITY, "overflow");
        CHECK(out[21] == 0.0f && out[22] == 0.0f && out[23] == 0.0f && out[24] == 0.0f, "underflow");
        for (size_t i = 0; i < ns; i++)
            if (specials[i] >= -87.3f && specials[i] <= 88.7f)
                CHECK(ulp_error(out[i], exp((double)specials[i])) <= 2.0, "exp(%a) = %a", specials[i], out[i]);

        /* every length around the vector widths, guard pages on both sides, in place too */
        for (size_t n = 0; n <= 2 * 16 + 1 + 8; n++) {
            for (int where = GUARD_AFTER; where <= GUARD_BEFORE; where++) {
                guarded gx, gy;
                float *xs = guarded_alloc(&gx, n, where), *ys = guarded_alloc(&gy, n, where);
                for (size_t i = 0; i < n; i++)
                    xs[i] = rng_uniform(-90.0f, 90.0f);
                qkv_exp(xs, ys, n);
                for (size_t i = 0; i < n; i++) {
                    const double r = exp((double)xs[i]);
                    CHECK(ulp_error(ys[i], r) <= 2.0 || (r > FLT_MAX && ys[i] == INFINITY) ||
                              (r < FLT_MIN && ys[i] == 0.0f),
                          "n=%zu i=%zu", n, i);
                }
                memcpy(ys, xs, n * sizeof(float));
                qkv_exp(ys, ys, n); /* in place */
                for (size_t i = 0; i < n; i++) {
                    float one;
                    qkv_exp(&xs[i], &one, 1);
                    CHECK(float_to_bits(one) == float_to_bits(ys[i]), "in-place n=%zu i=%zu", n, i);
                }
                CHECK(guarded_free(&gx) && guarded_free(&gy), "canary n=%zu", n);
            }
        }
        qkv_exp(NULL, NULL, 0);
    }
    return test_finish("test_exp");
}
