/* The test oracles, in one place: the double-precision references and the tolerances of the
 * contract (include/qkv.h), used by every test (through common.h) and every fuzz target
 * (through fuzz/fuzz_common.h). A bound written here is the bound every program checks. */
#ifndef QKV_TEST_ORACLES_H
#define QKV_TEST_ORACLES_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- float bit patterns ------------------------------------------------------------ */

static inline float bits_to_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t float_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* ---- dot and GEMM ------------------------------------------------------------------ */

/* sum_p x[p incx] y[p incy] over k terms in double (each product of two floats is exact),
   and in *mag the sum of their magnitudes, sum_p |x y|: one element of a dot product, a
   GEMM (a row of op(A) against a column of op(B)) or a score q . k */
static inline double ref_dot(const float *x, size_t incx, const float *y, size_t incy, size_t k, double *mag)
{
    double s = 0.0, m = 0.0;
    for (size_t p = 0; p < k; p++) {
        const double t = (double)x[p * incx] * y[p * incy];
        s += t;
        m += fabs(t);
    }
    *mag = m;
    return s;
}

/* The GEMM bound on one element c = alpha sum_p a_p b_p + beta c0 with mag = sum_p |a_p b_p|:
 *   |c - ref| <= 2 k FLT_EPSILON |alpha| mag + 2 FLT_EPSILON |beta c0| + slack
 * beta_c0 is beta * c0 (pass 0 when beta == 0: C is not read); slack an absolute floor for
 * results at the bottom of the range (FLT_MIN in the tests, 1e-30 in the fuzz targets).
 * qkv_dot is the case alpha = 1, beta_c0 = 0, slack 0; one attention score the case
 * alpha = scale, k = d_k. */
static inline double gemm_tol(size_t k, double alpha, double mag, double beta_c0, double slack)
{
    return 2.0 * (double)k * FLT_EPSILON * fabs(alpha) * mag + 2.0 * FLT_EPSILON * fabs(beta_c0) + slack;
}

/* One element of C = alpha op(A) op(B) + beta C0 in double, row i of op(A) against column j
 * of op(B) (A row-major, op(A) = A^T where ta; B likewise with tb), and in *tol its bound
 * (gemm_tol with that slack). alpha == 0 or k == 0: the product adds 0 (A and B are not
 * read, as the contract says, so an Inf or NaN there does not count); beta == 0: *c0 is not
 * read either. */
static inline double ref_gemm_elem(int ta, int tb, const float *a, size_t lda, const float *b, size_t ldb, size_t k,
                                   size_t i, size_t j, float alpha, float beta, const float *c0, double slack,
                                   double *tol)
{
    double mag;
    const double dot = ref_dot(ta ? a + i : a + i * lda, ta ? lda : 1, tb ? b + j * ldb : b + j, tb ? 1 : ldb, k, &mag);
    const double beta_c0 = beta == 0.0f ? 0.0 : beta * (double)*c0;
    *tol = gemm_tol(k, alpha, mag, beta_c0, slack);
    return (alpha == 0.0f || k == 0 ? 0.0 : alpha * dot) + beta_c0;
}

/* ---- softmax and attention ----------------------------------------------------------- */

/* One softmax weight ref = exp(arg) / sum with arg = s x - max (double): the exp error
   (2 ULP), the float rounding of the reduced argument (|arg| ULPs of 1) and the final
   scaling, plus 1e-37 for results that land in the denormals. */
static inline double softmax_tol(double ref, double arg)
{
    return ref * (16.0 + 2.0 * fabs(arg)) * FLT_EPSILON + 1e-37;
}

/* One attention output element over n_kv keys: es bounds the error of one float score (the
   GEMM bound, gemm_tol(d_k, scale, max_j sum_p |q_p k_jp|, 0, 0)), which the softmax weights
   carry as a relative error; the FLT_EPSILON term covers exp, the float sums of P and of
   P V, and the final division; vmax = max_j |v_jc|. */
static inline double sdpa_tol(double es, size_t n_kv, double vmax)
{
    return (4.0 * es + (2.0 * (double)n_kv + 64.0) * FLT_EPSILON) * vmax + 1e-30;
}

/* ---- ULP distance -------------------------------------------------------------------- */

/* size of one float ULP at the magnitude of the exact value r (denormal spacing below) */
static inline double ulp_of(double r)
{
    r = fabs(r);
    if (r < FLT_MIN)
        return 0x1p-149;
    int e;
    frexp(r, &e); /* r = m 2^e, m in [0.5, 1) */
    return ldexp(1.0, e - 24);
}

/* |y - r| in ULPs of r; 0 when both are the same infinity, huge on NaN mismatch */
static inline double ulp_error(float y, double r)
{
    if (isnan(r) || isnan(y))
        return (isnan(r) && isnan(y)) ? 0.0 : INFINITY;
    if (isinf(r) || isinf(y))
        return ((double)y == r) ? 0.0 : INFINITY;
    return fabs((double)y - r) / ulp_of(r);
}

#endif
