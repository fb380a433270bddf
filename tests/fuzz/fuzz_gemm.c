/* libFuzzer target: qkv_gemm with shapes, transposes, leading dimensions, alpha and beta
 * taken from the input (bad enums and too-small leading dimensions included), every ISA.
 * Valid calls are checked against a double reference with the documented bound
 * 2 k FLT_EPSILON sum |a b| |alpha| + 2 FLT_EPSILON |beta c|, padding of C bit-identical;
 * invalid ones must return QKV_ERR_ARG with C bit-identical. abort() on a violation. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t size)
{
    if (size < 12)
        return 0;
    /* header: ta, tb (0, 1 or a bad value), m, n, k (0..70), ld paddings (-1..6), alpha/beta picks */
    const unsigned ta = d[0] % 3 == 2 ? 7u : d[0] % 2, tb = d[1] % 3 == 2 ? 9u : d[1] % 2;
    const size_t m = d[2] % 71, n = d[3] % 71, k = d[4] % 71;
    const int pa = d[5] % 8 - 1, pb = d[6] % 8 - 1, pc = d[7] % 8 - 1;
    static const float alphas[] = {1.0f, -0.5f, 0.0f, 3.0f}, betas[] = {0.0f, 1.0f, 0.5f, -2.0f};
    const float alpha = alphas[d[8] % 4], beta = betas[d[9] % 4];
    const int nan_c = d[10] & 1;
    const uint8_t *fill = d + 12;
    const size_t nfill = size - 12;

    const size_t a_rows = ta == 1 ? k : m, a_cols = ta == 1 ? m : k;
    const size_t b_rows = tb == 1 ? n : k, b_cols = tb == 1 ? k : n;
    const size_t lda = (size_t)((long)a_cols + pa < 0 ? 0 : (long)a_cols + pa);
    const size_t ldb = (size_t)((long)b_cols + pb < 0 ? 0 : (long)b_cols + pb);
    const size_t ldc = (size_t)((long)n + pc < 0 ? 0 : (long)n + pc);
    const int valid = ta <= 1 && tb <= 1 && lda >= a_cols && ldb >= b_cols && ldc >= n;

    const size_t na = a_rows * (lda ? lda : 1) + 1, nb = b_rows * (ldb ? ldb : 1) + 1, nc = m * (ldc ? ldc : 1) + 1;
    float *a = malloc(na * sizeof(float)), *b = malloc(nb * sizeof(float)), *c0 = malloc(nc * sizeof(float));
    float *c = malloc(nc * sizeof(float));
    size_t j = 0;
    /* values in [-2, 2) from the input bytes, cycled */
#define NEXT() (nfill ? (float)((int)fill[j++ % nfill] - 128) / 64.0f : 1.0f)
    for (size_t i = 0; i < na; i++)
        a[i] = NEXT();
    for (size_t i = 0; i < nb; i++)
        b[i] = NEXT();
    for (size_t i = 0; i < nc; i++)
        c0[i] = (nan_c && beta == 0.0f) ? NAN : NEXT();

    for (int isa = 0; isa < QKV_ISA_COUNT; isa++) {
        if (qkv_isa_select((qkv_isa)isa) != QKV_OK)
            continue;
        memcpy(c, c0, nc * sizeof(float));
        const qkv_status st = qkv_gemm((qkv_trans)ta, (qkv_trans)tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        if (!valid) {
            if (st != QKV_ERR_ARG || memcmp(c, c0, nc * sizeof(float)) != 0)
                FAIL("bad arguments: status %d, C %s", (int)st, memcmp(c, c0, nc * sizeof(float)) ? "written" : "kept");
            continue;
        }
        if (st != QKV_OK)
            FAIL("status %d for %zux%zux%zu", (int)st, m, n, k);
        for (size_t i = 0; i < m; i++) {
            for (size_t jj = 0; jj < ldc; jj++) {
                const float got = c[i * ldc + jj];
                if (jj >= n) {
                    if (memcmp(&got, &c0[i * ldc + jj], sizeof got) != 0)
                        FAIL("padding C(%zu,%zu) written", i, jj);
                    continue;
                }
                double tol;
                const double ref = ref_gemm_elem(ta, tb, a, lda, b, ldb, k, i, jj, alpha, beta, c0 + i * ldc + jj,
                                                 1e-30, &tol);
                if (!(fabs(got - ref) <= tol))
                    FAIL("%c%c %zux%zux%zu C(%zu,%zu) = %.9g, ref %.9g", ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, i,
                         jj, got, ref);
            }
        }
    }
    free(a), free(b), free(c0), free(c);
    return 0;
}
