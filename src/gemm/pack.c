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
 * and 1024 x 1024 x 64 NT at 88; the 4 x 4 blocks give 89 and 92. In a whole GEMM the
 * sources come from L3 or memory and the loads, not the shuffles, set the pace (perf on
 * 1024^3 AVX-512: 6% of the time in packing, stalled on the first load of each line), so
 * both loops prefetch ahead (below) and read each row of the source as one run.
 * scripts/bench_ab.sh against per-panel loops without prefetch, 5 rounds x 3, Zen 4:
 * AVX-512 512^3 -7.1% (p < 0.001), 1024^3 -3.0%; AVX2 4096 x 64 x 4096 -11.1%, 512^3
 * -5.2%, 1024^3 -5.5%; no shape slower beyond noise. */
#include <assert.h>
#include <stdint.h>
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

/* Prefetch hints: the sources come from L3 or memory (a KC block of B rows is touched once
   per NC block, the rows of A once per item), in short runs (a 4 KiB row is one page; a
   panel reads 128-512 bytes of each) that the hardware prefetchers pick up late. Each loop
   below asks for the lines it will read PF_ROWS steps or PF_FLOATS lanes ahead. Addresses
   are computed in integers and may point past the source: a prefetch never faults. */
enum {
    LINE_FLOATS = 16, /* floats per 64-byte line */
    PF_ROWS = 8,      /* copy: rows ahead */
    PF_FLOATS = 64,   /* transpose: floats ahead along each lane (4 lines) */
    P_CHUNK = 16      /* transpose: k steps per pass over the lanes of a panel */
};

static inline void prefetch(const float *base, size_t offset)
{
    __builtin_prefetch((const void *)((uintptr_t)base + offset * sizeof(float)));
}

/* n floats from src to dst; the panel widths of the tables (MR 4, 6, 8, 12 for A^T; NR 4,
   12, 16, 32 for B) are constants here, so the copy is inline moves rather than a call per
   k step */
static inline void copy_lanes(float *restrict dst, const float *restrict src, size_t n)
{
    switch (n) {
    case 4: memcpy(dst, src, 4 * sizeof(float)); break;
    case 6: memcpy(dst, src, 6 * sizeof(float)); break;
    case 8: memcpy(dst, src, 8 * sizeof(float)); break;
    case 12: memcpy(dst, src, 12 * sizeof(float)); break;
    case 16: memcpy(dst, src, 16 * sizeof(float)); break;
    case 32: memcpy(dst, src, 32 * sizeof(float)); break;
    default: memcpy(dst, src, n * sizeof(float)); break;
    }
}

/* Each k step contiguous in the source (A transposed, B as stored): lane l of step p at
   x[p * ldx + l]. One pass over the steps, each step's `total` lanes read as one run and
   dealt to the panels (a pass per panel would read each row in w-float pieces, one
   prefetcher stream per piece). */
static void copy_panels(size_t total, size_t kc, const float *restrict x, size_t ldx, size_t w, float *restrict dst)
{
    for (size_t p = 0; p < kc; p++) {
        const float *row = x + p * ldx;
        for (size_t l = 0; l < total; l += LINE_FLOATS)
            prefetch(row, PF_ROWS * ldx + l);
        prefetch(row, PF_ROWS * ldx + total - 1);
        float *d = dst + p * w;
        size_t l0 = 0;
        for (; l0 + w <= total; l0 += w, d += w * kc)
            copy_lanes(d, row + l0, w);
        if (l0 < total)
            memcpy(d, row + l0, (total - l0) * sizeof(float));
    }
}

/* Each lane contiguous in the source (a row-major A, B transposed as in S = Q K^T): lane l
   of step p at x[l * ldx + p]. Per panel, P_CHUNK steps of all its lanes at a time, so that
   every lane's stream is in flight at once: 4 x 4 blocks, then the leftover lanes; the
   last kc % 4 steps after the chunks. Each lane prefetches PF_FLOATS ahead, into the same
   lane of the next panel once its own row segment ends. */
static void transpose_panel(size_t kc, size_t w, size_t lanes, const float *src, size_t lds, float *dst)
{
    size_t p = 0;
    for (; p < kc - kc % 4; p += P_CHUNK) {
        const size_t steps = min_size(P_CHUNK, kc - kc % 4 - p); /* a multiple of 4 */
        const size_t ahead = p + PF_FLOATS < kc ? p + PF_FLOATS : w * lds + p + PF_FLOATS - kc;
        for (size_t j = 0; j < lanes; j++)
            prefetch(src, j * lds + ahead);
        size_t j = 0;
        for (; j + 4 <= lanes; j += 4)
            for (size_t q = 0; q < steps; q += 4)
                transpose4x4(src + j * lds + p + q, lds, dst + (p + q) * w + j, w);
        for (; j < lanes; j++)
            for (size_t q = 0; q < steps; q++)
                dst[(p + q) * w + j] = src[j * lds + p + q];
    }
    for (p = kc - kc % 4; p < kc; p++)
        for (size_t j = 0; j < lanes; j++)
            dst[p * w + j] = src[j * lds + p];
}

/* Micropanels of w lanes (rows of op(A), or columns of op(B)) x kc, lane l of step p at
   x[p * ldx + l] (steps_major) or x[l * ldx + p]: panel after panel, w * kc floats each,
   element (l, p) at p * w + l, lanes past total zero */
static inline void pack_panels(int steps_major, size_t total, size_t kc, const float *x, size_t ldx, size_t w, float *dst)
{
    const size_t tail = total % w;
    if (tail != 0) /* one memset for the padding of the last panel, not one per k step */
        memset(dst + (total - tail) * kc, 0, w * kc * sizeof(float));
    if (steps_major) {
        copy_panels(total, kc, x, ldx, w, dst);
        return;
    }
    for (size_t l0 = 0; l0 < total; l0 += w, dst += w * kc)
        transpose_panel(kc, w, min_size(w, total - l0), x + l0 * ldx, ldx, dst);
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
