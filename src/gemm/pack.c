/* Packing for the blocked GEMM (layouts: kernels.h, "GEMM microkernel contract").
 *
 * Transposes are absorbed here: whichever way op(X) is stored, each loop nest reads the
 * source along its contiguous dimension, so a transposed operand costs one strided pass
 * over a block that is about to be reused MC/MR or NC/NR times, never a copy of the whole
 * matrix. Edges are zero-padded so the microkernel always computes a full tile.
 * Compiled with baseline flags. The one pass that moves data across dimensions in bulk,
 * B transposed (S = Q K^T), goes through 4 x 4 block transposes written with the
 * compiler's generic vector extension, which is SSE2 on x86-64 and Advanced SIMD on
 * AArch64, both baseline; everything else is plain loops. Packing is O(mk + kn) against
 * O(mnk) of arithmetic, yet on Zen 4 the element-wise transpose held 128^3 NT at 73 GFLOP/s
 * and 1024 x 1024 x 64 NT at 88; the 4 x 4 blocks give 89 and 92. */
#include <assert.h>
#include <string.h>

#include "gemm/pack.h"

typedef float f32x4 __attribute__((vector_size(16)));

static size_t min_size(size_t x, size_t y)
{
    return x < y ? x : y;
}

static f32x4 load4(const float *p)
{
    f32x4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void store4(float *p, f32x4 v)
{
    memcpy(p, &v, sizeof v);
}

/* dst[q * ldd + r] = src[r * lds + q] for q, r < 4 */
static void transpose4x4(const float *src, size_t lds, float *dst, size_t ldd)
{
    const f32x4 r0 = load4(src), r1 = load4(src + lds), r2 = load4(src + 2 * lds), r3 = load4(src + 3 * lds);
    const f32x4 t0 = __builtin_shufflevector(r0, r1, 0, 4, 1, 5); /* r0[0] r1[0] r0[1] r1[1] */
    const f32x4 t1 = __builtin_shufflevector(r0, r1, 2, 6, 3, 7); /* r0[2] r1[2] r0[3] r1[3] */
    const f32x4 t2 = __builtin_shufflevector(r2, r3, 0, 4, 1, 5);
    const f32x4 t3 = __builtin_shufflevector(r2, r3, 2, 6, 3, 7);
    store4(dst, __builtin_shufflevector(t0, t2, 0, 1, 4, 5)); /* column 0: r0[0] r1[0] r2[0] r3[0] */
    store4(dst + ldd, __builtin_shufflevector(t0, t2, 2, 3, 6, 7));
    store4(dst + 2 * ldd, __builtin_shufflevector(t1, t3, 0, 1, 4, 5));
    store4(dst + 3 * ldd, __builtin_shufflevector(t1, t3, 2, 3, 6, 7));
}

void qkv_gemm_pack_a(qkv_trans ta, size_t mc, size_t kc, const float *a, size_t lda, size_t mr, float *dst)
{
    /* op(A)(i, p) = a[i * rs + p * cs]. The driver packs A only when it is transposed (then
       rs = 1 and each k step copies mr contiguous floats) and for the partial last row
       panel of an A read in place. */
    assert(mr >= 1 && a != NULL && dst != NULL);
    const size_t rs = ta == QKV_TRANS ? 1 : lda, cs = ta == QKV_TRANS ? lda : 1;
    for (size_t i0 = 0; i0 < mc; i0 += mr, dst += mr * kc) {
        const size_t rows = min_size(mr, mc - i0);
        const float *src = a + i0 * rs;
        if (rows < mr) /* one memset for the padding, not one per k step */
            memset(dst, 0, mr * kc * sizeof(float));
        size_t i = 0;
        if (ta == QKV_NOTRANS) /* row i of the panel is contiguous in A: 4 x 4 blocks */
            for (; i + 4 <= rows; i += 4) {
                size_t p = 0;
                for (; p + 4 <= kc; p += 4)
                    transpose4x4(src + i * lda + p, lda, dst + p * mr + i, mr);
                for (; p < kc; p++)
                    for (size_t q = 0; q < 4; q++)
                        dst[p * mr + i + q] = src[(i + q) * lda + p];
            }
        for (size_t p = 0; p < kc; p++)
            for (size_t r = i; r < rows; r++)
                dst[p * mr + r] = src[r * rs + p * cs];
    }
}

void qkv_gemm_pack_b(qkv_trans tb, size_t kc, size_t nc, const float *b, size_t ldb, size_t nr, float *dst)
{
    assert(nr >= 1 && b != NULL && dst != NULL);
    for (size_t j0 = 0; j0 < nc; j0 += nr, dst += nr * kc) {
        const size_t cols = min_size(nr, nc - j0);
        if (cols < nr) /* one memset for the padding, not one per k step */
            memset(dst, 0, nr * kc * sizeof(float));
        if (tb == QKV_NOTRANS) {
            /* row p of the panel is contiguous in B */
            for (size_t p = 0; p < kc; p++)
                for (size_t j = 0; j < cols; j++)
                    dst[p * nr + j] = b[p * ldb + j0 + j];
        } else {
            /* column j of the panel is row j0 + j of the stored B: 4 x 4 blocks, then the
               leftover rows of B and the leftover k of each block of rows */
            size_t j = 0;
            for (; j + 4 <= cols; j += 4) {
                const float *src = b + (j0 + j) * ldb;
                size_t p = 0;
                for (; p + 4 <= kc; p += 4)
                    transpose4x4(src + p, ldb, dst + p * nr + j, nr);
                for (; p < kc; p++)
                    for (size_t q = 0; q < 4; q++)
                        dst[p * nr + j + q] = src[q * ldb + p];
            }
            for (; j < cols; j++)
                for (size_t p = 0; p < kc; p++)
                    dst[p * nr + j] = b[(j0 + j) * ldb + p];
        }
    }
}
