/* Packing for the blocked GEMM (layouts: kernels.h, "GEMM microkernel contract").
 *
 * Transposes are absorbed here: whichever way op(X) is stored, each loop nest reads the
 * source along its contiguous dimension, so a transposed operand costs one strided pass
 * over a block that is about to be reused MC/MR or NC/NR times, never a copy of the whole
 * matrix. Edges are zero-padded so the microkernel always computes a full tile.
 * A and B are one loop over micropanels (pack_panels): where each k step of a panel is
 * contiguous in the source (A transposed, B as stored) it is a copy; where each lane is (a
 * row-major A, B transposed as in S = Q K^T) it goes through 4 x 4 block transposes written
 * with the compiler's generic vector extension, which is SSE2 on x86-64 and Advanced SIMD
 * on AArch64, both baseline. Compiled with baseline flags. Packing is O(mk + kn) against
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

/* dst[p * ldd + j] = src[p * lds + j] for p < kc, j < w: each k step of the panel is
   contiguous in the source */
static inline void copy_panel(size_t kc, size_t w, const float *restrict src, size_t lds, float *restrict dst,
                              size_t ldd)
{
    for (size_t p = 0; p < kc; p++)
        for (size_t j = 0; j < w; j++)
            dst[p * ldd + j] = src[p * lds + j];
}

/* dst[p * ldd + j] = src[j * lds + p] for p < kc, j < w: each lane of the panel is
   contiguous in the source; 4 x 4 blocks, then the leftover k of each group of 4 lanes,
   then the leftover lanes */
static void transpose_panel(size_t kc, size_t w, const float *src, size_t lds, float *dst, size_t ldd)
{
    size_t j = 0;
    for (; j + 4 <= w; j += 4) {
        const float *s = src + j * lds;
        size_t p = 0;
        for (; p + 4 <= kc; p += 4)
            transpose4x4(s + p, lds, dst + p * ldd + j, ldd);
        for (; p < kc; p++)
            for (size_t q = 0; q < 4; q++)
                dst[p * ldd + j + q] = s[q * lds + p];
    }
    for (; j < w; j++)
        for (size_t p = 0; p < kc; p++)
            dst[p * ldd + j] = src[j * lds + p];
}

/* Micropanels of w lanes (rows of op(A), or columns of op(B)) x kc, lane l of step p at
   x[p * ldx + l] (steps_major) or x[l * ldx + p]: panel after panel, w * kc floats each,
   element (l, p) at p * w + l, lanes past total zero */
static inline void pack_panels(int steps_major, size_t total, size_t kc, const float *x, size_t ldx, size_t w, float *dst)
{
    for (size_t l0 = 0; l0 < total; l0 += w, dst += w * kc) {
        const size_t lanes = min_size(w, total - l0);
        if (lanes < w) /* one memset for the padding, not one per k step */
            memset(dst, 0, w * kc * sizeof(float));
        if (steps_major)
            copy_panel(kc, lanes, x + l0, ldx, dst, w);
        else
            transpose_panel(kc, lanes, x + l0 * ldx, ldx, dst, w);
    }
}

void qkv_gemm_pack_a(qkv_trans ta, size_t mc, size_t kc, const float *a, size_t lda, size_t mr, float *dst)
{
    /* op(A)(i, p) is a[p * lda + i] when A is transposed (each k step copies mr contiguous
       floats), else a[i * lda + p] (rows of A: 4 x 4 transposes) */
    assert(mr >= 1 && a != NULL && dst != NULL);
    pack_panels(ta == QKV_TRANS, mc, kc, a, lda, mr, dst);
}

void qkv_gemm_pack_b(qkv_trans tb, size_t kc, size_t nc, const float *b, size_t ldb, size_t nr, float *dst)
{
    /* op(B)(p, j) is b[p * ldb + j] as stored (row p of the panel contiguous), else
       b[j * ldb + p] (S = Q K^T: column j of the panel is row j of the stored B) */
    assert(nr >= 1 && b != NULL && dst != NULL);
    pack_panels(tb == QKV_NOTRANS, nc, kc, b, ldb, nr, dst);
}
