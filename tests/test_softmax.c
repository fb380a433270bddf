/* qkv_softmax against a double-precision reference, every ISA.
 * Element tolerance: |y - ref| <= ref * (16 + 2 |s (x - r)|) FLT_EPSILON + 1e-37, i.e. the
 * exp error (2 ULP) plus the rounding of the reduced argument s (x - r) (|arg| ULPs of 1),
 * plus the final scaling; an absolute 1e-37 covers results that land in the denormals.
 * Sum tolerance (include/qkv.h): |sum y - 1| <= 1e-6 for n <= 4096, 1e-5 up to 1e6.
 * Special rows: all -inf -> zeros, any NaN -> all NaN, +inf -> NaN, +-1e30 -> one-hot,
 * -inf entries -> weight 0, negative and zero scale, in place, guard pages; scale +-inf
 * (NaN row unless every scaled entry is -inf, then zeros) on every row kind. */
#include "common.h"

/* returns the worst |sum - 1| and counts element failures */
static double check_row(const float *x, const float *y, size_t n, float s, const char *what)
{
    double r = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if ((double)s * x[i] > r)
            r = (double)s * x[i];
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += exp((double)s * x[i] - r);
    double ysum = 0.0;
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
        const double arg = (double)s * x[i] - r;
        const double ref = exp(arg) / sum;
        const double tol = softmax_tol(ref, arg);
        const int ok = isinf(arg) ? y[i] == 0.0f : fabs(y[i] - ref) <= tol;
        if (!ok && ++bad <= 3)
            CHECK(0, "%s n=%zu s=%g i=%zu: y=%.9g ref=%.9g", what, n, s, i, y[i], ref);
        ysum += y[i];
    }
    CHECK(bad == 0, "%s n=%zu: %ld elements off", what, n, bad);
    return fabs(ysum - 1.0);
}

/* Infinite scale against a double reference that follows the contract literally: the
   scaled entries s x[i] (double: inf * 0 = NaN) give a NaN row if any is NaN or +inf, zeros
   if all are -inf (with s = +-inf every entry is one of the three). Row kinds: U[-100, 100],
   one NaN, one +inf, one -inf, one zero, denormals of both signs, all of one sign; both
   signs of s; lengths across the vector body and tails. Returns the number of rows off. */
static long infinite_scale_rows(void)
{
    long bad_rows = 0;
    float x[70], y[70];
    for (size_t n = 1; n <= 70; n += (n < 20 ? 1 : 7))
        for (int kind = 0; kind < 8; kind++)
            for (int sign = 0; sign < 2; sign++) {
                const float s = sign ? -INFINITY : INFINITY;
                for (size_t i = 0; i < n; i++) {
                    switch (kind) {
                    case 5: x[i] = bits_to_float(1u + (uint32_t)(rng_u64() % 0x7fffffu)) * (i % 2 ? -1.0f : 1.0f); break;
                    case 6: x[i] = rng_uniform(0.5f, 100.0f); break;
                    case 7: x[i] = -rng_uniform(0.5f, 100.0f); break;
                    default: x[i] = rng_uniform(-100.0f, 100.0f); break;
                    }
                }
                const size_t pos = (size_t)(rng_u64() % n);
                if (kind == 1)
                    x[pos] = NAN;
                else if (kind == 2)
                    x[pos] = INFINITY;
                else if (kind == 3)
                    x[pos] = -INFINITY;
                else if (kind == 4)
                    x[pos] = 0.0f;
                int any_nan = 0, all_neg_inf = 1;
                for (size_t i = 0; i < n; i++) {
                    const double v = (double)s * x[i];
                    any_nan |= isnan(v) || v == INFINITY;
                    all_neg_inf &= v == -INFINITY;
                }
                qkv_softmax(x, y, n, s);
                int ok = 1;
                for (size_t i = 0; i < n; i++)
                    ok &= any_nan ? isnan(y[i]) : (all_neg_inf ? y[i] == 0.0f : 0);
                if (!ok && ++bad_rows <= 3)
                    CHECK(0, "scale %g, row kind %d, n %zu: y[0] = %g, reference %s", s, kind, n, y[0],
                          any_nan ? "NaN" : "zeros");
                g_checks++;
            }
    return bad_rows;
}

static void fill_row(float *x, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = rng_uniform(lo, hi);
}

int main(void)
{
    qkv_isa isas[QKV_ISA_COUNT];
    const int n_isa = isa_list(isas);
    static const float scales[] = {1.0f, 0.125f, 3.0f, -1.0f, -0.5f};
    for (int k = 0; k < n_isa; k++) {
        qkv_isa_select(isas[k]);
        printf("  softmax on %s\n", qkv_isa_name(isas[k]));
        double worst_small = 0.0;
        /* every short length, both guard sides, out of place and in place */
        for (size_t n = 1; n <= 2 * 16 + 1 + 8; n++) {
            for (int where = GUARD_AFTER; where <= GUARD_BEFORE; where++) {
                for (size_t j = 0; j < sizeof scales / sizeof scales[0]; j++) {
                    guarded gx, gy;
                    float *x = guarded_alloc(&gx, n, where), *y = guarded_alloc(&gy, n, where);
                    fill_row(x, n, -20.0f, 20.0f);
                    qkv_softmax(x, y, n, scales[j]);
                    double d = check_row(x, y, n, scales[j], "short");
                    worst_small = d > worst_small ? d : worst_small;
                    memcpy(y, x, n * sizeof(float));
                    qkv_softmax(y, y, n, scales[j]);
                    d = check_row(x, y, n, scales[j], "in-place");
                    worst_small = d > worst_small ? d : worst_small;
                    CHECK(guarded_free(&gx) && guarded_free(&gy), "canary n=%zu", n);
                }
            }
        }
        static const size_t lengths[] = {64, 100, 1000, 1023, 1024, 1025, 2047, 4096};
        for (size_t j = 0; j < sizeof lengths / sizeof lengths[0]; j++) {
            const size_t n = lengths[j];
            guarded gx, gy;
            float *x = guarded_alloc(&gx, n, GUARD_AFTER), *y = guarded_alloc(&gy, n, GUARD_AFTER);
            fill_row(x, n, -30.0f, 30.0f);
            qkv_softmax(x, y, n, 0.7f);
            double d = check_row(x, y, n, 0.7f, "medium");
            worst_small = d > worst_small ? d : worst_small;
            /* logits of attention with large magnitude */
            fill_row(x, n, -1e4f, 1e4f);
            qkv_softmax(x, y, n, 0.125f);
            d = check_row(x, y, n, 0.125f, "large logits");
            worst_small = d > worst_small ? d : worst_small;
            /* all equal -> uniform */
            for (size_t i = 0; i < n; i++)
                x[i] = 3.0f;
            qkv_softmax(x, y, n, 1.0f);
            d = check_row(x, y, n, 1.0f, "uniform");
            worst_small = d > worst_small ? d : worst_small;
            /* one large logit over many equal ones: rounding errors of the sum all point the
               same way (found by the fuzzer: the sum drifted to 1 + 1.1e-6) */
            for (size_t i = 0; i < n; i++)
                x[i] = i == n / 3 ? 5.2577515f : 0.0f;
            qkv_softmax(x, y, n, 1.0f);
            d = check_row(x, y, n, 1.0f, "equal terms");
            worst_small = d > worst_small ? d : worst_small;
            CHECK(guarded_free(&gx) && guarded_free(&gy), "canary n=%zu", n);
        }
        CHECK(worst_small <= 1e-6, "sum - 1 = %.3g for n <= 4096", worst_small);

        /* n = 1e6: the sum must stay within 1e-5 */
        {
            const size_t n = 1000000;
            float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
            fill_row(x, n, -5.0f, 5.0f);
            qkv_softmax(x, y, n, 1.0f);
            const double d = check_row(x, y, n, 1.0f, "1e6");
            CHECK(d <= 1e-5, "n=1e6: sum - 1 = %.3g", d);
            CHECK(d <= 1e-6, "n=1e6: sum - 1 = %.3g, above the header's 1e-6 for any n", d);
            printf("  softmax %-7s |sum-1|: %.2g (n <= 4096), %.2g (n = 1e6)\n", qkv_isa_name(isas[k]),
                   worst_small, d);
            free(x);
            free(y);
        }

        /* fuzzer regressions: x - r overflowing with a tiny scale, and s * r overflowing */
        {
            const float x1[4] = {-3e38f, 3e38f, 1.0f, 1e30f};
            float y1[4];
            qkv_softmax(x1, y1, 4, 0x1.038p-127f);
            check_row(x1, y1, 4, 0x1.038p-127f, "x - r overflow");
            const float x2[4] = {3.8923137e10f, 2.3228259e38f, 2.0f, 3.0f};
            qkv_softmax(x2, y1, 4, -2.5436543e38f);
            CHECK(y1[2] == 1.0f && y1[0] == 0.0f && y1[1] == 0.0f && y1[3] == 0.0f, "s * r overflow: one-hot");
            const float x3[2] = {1.0f, 2.0f}, x4[2] = {0.0f, -1.0f};
            qkv_softmax(x3, y1, 2, -INFINITY); /* every scaled entry -inf */
            CHECK(y1[0] == 0.0f && y1[1] == 0.0f, "scale -inf on positive x: zeros");
            qkv_softmax(x4, y1, 2, INFINITY); /* 0 * inf is NaN */
            CHECK(isnan(y1[0]) && isnan(y1[1]), "scale inf with x = 0: NaN row");
        }

        /* special rows, lengths that hit the vector body and the tail */
        for (size_t n = 1; n <= 37; n += 3) {
            float x[37], y[37];
            for (size_t i = 0; i < n; i++)
                x[i] = -INFINITY;
            qkv_softmax(x, y, n, 1.0f);
            int zeros = 1;
            for (size_t i = 0; i < n; i++)
                zeros &= y[i] == 0.0f;
            CHECK(zeros, "all -inf row n=%zu", n);
            for (size_t i = 0; i < n; i++)
                x[i] = INFINITY;
            qkv_softmax(x, y, n, -2.0f); /* scaled: all -inf */
            zeros = 1;
            for (size_t i = 0; i < n; i++)
                zeros &= y[i] == 0.0f;
            CHECK(zeros, "all +inf row, negative scale, n=%zu", n);

            for (size_t pos = 0; pos < n; pos += 5) {
                for (int base = 0; base < 2; base++) {
                    for (size_t i = 0; i < n; i++)
                        x[i] = base ? -INFINITY : rng_uniform(-3.0f, 3.0f);
                    x[pos] = NAN;
                    qkv_softmax(x, y, n, 1.0f);
                    int nans = 1;
                    for (size_t i = 0; i < n; i++)
                        nans &= isnan(y[i]);
                    CHECK(nans, "NaN at %zu of %zu (base %d) -> NaN row", pos, n, base);
                }
                for (size_t i = 0; i < n; i++)
                    x[i] = rng_uniform(-3.0f, 3.0f);
                x[pos] = INFINITY;
                qkv_softmax(x, y, n, 1.0f);
                CHECK(isnan(y[0]) && isnan(y[n - 1]), "+inf -> NaN row n=%zu", n);

                /* one-hot for a huge logit, zero weight for -inf entries */
                for (size_t i = 0; i < n; i++)
                    x[i] = (i % 2) ? -1e30f : rng_uniform(-1e3f, 1e3f);
                x[pos] = 1e30f;
                qkv_softmax(x, y, n, 1.0f);
                int onehot = 1;
                for (size_t i = 0; i < n; i++)
                    onehot &= y[i] == (i == pos ? 1.0f : 0.0f);
                CHECK(onehot, "1e30 one-hot pos %zu n %zu", pos, n);
                x[pos] = -1e30f; /* the mirror image with a negative scale */
                for (size_t i = 0; i < n; i++)
                    if (i != pos)
                        x[i] = rng_uniform(-1e3f, 1e3f);
                qkv_softmax(x, y, n, -1.0f);
                onehot = 1;
                for (size_t i = 0; i < n; i++)
                    onehot &= y[i] == (i == pos ? 1.0f : 0.0f);
                CHECK(onehot, "-1e30 one-hot with scale -1, pos %zu n %zu", pos, n);

                for (size_t i = 0; i < n; i++)
                    x[i] = rng_uniform(-3.0f, 3.0f);
                x[pos] = -INFINITY;
                qkv_softmax(x, y, n, 1.0f);
                CHECK(y[pos] == 0.0f, "-inf entry weight 0");
                if (n > 1)
                    check_row(x, y, n, 1.0f, "-inf entry");
            }
            /* scale 0 -> uniform 1/n */
            for (size_t i = 0; i < n; i++)
                x[i] = rng_uniform(-1e6f, 1e6f);
            qkv_softmax(x, y, n, 0.0f);
            int uniform = 1;
            for (size_t i = 0; i < n; i++)
                uniform &= fabs(y[i] - 1.0 / n) <= 2.0 * FLT_EPSILON / n;
            CHECK(uniform, "scale 0 uniform n=%zu", n);
        }
        qkv_softmax(NULL, NULL, 0, 1.0f);
        CHECK(infinite_scale_rows() == 0, "infinite scale: rows off the reference");
    }
    return test_finish("test_softmax");
}
