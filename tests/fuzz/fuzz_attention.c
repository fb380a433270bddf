/* libFuzzer target: qkv_sdpa and qkv_mha_forward with sizes, flags (unknown bits too),
 * scales, NULL pointers and workspace sizes taken from the input, every ISA.
 * sdpa: checked against a double reference, tolerance per output
 *   (4 E_s + (2 n_kv + 64) FLT_EPSILON) max|v|, E_s = 2 d_k FLT_EPSILON max_j scale sum|q k|
 *   (the GEMM bound on one score; the softmax weights carry it as a relative error);
 *   rows with no visible key must be exactly 0.
 * mha: bad arguments and short workspaces must return their status with out untouched; a
 *   valid call with the exact workspace must equal the call without one, bit for bit.
 * abort() on a violation. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

static void fill(float *p, size_t n, const uint8_t *src, size_t nsrc, size_t *j, float amp)
{
    for (size_t i = 0; i < n; i++)
        p[i] = nsrc ? amp * ((float)src[(*j)++ % nsrc] - 128.0f) / 128.0f : 0.5f;
}

static void sdpa_case(const uint8_t *d, size_t size)
{
    const size_t n_q = 1 + d[1] % 40, n_kv = 1 + d[2] % 40, d_k = 1 + d[3] % 20, d_v = 1 + d[4] % 20;
    const unsigned flags = d[5] % 5 == 4 ? 2u : d[5] & 1u; /* 2: an unknown bit */
    static const float scales[] = {0.0f, 0.125f, 1.0f, -1.0f, 3.0f, NAN, INFINITY};
    const float scale = scales[d[6] % 7], amp = d[7] % 2 ? 1.0f : 30.0f;
    const int null_arg = d[8] % 9 == 0 ? 1 + d[9] % 4 : 0;
    const uint8_t *src = d + 10;
    const size_t nsrc = size - 10;
    size_t j = 0;
    float *q = malloc(n_q * d_k * sizeof(float)), *k = malloc(n_kv * d_k * sizeof(float));
    float *v = malloc(n_kv * d_v * sizeof(float)), *o = malloc(n_q * d_v * sizeof(float));
    fill(q, n_q * d_k, src, nsrc, &j, amp);
    fill(k, n_kv * d_k, src, nsrc, &j, amp);
    fill(v, n_kv * d_v, src, nsrc, &j, 1.0f);
    const int valid = !null_arg && flags <= 1u && isfinite(scale);
    const double s = scale > 0.0f ? scale : 1.0 / sqrt((double)d_k);
    for (int isa = 0; isa < QKV_ISA_COUNT; isa++) {
        if (qkv_isa_select((qkv_isa)isa) != QKV_OK)
            continue;
        for (size_t i = 0; i < n_q * d_v; i++)
            o[i] = 42.0f;
        const qkv_status st = qkv_sdpa(null_arg == 1 ? NULL : q, null_arg == 2 ? NULL : k, null_arg == 3 ? NULL : v,
                                       null_arg == 4 ? NULL : o, n_q, n_kv, d_k, d_v, scale, flags);
        if (!valid) {
            int kept = 1;
            for (size_t i = 0; i < n_q * d_v; i++)
                kept &= o[i] == 42.0f;
            if (st != QKV_ERR_ARG || !kept)
                FAIL("sdpa bad argument (null %d, flags %u, scale %g): status %d, out %s", null_arg, flags, scale,
                     (int)st, kept ? "kept" : "written");
            continue;
        }
        if (st != QKV_OK)
            FAIL("sdpa status %d", (int)st);
        double vmax = 0.0;
        for (size_t i = 0; i < n_kv * d_v; i++)
            vmax = fmax(vmax, fabs(v[i]));
        for (size_t i = 0; i < n_q; i++) {
            const long last = flags ? (long)i + (long)n_kv - (long)n_q : (long)n_kv - 1;
            if (last < 0) {
                for (size_t c = 0; c < d_v; c++)
                    if (o[i * d_v + c] != 0.0f)
                        FAIL("sdpa row %zu has no visible key but o = %g", i, o[i * d_v + c]);
                continue;
            }
            double mx = -INFINITY, es = 0.0, sum = 0.0;
            double *sc = malloc(n_kv * sizeof(double));
            for (long jj = 0; jj <= last; jj++) {
                double mag;
                sc[jj] = s * ref_dot(q + i * d_k, 1, k + jj * d_k, 1, d_k, &mag);
                mx = fmax(mx, sc[jj]);
                es = fmax(es, gemm_tol(d_k, s, mag, 0.0, 0.0)); /* the error of one float score */
            }
            for (long jj = 0; jj <= last; jj++)
                sum += exp(sc[jj] - mx);
            const double tol = sdpa_tol(es, n_kv, vmax);
            for (size_t c = 0; c < d_v; c++) {
                double ref = 0.0;
                for (long jj = 0; jj <= last; jj++)
                    ref += exp(sc[jj] - mx) / sum * v[jj * d_v + c];
                if (!(fabs(o[i * d_v + c] - ref) <= tol))
                    FAIL("sdpa %zux%zu dk %zu dv %zu flags %u: o(%zu,%zu) = %.9g, ref %.9g, tol %.3g", n_q, n_kv, d_k,
                         d_v, flags, i, c, o[i * d_v + c], ref, tol);
            }
            free(sc);
        }
    }
    free(q), free(k), free(v), free(o);
}

static void mha_case(const uint8_t *d, size_t size)
{
    const size_t h = 1 + d[1] % 4, E = h * (1 + d[2] % 6) + (d[3] % 7 == 0 ? 1 : 0); /* sometimes E % h != 0 */
    const size_t batch = d[4] % 3, n_q = d[5] % 9, n_kv = 1 + d[6] % 9;
    const int cross = d[7] & 1, torch = d[7] & 2 ? 1 : (d[7] & 4 ? 2 : 0), bias = d[7] & 8 ? 1 : 0;
    const unsigned flags = d[8] % 5 == 4 ? 4u : d[8] & 1u;
    const int ws_mode = d[9] % 4; /* 0 NULL, 1 exact, 2 one byte short, 3 plenty */
    const uint8_t *src = d + 10;
    const size_t nsrc = size - 10;
    size_t j = 0;
    const size_t nkv = cross ? n_kv : n_q;
    float *w[4], *bs[4];
    for (int i = 0; i < 4; i++) {
        w[i] = malloc((E * E + 1) * sizeof(float));
        bs[i] = malloc((E + 1) * sizeof(float));
        fill(w[i], E * E, src, nsrc, &j, 0.5f);
        fill(bs[i], E, src, nsrc, &j, 0.5f);
    }
    const qkv_mha m = {E, h, w[0], w[1], w[2], w[3], bias ? bs[0] : NULL, bias ? bs[1] : NULL,
                       bias ? bs[2] : NULL, bias ? bs[3] : NULL, torch};
    const size_t nx = batch * n_q * E + 1, nxkv = batch * nkv * E + 1;
    float *xq = malloc(nx * sizeof(float)), *xkv = malloc(nxkv * sizeof(float));
    float *out = malloc(nx * sizeof(float)), *out2 = malloc(nx * sizeof(float));
    fill(xq, nx, src, nsrc, &j, 1.0f);
    fill(xkv, nxkv, src, nsrc, &j, 1.0f);
    const int valid = E % h == 0 && batch && n_q && torch <= 1 && flags <= 1u;
    const size_t need = qkv_mha_workspace_size(&m, n_q, nkv);
    if ((E % h == 0 && n_q && torch <= 1) != (need > 0)) /* 0 exactly for a struct the call rejects */
        FAIL("mha_workspace_size %zu for E %zu h %zu n_q %zu torch %d", need, E, h, n_q, torch);
    const size_t ws_size = ws_mode == 1 ? need : ws_mode == 2 ? (need ? need - 1 : 0) : need + 4096;
    unsigned char *ws = ws_mode ? malloc(ws_size + 1) : NULL;
    for (int isa = 0; isa < QKV_ISA_COUNT; isa++) {
        if (qkv_isa_select((qkv_isa)isa) != QKV_OK)
            continue;
        for (size_t i = 0; i < nx; i++)
            out[i] = 42.0f;
        const qkv_status st =
            qkv_mha_forward(&m, batch, xq, n_q, cross ? xkv : NULL, cross ? n_kv : 0, flags, out, ws, ws_size, NULL);
        const qkv_status want = !valid ? QKV_ERR_ARG : (ws_mode == 2 ? QKV_ERR_SIZE : QKV_OK);
        if (st != want)
            FAIL("mha E %zu h %zu batch %zu n_q %zu torch %d flags %u ws %d: status %d, want %d", E, h, batch, n_q,
                 torch, flags, ws_mode, (int)st, (int)want);
        if (st != QKV_OK) {
            for (size_t i = 0; i < nx; i++)
                if (out[i] != 42.0f)
                    FAIL("mha error %d but out[%zu] written", (int)st, i);
            continue;
        }
        if (ws_mode != 0) {
            qkv_mha_forward(&m, batch, xq, n_q, cross ? xkv : NULL, cross ? n_kv : 0, flags, out2, NULL, 0, NULL);
            if (memcmp(out, out2, (nx - 1) * sizeof(float)) != 0)
                FAIL("mha with a workspace differs from mha without one");
        }
    }
    for (int i = 0; i < 4; i++)
        free(w[i]), free(bs[i]);
    free(xq), free(xkv), free(out), free(out2), free(ws);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 10)
        return 0;
    if (data[0] & 1)
        mha_case(data, size);
    else
        sdpa_case(data, size);
    return 0;
}
