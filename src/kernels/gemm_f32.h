/* GEMM kernels written once against the vector layer, instantiated once per ISA by
 * kernels/<isa>.c. The contract (packed layouts, beta == 0, edges) is in kernels.h.
 * The instantiating file defines:
 *   QKV_FN(name)   name##_f32_<isa> (kernels/instantiate.h)
 *   GEMM_MR        rows of the C tile: one broadcast of A per row and k step
 *   GEMM_NV        vectors per tile row, so NR = GEMM_NV * VL
 *   GEMM_MC, GEMM_KC, GEMM_NC   cache blocking (MC % MR == 0, NC % NR == 0)
 *   GEMM_PACK_A_PANELS  optional: the driver's packed-A order from this many B panels on
 *                  (kernels.h, gemm/driver.c); 0 (the default) keeps A in place
 *   GEMM_B_IN_PLACE_ROWS optional: the driver reads a row-major B in place up to this
 *                  many rows of C (kernels.h, gemm/driver.c); 0 (the default): never
 *   GEMM_B_IN_PLACE_NARROW_ROWS optional: the same in the driver's narrow order (default:
 *                  GEMM_B_IN_PLACE_ROWS)
 *   GEMM_PF_B_ROWS optional: software prefetch of B this many k steps ahead (0: none)
 *   GEMM_PF_B_ROW_ONLY optional: 1 asks for that prefetch in ukernel_row alone (the
 *                  packed-A order, where B streams from L2), not in ukernel and ukernel_col
 *                  (their B micropanel stays in L1); 0 (the default): in all three
 *   GEMM_K_STEPS   optional: k steps per trip of the microkernel's k loop (1: none)
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
#ifndef GEMM_PACK_A_PANELS
#define GEMM_PACK_A_PANELS 0
#endif
#ifndef GEMM_B_IN_PLACE_ROWS
#define GEMM_B_IN_PLACE_ROWS 0
#endif
#ifndef GEMM_B_IN_PLACE_NARROW_ROWS
#define GEMM_B_IN_PLACE_NARROW_ROWS GEMM_B_IN_PLACE_ROWS
#endif
/* rows of B ahead that the full tile asks for, a line at a time, each k step (to L1; a hint:
   computed in integers, it may point past B); 0: none, the hardware prefetchers alone */
#ifndef GEMM_PF_B_ROWS
#define GEMM_PF_B_ROWS 0
#endif
#ifndef GEMM_PF_B_ROW_ONLY
#define GEMM_PF_B_ROW_ONLY 0
#endif
#define GEMM_PF_B_OTHER (!GEMM_PF_B_ROW_ONLY) /* ukernel and ukernel_col prefetch B */

/* gemv_t_multi: rows of B per block (R x GEMV_T_JB accumulators, R <= 4 rows of x);
   gemv_n_multi: accumulators per pass over B (>= 8, the chains of one row). Set by the ISA
   file to what its register file holds. */
#ifndef GEMV_T_JB
#define GEMV_T_JB 2
#endif
#ifndef GEMV_N_ACC
#define GEMV_N_ACC 8
#endif
/* the multi kernels prefetch the row of B this many rows ahead (a hint: past the end of B
   it loads nothing and cannot fault) */
#ifndef GEMV_PF_ROWS
#define GEMV_PF_ROWS 16
#endif

#if defined(__GNUC__) && !defined(__clang__)
#define GEMM_UNROLL _Pragma("GCC unroll 32")
#elif defined(__clang__)
#define GEMM_UNROLL _Pragma("unroll")
#else
#define GEMM_UNROLL
#endif

/* GEMM_K_STEPS (optional, ISA file): k steps per trip of the microkernel's k loop, unrolled
   by the compiler (1, the default: not unrolled) */
#ifndef GEMM_K_STEPS
#define GEMM_K_STEPS 1
#endif
#define GEMM_PRAGMA_(x) _Pragma(#x)
#define GEMM_PRAGMA(x) GEMM_PRAGMA_(x) /* x macro-expanded first */
#if GEMM_K_STEPS > 1 && defined(__GNUC__) && !defined(__clang__)
#define GEMM_K_UNROLL GEMM_PRAGMA(GCC unroll GEMM_K_STEPS)
#elif GEMM_K_STEPS > 1 && defined(__clang__)
#define GEMM_K_UNROLL GEMM_PRAGMA(unroll GEMM_K_STEPS)
#else
#define GEMM_K_UNROLL
#endif

/* The tile body, for MRT <= GEMM_MR rows (constant after inlining) and B row p at
   b[p * ldb] (packed: ldb = NR). EDGE = 0: all NR columns; EDGE = 1: only the first nc
   columns of B are read and of C written (masked vectors; vectors past nc are skipped);
   EDGE = 2: as 1 with nc at most VL, so only the first vector of each row is computed
   (an edge panel of a few columns costs half a tile, not a whole one, where NV = 2).
   PF_B = 1: a packed B micropanel (ukernel), asked for GEMM_PF_B_ROWS k steps ahead;
   PF_B = 0: B in place (ukernel_sup: small problems, whose B stays in L1; there the
   prefetches only took load slots: AVX-512 64^3 took 7-9% longer with them, bench_ab).
   PACK = 1 (full tiles, EDGE = 0): B read in place at ldb (prefetched as with PF_B) and
   each row of it stored as loaded into the packed micropanel at bp (ukernel_row and
   ukernel_col with b_src); gemm_tile: PACK = 0.
   PF_C = 1: the tile asks for its rows of C at its start; PF_C = 0 (ukernel_row): only
   where it reads them (beta != 0). In the packed-A order the tiles walk along rows of C,
   and a write-only C (beta == 0) is stores, which the store buffer holds while the lines
   come (likely the stores along each row also train the hardware prefetcher); there the
   hints took fill buffers that the B micropanels stream through from L2. Intel Xeon, calls
   alternated in one process, 15 rounds, median of paired ratios, one thread, two runs:
   AVX2 1024 x 1024 x 64 NT 1.032 / 1.022, 2048 x 2048 x 64 NT 1.012, 4096 x 4096 x 64 NT
   1.019 / 1.006, 1024 x 1024 x 64 A^T 1.019, 512^3, 1000^3, 1024^3 and 2048^3 (whose first
   k block is write-only) 1.00-1.01; AVX-512 0.98-1.016 (noise); two threads level. A small
   gain: scripts/bench_ab.sh (separate processes) put AVX2 1024 x 1024 x 64 NT at -1.6% and
   +2.1% in two runs, within the host's noise. Dropping the hints also where C is read
   (beta != 0: a later k block) measured 0.98-1.01 on the squares. */
static inline __attribute__((always_inline)) void QKV_FN(gemm_tile_x)(const int MRT, const int EDGE, const int ROWS_IN_PLACE, const int PF_B, size_t nc, size_t k,
                                                                      const float *restrict a, size_t rs_a, size_t cs_a,
                                                                      const float *restrict b, size_t ldb,
                                                                      float *restrict c, size_t ldc, float alpha,
                                                                      float beta, const float *c_next, const int PACK,
                                                                      float *restrict bp, const int PF_C)
{
    const int NVT = EDGE == 2 ? 1 : GEMM_NV; /* vectors computed per row */
    size_t w[GEMM_NV]; /* valid lanes of each column vector */
    GEMM_UNROLL
    for (int v = 0; v < GEMM_NV; v++)
        w[v] = !EDGE ? VL : nc <= (size_t)v * VL ? 0 : nc - (size_t)v * VL < VL ? nc - (size_t)v * VL : VL;
    const float *ar[GEMM_MR]; /* row pointers: A(i, p) = ar[i][p * cs_a] */
    GEMM_UNROLL
    for (int i = 0; i < MRT; i++)
        ar[i] = a + i * rs_a;
#ifdef VF_FMA_LANE
    const int ROWS = 0; /* the lane path below reads A through ar[] */
    (void)ROWS_IN_PLACE;
#else
    const int ROWS = ROWS_IN_PLACE && cs_a == 1; /* rows of A in place, see the k loop */
#endif
    const float *ab[(GEMM_MR + 3) / 4];
    GEMM_UNROLL
    for (int g = 0; g < (MRT + 3) / 4; g++)
        ab[g] = a + (size_t)(4 * g) * rs_a;
    vf acc[GEMM_MR][GEMM_NV];
    const int pf_c = PF_C || beta != 0.0f; /* the tile's own rows of C */
    GEMM_UNROLL
    for (int i = 0; i < MRT; i++) {
        if (pf_c)
            __builtin_prefetch(c + (size_t)i * ldc, 1);
        if (!EDGE) {
            if (pf_c)
                __builtin_prefetch(c + (size_t)i * ldc + GEMM_NR - 1, 1);
            /* the caller's next tile (c_next, NULL: none): with a short k the k loop alone
               does not cover a miss on C, and where the caller goes down a column of tiles
               the rows of C, a stride apart, are not a stream the hardware prefetcher
               follows (a hint: computed in integers, it may point past C) */
            if (c_next != NULL) {
                __builtin_prefetch((const void *)((uintptr_t)c_next + (size_t)i * ldc * sizeof(float)), 1);
                __builtin_prefetch((const void *)((uintptr_t)c_next + ((size_t)i * ldc + GEMM_NR - 1) * sizeof(float)), 1);
            }
        }
        GEMM_UNROLL
        for (int v = 0; v < NVT; v++)
            acc[i][v] = vf_zero();
    }
    GEMM_K_UNROLL
    for (size_t p = 0; p < k; p++) {
        vf bv[GEMM_NV];
        if (PF_B && GEMM_PF_B_ROWS > 0) { /* each line of the row of B GEMM_PF_B_ROWS ahead */
            GEMM_UNROLL
            for (int j = 0; j < GEMM_NR; j += 64 / (int)sizeof(float))
                __builtin_prefetch((const void *)((uintptr_t)b + ((size_t)GEMM_PF_B_ROWS * ldb + j) * sizeof(float)), 0, 3);
        }
        GEMM_UNROLL
        for (int v = 0; v < NVT; v++)
            bv[v] = !EDGE ? vf_load(b + v * VL) : w[v] == VL ? vf_load(b + v * VL)
                          : w[v] > 0 ? vf_load_n(b + v * VL, w[v], 0.0f) : vf_zero();
        if (PACK) { /* the row of B just loaded, into its packed micropanel */
            GEMM_UNROLL
            for (int v = 0; v < GEMM_NV; v++)
                vf_store(bp + v * VL, bv[v]);
            bp += GEMM_NR;
        }
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
            for (int v = 0; v < NVT; v++) /* C(i, :) += A(i, p) * B(p, :) */
                acc[i][v] = vf_fma_lane(ag[i / VL], bv[v], i % VL, acc[i][v]);
        }
#else
        GEMM_UNROLL
        for (int i = 0; i < MRT; i++) {
            /* rows in place (cs_a == 1, a constant here): four rows per base pointer at
               offsets 0, rs, 2 rs, 3 rs, which x86 addressing takes as base + index * scale */
            const vf ai = vf_set1(ROWS ? ab[i / 4][(size_t)(i % 4) * rs_a] : *ar[i]); /* broadcast A(i, p) */
            GEMM_UNROLL
            for (int v = 0; v < NVT; v++)
                acc[i][v] = vf_fma(ai, bv[v], acc[i][v]); /* C(i, :) += A(i, p) * B(p, :) */
        }
#endif
        if (ROWS) {
            GEMM_UNROLL
            for (int g = 0; g < (MRT + 3) / 4; g++)
                ab[g] += 1;
        } else {
            GEMM_UNROLL
            for (int i = 0; i < MRT; i++)
                ar[i] += cs_a;
        }
        b += ldb;
    }
    const vf va = vf_set1(alpha), vb = vf_set1(beta);
    const int scaled = alpha != 1.0f; /* 1 * x == x: no multiplies for alpha == 1 */
    GEMM_UNROLL
    for (int i = 0; i < MRT; i++) {
        GEMM_UNROLL
        for (int v = 0; v < NVT; v++) {
            float *cp = c + (size_t)i * ldc + v * VL;
            vf r = scaled ? vf_mul(va, acc[i][v]) : acc[i][v];
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

/* the tile, B read where it is (no packing on the side) */
static inline __attribute__((always_inline)) void QKV_FN(gemm_tile)(const int MRT, const int EDGE, const int ROWS_IN_PLACE, const int PF_B, size_t nc, size_t k,
                                                                    const float *restrict a, size_t rs_a, size_t cs_a,
                                                                    const float *restrict b, size_t ldb,
                                                                    float *restrict c, size_t ldc, float alpha,
                                                                    float beta, const float *c_next)
{
    QKV_FN(gemm_tile_x)(MRT, EDGE, ROWS_IN_PLACE, PF_B, nc, k, a, rs_a, cs_a, b, ldb, c, ldc, alpha, beta, c_next, 0,
                        NULL, 1);
}

static void QKV_FN(gemm_ukernel)(size_t k, const float *restrict a, size_t rs_a, size_t cs_a, const float *restrict b,
                                 float *restrict c, size_t ldc, float alpha, float beta, const float *c_next)
{
    assert(k >= 1 && a != NULL && b != NULL && c != NULL && ldc >= GEMM_NR);
    /* the layouts the callers use, each with what it can of its strides as constants: with
       both strides at run time the loop keeps MR row pointers live, more than the
       general-purpose registers, and spills them (bench_ukernels on AVX-512, k 256: 80%
       of the FMA peak packed before, 85-89% after) */
    if (rs_a == 1 && cs_a == GEMM_MR)
        QKV_FN(gemm_tile)(GEMM_MR, 0, 0, GEMM_PF_B_OTHER, GEMM_NR, k, a, 1, GEMM_MR, b, GEMM_NR,
                          c, ldc, alpha, beta, c_next);
    else if (cs_a == 1) /* rows of A in place (the NN GEMM, attention's K rows) */
        QKV_FN(gemm_tile)(GEMM_MR, 0, 1, GEMM_PF_B_OTHER, GEMM_NR, k, a, rs_a, 1, b, GEMM_NR,
                          c, ldc, alpha, beta, c_next);
    else if (rs_a == 1) /* columns of A in place (attention's P from S^T): one pointer */
        QKV_FN(gemm_tile)(GEMM_MR, 0, 0, GEMM_PF_B_OTHER, GEMM_NR, k, a, 1, cs_a, b, GEMM_NR,
                          c, ldc, alpha, beta, c_next);
    else
        QKV_FN(gemm_tile)(GEMM_MR, 0, 0, GEMM_PF_B_OTHER, GEMM_NR, k, a, rs_a, cs_a, b, GEMM_NR,
                          c, ldc, alpha, beta, c_next);
}

/* a row of full tiles over one packed A micropanel (kernels.h): each tile is ukernel's
   packed case, inlined into the loop over the tiles; with b_src, the tile reads its rows of
   B there (ldb apart) and stores each into its packed micropanel as it goes */
static void QKV_FN(gemm_ukernel_row)(size_t tiles, size_t k, const float *restrict a, float *restrict b, size_t b_step,
                                     float *restrict c, size_t ldc, float alpha, float beta,
                                     const float *restrict b_src, size_t ldb)
{
    assert(tiles >= 1 && k >= 1 && a != NULL && b != NULL && c != NULL && ldc >= tiles * GEMM_NR);
    if (b_src != NULL)
        for (size_t t = 0; t < tiles; t++)
            QKV_FN(gemm_tile_x)(GEMM_MR, 0, 0, 1, GEMM_NR, k, a, 1, GEMM_MR, b_src + t * GEMM_NR, ldb, c + t * GEMM_NR,
                                ldc, alpha, beta, NULL, 1, b + t * b_step, 0);
    else
        for (size_t t = 0; t < tiles; t++)
            QKV_FN(gemm_tile_x)(GEMM_MR, 0, 0, 1, GEMM_NR, k, a, 1, GEMM_MR, b + t * b_step, GEMM_NR, c + t * GEMM_NR,
                                ldc, alpha, beta, NULL, 0, NULL, 0);
}

/* a column of full tiles over one B micropanel (kernels.h), A packed (ROWS = 0: rs 1, cs MR)
   or rows of A in place (ROWS = 1: rs rs_a, cs 1), the tile inlined into the loop; with
   b_src, the first tile reads the rows of B there (ldb apart) and stores each into the
   micropanel b, which the others read */
static inline __attribute__((always_inline)) void QKV_FN(gemm_col_tiles)(const int ROWS, size_t tiles, size_t k,
                                                                         const float *restrict a, size_t rs_a,
                                                                         size_t a_step, float *restrict b,
                                                                         float *restrict c, size_t ldc, float alpha,
                                                                         float beta, int more,
                                                                         const float *restrict b_src, size_t ldb)
{
    const size_t c_step = GEMM_MR * ldc, rs = ROWS ? rs_a : 1, cs = ROWS ? 1 : GEMM_MR;
    size_t t = 0;
    if (b_src != NULL) {
        QKV_FN(gemm_tile_x)(GEMM_MR, 0, ROWS, GEMM_PF_B_OTHER, GEMM_NR, k, a, rs, cs, b_src, ldb, c, ldc, alpha, beta,
                            tiles > 1 || more ? c + c_step : NULL, 1, b, 1);
        t = 1;
    }
    for (; t < tiles; t++)
        QKV_FN(gemm_tile)(GEMM_MR, 0, ROWS, GEMM_PF_B_OTHER, GEMM_NR, k, a + t * a_step, rs, cs, b, GEMM_NR,
                          c + t * c_step, ldc, alpha, beta, t + 1 < tiles || more ? c + (t + 1) * c_step : NULL);
}

static void QKV_FN(gemm_ukernel_col)(size_t tiles, size_t k, const float *restrict a, size_t rs_a, size_t cs_a,
                                     size_t a_step, float *restrict b, float *restrict c, size_t ldc, float alpha,
                                     float beta, int more, const float *restrict b_src, size_t ldb)
{
    assert(tiles >= 1 && k >= 1 && a != NULL && b != NULL && c != NULL && ldc >= GEMM_NR);
    if (rs_a == 1 && cs_a == GEMM_MR) {
        QKV_FN(gemm_col_tiles)(0, tiles, k, a, rs_a, a_step, b, c, ldc, alpha, beta, more, b_src, ldb);
    } else if (cs_a == 1) {
        QKV_FN(gemm_col_tiles)(1, tiles, k, a, rs_a, a_step, b, c, ldc, alpha, beta, more, b_src, ldb);
    } else { /* any other layout: ukernel's own dispatch per tile (the driver packs B first) */
        assert(b_src == NULL);
        for (size_t t = 0; t < tiles; t++)
            QKV_FN(gemm_ukernel)(k, a + t * a_step, rs_a, cs_a, b, c + t * GEMM_MR * ldc, ldc, alpha, beta,
                                 t + 1 < tiles || more ? c + (t + 1) * GEMM_MR * ldc : NULL);
    }
}

/* B in place (kernels.h): one instance per row count, full or masked columns. Rows of A in
   place (cs_a == 1: the small path, in-place edge tiles) take the row-group addressing
   ukernel uses: with one pointer per row, the MR row pointers, B, ldb and the counters
   outnumber the general-purpose registers and the loop reloads pointers from the stack.
   Interleaved medians on an Emerald Rapids Xeon (a KVM guest): AVX-512 64^3, 100^3,
   77 x 300 x 129 1.03-1.05x faster; AVX2 160^3 1.07x, and AVX2 64^3 to 160^3 1.14-1.18x
   while the host kept the core busy with other work (then fewer instructions count), level
   while it did not. */
#define GEMM_SUP_CASE(r)                                                                                         \
    case r:                                                                                                      \
        if (r <= GEMM_MR) {                                                                                      \
            const int R = r <= GEMM_MR ? r : 1;                                                                  \
            if (n == GEMM_NR && cs_a == 1)                                                                       \
                QKV_FN(gemm_tile)(R, 0, 1, 0, GEMM_NR, k, a, rs_a, 1, b, ldb, c, ldc, alpha, beta, c_next);      \
            else if (n == GEMM_NR)                                                                               \
                QKV_FN(gemm_tile)(R, 0, 0, 0, GEMM_NR, k, a, rs_a, cs_a, b, ldb, c, ldc, alpha, beta, c_next);   \
            else if (GEMM_NV > 1 && n <= VL && cs_a == 1)                                                        \
                QKV_FN(gemm_tile)(R, 2, 1, 0, n, k, a, rs_a, 1, b, ldb, c, ldc, alpha, beta, c_next);            \
            else if (GEMM_NV > 1 && n <= VL)                                                                     \
                QKV_FN(gemm_tile)(R, 2, 0, 0, n, k, a, rs_a, cs_a, b, ldb, c, ldc, alpha, beta, c_next);         \
            else if (cs_a == 1)                                                                                  \
                QKV_FN(gemm_tile)(R, 1, 1, 0, n, k, a, rs_a, 1, b, ldb, c, ldc, alpha, beta, c_next);            \
            else                                                                                                 \
                QKV_FN(gemm_tile)(R, 1, 0, 0, n, k, a, rs_a, cs_a, b, ldb, c, ldc, alpha, beta, c_next);         \
        }                                                                                                        \
        break;

static void QKV_FN(gemm_ukernel_sup)(size_t m, size_t n, size_t k, const float *restrict a, size_t rs_a, size_t cs_a,
                                     const float *restrict b, size_t ldb, float *restrict c, size_t ldc, float alpha,
                                     float beta, const float *c_next)
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

/* four vf_reduce_add at once, the same bits: the vector layer's where it has one that
   shares its shuffles (simd/avx512.h), else one by one */
#ifndef VF_HAVE_REDUCE_ADD4
static inline void vf_reduce_add4(vf a, vf b, vf c, vf d, float *out)
{
    out[0] = vf_reduce_add(a);
    out[1] = vf_reduce_add(b);
    out[2] = vf_reduce_add(c);
    out[3] = vf_reduce_add(d);
}
#endif

/* alpha * dot + beta * y, reading y only when beta != 0 */
static inline float QKV_FN(gemv_out)(float dot, float alpha, float beta, const float *y)
{
    return beta == 0.0f ? alpha * dot : alpha * dot + beta * *y;
}

/* Every dot product of gemv_t and gemv_t_multi is one FMA chain over the vectors of k in
   order, the masked tail last, then vf_reduce_add: the same arithmetic whichever kernel,
   row group or thread computes it, so a decode row comes out bit-identical whether it goes
   alone or with the other query heads of its GQA group. R rows of B (R <= 8) are in flight
   at once: 8 chains cover 2 FMA pipes x 4 cycles. */
static inline __attribute__((always_inline)) void QKV_FN(gemv_t_rows)(int R, size_t k, float alpha, const float *x,
                                                                      const float *b, size_t ldb, float beta,
                                                                      float *y)
{
    vf s[8];
    GEMM_UNROLL
    for (int r = 0; r < R; r++)
        s[r] = vf_zero();
    size_t p = 0;
    for (; p + VL <= k; p += VL) {
        const vf x0 = vf_load(x + p);
        GEMM_UNROLL
        for (int r = 0; r < R; r++)
            s[r] = vf_fma(x0, vf_load(b + r * ldb + p), s[r]);
    }
    if (p < k) {
        const vf x0 = vf_load_n(x + p, k - p, 0.0f);
        GEMM_UNROLL
        for (int r = 0; r < R; r++)
            s[r] = vf_fma(x0, vf_load_n(b + r * ldb + p, k - p, 0.0f), s[r]);
    }
    float dot[8];
    GEMM_UNROLL
    for (int r = 0; r < R; r++)
        if (r % 4 == 0 && r + 4 <= R)
            vf_reduce_add4(s[r], s[r + 1], s[r + 2], s[r + 3], dot + r);
        else if (r - r % 4 + 4 > R)
            dot[r] = vf_reduce_add(s[r]);
    GEMM_UNROLL
    for (int r = 0; r < R; r++)
        y[r] = QKV_FN(gemv_out)(dot[r], alpha, beta, y + r);
}

static void QKV_FN(gemv_t)(size_t n, size_t k, float alpha, const float *x, const float *b, size_t ldb, float beta,
                           float *y)
{
    assert(n >= 1 && k >= 1 && x != NULL && b != NULL && y != NULL && ldb >= k);
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        QKV_FN(gemv_t_rows)(8, k, alpha, x, b + j * ldb, ldb, beta, y + j);
    if (j + 4 <= n) {
        QKV_FN(gemv_t_rows)(4, k, alpha, x, b + j * ldb, ldb, beta, y + j);
        j += 4;
    }
    for (; j < n; j++)
        QKV_FN(gemv_t_rows)(1, k, alpha, x, b + j * ldb, ldb, beta, y + j);
}

/* ---- B of float, binary16 or bfloat16 for the multi kernels (DT = GEMV_F32, GEMV_F16,
 * GEMV_BF16; a constant after inlining): 16-bit elements are widened exactly in registers
 * as they are loaded, so F16/BF16 K/V caches are read in place at half the bytes and give
 * the bits of the float kernels on the widened values. */
enum { GEMV_F32 = 0, GEMV_F16 = 1, GEMV_BF16 = 2 };

static inline __attribute__((always_inline)) const void *QKV_FN(gemv_at)(const int DT, const void *b, size_t i)
{
    return DT == GEMV_F32 ? (const void *)((const float *)b + i) : (const void *)((const uint16_t *)b + i);
}

/* w lanes of B from element i (w = VL: a full vector; w < VL: the rest zero) */
static inline __attribute__((always_inline)) vf QKV_FN(gemv_ldb)(const int DT, const void *b, size_t i, size_t w)
{
    if (DT == GEMV_F32)
        return w == VL ? vf_load((const float *)b + i) : vf_load_n((const float *)b + i, w, 0.0f);
    const uint16_t *h = (const uint16_t *)b + i;
    const vh v = w == VL ? vh_load(h) : vh_load_n(h, w);
    return DT == GEMV_F16 ? vf_from_f16(v) : vf_from_bf16(v);
}

/* the start of the row of B GEMV_PF_ROWS rows below element i, as a prefetch hint once per
   64-byte line (lane offset p): streaming from memory the hardware prefetcher alone leaves
   the loads waiting */
static inline __attribute__((always_inline)) void QKV_FN(gemv_pf)(const int DT, const void *b, size_t i, size_t ldb,
                                                                  size_t p)
{
    const size_t es = DT == GEMV_F32 ? sizeof(float) : sizeof(uint16_t);
    if ((p * es) % 64 == 0) /* integer arithmetic: the address may lie past B (or wrap) */
        __builtin_prefetch((const void *)((uintptr_t)b + (i + (DT == GEMV_F32 ? 1 : 2) * GEMV_PF_ROWS * ldb) * es));
}

/* R rows of x (R <= 4) against JB rows of B (JB <= GEMV_T_JB): R x JB chains, each row of
   B loaded once for all R rows of x */
static inline __attribute__((always_inline)) void QKV_FN(gemv_tm_block)(const int DT, const int R, const int JB,
                                                                        size_t k, const float *x, size_t ldx,
                                                                        const void *b, size_t ldb, float *y,
                                                                        size_t ldy)
{
    vf s[4][GEMV_T_JB];
    GEMM_UNROLL
    for (int i = 0; i < R; i++) {
        GEMM_UNROLL
        for (int jb = 0; jb < JB; jb++)
            s[i][jb] = vf_zero();
    }
    size_t p = 0;
    for (; p + VL <= k; p += VL) {
        vf bv[GEMV_T_JB];
        GEMM_UNROLL
        for (int jb = 0; jb < JB; jb++) {
            QKV_FN(gemv_pf)(DT, b, jb * ldb + p, ldb, p);
            bv[jb] = QKV_FN(gemv_ldb)(DT, b, jb * ldb + p, VL);
        }
        GEMM_UNROLL
        for (int i = 0; i < R; i++) {
            const vf x0 = vf_load(x + i * ldx + p);
            GEMM_UNROLL
            for (int jb = 0; jb < JB; jb++)
                s[i][jb] = vf_fma(x0, bv[jb], s[i][jb]);
        }
    }
    if (p < k) {
        vf bv[GEMV_T_JB];
        GEMM_UNROLL
        for (int jb = 0; jb < JB; jb++)
            bv[jb] = QKV_FN(gemv_ldb)(DT, b, jb * ldb + p, k - p);
        GEMM_UNROLL
        for (int i = 0; i < R; i++) {
            const vf x0 = vf_load_n(x + i * ldx + p, k - p, 0.0f);
            GEMM_UNROLL
            for (int jb = 0; jb < JB; jb++)
                s[i][jb] = vf_fma(x0, bv[jb], s[i][jb]);
        }
    }
    GEMM_UNROLL
    for (int i = 0; i < R; i++) {
        if (JB == 4) {
            vf_reduce_add4(s[i][0], s[i][JB > 1 ? 1 : 0], s[i][JB > 2 ? 2 : 0], s[i][JB > 3 ? 3 : 0], y + i * ldy);
        } else {
            GEMM_UNROLL
            for (int jb = 0; jb < JB; jb++)
                y[i * ldy + jb] = vf_reduce_add(s[i][jb]);
        }
    }
}

static inline __attribute__((always_inline)) void QKV_FN(gemv_tm_r)(const int DT, const int R, size_t n, size_t k,
                                                                    const float *x, size_t ldx, const void *b,
                                                                    size_t ldb, float *y, size_t ldy)
{
    size_t j = 0;
    for (; j + GEMV_T_JB <= n; j += GEMV_T_JB)
        QKV_FN(gemv_tm_block)(DT, R, GEMV_T_JB, k, x, ldx, QKV_FN(gemv_at)(DT, b, j * ldb), ldb, y + j, ldy);
    for (; j < n; j++)
        QKV_FN(gemv_tm_block)(DT, R, 1, k, x, ldx, QKV_FN(gemv_at)(DT, b, j * ldb), ldb, y + j, ldy);
}

static inline __attribute__((always_inline)) void QKV_FN(gemv_tm)(const int DT, size_t r, size_t n, size_t k,
                                                                  const float *x, size_t ldx, const void *b,
                                                                  size_t ldb, float *y, size_t ldy)
{
    assert(r >= 1 && r <= 4 && n >= 1 && k >= 1 && ldx >= k && ldb >= k && ldy >= n);
    switch (r) {
    case 1: QKV_FN(gemv_tm_r)(DT, 1, n, k, x, ldx, b, ldb, y, ldy); break;
    case 2: QKV_FN(gemv_tm_r)(DT, 2, n, k, x, ldx, b, ldb, y, ldy); break;
    case 3: QKV_FN(gemv_tm_r)(DT, 3, n, k, x, ldx, b, ldb, y, ldy); break;
    default: QKV_FN(gemv_tm_r)(DT, 4, n, k, x, ldx, b, ldb, y, ldy); break;
    }
}

static void QKV_FN(gemv_t_multi)(size_t r, size_t n, size_t k, const float *x, size_t ldx, const float *b, size_t ldb,
                                 float *y, size_t ldy)
{
    QKV_FN(gemv_tm)(GEMV_F32, r, n, k, x, ldx, b, ldb, y, ldy);
}

static void QKV_FN(gemv_t_multi_f16)(size_t r, size_t n, size_t k, const float *x, size_t ldx, const uint16_t *b,
                                     size_t ldb, float *y, size_t ldy)
{
    QKV_FN(gemv_tm)(GEMV_F16, r, n, k, x, ldx, b, ldb, y, ldy);
}

static void QKV_FN(gemv_t_multi_bf16)(size_t r, size_t n, size_t k, const float *x, size_t ldx, const uint16_t *b,
                                      size_t ldb, float *y, size_t ldy)
{
    QKV_FN(gemv_tm)(GEMV_BF16, r, n, k, x, ldx, b, ldb, y, ldy);
}

static inline void QKV_FN(gemv_store)(float *y, size_t w, vf acc, float alpha, float beta)
{
    vf r = vf_mul(vf_set1(alpha), acc);
    if (beta != 0.0f)
        r = vf_fma(vf_set1(beta), QKV_FN(gemv_ldb)(GEMV_F32, y, 0, w), r);
    if (w == VL)
        vf_store(y, r);
    else
        vf_store_n(y, w, r);
}

/* ---- M = 1 with a large B streamed from memory (the GEMM's NN decode projection) -----
 * gemv_n walks B a column block at a time: 8 vectors of every row, rows ldb apart, so a B
 * of many MiB is read in 512-byte pieces spread over all of its pages, and neither the
 * hardware prefetcher nor the TLB keeps up. gemv_ns reads B row by row instead: columns in
 * chunks of GEMV_NS_COLS, GEMV_NS_ROWS rows at a time, each row a contiguous segment of the
 * chunk, the partial sums of the chunk in an L1 buffer. Each y[j] is one chain of FMAs over
 * p in order, then alpha and beta: the same in every chunking of the columns.
 * No software prefetch: the row segments are streams the hardware prefetchers follow, and a
 * prefetch per line of each row (one per vector on AVX-512) took load slots the loads of B
 * need. On Zen 4, interleaved in one process, medians, a prefetch 8 rows ahead against none:
 * B from L3 1x1024x1024 85.8 -> 73.4 us (one thread), 46.1 -> 37.8 us (two), 1x4096x256
 * 69.5 -> 50.4 us (AVX2 62.8 -> 49.1), 1x16384x64 73.3 -> 55.0 us; B from memory (1x4096x4096)
 * within +-3% either way. Chunks of 2048 or 4096 columns (the buffer then leaves L1) were
 * slower from L3: 1x4096x256 58.6 and 59.0 us.
 * A B of more than QKV_GEMV_STREAM_BYTES (kernels.h: 8 MiB, twice the L3 share of a core on the AMD
 * EPYCs measured) is taken to come from memory, and there rows of up to GEMV_NS_COLS_LONG
 * columns are read whole (a 16 KiB buffer): a row segment of 1024 columns is one 4 KiB
 * page, and a walk of B one page of each row at a time left the hardware prefetchers and
 * the DRAM pages short runs. AMD EPYC Zen 1 (32 KiB L1d, 8 MiB L3 per 4 cores), one thread,
 * one call of all columns, calls interleaved in one process, medians, 1024 -> 4096 columns:
 * 1x4096x4096 9.08 -> 6.53 ms, 1x4096x1024 (16 MiB) 1.99 -> 1.71 ms; from L3, 1x4096x256 (4
 * MiB) 217 -> 197 us there, but Zen 4 measured it slower (above), so B of L3 size keeps
 * 1024. */
enum { GEMV_NS_COLS = 1024, GEMV_NS_COLS_LONG = 4096 };
/* GEMV_NS_ROWS (optional, ISA file; at least 1): rows of B per pass over the partial sums
   (each pass loads and stores the chunk's sums once) */
#ifndef GEMV_NS_ROWS
#define GEMV_NS_ROWS 4
#endif
#define GEMV_NS_ROWS_MAX (GEMV_NS_ROWS > 4 ? GEMV_NS_ROWS : 4) /* the most rows of one step */

static inline __attribute__((always_inline)) void QKV_FN(gemv_ns_rows)(const int R, size_t cols, const float *xs,
                                                                       const float *b, size_t ldb, float *acc)
{
    vf xv[GEMV_NS_ROWS_MAX];
    GEMM_UNROLL
    for (int r = 0; r < R; r++)
        xv[r] = vf_set1(xs[r]);
    size_t j = 0;
    for (; j + VL <= cols; j += VL) {
        vf a = vf_load(acc + j);
        GEMM_UNROLL
        for (int r = 0; r < R; r++)
            a = vf_fma(xv[r], vf_load(b + r * ldb + j), a);
        vf_store(acc + j, a);
    }
    if (j < cols) {
        vf a = vf_load_n(acc + j, cols - j, 0.0f);
        GEMM_UNROLL
        for (int r = 0; r < R; r++)
            a = vf_fma(xv[r], vf_load_n(b + r * ldb + j, cols - j, 0.0f), a);
        vf_store_n(acc + j, cols - j, a);
    }
}

/* R rows of B from row p: gathers their R values of x (incx apart) for gemv_ns_rows */
static inline __attribute__((always_inline)) void QKV_FN(gemv_ns_step)(const int R, size_t p, size_t cols,
                                                                       const float *x, size_t incx, const float *b,
                                                                       size_t ldb, float *acc)
{
    float xs[GEMV_NS_ROWS_MAX];
    GEMM_UNROLL
    for (int r = 0; r < R; r++)
        xs[r] = x[(p + (size_t)r) * incx];
    QKV_FN(gemv_ns_rows)(R, cols, xs, b + p * ldb, ldb, acc);
}

/* n of NV vectors at most (the last one w lanes wide): the sums stay in registers over all
   of k instead of going through the L1 buffer every GEMV_NS_ROWS rows. With few columns the
   buffer's store-to-load round trip, on top of four dependent FMAs per vector, set the
   pace. Each column's FMAs are gemv_ns_rows's, in the same order, so are the bits. Intel
   Xeon, bench_gemm 1 x 64 x 4096 (B of 1 MiB, from L2), medians of 3 alternated rounds:
   AVX-512 8.41 -> 6.53 us (one FMA chain per vector: 4 cycles a row, also what L2 delivers
   of 256 bytes a row), AVX2 10.1 -> 8.07 us. */
static inline __attribute__((always_inline)) void QKV_FN(gemv_ns_reg)(const int NV, size_t w, size_t k, float alpha,
                                                                      const float *x, size_t incx, const float *b,
                                                                      size_t ldb, float beta, float *y)
{
    vf acc[8];
    GEMM_UNROLL
    for (int v = 0; v < NV; v++)
        acc[v] = vf_zero();
    for (size_t p = 0; p < k; p++) {
        const vf xv = vf_set1(x[p * incx]);
        const float *bp = b + p * ldb;
        GEMM_UNROLL
        for (int v = 0; v < NV - 1; v++)
            acc[v] = vf_fma(xv, vf_load(bp + v * VL), acc[v]);
        const vf bl = w == VL ? vf_load(bp + (NV - 1) * VL) : vf_load_n(bp + (NV - 1) * VL, w, 0.0f);
        acc[NV - 1] = vf_fma(xv, bl, acc[NV - 1]);
    }
    GEMM_UNROLL
    for (int v = 0; v < NV; v++)
        QKV_FN(gemv_store)(y + v * VL, v < NV - 1 ? VL : w, acc[v], alpha, beta);
}

static void QKV_FN(gemv_ns)(size_t n, size_t k, float alpha, const float *x, size_t incx, const float *b,
                            size_t ldb, float beta, float *y)
{
    assert(n >= 1 && k >= 1 && x != NULL && b != NULL && y != NULL && ldb >= n);
    if (n <= 8 * VL) { /* in registers: gemv_ns_reg */
        const size_t nv = (n + VL - 1) / VL, w = n - (nv - 1) * VL;
        switch (nv) {
        case 1: QKV_FN(gemv_ns_reg)(1, w, k, alpha, x, incx, b, ldb, beta, y); return;
        case 2: QKV_FN(gemv_ns_reg)(2, w, k, alpha, x, incx, b, ldb, beta, y); return;
        case 3: QKV_FN(gemv_ns_reg)(3, w, k, alpha, x, incx, b, ldb, beta, y); return;
        case 4: QKV_FN(gemv_ns_reg)(4, w, k, alpha, x, incx, b, ldb, beta, y); return;
        case 5: QKV_FN(gemv_ns_reg)(5, w, k, alpha, x, incx, b, ldb, beta, y); return;
        case 6: QKV_FN(gemv_ns_reg)(6, w, k, alpha, x, incx, b, ldb, beta, y); return;
        case 7: QKV_FN(gemv_ns_reg)(7, w, k, alpha, x, incx, b, ldb, beta, y); return;
        default: QKV_FN(gemv_ns_reg)(8, w, k, alpha, x, incx, b, ldb, beta, y); return;
        }
    }
    float acc[GEMV_NS_COLS_LONG] __attribute__((aligned(64)));
    const size_t chunk = qkv_from_memory(k, n) ? GEMV_NS_COLS_LONG : GEMV_NS_COLS;
    for (size_t j0 = 0; j0 < n; j0 += chunk) {
        const size_t cols = n - j0 < chunk ? n - j0 : chunk;
        for (size_t j = 0; j < cols; j++)
            acc[j] = 0.0f;
        size_t p = 0;
        for (; p + GEMV_NS_ROWS <= k; p += GEMV_NS_ROWS)
            QKV_FN(gemv_ns_step)(GEMV_NS_ROWS, p, cols, x, incx, b + j0, ldb, acc);
        if (GEMV_NS_ROWS > 4 && p + 4 <= k) { /* the rest: four rows, then one at a time */
            QKV_FN(gemv_ns_step)(4, p, cols, x, incx, b + j0, ldb, acc);
            p += 4;
        }
        for (; p < k; p++)
            QKV_FN(gemv_ns_step)(1, p, cols, x, incx, b + j0, ldb, acc);
        size_t j = 0;
        for (; j + VL <= cols; j += VL)
            QKV_FN(gemv_store)(y + j0 + j, VL, vf_load(acc + j), alpha, beta);
        if (j < cols)
            QKV_FN(gemv_store)(y + j0 + j, cols - j, vf_load_n(acc + j, cols - j, 0.0f), alpha, beta);
    }
}

/* RG rows of x, NB column vectors (the last one w lanes wide, w <= VL) over all k rows of
   B, with Q chains per column vector and row of x (row p of B goes to chain p mod Q), every
   vector of B loaded once for the RG rows: RG x NB x Q accumulators. A column vector's
   arithmetic depends on Q only (its Q chains, summed in order at the end), not on RG, NB,
   DT (the widening is exact) or the columns beside it. */
static inline __attribute__((always_inline)) void QKV_FN(gemv_n_block)(const int DT, const int RG, const int NB,
                                                                       const int Q, size_t w, size_t k, float alpha,
                                                                       const float *x, size_t incx, size_t ldx,
                                                                       const void *b, size_t ldb,
                                                                       const float *beta, float *y, size_t ldy)
{
    vf acc[4][8]; /* acc[i][q * NB + v], NB * Q <= 8 */
    GEMM_UNROLL
    for (int i = 0; i < RG; i++) {
        GEMM_UNROLL
        for (int c = 0; c < NB * Q; c++)
            acc[i][c] = vf_zero();
    }
    size_t p = 0;
    for (; p + Q <= k; p += Q) {
        GEMM_UNROLL
        for (int q = 0; q < Q; q++) {
            vf xp[4];
            GEMM_UNROLL
            for (int i = 0; i < RG; i++)
                xp[i] = vf_set1(x[i * ldx + (p + q) * incx]);
            const size_t bp = (p + q) * ldb;
            if (RG > 1 || DT != GEMV_F32) /* the multi kernels stream B from memory */
                GEMM_UNROLL
                for (int v = 0; v < NB; v++)
                    QKV_FN(gemv_pf)(DT, b, bp + v * VL, ldb, v * VL);
            GEMM_UNROLL
            for (int v = 0; v < NB; v++) { /* y(j..) += x(p) B(p, j..) */
                const vf bv = QKV_FN(gemv_ldb)(DT, b, bp + v * VL, v < NB - 1 ? VL : w);
                GEMM_UNROLL
                for (int i = 0; i < RG; i++)
                    acc[i][q * NB + v] = vf_fma(xp[i], bv, acc[i][q * NB + v]);
            }
        }
    }
    for (; p < k; p++) {
        vf xp[4];
        GEMM_UNROLL
        for (int i = 0; i < RG; i++)
            xp[i] = vf_set1(x[i * ldx + p * incx]);
        GEMM_UNROLL
        for (int v = 0; v < NB; v++) {
            const vf bv = QKV_FN(gemv_ldb)(DT, b, p * ldb + v * VL, v < NB - 1 ? VL : w);
            GEMM_UNROLL
            for (int i = 0; i < RG; i++)
                acc[i][v] = vf_fma(xp[i], bv, acc[i][v]);
        }
    }
    GEMM_UNROLL
    for (int i = 0; i < RG; i++) {
        GEMM_UNROLL
        for (int v = 0; v < NB; v++) {
            GEMM_UNROLL
            for (int q = 1; q < Q; q++) /* chains summed in a fixed order */
                acc[i][v] = vf_add(acc[i][v], acc[i][q * NB + v]);
            QKV_FN(gemv_store)(y + i * ldy + v * VL, v < NB - 1 ? VL : w, acc[i][v], alpha, beta[i]);
        }
    }
}

/* One column block of NBP vectors with Q chains each (NBP * Q = 8) for R rows of x, cut
   into passes that fit GEMV_N_ACC accumulators: all R rows over NBS vectors at a time (each
   vector of B loaded once for every row), or, when even one vector's chains for R rows do
   not fit, rows in pairs or alone. */
static inline __attribute__((always_inline)) void QKV_FN(gemv_n_part)(const int DT, const int R, const int NBP,
                                                                      const int Q, size_t w, size_t k, float alpha,
                                                                      const float *x, size_t incx, size_t ldx,
                                                                      const void *b, size_t ldb,
                                                                      const float *beta, float *y, size_t ldy)
{
    const int RG = R * Q <= GEMV_N_ACC ? R : 2 * Q <= GEMV_N_ACC ? 2 : 1;
    const int per = GEMV_N_ACC / (RG * Q);
    const int NBS = per >= NBP ? NBP : per >= 4 ? 4 : per >= 2 ? 2 : 1;
    GEMM_UNROLL
    for (int i = 0; i < R; i += RG) {
        const int rg = R - i < RG ? R - i : RG;
        GEMM_UNROLL
        for (int v0 = 0; v0 < NBP; v0 += NBS)
            QKV_FN(gemv_n_block)(DT, rg, NBS, Q, v0 + NBS == NBP ? w : VL, k, alpha, x + i * ldx, incx, ldx,
                                 QKV_FN(gemv_at)(DT, b, (size_t)v0 * VL), ldb, beta + i, y + i * ldy + v0 * VL, ldy);
    }
}

/* Columns in blocks of 8 vectors (one chain each), then the rest as one block of 4, 2 or
   1 vectors (2, 4 or 8 chains each), the last of them masked when n is not a multiple of
   VL: 8 independent FMA chains per row whatever the width, so a narrow y (n = 64 is 4
   AVX-512 vectors) still keeps 2 FMA pipes x 4 cycles busy. */
static inline __attribute__((always_inline)) void QKV_FN(gemv_n_cols)(const int DT, const int R, size_t n, size_t k,
                                                                      float alpha, const float *x, size_t incx,
                                                                      size_t ldx, const void *b, size_t ldb,
                                                                      const float *beta, float *y, size_t ldy)
{
    size_t j = 0;
    for (; j + 8 * VL <= n; j += 8 * VL)
        QKV_FN(gemv_n_part)(DT, R, 8, 1, VL, k, alpha, x, incx, ldx, QKV_FN(gemv_at)(DT, b, j), ldb, beta, y + j,
                            ldy);
    while (j < n) {
        const size_t rest = n - j, vecs = (rest + VL - 1) / VL;
        const size_t nb = vecs >= 4 ? 4 : vecs >= 2 ? 2 : 1;
        const size_t w = nb == vecs ? rest - (nb - 1) * VL : VL; /* lanes of the block's last vector */
        const void *bj = QKV_FN(gemv_at)(DT, b, j);
        if (nb == 4)
            QKV_FN(gemv_n_part)(DT, R, 4, 2, w, k, alpha, x, incx, ldx, bj, ldb, beta, y + j, ldy);
        else if (nb == 2)
            QKV_FN(gemv_n_part)(DT, R, 2, 4, w, k, alpha, x, incx, ldx, bj, ldb, beta, y + j, ldy);
        else
            QKV_FN(gemv_n_part)(DT, R, 1, 8, w, k, alpha, x, incx, ldx, bj, ldb, beta, y + j, ldy);
        j += nb * VL < rest ? nb * VL : rest;
    }
}

static void QKV_FN(gemv_n)(size_t n, size_t k, float alpha, const float *x, size_t incx, const float *b, size_t ldb,
                           float beta, float *y)
{
    assert(n >= 1 && k >= 1 && x != NULL && b != NULL && y != NULL && ldb >= n);
    QKV_FN(gemv_n_cols)(GEMV_F32, 1, n, k, alpha, x, incx, 0, b, ldb, &beta, y, 0);
}

static inline __attribute__((always_inline)) void QKV_FN(gemv_nm)(const int DT, size_t r, size_t n, size_t k,
                                                                  const float *x, size_t ldx, const void *b,
                                                                  size_t ldb, const float *beta, float *y,
                                                                  size_t ldy)
{
    assert(r >= 1 && r <= 4 && n >= 1 && k >= 1 && ldx >= k && ldb >= n && ldy >= n);
    switch (r) {
    case 1: QKV_FN(gemv_n_cols)(DT, 1, n, k, 1.0f, x, 1, ldx, b, ldb, beta, y, ldy); break;
    case 2: QKV_FN(gemv_n_cols)(DT, 2, n, k, 1.0f, x, 1, ldx, b, ldb, beta, y, ldy); break;
    case 3: QKV_FN(gemv_n_cols)(DT, 3, n, k, 1.0f, x, 1, ldx, b, ldb, beta, y, ldy); break;
    default: QKV_FN(gemv_n_cols)(DT, 4, n, k, 1.0f, x, 1, ldx, b, ldb, beta, y, ldy); break;
    }
}

static void QKV_FN(gemv_n_multi)(size_t r, size_t n, size_t k, const float *x, size_t ldx, const float *b,
                                 size_t ldb, const float *beta, float *y, size_t ldy)
{
    QKV_FN(gemv_nm)(GEMV_F32, r, n, k, x, ldx, b, ldb, beta, y, ldy);
}

static void QKV_FN(gemv_n_multi_f16)(size_t r, size_t n, size_t k, const float *x, size_t ldx, const uint16_t *b,
                                     size_t ldb, const float *beta, float *y, size_t ldy)
{
    QKV_FN(gemv_nm)(GEMV_F16, r, n, k, x, ldx, b, ldb, beta, y, ldy);
}

static void QKV_FN(gemv_n_multi_bf16)(size_t r, size_t n, size_t k, const float *x, size_t ldx, const uint16_t *b,
                                      size_t ldb, const float *beta, float *y, size_t ldy)
{
    QKV_FN(gemv_nm)(GEMV_BF16, r, n, k, x, ldx, b, ldb, beta, y, ldy);
}

const qkv_gemm_kernels QKV_FN(qkv_gemm) = {
    QKV_FN(gemm_ukernel), QKV_FN(gemm_ukernel_sup), QKV_FN(gemm_ukernel_row),
    QKV_FN(gemm_ukernel_col), QKV_FN(gemv_t), QKV_FN(gemv_n), QKV_FN(gemv_ns), QKV_FN(gemv_t_multi),
    QKV_FN(gemv_n_multi), {QKV_FN(gemv_t_multi_f16), QKV_FN(gemv_t_multi_bf16)},
    {QKV_FN(gemv_n_multi_f16), QKV_FN(gemv_n_multi_bf16)}, GEMM_MR, GEMM_NR, GEMM_PACK_A_PANELS, GEMM_B_IN_PLACE_ROWS,
    GEMM_B_IN_PLACE_NARROW_ROWS, VL, GEMM_MC, GEMM_KC, GEMM_NC,
};

_Static_assert(GEMM_MC % GEMM_MR == 0 && GEMM_NC % GEMM_NR == 0, "blocking must hold whole micropanels");
