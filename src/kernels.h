/* Internal: the kernel table. One constant table per ISA lives in dispatch.c; drivers and
 * the public entry points call through qkv_kernels_active() and never name an ISA file.
 *
 * Kernel contracts (every ISA implements them identically, see include/qkv.h):
 *   dot(a, b, n)           sum of a[i]*b[i], n == 0 -> 0
 *   exp(x, y, n)           y[i] = exp(x[i]), y == x allowed
 *   softmax(x, y, n, s)    y = softmax(s * x), y == x allowed
 * None reads or writes outside [0, n) of its arrays, for any alignment.
 * The GEMM kernels (gemm field) have their own contract below, tested per table by
 * tests/test_ukernels.c. */
#ifndef QKV_KERNELS_H
#define QKV_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "gemm/blocking.h"
#include "isa_list.h"
#include "qkv.h"

typedef float (*qkv_dot_fn)(const float *a, const float *b, size_t n);
typedef void (*qkv_exp_fn)(const float *x, float *y, size_t n);
typedef void (*qkv_softmax_fn)(const float *x, float *y, size_t n, float scale);

/* ---- GEMM microkernel contract ---------------------------------------------------------
 * Written once here; its callers are gemm/driver.c (with gemm/pack.c) and the fused
 * attention core attention/core.c; it is written once in kernels/gemm_f32.h and instantiated
 * with each ISA's tile by kernels/<isa>.c. In the style of BLIS KernelsHowTo.
 *
 * Register tile. Each ISA fixes MR x NR, the tile of C its microkernel keeps in registers,
 * and the cache blocking MC (rows of A per block, packed or in place; lives in L2), KC
 * (depth of one rank-KC update; a KC x NR micropanel of B stays in L1) and NC (columns of
 * B packed per block, L3). MC is a multiple of MR and NC a multiple of NR. The tile lives
 * in the ISA's qkv_gemm_kernels, next to the code whose registers they describe, and the
 * table points at it, so packing and microkernel can never disagree. The blocking in use
 * is qkv_gemm_blocking_of(): derived once from this machine's caches and the tile
 * (gemm/blocking.h); the constants in qkv_gemm_kernels are its fallback.
 *
 * Packed operands (gemm/pack.c). A micropanel is MR rows of op(A) x kc columns stored
 * column by column: element (i, p) at a[p * MR + i]. A B micropanel is kc rows of op(B) x NR
 * columns stored row by row: element (p, j) at b[p * NR + j]. Rows or columns past the edge
 * of the matrix are zero. The packed blocks start 64-byte aligned; the kernels use
 * unaligned loads, so micropanels inside a block need not be.
 *
 * ukernel(k, a, rs_a, cs_a, b, c, ldc, alpha, beta, c_next):
 *   C[i * ldc + j] = alpha * sum_{p < k} A(i, p) * b[p * NR + j] + beta * C[i * ldc + j],
 *   A(i, p) = a[i * rs_a + p * cs_a], for all i < MR, j < NR: the full tile, always.
 *   A is a packed micropanel (rs_a = 1, cs_a = MR) or, when the driver skips packing A,
 *   MR full rows of op(A) read in place (rs_a = lda, cs_a = 1, or transposed rs_a = 1,
 *   cs_a = lda). B is always a packed micropanel. beta == 0 means C is only written (never
 *   read, so NaN or garbage there does not propagate). k >= 1. The kernel reads only the
 *   MR x k elements A(i, p) and b[0 .. k*NR). Edge tiles are the driver's business: it
 *   calls ukernel_sup on their valid part. c_next: the C tile (same ldc) the caller runs
 *   next where that is worth asking for ahead, or NULL; the kernel only prefetches its MR
 *   rows (a hint, never read, may lie past C), and may prefetch B ahead the same way.
 *
 * ukernel_sup(m, n, k, a, rs_a, cs_a, b, ldb, c, ldc, alpha, beta, c_next): the same product on an
 *   m x n corner of the tile, 1 <= m <= MR, 1 <= n <= NR, with B read in place (the BLIS
 *   "sup" case: small or skinny problems that packing would dominate):
 *   C[i * ldc + j] = alpha * sum_{p < k} A(i, p) * b[p * ldb + j] + beta * C[i * ldc + j]
 *   for i < m, j < n, A(i, p) as above (in place). It reads only A(i < m, p < k) and
 *   b[p * ldb + j] for j < n, writes only C(i < m, j < n) (masked vectors for n < NR), and
 *   keeps beta == 0 write-only. The driver calls it on row-major A and B, no workspace,
 *   and on the edge tiles of the blocked path (A packed or in place, B a packed
 *   micropanel, ldb = NR). c_next as for ukernel (a full-width corner prefetches its m rows).
 *
 * ukernel_row(tiles, k, a, b, b_step, c, ldc, alpha, beta, b_src, ldb): a row of `tiles` full
 *   tiles that share one packed A micropanel (rs_a = 1, cs_a = MR): tile t is
 *   ukernel(k, a, 1, MR, b + t * b_step, c + t * NR, ldc, alpha, beta, NULL), in order, with
 *   the same arithmetic (the same bits), in one call: the driver's packed-A order runs a
 *   row of tiles this way, without a call, its argument set-up and its case dispatch per
 *   tile. tiles >= 1. b_src != NULL: the micropanels are not there yet; tile t reads
 *   B(p, j) = b_src[p * ldb + t * NR + j] (a row-major op(B) in place, full NR columns) and
 *   writes each row it reads to b + t * b_step + p * NR, so that afterwards the
 *   micropanels hold what qkv_gemm_pack_b would have written: packing B costs the tiles two
 *   stores a k step instead of a pass of its own.
 *
 * ukernel_col(tiles, k, a, rs_a, cs_a, a_step, b, c, ldc, alpha, beta, more, b_src, ldb): a
 *   column of `tiles` full tiles that share one packed B micropanel: tile t is
 *   ukernel(k, a + t * a_step, rs_a, cs_a, b, c + t * MR * ldc, ldc, alpha, beta, c_next),
 *   in order, c_next the tile below (t + 1 < tiles, or more != 0: the caller runs a tile
 *   there next), else NULL. The driver's in-place order (jr outside ir) runs its column
 *   of full tiles this way. b_src != NULL (A packed or rows of A in place: cs_a == MR with
 *   rs_a == 1, or cs_a == 1): the first tile reads B at b_src (ldb apart, as ukernel_row)
 *   and writes the micropanel b, which the other tiles then read.
 *
 * M = 1 (decode) skips packing; two streaming kernels read the operands in place:
 *   gemv_t(n, k, alpha, x, b, ldb, beta, y): y[j] = alpha * sum_p x[p] * b[j * ldb + p] + beta * y[j]
 *                                         (op(B) transposed: each output is a dot of two rows)
 *   gemv_n(n, k, alpha, x, incx, b, ldb, beta, y):
 *                                   y[j] = alpha * sum_p x[p * incx] * b[p * ldb + j] + beta * y[j]
 *                                         (op(B) as stored: y is an accumulation of axpys)
 *   for j < n, n >= 1, k >= 1; beta == 0 never reads y. They touch only the elements named.
 *   The operations that give y[j] may depend on j mod 128 and on n - (j - j mod 128), not
 *   otherwise on j or n: the driver splits n into chunks of a multiple of 128 columns for
 *   threads, and a column must come out bit-identical in every chunking. */
typedef void (*qkv_gemm_ukernel_fn)(size_t k, const float *a, size_t rs_a, size_t cs_a, const float *b, float *c,
                                    size_t ldc, float alpha, float beta, const float *c_next);
typedef void (*qkv_gemm_ukernel_sup_fn)(size_t m, size_t n, size_t k, const float *a, size_t rs_a, size_t cs_a,
                                        const float *b, size_t ldb, float *c, size_t ldc, float alpha, float beta,
                                        const float *c_next);
typedef void (*qkv_gemm_ukernel_row_fn)(size_t tiles, size_t k, const float *a, float *b, size_t b_step, float *c,
                                        size_t ldc, float alpha, float beta, const float *b_src, size_t ldb);
typedef void (*qkv_gemm_ukernel_col_fn)(size_t tiles, size_t k, const float *a, size_t rs_a, size_t cs_a,
                                        size_t a_step, float *b, float *c, size_t ldc, float alpha, float beta,
                                        int more, const float *b_src, size_t ldb);
typedef void (*qkv_gemv_t_fn)(size_t n, size_t k, float alpha, const float *x, const float *b, size_t ldb,
                              float beta, float *y);
typedef void (*qkv_gemv_n_fn)(size_t n, size_t k, float alpha, const float *x, size_t incx, const float *b,
                              size_t ldb, float beta, float *y);

/* Several rows of x at once (the query heads of a GQA group at one decode position), each
   element of B loaded once for all of them, 1 <= r <= 4:
     gemv_t_multi(r, n, k, x, ldx, b, ldb, y, ldy):
         y[i * ldy + j] = sum_p x[i * ldx + p] * b[j * ldb + p]               (ldx, ldb >= k)
     gemv_n_multi(r, n, k, x, ldx, b, ldb, beta, y, ldy):
         y[i * ldy + j] = sum_p x[i * ldx + p] * b[p * ldb + j] + beta[i] * y[i * ldy + j]
                                            (ldx >= k, ldb >= n; beta[i] == 0: row i not read)
   for i < r, j < n, n, k >= 1, touching only the elements named. Row i comes out
   bit-identical to gemv_t(n, k, 1, x + i ldx, b, ldb, 0, y + i ldy) and to
   gemv_n(n, k, 1, x + i ldx, 1, b, ldb, beta[i], y + i ldy): a decode row gets the same
   bits alone or in its group. */
typedef void (*qkv_gemv_t_multi_fn)(size_t r, size_t n, size_t k, const float *x, size_t ldx, const float *b,
                                    size_t ldb, float *y, size_t ldy);
typedef void (*qkv_gemv_n_multi_fn)(size_t r, size_t n, size_t k, const float *x, size_t ldx, const float *b,
                                    size_t ldb, const float *beta, float *y, size_t ldy);
/* The same over B of binary16 ([0]) or bfloat16 ([1]) elements, widened exactly as they are
   loaded: the bits of the float kernels on the widened B (F16/BF16 K/V caches in place) */
typedef void (*qkv_gemv_t_multi_h_fn)(size_t r, size_t n, size_t k, const float *x, size_t ldx, const uint16_t *b,
                                      size_t ldb, float *y, size_t ldy);
typedef void (*qkv_gemv_n_multi_h_fn)(size_t r, size_t n, size_t k, const float *x, size_t ldx, const uint16_t *b,
                                      size_t ldb, const float *beta, float *y, size_t ldy);

/* gemv_ns and the GEMM plan (gemm/driver.c: the m == 1 items, the narrow order's KC) take
   an operand of more than this many bytes to come from memory, not from cache
   (kernels/gemm_f32.h, gemv_ns) */
#define QKV_GEMV_STREAM_BYTES (8.0 * 1024 * 1024)
/* a rows x cols block of floats is taken to come from memory (QKV_GEMV_STREAM_BYTES) */
static inline int qkv_from_memory(size_t rows, size_t cols)
{
    return (double)rows * (double)cols * sizeof(float) > QKV_GEMV_STREAM_BYTES;
}

typedef struct qkv_gemm_kernels {
    qkv_gemm_ukernel_fn ukernel;
    qkv_gemm_ukernel_sup_fn ukernel_sup;
    qkv_gemm_ukernel_row_fn ukernel_row;
    qkv_gemm_ukernel_col_fn ukernel_col;
    qkv_gemv_t_fn gemv_t;
    qkv_gemv_n_fn gemv_n;
    qkv_gemv_n_fn gemv_ns; /* gemv_n's contract, B read row by row (a large B from memory) */
    qkv_gemv_t_multi_fn gemv_t_multi;
    qkv_gemv_n_multi_fn gemv_n_multi;
    qkv_gemv_t_multi_h_fn gemv_t_multi_h[2]; /* [0] F16, [1] BF16 */
    qkv_gemv_n_multi_h_fn gemv_n_multi_h[2];
    size_t mr, nr;     /* register tile */
    size_t pack_a_panels; /* the GEMM driver packs A and keeps it outside the jr loop from this
                             many NR-wide B panels on (0: never; gemm/driver.c) */
    size_t b_in_place_rows; /* the GEMM driver reads a row-major B in place, unpacked, up to
                               this many rows of C (0: never; gemm/driver.c) */
    size_t b_in_place_narrow_rows; /* the same in the driver's narrow order (op(B) packed whole
                                      up front otherwise), where it may reach further */
    size_t vl;         /* float lanes of a vector (attn_update takes columns in multiples of it) */
    size_t mc, kc, nc; /* cache blocking when the caches cannot be read */
} qkv_gemm_kernels;

/* The cache blocking the GEMM driver uses with the kernels g (one of the built tables'):
   derived once (pthread_once) from the register tile and this machine's caches, or
   QKV_GEMM_BLOCKING for the ISA chosen at start-up; read-only afterwards (tests aside:
   qkv_gemm_blocking_want), so a function of the machine only. */
qkv_gemm_blocking qkv_gemm_blocking_of(const qkv_gemm_kernels *g);
/* tests: qkv_gemm_blocking_of(g) returns *b from now on (any blocking qkv_gemm_blocking_parse
   or qkv_gemm_blocking_derive gives: another machine's, the tuning knob's), NULL: the one of
   start-up again. Not thread-safe: no GEMM or attention call may be running. */
void qkv_gemm_blocking_want(const qkv_gemm_kernels *g, const qkv_gemm_blocking *b);

/* the ISA's own constants, where the caches cannot be read: one KC and NC for both orders */
static inline qkv_gemm_blocking qkv_gemm_blocking_fallback(const qkv_gemm_kernels *g)
{
    return (qkv_gemm_blocking){.mc = g->mc,
                               .kc = g->kc,
                               .nc = g->nc,
                               .l2_way = 0,
                               .nc_l2 = g->nc,
                               .kc_pa = g->kc,
                               .pa_crowd = 0,
                               .l1_way = 0,
                               .l1_line = 0};
}

/* ---- Attention: one online-softmax step (kernels/attn_update_f32.h) -------------
 * attn_update(rows, cols, s, lds, m, l, o, ldo, d_o), s a rows x cols tile of scores S^T
 * (row j = key j, column i = query i, s[j * lds + i]), m and l the running max and sum of
 * the cols queries, o their cols x d_o output accumulator (o[i * ldo + t]). For each i:
 *   mx = max(m[i], max_j s[j, i]);  a = exp(m[i] - mx);  s[j, i] = exp(s[j, i] - mx);
 *   l[i] = a l[i] + sum_j s[j, i];  m[i] = mx;  o[i, :] *= a  (skipped when a == 1).
 * Preconditions: rows >= 1, cols and d_o multiples of the ISA's vector length, every
 * m[i] >= -FLT_MAX (so a fully masked column, all -inf, gives zeros and a = 1, never NaN).
 * attention/core.c computes s and o around it with the GEMM kernels above, so it is their
 * second caller besides gemm/driver.c: full MR x NR tiles only, B micropanels packed by
 * itself to the layout above, A in place (rows of K; columns of s, rs_a = 1, cs_a = lds). */
typedef void (*qkv_attn_update_fn)(size_t rows, size_t cols, float *s, size_t lds, float *m, float *l, float *o,
                                   size_t ldo, size_t d_o);
/* attn_row(s, n, m, l) -> a: the same step for one query whose n >= 1 scores are contiguous
 * (s[j], the decode path): mx = max(*m, max_j s[j]) (a NaN score makes l NaN),
 * s[j] = exp(s[j] - mx), *l = a *l + sum_j s[j], *m = mx; returns a = exp(m - mx), and the
 * caller rescales its own output row. *m >= -FLT_MAX. Touches only s[0 .. n), *m, *l. */
typedef float (*qkv_attn_row_fn)(float *s, size_t n, float *m, float *l);

/* ---- Attention: soft capping (kernels/softcap_f32.h) ---------------------------------
 * softcap(x, n, cap): x[i] = cap * tanh(x[i] / cap) for i < n, in place; cap > 0 finite.
 * tanh within 2 ULP; NaN stays NaN; +-inf gives +-cap. Touches only x[0 .. n). */
typedef void (*qkv_softcap_fn)(float *x, size_t n, float cap);

/* ---- Conversions between float and 16-bit floats (kernels/convert_f32.h) -----------------
 * F16 is IEEE binary16 (1 sign, 5 exponent, 10 mantissa bits), BF16 is bfloat16 (the high
 * half of a binary32); both are passed as their uint16_t bit patterns.
 *   cvt_f16_f32(src, dst, n), cvt_bf16_f32(src, dst, n)    dst[i] = (float)src[i], exact
 *       (every F16 and BF16 value is a float). A NaN stays a NaN of the same sign (F16: made
 *       quiet, payload kept in the high mantissa bits; BF16: the bits exactly).
 *   cvt_f32_f16(src, dst, n)     round to nearest even; |x| >= 65520 (inf included) gives
 *       inf of the sign of x; results below 2^-14 are subnormal (rounded, not flushed);
 *       NaN gives a quiet NaN of the same sign.
 *   cvt_f32_bf16(src, dst, n)    round to nearest even; overflow to inf; NaN gives a quiet
 *       NaN of the same sign. One allowance: a subnormal input may give a zero of its sign
 *       (the AVX512_BF16 converter, chosen at init where the CPU has it, does: DAZ); the
 *       integer path of every ISA rounds subnormals exactly.
 * n may be 0 (pointers may then be NULL). src and dst must not overlap. None reads or
 * writes outside [0, n) of either array, for any alignment (no alignment required). They
 * are the widening step a driver applies to F16/BF16 K and V tiles while packing. */
typedef void (*qkv_cvt_widen_fn)(const uint16_t *src, float *dst, size_t n);
typedef void (*qkv_cvt_narrow_fn)(const float *src, uint16_t *dst, size_t n);

typedef struct qkv_kernels {
    qkv_isa isa;
    qkv_dot_fn dot;
    qkv_exp_fn exp;
    qkv_softmax_fn softmax;
    const qkv_gemm_kernels *gemm;
    qkv_attn_update_fn attn_update;
    qkv_attn_row_fn attn_row;
    qkv_softcap_fn softcap;
    qkv_cvt_widen_fn cvt_f16_f32;
    qkv_cvt_narrow_fn cvt_f32_f16;
    qkv_cvt_widen_fn cvt_bf16_f32;
    qkv_cvt_narrow_fn cvt_f32_bf16;
} qkv_kernels;

/* GEMM register tiles. Index 0 is t->gemm, the ISA's tile of src/isa_list.h, which the
   attention core uses everywhere; index 1, where an ISA has one, a second tile of the same
   ISA for cores that run its vectors through a datapath half as wide (AVX2: 4 x 24 on AMD
   Zen 1 / Zen+, kernels/avx2_4x24.c); NULL past the last. */
enum { QKV_GEMM_TILES = 2 };
const qkv_gemm_kernels *qkv_gemm_tile_of(const qkv_kernels *t, size_t i);
/* the tile of t for a problem of the public GEMM: the one qkv_gemm_tile_want() or
   QKV_GEMM_TILE asked for where t has it, else index 1 on a half-width core where the
   problem is wide (gemm/driver.c, qkv_gemm_tile_for), else t->gemm */
const qkv_gemm_kernels *qkv_gemm_for(const qkv_kernels *t, int wide);
/* the tile the public GEMM (qkv_gemm, qkv_gemm_ex, the MHA projections) uses for this
   problem with table t (gemm/driver.c) */
const qkv_gemm_kernels *qkv_gemm_tile_for(const qkv_kernels *t, qkv_trans ta, qkv_trans tb, size_t m, size_t n,
                                          size_t k);
/* tests and benchmarks: ask for the tile mr x nr from now on (0, 0: this core's choice) */
void qkv_gemm_tile_want(size_t mr, size_t nr);

/* The table in use now (never NULL). */
const qkv_kernels *qkv_kernels_active(void);
/* The i-th table this build carries (whether or not this CPU runs it), NULL past the last:
   for bounds that must hold whichever ISA is selected later (workspace sizes). */
const qkv_kernels *qkv_kernels_built(size_t i);

/* qkv_gemm_ex for drivers that resolved the kernel table themselves (gemm/driver.c): g is
   the GEMM part of the table the whole public call uses, so one call never mixes ISAs even
   while qkv_isa_select() runs; tp is already validated (or NULL). ws is NULL (the call
   allocates, and may return QKV_ERR_NOMEM) or ws_size bytes of any alignment, at least
   qkv_gemm_ws_bytes(ta, tb, m, n, k, tp's n_threads) (then it never allocates or fails
   once the arguments are valid). That bound holds for every ISA of the build, so it may
   be computed before an ISA switch; 0 on overflow. */
size_t qkv_gemm_ws_bytes(qkv_trans ta, qkv_trans tb, size_t m, size_t n, size_t k, size_t n_threads);
qkv_status qkv_gemm_run(const qkv_gemm_kernels *g, const qkv_threadpool *tp, qkv_trans ta, qkv_trans tb, size_t m,
                        size_t n, size_t k, float alpha, const float *a, size_t lda, const float *b, size_t ldb,
                        float beta, float *c, size_t ldc, void *ws, size_t ws_size);

/* Per-ISA kernels, compiled with that ISA's flags only: every one in the ISA's unit
   src/kernels/<name>.c (through kernels/instantiate.h), named <kernel>_f32_<name> (the
   conversions <kernel>_<name>). Declared for every ISA of src/isa_list.h; only those of
   isa_built.h exist in a given build. */
#define QKV_DECLARE_ISA(ID, name, ...)                                                       \
    float qkv_dot_f32_##name(const float *a, const float *b, size_t n);                       \
    void qkv_exp_f32_##name(const float *x, float *y, size_t n);                              \
    void qkv_softmax_f32_##name(const float *x, float *y, size_t n, float scale);             \
    extern const qkv_gemm_kernels qkv_gemm_f32_##name;                                        \
    void qkv_attn_update_f32_##name(size_t rows, size_t cols, float *s, size_t lds, float *m, float *l, float *o, \
                                    size_t ldo, size_t d_o);                                   \
    float qkv_attn_row_f32_##name(float *s, size_t n, float *m, float *l);                    \
    void qkv_softcap_f32_##name(float *x, size_t n, float cap);                               \
    void qkv_cvt_f16_f32_##name(const uint16_t *src, float *dst, size_t n);                   \
    void qkv_cvt_f32_f16_##name(const float *src, uint16_t *dst, size_t n);                   \
    void qkv_cvt_bf16_f32_##name(const uint16_t *src, float *dst, size_t n);                  \
    void qkv_cvt_f32_bf16_##name(const float *src, uint16_t *dst, size_t n);
QKV_ISA_LIST(QKV_DECLARE_ISA)
#undef QKV_DECLARE_ISA

/* cvt_f32_bf16 with AVX512_BF16 vcvtneps2bf16 (kernels/avx512_bf16.c, its own unit with
   -mavx512bf16; built when meson defines QKV_HAVE_AVX512_BF16): the AVX-512 table's
   cvt_f32_bf16 on CPUs that have the extension (CPUID 7.1 EAX bit 5). Subnormal inputs
   give zeros of their sign (the instruction treats them as zero); otherwise the same bits
   as the integer path. */
void qkv_cvt_f32_bf16_avx512bf16(const float *src, uint16_t *dst, size_t n);

/* the AVX2 GEMM kernels on a 4 x 24 tile (kernels/avx2_4x24.c; built with the AVX2 unit,
   meson defines QKV_HAVE_AVX2_4X24): qkv_gemm_tile_of(AVX2 table, 1) */
extern const qkv_gemm_kernels qkv_gemm_f32_avx2_4x24;

#endif
