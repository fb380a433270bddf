/* libFuzzer target: qkv_exp and qkv_softmax on arbitrary float bit patterns (NaN, +-inf,
 * denormals, +-FLT_MAX included), any length, any scale, every ISA, in and out of place.
 * Input: 4 bytes of scale, 1 byte of flags, then the floats. Each result is checked against
 * double precision with the documented contract (include/qkv.h); abort() on a violation. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

static void check_exp(const float *x, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const double r = exp((double)x[i]);
        if (isnan(x[i])) {
            if (!isnan(y[i]))
                FAIL("exp(nan) = %a", y[i]);
        } else if (r > FLT_MAX) {
            if (!(y[i] == INFINITY || (x[i] <= 88.7f && fabs(y[i] - r) <= 2 * ulp_of(r))))
                FAIL("exp(%a) = %a, overflow expected", x[i], y[i]);
        } else if (!(fabs(y[i] - r) <= 2 * ulp_of(r) || (x[i] < -87.3f && y[i] == 0.0f))) {
            FAIL("exp(%a) = %a, exact %a", x[i], y[i], r);
        }
    }
}

static void check_softmax(const float *x, const float *y, size_t n, float s)
{
    int any_nan = isnan(s), pos_inf = 0, all_neg_inf = 1;
    double r = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        const double v = (double)s * x[i];
        any_nan |= isnan(x[i]) || isnan(v);
        pos_inf |= v == INFINITY;
        all_neg_inf &= v == -INFINITY;
        if (v > r)
            r = v;
    }
    if (any_nan || pos_inf) {
        for (size_t i = 0; i < n; i++)
            if (!isnan(y[i]))
                FAIL("softmax row with NaN/+inf: y[%zu] = %a, n %zu", i, y[i], n);
        return;
    }
    if (all_neg_inf) {
        for (size_t i = 0; i < n; i++)
            if (y[i] != 0.0f)
                FAIL("all -inf row: y[%zu] = %a", i, y[i]);
        return;
    }
    /* reference in double: the library computes s (x - ref) in float, whose rounding the
       tolerance carries (|arg| ULPs of 1), plus 2 ULP of exp and the normalisation */
    double sum = 0.0, ysum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += exp((double)s * x[i] - r);
    for (size_t i = 0; i < n; i++) {
        const double arg = (double)s * x[i] - r;
        const double ref = exp(arg) / sum;
        const double tol = softmax_tol(ref, arg);
        if (!(isinf(arg) ? y[i] == 0.0f : fabs(y[i] - ref) <= tol))
            FAIL("softmax y[%zu] = %a, ref %a (n %zu, s %a, x %a)", i, y[i], ref, n, s, x[i]);
        ysum += y[i];
    }
    if (fabs(ysum - 1.0) > (n <= 4096 ? 1e-6 : 1e-5))
        FAIL("softmax sums to %.9g", ysum);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5)
        return 0;
    float s;
    memcpy(&s, data, sizeof s);
    const int inplace = data[4] & 1, huge_scale_ok = data[4] & 2;
    if (!huge_scale_ok && !(fabsf(s) <= 1e3f))
        s = 1.0f; /* mostly realistic scales; the flag lets any bit pattern through */
    const size_t n = (size - 5) / sizeof(float);
    float *x = malloc(n * sizeof(float) + 1), *y = malloc(n * sizeof(float) + 1);
    memcpy(x, data + 5, n * sizeof(float));
    for (int isa = 0; isa < QKV_ISA_COUNT; isa++) {
        if (qkv_isa_select((qkv_isa)isa) != QKV_OK)
            continue;
        if (inplace) {
            memcpy(y, x, n * sizeof(float));
            qkv_exp(y, y, n);
        } else {
            qkv_exp(x, y, n);
        }
        check_exp(x, y, n);
        if (inplace) {
            memcpy(y, x, n * sizeof(float));
            qkv_softmax(y, y, n, s);
        } else {
            qkv_softmax(x, y, n, s);
        }
        if (n)
            check_softmax(x, y, n, s);
    }
    free(x);
    free(y);
    return 0;
}
