/* GEMM kernels written once against the vector layer, instantiated once per ISA by
 * kernels/<isa>.c. The contract (packed layouts, beta == 0, edges) is in kernels.h.
 * The instantiating file defines:
 *   QKV_FN(name)   name##_f32_<isa> (kernels/instantiate.h)
 *   GEMM_MR        rows of the C tile: one broadcast of A per row and k step
 *   GEMM_NV        vectors per tile row, so NR = GEMM_NV * VL
 *   GEMM_MC, GEMM_KC, GEMM_NC   cache blocking (MC % MR == 0, NC % NR == 0)
 * and gets the constant qkv_gemm_f32_<isa> that the ISA's table points at.
 *
 * Microkernel: a rank-1 update per k step. Load the NV vectors of one B micropanel row,
 * then for each of the MR rows broadcast one A value and do NV FMAs into that row's
 * accumulators. Register budget: MR * NV accumulators + NV B vectors + 1 broadcast, which
 * the tile of each ISA keeps within its register file (see the header of the ISA file).
 * The loops have constant bounds and are fully unrolled, so acc[][] lives in registers.
 * A is read through MR row pointers that advance by cs_a per k step, which serves a
 * packed panel (cs_a = MR) and rows of A in place (cs_a = 1) alike.
 * Each output is one chain of k FMAs: error <= k * FLT_EPSILON * sum |a_p b_p| (+ alpha,
 * beta roundings), inside the 2 k FLT_EPSILON bound of the API. */

#include <assert.h>

#define GEMM_NR (GEMM_NV * VL)

#if defined(__GNUC__) && !defined(__clang__)
#define GEMM_UNROLL _Pragma("GCC unroll 32")
#elif defined(__clang__)
#define GEMM_UNROLL _Pragma("unroll")
#else
#define GEMM_UNROLL
#endif

/* The tile body, for MRT <= GEMM_MR rows (constant after inlining) and B row p at
   b[p * ldb] (packed: ldb = NR). EDGE = 0: all NR columns; EDGE = 1: only the first nc
   columns of B are read and of C written (masked vectors; vectors past nc are skipped). */
static inline __attribute__((always_inline)) void QKV_FN(gemm_tile)(const int MRT, const int EDGE, size_t nc, size_t k,
                                                                    const float *restrict a, size_t rs_a, size_t cs_a,
                                                                    const float *restrict b, size_t ldb,
                                                                    float *restrict c, size_t ldc, float alpha,
                                                                    float beta)
{
    size_t w[GEMM_NV]; /* valid lanes of each column vector */
    GEMM_UNROLL
    for (int v = 0; v < GEMM_NV; v++)
        w[v] = !EDGE ? VL : nc <= (size_t)v * VL ? 0 : nc - (size_t)v * VL < VL ? nc - (size_t)v * VL : VL;
    const float *ar[GEMM_MR]; /* row pointers: A(i, p) = ar[i][p * cs_a] */
    GEMM_UNROLL
    for (int i = 0; i < MRT; i++)
        ar[i] = a + i * rs_a;
    vf acc[GEMM_MR][GEMM_NV];
    GEMM_UNROLL
    for (int i = 0; i < MRT; i++) {
        __builtin_prefetch(c + (size_t)i * ldc, 1);
        if (!EDGE)
            __builtin_prefetch(c + (size_t)i * ldc + GEMM_NR - 1, 1);
        GEMM_UNROLL
        for (int v = 0; v < GEMM_NV; v++)
            acc[i][v] = vf_zero();
    }
    for (size_t p = 0; p < k; p++) {
        vf bv[GEMM_NV];
        GEMM_UNROLL
        for (int v = 0; v < GEMM_NV; v++)
            bv[v] = !EDGE ? vf_load(b + v * VL) : w[v] == VL ? vf_load(b + v * VL)
                          : w[v] > 0 ? vf_load_n(b + v * VL, w[v], 0.0f) : vf_zero();
#ifdef VF_FMA_LANE
        /* VL values of A per register, FMAs by lane: a column of A (rs_a = 1, whole
           groups) is one load per group, rows in place a broadcast and lane inserts */
        vf ag[(GEMM_MR + VL - 1) / VL];
        if (rs_a == 1 && MRT % VL == 0) {
            GEMM_UNROLL
            for (int g = 0; g < MRT / VL; g++)
                ag[g] = vf_load(ar[0] + g * VL);
        } else {
            GEMM_UNROLL
            for (int i = 0; i < MRT; i++)
                ag[i / VL] = i % VL == 0 ? vf_set1(*ar[i]) : vf_load_lane(ar[i], ag[i / VL], i % VL);
        }
        GEMM_UNROLL
        for (int i = 0; i < MRT; i++) {
            GEMM_UNROLL
            for (int v = 0; v < GEMM_NV; v++) /* C(i, :) += A(i, p) * B(p, :) */
                acc[i][v] = vf_fma_lane(ag[i / VL], bv[v], i % VL, acc[i][v]);
        }
#else
        GEMM_UNROLL
        for (int i = 0; i < MRT; i++) {
            const vf ai = vf_set1(*ar[i]); /* broadcast A(i, p) */
            GEMM_UNROLL
            for (int v = 0; v < GEMM_NV; v++)
                acc[i][v] = vf_fma(ai, bv[v], acc[i][v]); /* C(i, :) += A(i, p) * B(p, :) */
        }
#endif
        GEMM_UNROLL
        for (int i = 0; i < MRT; i++)
            ar[i] += cs_a;
        b += ldb;
    }
    const vf va = vf_set1(alpha), vb = vf_set1(beta);
    GEMM_UNROLL
    for (int i = 0; i < MRT; i++) {
        GEMM_UNROLL
        for (int v = 0; v < GEMM_NV; v++) {
            float *cp = c + (size_t)i * ldc + v * VL;
            vf r = vf_mul(va, acc[i][v]);
            if (!EDGE || w[v] == VL) {
                if (beta != 0.0f) /* beta == 0: write-only, C may hold NaN */
                    r = vf_fma(vb, vf_load(cp), r); /* beta C + alpha AB */
                vf_store(cp, r);
            } else if (w[v] > 0) {
                if (beta != 0.0f)
                    r = vf_fma(vb, vf_load_n(cp, w[v], 0.0f), r);
                vf_store_n(cp, w[v], r);
            }
        }
    }
}

static void QKV_FN(gemm_ukernel)(size_t k, const float *restrict a, size_t rs_a, size_t cs_a, const float *restrict b,
                                 float *restrict c, size_t ldc, float alpha, float beta)
{
    assert(k >= 1 && a != NULL && b != NULL && c != NULL && ldc >= GEMM_NR);
    QKV_FN(gemm_tile)(GEMM_MR, 0, GEMM_NR, k, a, rs_a, cs_a, b, GEMM_NR, c, ldc, alpha, beta);
}

/* B in place (kernels.h): one instance per row count, full or masked columns */
#define GEMM_SUP_CASE(r)                                                                                         \
    case r:                                                                                                      \
        if (r <= GEMM_MR) {                                                                                      \
            if (n == GEMM_NR)                                                                                    \
                QKV_FN(gemm_tile)(r <= GEMM_MR ? r : 1, 0, GEMM_NR, k, a, rs_a, cs_a, b, ldb, c, ldc, alpha, beta); \
            else                                                                                                 \
                QKV_FN(gemm_tile)(r <= GEMM_MR ? r : 1, 1, n, k, a, rs_a, cs_a, b, ldb, c, ldc, alpha, beta);   \
        }                                                                                                        \
        break;

static void QKV_FN(gemm_ukernel_sup)(size_t m, size_t n, size_t k, const float *restrict a, size_t rs_a, size_t cs_a,
                                     const float *restrict b, size_t ldb, float *restrict c, size_t ldc, float alpha,
                                     float beta)
{
    assert(m >= 1 && m <= GEMM_MR && n >= 1 && n <= GEMM_NR && k >= 1 && a != NULL && b != NULL && c != NULL);
    _Static_assert(GEMM_MR <= 16, "GEMM_SUP_CASE covers up to 16 rows");
    switch (m) {
        GEMM_SUP_CASE(1) GEMM_SUP_CASE(2) GEMM_SUP_CASE(3) GEMM_SUP_CASE(4) GEMM_SUP_CASE(5) GEMM_SUP_CASE(6)
        GEMM_SUP_CASE(7) GEMM_SUP_CASE(8) GEMM_SUP_CASE(9) GEMM_SUP_CASE(10) GEMM_SUP_CASE(11) GEMM_SUP_CASE(12)
        GEMM_SUP_CASE(13) GEMM_SUP_CASE(14) GEMM_SUP_CASE(15) GEMM_SUP_CASE(16)
    default:
        break;
    }
}
#undef GEMM_SUP_CASE

/* ---- M = 1: streaming kernels, operands read in place ---------------------------------
 * Decode (1 x n x k) has no reuse to pack for: every element of B is used once, so these
 * kernels only have to stream B at memory speed with enough FMA chains in flight. */

/* alpha * dot + beta * y, reading y only when beta != 0 */
static inline float QKV_FN(gemv_out)(float dot, float alpha, float beta, const float *y)
{
    return beta == 0.0f ? alpha * dot : alpha * dot + beta * *y;
}

/* R rows of B (R = 4 or 1) dotted with x, two accumulator chains per row so that four rows
   keep 8 FMAs in flight (2 ports x 4 cycles). The k tail is one masked vector. */
static inline __attribute__((always_inline)) void QKV_FN(gemv_t_rows)(int R, size_t k, float alpha, const float *x,
                                                                      const float *b, size_t ldb, float beta,
                                                                      float *y)
{
    vf s[4], t[4];
    GEMM_UNROLL
    for (int r = 0; r < R; r++)
        s[r] = t[r] = vf_zero();
    size_t p = 0;
    for (; p + 2 * VL <= k; p += 2 * VL) {
        const vf x0 = vf_load(x + p), x1 = vf_load(x + p + VL);
        GEMM_UNROLL
        for (int r = 0; r < R; r++) {
            s[r] = vf_fma(x0, vf_load(b + r * ldb + p), s[r]);
            t[r] = vf_fma(x1, vf_load(b + r * ldb + p + VL), t[r]);
        }
    }
    if (p + VL <= k) {
        const vf x0 = vf_load(x + p);
        GEMM_UNROLL
        for (int r = 0; r < R; r++)
            s[r] = vf_fma(x0, vf_load(b + r * ldb + p), s[r]);
        p += VL;
    }
    if (p < k) {
        const vf x0 = vf_load_n(x + p, k - p, 0.0f);
        GEMM_UNROLL
        for (int r = 0; r < R; r++)
            t[r] = vf_fma(x0, vf_load_n(b + r * ldb + p, k - p, 0.0f), t[r]);
    }
    GEMM_UNROLL
    for (int r = 0; r < R; r++)
        y[r] = QKV_FN(gemv_out)(vf_reduce_add(vf_add(s[r], t[r])), alpha, beta, y + r);
}

static void QKV_FN(gemv_t)(size_t n, size_t k, float alpha, const float *x, const float *b, size_t ldb, float beta,
                           float *y)
{
    assert(n >= 1 && k >= 1 && x != NULL && b != NULL && y != NULL && ldb >= k);
    size_t j = 0;
    for (; j + 4 <= n; j += 4)
        QKV_FN(gemv_t_rows)(4, k, alpha, x, b + j * ldb, ldb, beta, y + j);
    for (; j < n; j++)
        QKV_FN(gemv_t_rows)(1, k, alpha, x, b + j * ldb, ldb, beta, y + j);
}

/* w = VL: a full vector; w < VL: the masked last one */
static inline vf QKV_FN(gemv_load)(const float *p, size_t w)
{
    return w == VL ? vf_load(p) : vf_load_n(p, w, 0.0f);
}

static inline void QKV_FN(gemv_store)(float *y, size_t w, vf acc, float alpha, float beta)
{
    vf r = vf_mul(vf_set1(alpha), acc);
    if (beta != 0.0f)
        r = vf_fma(vf_set1(beta), QKV_FN(gemv_load)(y, w), r);
    if (w == VL)
        vf_store(y, r);
    else
        vf_store_n(y, w, r);
}

/* NB column vectors (the last one w lanes wide, w <= VL) over all k rows of B, with Q
   chains per column (row p goes to chain p mod Q): NB * Q = 8 independent FMA chains
   whatever the width, so a narrow y (n = 64 is 4 AVX-512 vectors) still keeps 2 FMA pipes
   x 4 cycles busy, and every row of B is read once, in one pass. */
static inline __attribute__((always_inline)) void QKV_FN(gemv_n_block)(const int NB, const int Q, size_t w, size_t k,
                                                                       float alpha, const float *x, size_t incx,
                                                                       const float *b, size_t ldb, float beta,
                                                                       float *y)
{
    vf acc[8][8];
    GEMM_UNROLL
    for (int q = 0; q < Q; q++) {
        GEMM_UNROLL
        for (int v = 0; v < NB; v++)
            acc[q][v] = vf_zero();
    }
    size_t p = 0;
    for (; p + Q <= k; p += Q) {
        GEMM_UNROLL
        for (int q = 0; q < Q; q++) {
            const vf xp = vf_set1(x[(p + q) * incx]);
            const float *bp = b + (p + q) * ldb;
            GEMM_UNROLL
            for (int v = 0; v < NB; v++) /* y(j..) += x(p) B(p, j..) */
                acc[q][v] = vf_fma(xp, v < NB - 1 ? vf_load(bp + v * VL) : QKV_FN(gemv_load)(bp + v * VL, w), acc[q][v]);
        }
    }
    for (; p < k; p++) {
        const vf xp = vf_set1(x[p * incx]);
        const float *bp = b + p * ldb;
        GEMM_UNROLL
        for (int v = 0; v < NB; v++)
            acc[0][v] = vf_fma(xp, v < NB - 1 ? vf_load(bp + v * VL) : QKV_FN(gemv_load)(bp + v * VL, w), acc[0][v]);
    }
    GEMM_UNROLL
    for (int v = 0; v < NB; v++) {
        GEMM_UNROLL
        for (int q = 1; q < Q; q++) /* chains summed pairwise-free in a fixed order */
            acc[0][v] = vf_add(acc[0][v], acc[q][v]);
        QKV_FN(gemv_store)(y + v * VL, v < NB - 1 ? VL : w, acc[0][v], alpha, beta);
    }
}

/* Columns in blocks of 8 vectors (one chain each), then the rest as one block of 4, 2 or
   1 vectors, the last of them masked when n is not a multiple of VL. */
static void QKV_FN(gemv_n)(size_t n, size_t k, float alpha, const float *x, size_t incx, const float *b, size_t ldb,
                           float beta, float *y)
{
    assert(n >= 1 && k >= 1 && x != NULL && b != NULL && y != NULL && ldb >= n);
    size_t j = 0;
    for (; j + 8 * VL <= n; j += 8 * VL)
        QKV_FN(gemv_n_block)(8, 1, VL, k, alpha, x, incx, b + j, ldb, beta, y + j);
    while (j < n) {
        const size_t rest = n - j, vecs = (rest + VL - 1) / VL;
        const size_t nb = vecs >= 4 ? 4 : vecs >= 2 ? 2 : 1;
        const size_t w = nb == vecs ? rest - (nb - 1) * VL : VL; /* lanes of the block's last vector */
        if (nb == 4)
            QKV_FN(gemv_n_block)(4, 2, w, k, alpha, x, incx, b + j, ldb, beta, y + j);
        else if (nb == 2)
            QKV_FN(gemv_n_block)(2, 4, w, k, alpha, x, incx, b + j, ldb, beta, y + j);
        else
            QKV_FN(gemv_n_block)(1, 8, w, k, alpha, x, incx, b + j, ldb, beta, y + j);
        j += nb * VL < rest ? nb * VL : rest;
    }
}

const qkv_gemm_kernels QKV_FN(qkv_gemm) = {
    QKV_FN(gemm_ukernel), QKV_FN(gemm_ukernel_sup), QKV_FN(gemv_t), QKV_FN(gemv_n),
    GEMM_MR, GEMM_NR, GEMM_MC, GEMM_KC, GEMM_NC,
};

_Static_assert(GEMM_MC % GEMM_MR == 0 && GEMM_NC % GEMM_NR == 0, "blocking must hold whole micropanels");
