/* Double-precision reference of qkv_attention (include/qkv.h) for float Q, K, V, shared by
 * tests/test_attention_core.c and tests/fuzz/fuzz_attention_desc.c.
 *
 * Visibility, exactly as the header states it: with L = kv_len ? kv_len[b] : n_kv, query i
 * sits at p = i + L - n_q (may be negative) and sees key j iff j < L, (QKV_CAUSAL) j <= p,
 * and (window w > 0) |j - p| < w, which with QKV_CAUSAL is p - w < j <= p. Computed in
 * signed/unsigned 64-bit so that any window (SIZE_MAX too) is exact.
 * Scores: s_j = scale_f (q . k_j) in double, scale_f the float scale the library uses
 * (d->scale > 0 ? d->scale : (float)(1 / sqrt(d_k))); softcap c: s_j = c tanh(s_j / c).
 *
 * Tolerance per output element of row (b, h, i), column c (the tests/test_attention.c bound,
 * with the visible key count n_vis in place of n_kv and the softcap added):
 *   E_s   = 2 (d_k + 1) FLT_EPSILON scale_f max_j sum_p |q_p k_jp|   (GEMM bound of one score,
 *           plus the one rounding of scale q)
 *         + 8 FLT_EPSILON max_j |cap(s_j)|                      (softcap: s / c, tanh 2 ULP, c t)
 *   |o - ref| <= (4 E_s + (2 n_vis + 64) FLT_EPSILON) max_j |v_jc| + 1e-30
 * (E_s perturbs each softmax weight by a factor exp(+-2 E_s); the n_vis term covers exp, the
 * float sums of P and of P V and the final division), and for the log-sum-exp
 *   |lse - ref| <= 2 E_s + (2 n_vis + 64) FLT_EPSILON + 4 FLT_EPSILON |ref|
 * (logsumexp is 1-Lipschitz in the scores; the sum l carries a relative error of the same
 * n_vis terms; then log and m + log l). A row without a visible key must be exactly +0 with
 * lse exactly -inf (tol reported as 0). */
#ifndef QKV_TEST_ATTN_REF_H
#define QKV_TEST_ATTN_REF_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "oracles.h"
#include "qkv.h"

/* 1 if query i of item b sees key j */
static inline int ref_visible(const qkv_attention_desc *d, size_t b, size_t i, size_t j)
{
    const long long L = (long long)(d->kv_len ? d->kv_len[b] : d->n_kv);
    const long long p = (long long)i + L - (long long)d->n_q, jj = (long long)j;
    if (jj >= L)
        return 0;
    if ((d->flags & QKV_CAUSAL) && jj > p)
        return 0;
    if (d->window) {
        const unsigned long long dist = (unsigned long long)(jj > p ? jj - p : p - jj);
        if (!(dist < (unsigned long long)d->window))
            return 0;
    }
    return 1;
}

static inline double ref_scale(const qkv_attention_desc *d)
{
    return d->scale > 0.0f ? (double)d->scale : (double)(float)(1.0 / sqrt((double)d->d_k));
}

/* Row (b, h, i) of the float tensors q, k, v laid out by d's strides (k, v float whatever
   d->kv_dtype says): o[c], tol[c] for c < d_v, *lse and *lse_tol. s: n_kv doubles of
   scratch. Returns the number of visible keys. */
static inline size_t ref_row(const qkv_attention_desc *d, const float *q, const float *k, const float *v, size_t b,
                             size_t h, size_t i, double *s, double *o, double *tol, double *lse, double *lse_tol)
{
    const size_t G = d->n_kv_heads ? d->n_heads / d->n_kv_heads : 1, g = h / G;
    const float *qr = q + b * d->q_stride[0] + h * d->q_stride[1] + i * d->q_stride[2];
    const float *kb = k + b * d->k_stride[0] + g * d->k_stride[1];
    const float *vb = v + b * d->v_stride[0] + g * d->v_stride[1];
    const double sc = ref_scale(d), cap = d->softcap;
    double mx = -INFINITY, mag_max = 0.0, cap_max = 0.0;
    size_t n_vis = 0;
    for (size_t j = 0; j < d->n_kv; j++) {
        if (!ref_visible(d, b, i, j))
            continue;
        const float *kr = kb + j * d->k_stride[2];
        double dot = 0.0, mag = 0.0;
        for (size_t x = 0; x < d->d_k; x++) {
            dot += (double)qr[x] * kr[x];
            mag += fabs((double)qr[x] * kr[x]);
        }
        double x = sc * dot;
        if (cap > 0.0) {
            x = cap * tanh(x / cap);
            cap_max = fabs(x) > cap_max ? fabs(x) : cap_max;
        }
        s[j] = x;
        mx = x > mx ? x : mx;
        mag_max = mag > mag_max ? mag : mag_max;
        n_vis++;
    }
    if (n_vis == 0) {
        for (size_t c = 0; c < d->d_v; c++)
            o[c] = tol[c] = 0.0;
        *lse = -INFINITY;
        *lse_tol = 0.0;
        return 0;
    }
    const double es = 2.0 * (double)(d->d_k + 1) * FLT_EPSILON * sc * mag_max + 8.0 * FLT_EPSILON * cap_max;
    double sum = 0.0;
    for (size_t j = 0; j < d->n_kv; j++)
        if (ref_visible(d, b, i, j))
            sum += (s[j] = exp(s[j] - mx));
    for (size_t c = 0; c < d->d_v; c++) {
        double acc = 0.0, vmax = 0.0;
        for (size_t j = 0; j < d->n_kv; j++) {
            if (!ref_visible(d, b, i, j))
                continue;
            const double vj = vb[j * d->v_stride[2] + c];
            acc += s[j] * vj;
            vmax = fabs(vj) > vmax ? fabs(vj) : vmax;
        }
        o[c] = acc / sum;
        tol[c] = (4.0 * es + (2.0 * (double)n_vis + 64.0) * FLT_EPSILON) * vmax + 1e-30;
    }
    *lse = mx + log(sum);
    *lse_tol = 2.0 * es + (2.0 * (double)n_vis + 64.0) * FLT_EPSILON + 4.0 * FLT_EPSILON * fabs(*lse);
    return n_vis;
}

/* ---- IEEE binary16 and bfloat16, from their definitions --------------------------------- */

/* binary16: sign, 5-bit exponent (bias 15), 10-bit fraction; subnormals f 2^-24 */
static inline float ref_f16_decode(uint16_t h)
{
    const int e = (h >> 10) & 0x1f, f = h & 0x3ff;
    double x;
    if (e == 0x1f)
        x = f ? NAN : INFINITY;
    else if (e == 0)
        x = ldexp((double)f, -24);
    else
        x = ldexp(1024.0 + f, e - 25);
    return (float)((h & 0x8000) ? -x : x);
}

/* nearest binary16, ties to even; NaN stays a (quiet) NaN, beyond the range infinity */
static inline uint16_t ref_f16_encode(float f)
{
    const uint16_t sign = signbit(f) ? 0x8000 : 0;
    double a = fabs((double)f);
    if (isnan(f))
        return 0x7e00 | sign;
    if (a >= 65520.0) /* halfway between 65504 and 2^16 rounds to even: infinity */
        return 0x7c00 | sign;
    int e;
    frexp(a, &e); /* a = m 2^e, m in [0.5, 1): the unit in the last place is 2^(e - 11) */
    e = e - 1 < -14 ? -14 : e - 1;
    double m = nearbyint(ldexp(a, 10 - e)); /* exact scaling, rounding to even */
    if (m >= 2048.0) {
        m /= 2.0;
        e++;
    }
    if (m < 1024.0) /* subnormal (e == -14) or zero */
        return (uint16_t)(sign | (uint16_t)m);
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)(m - 1024.0));
}

/* bfloat16: the high half of a binary32 */
static inline float ref_bf16_decode(uint16_t h)
{
    return bits_to_float((uint32_t)h << 16);
}

/* nearest bfloat16, ties to even (on the 16 dropped bits); NaN stays a quiet NaN */
static inline uint16_t ref_bf16_encode(float f)
{
    uint32_t u = float_to_bits(f);
    if (isnan(f))
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

#endif
