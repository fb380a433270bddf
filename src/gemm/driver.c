/* qkv_gemm: argument checks, the special cases, and the Goto/BLIS five-loop driver.
 *
 *   C = alpha * op(A) * op(B) + beta * C        op(A): m x k, op(B): k x n, row-major
 *
 * Paths, in order:
 *   k == 0 or alpha == 0   C = beta * C (A and B are not read; beta == 0 writes zeros)
 *   m == 1 (decode)        no packing: op(B) transposed -> gemv_t (one dot per output, rows
 *                          of B streamed), else gemv_ns (axpys over the rows of B, read
 *                          row by row)
 *   small or m skinny, A and B row-major: no packing, ukernel_sup on both in place
 *   otherwise              blocked: for jc (NC columns) / pc (KC depth, pack B) / ic (MC
 *                          rows; pack A if transposed or in the packed-A order, else read
 *                          in place) / jr (NR) / ir (MR): microkernel on an MR x NR tile;
 *                          with few rows and A in place, B read in place (see below)
 * The first KC block applies the caller's beta, later blocks accumulate (beta = 1), so
 * beta == 0 never reads C. Edge tiles are ukernel_sup calls on their valid rows and
 * columns, so nothing outside the m x n window of C is read or written.
 * The tile and blocking sizes come from the table the caller resolved (qkv_gemm and
 * qkv_gemm_ex: the active ISA's, read once per call; drivers pass the one they resolved for
 * the whole call). Threads: the plan below cuts the work into items by shape; on several
 * tasks (threadpool.h) the blocked path gives each task a region of C whose items it runs
 * in order, the narrow order gives each task a run of its row blocks and, with an A from
 * cache and a small op(B), its own packed op(B) (else it spreads its items), and m == 1
 * takes a chunk of columns per task; the results are bit-identical for every thread count.
 * One workspace (a packed B block and per task a packed A block; regions and the narrow
 * order's own op(B): per task both; or the gathered x of the m == 1 path) is carved from
 * the caller's memory or allocated once per call.
 * Compiled with baseline flags: all arithmetic happens in the ISA kernels, except the
 * O(mn) scaling for k == 0. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "gemm/pack.h"
#include "kernels.h"
#include "threadpool.h"

/* C = beta * C, beta == 0 without reading C */
static void scale_c(size_t m, size_t n, float beta, float *c, size_t ldc)
{
    if (beta == 1.0f)
        return;
    for (size_t i = 0; i < m; i++) {
        float *ci = c + i * ldc;
        if (beta == 0.0f)
            memset(ci, 0, n * sizeof(float));
        else
            for (size_t j = 0; j < n; j++)
                ci[j] *= beta;
    }
}

/* The blocking of one call: the ISA's blocking for this machine (qkv_gemm_blocking_of:
   from the cache sizes, fixed at start-up, never from the thread count; the packed-A
   order's KC where pack_a), blocks no larger than the problem; k split into equal KC blocks
   (k = 300 with KC 256: 150 + 150, not 256 + 44) so that every block amortizes the
   microkernel epilogue. */
typedef struct blocking {
    size_t kc, mc, nc;
} blocking;

/* KC blocks of depth kc (the last one may be shorter) that cover k */
static size_t k_blocks_of(size_t k, size_t kc)
{
    return (k + kc - 1) / kc;
}

static int narrow_ok(const qkv_gemm_kernels *g, qkv_trans ta, size_t n, size_t k, size_t kc);

/* the packed-A order's NC at depth kc (gemm/blocking.h) */
static size_t nc_in_l2(const qkv_gemm_kernels *g, size_t kc)
{
    const qkv_gemm_blocking cb = qkv_gemm_blocking_of(g);
    return qkv_gemm_nc_in_l2(&cb, g->nr, kc);
}

/* KC of the narrow order (below) with a row-major A read in place and larger than
   QKV_GEMV_STREAM_BYTES (taken to come from memory): at least this. There an item reads
   each of its MR rows of A in runs of KC floats, lda apart (16 KiB at 4096 x 64 x 4096),
   and the hardware prefetchers pick up each run late; the KC of the cache model (A and B
   micropanels both in L1) makes those runs 1 KiB. The B micropanel of a longer KC streams
   from L2 instead, which the tile's few B loads per k step afford. Intel Xeon (AVX-512,
   48 KiB L1d, 2 MiB L2), KC 256 (AVX2 512) -> 2048, medians: bench_gemm 4096 x 64 x 4096
   AVX-512 17.9 -> 14.2 ms (one thread), 8.72 -> 7.24 ms (two), AVX2 26.4 -> 23.6 ms; calls
   in one process, 2048 x 64 x 2048 AVX-512 3.29 -> 3.08 ms, AVX2 level, 4096 x 128 x 2048
   AVX-512 13.6 -> 12.7 ms. An A from cache keeps the model's KC: 1024 x 64 x 1024 (4 MiB)
   on AVX2 ran 1271 -> 1361-1385 us with KC 1024. */
enum { NARROW_KC = QKV_GEMM_KC_MAX };

static blocking plan(const qkv_gemm_kernels *g, int pack_a, qkv_trans ta, size_t m, size_t n, size_t k)
{
    const qkv_gemm_blocking cb = qkv_gemm_blocking_of(g);
    size_t kc = pack_a ? cb.kc_pa : cb.kc;
    if (!pack_a && narrow_ok(g, ta, n, k, kc) && qkv_from_memory(m, k))
        kc = qkv_max(kc, NARROW_KC);
    const size_t k_blocks = k_blocks_of(k, kc);
    return (blocking){(k + k_blocks - 1) / k_blocks, qkv_min(cb.mc, qkv_round_up(m, g->mr)),
                      qkv_min(cb.nc, qkv_round_up(n, g->nr))};
}

/* plan() with the KC of another plan where kc != 0 (a region's blocks keep the KC of the
   whole call: the k blocks decide the bits) */
static blocking plan_kc(const qkv_gemm_kernels *g, int pack_a, qkv_trans ta, size_t m, size_t n, size_t k, size_t kc)
{
    blocking b = plan(g, pack_a, ta, m, n, k);
    if (kc != 0)
        b.kc = kc;
    return b;
}

/* plan() for the blocked loops themselves: a row-major A read in place gets the MC of its
   leading dimension (qkv_gemm_mc_in_place: never more than plan's, so the workspace that
   layout() sized with plan() holds) */
static blocking plan_in_place(const qkv_gemm_kernels *g, qkv_trans ta, size_t lda, size_t m, size_t n, size_t k,
                              size_t kc)
{
    blocking b = plan_kc(g, 0, ta, m, n, k, kc);
    if (ta == QKV_NOTRANS) {
        const qkv_gemm_blocking cb = qkv_gemm_blocking_of(g);
        b.mc = qkv_min(b.mc, qkv_gemm_mc_in_place(&cb, g->mr, lda, b.kc));
    }
    return b;
}

/* ---- the plan: work items by shape --------------------------------------------------- *
 * Blocked path: for each jc block of NC columns and each pc block of KC depth, the kc x nc
 * block of op(B) is packed once into micropanels (items: groups of B_PANELS NR-wide
 * panels; a row-major op(B) of up to FILL_B_BYTES by the first tiles that read it, see
 * fill_ok), then the items of the block compute C in one of two orders. One task runs these
 * items in order; several tasks run regions of C (gemm_run), each its own items in order,
 * so on any number of tasks the items below set the loop order, not the load balance:
 *   packed A, where the table asks for it (A transposed and m n k above PA_TRANS_MIN_MNK,
 *     or n of twice pack_a_panels B panels, or of pack_a_panels with m of more than
 *     PA_MIN_PANELS row panels; the AVX-512 table from 8 panels, the AVX2 6 x 16 one from
 *     64; on a half-rate core also a row-major A whose rows crowd an L1 set: packs_a): an
 *     item is an ic block of MC rows and all nc columns. It packs its rows of A (a row-major
 *     A packed for crowding: one MR-row panel at a time, before its tiles) and runs ir
 *     outside jr: one MR x KC micropanel of A stays in L1 while the B micropanels stream
 *     from L2, where the block of B stays (its KC and NC are kc_pa and nc_l2:
 *     gemm/blocking.h; on a half-rate core the block streams from L3), and consecutive tiles
 *     of C share their rows (12 rows of a wide C are 12 pages: the jr-outer order walks 12
 *     new pages per tile down an MC block, past what the DTLB holds). MC gives ITEMS_WANTED
 *     items (never above the model's), and where the shape asks for packing A, items of at
 *     most PA_ITEM_PANELS row panels: with few rows per block, the rows of C an item writes
 *     stay in the DTLB (packing and tiles do not depend on MC: each item packs its own rows,
 *     panels start at multiples of MR). Chosen when tasks shared the items of a block (two
 *     panels against 15-16 items on an Emerald Rapids Xeon, 2 threads: 1024 x 1024 x 64 NT
 *     1.10-1.20x, 512^3 1.06-1.10x; one thread 0.94-1.02x, most runs 0.98-1.0); with
 *     regions, 1, 6 or 16 panels ran within 1-2% of two on one thread and on two (Intel
 *     Xeon, 512^3, 1024^3, 1024 x 1024 x 64 NT), so it stays. A row-major A packed for
 *     crowding alone (fewer than pack_a_panels B panels, half-rate cores) keeps the 16 items
 *     measured on Zen 4: in the narrow order an item's rows meet all of op(B), which thin
 *     items would stream once per two panels.
 *   otherwise: items are (ic block of MC rows) x (a chunk of the nc columns, a multiple of
 *     NR), jr outside ir: the B micropanel stays in L1 over the ir loop. A row-major A is
 *     read in place (O = P V with d = 64: packing A would cost as much as the product
 *     saves), a transposed one packed per item.
 * Narrow op(B) (n at most NARROW_COLS, A row-major, the whole packed op(B) at most
 * NARROW_B_BYTES: O = P V, 4096 x 64 x 4096): op(B) is packed whole up front (items: a pc
 * block's group of B_PANELS panels), then an item is an ic block that runs the pc blocks
 * itself, in order, each as the item of that (jc, pc) block above would. Each row of A is
 * then read from start to end by one item, in the order it lies in memory, instead of a KC
 * slice per pass over all of A (at 4096 x 64 x 4096 a pass reads runs of KC floats 16 KiB
 * apart, which the hardware prefetchers pick up late, and with A from memory those runs set
 * the pace); the item's block of C stays in cache over its pc blocks; and there are two
 * phases, not two per pc block. Same tiles, same ukernel calls, same pc order: the same
 * bits as the (jc, pc) order. bench_ab on Zen 4 (5 rounds x 3): 4096 x 64 x 4096 AVX2 30.8
 * -> 22.8 ms, AVX-512 26.1 -> 24.1 ms (p < 0.001 both), on two threads 13.4 -> 13.0 ms;
 * 1024 x 64 x 1024 unchanged beyond noise.
 * B in place. With few rows (m at most the table's b_in_place_rows: the AVX-512 one), a
 * row-major op(B) whose rows are at most B_IN_PLACE_LDB floats (a page) apart and rows of
 * A read in place, neither order packs B: the tiles read it at ldb (ukernel_sup), and
 * nothing is packed or allocated. Each B micropanel meets at most 11 tiles, too few to pay
 * for its copy, and rows of B close together stream from L2 about as fast as packed ones.
 * Farther apart they do not: 96 x 96 x 1024 with ldb 2048, 3000 and 4096 floats (rows
 * sharing L2 sets, or a page per few rows) ran 0.79-0.93x against packing, 64 x 256 x
 * 1024 with ldb 2048 0.95x (with ldb 512 to 1024: 1.06-1.14x). The tiles do the same
 * arithmetic on the same values as the packed ones: the same bits. Intel Xeon, AVX-512,
 * calls alternated in one process, median of paired ratios against packing, one thread /
 * two (there against each task packing its own op(B) or its region's B):
 *   narrow order: 96 x 96 x 1024 1.01-1.11x / 1.09-1.15x, 64 x 64 x 1024 1.10-1.16x /
 *   1.19-1.23x, 120 x 64 x 4096 1.10-1.12x / 1.13-1.25x, 128 x 128 x 512 1.07-1.10x /
 *   1.01-1.06x, 100 x 90 x 700 1.12x / 1.19x, 96 x 128 x 8192 1.08x;
 *   blocked, A in place: 64 x 256 x 1024 1.18x / 1.08x, 100 x 300 x 1000 1.11x /
 *   1.02-1.07x, 128 x 384 x 768 1.08x / 0.98-1.05x, 128 x 256 x 256 1.10x / 1.00x, 120 x
 *   448 x 1024 1.08x / 0.98-1.00x.
 * With more rows the copy pays: 200 x 64 x 1024 1.05x / 1.00x, 256 x 128 x 256 0.95-1.00x,
 * 1024 x 64 x 1024 0.98x, 192 x 128 x 512 1.02x / 0.94x. The packed-A order (n of 16 B
 * panels or more) keeps packing B: its items stream the B block once per row panel. The
 * AVX2 6 x 16 tile (a line of B per k step, not two) gained less there and lost some in the
 * narrow order: 64 x 64 x 1024 1.07x / 1.08x, 96 x 96 x 1024 1.01x, 120 x 64 x 4096
 * 0.95-1.04x / 1.03x, 128 x 128 x 512 1.01x / 0.89x, 200 x 64 x 1024 0.99x, 384 x 96 x 512
 * 0.93x. On an AMD EPYC Zen 3 (the AVX2-only CPU that table serves; 32 KiB L1d, 512 KiB L2)
 * the narrow order gains and the blocked one loses, so that table reads B in place in the
 * narrow order only (b_in_place_narrow_rows; kernels/avx2.c has the figures): blocked, A in
 * place, 128 x 1024 x 64 0.65x (rows of B 4 KiB apart), 128 x 512 x 512 0.95x. The tiles
 * not measured (NEON, the AVX2 4 x 24) keep packing.
 * k is never split, and every C element sees the same microkernel calls in the same pc
 * order whatever task runs its item or region, so the result does not depend on the
 * thread count.
 * m == 1 path: cut by the task count too. The run takes one chunk of the output
 * columns per task (gemm_run), a multiple of 128 columns, the column block that the gemv
 * kernels' arithmetic may depend on (kernels.h), so the chunking never changes a result;
 * the shape only caps the tasks (GEMV_COLS columns each at least). One task (no pool, or one
 * thread) reads each row of B whole (gemv_ns) or each row of op(B) once (gemv_t), and
 * several tasks read the longest segments they can. AMD EPYC Zen 1, one thread, calls
 * interleaved in one process, medians: 1x1024x1024 (B from L3) 453 -> 271 us against
 * 256-column items, 1x2048x2048 3.28 -> 2.28 ms.
 * Threads pay only above PARALLEL_FLOPS (blocked) or PARALLEL_BYTES of B (m == 1); below,
 * one task runs every item in order. The narrow order spreads its items over the tasks,
 * or gives each task a run of them (narrow_own_item). */
enum {
    B_PANELS = 4,             /* NR-wide B panels packed per item */
    COL_CHUNK_MIN = 128,      /* columns of a compute item at least (keeps A reuse high) */
    ITEMS_WANTED = 16,         /* items per (jc, pc) block worth splitting columns for */
    PA_ITEM_PANELS = 2,       /* the packed-A order: MR-row panels per item at most */
    PA_MIN_PANELS = 32,       /* the packed-A order by shape: more MR-row panels than this */
    PA_TRANS_MIN_MNK = 1000000, /* ... and for a transposed A m n k above this (100^3) */
    ROW_BLOCK_MIN = 64,       /* the in-place order's row blocks: rows at least, when split for items */
    GEMV_COLS = 256,          /* m == 1: columns per task at least */
    PARALLEL_FLOPS = 1 << 22, /* 2 m n k below this: one task (64^3 is 2^19) */
    PARALLEL_BYTES = 1 << 20, /* m == 1: bytes of B below this: one task */
    NARROW_COLS = 128,        /* the narrow order: n at most this, */
    NARROW_B_BYTES = 4 << 20, /* and the whole packed op(B) at most this */
    NARROW_OWN_BYTES = 1 << 20, /* on several tasks, each packs its own op(B) up to this */
    B_IN_PLACE_LDB = 1024,      /* B read in place: ldb at most this (and m at most the
                                   table's b_in_place_rows) */
    FILL_B_BYTES = 2 << 20      /* B packed on the way up to this much of op(B) (fill_ok) */
};

typedef struct gemm_plan {
    blocking b;
    size_t gemv_tasks; /* m == 1: tasks at most (GEMV_COLS columns each) */
    size_t col_chunk; /* columns of a compute item inside an nc block */
    size_t n_jr;      /* column chunks per nc block */
    size_t n_ic;      /* row blocks */
    int chunk_major;  /* items numbered column chunk by chunk (the row blocks of a chunk in a
                         row), else row block by row block */
    int pack_a;       /* the packed-A order (see above): A packed per item, ir outside jr */
    int a_by_shape;   /* that order by shape (packs_a_by_shape), not for crowding alone */
    size_t a_group;   /* rows of A an item packs at a time: MR where a row-major A is packed
                         for crowding alone (block_item), else its MC; 0: A not packed */
    int parallel;     /* 0: below the size where threads pay */
    int narrow;       /* the narrow order (see above): op(B) packed whole, pc inside items */
    size_t b_blocks;  /* KC blocks of op(B) packed at once: all of k in the narrow order, else 1 */
    int b_in_place;   /* B read in place, not packed (b_in_place_ok) */
} gemm_plan;

/* the most of the MR rows of a row-major A, lda floats apart, that fall into one L1 set (the
   rows are read together, a line of each per 16 k steps; the start of A shifts every row
   alike, so rows from set 0 tell) */
static size_t rows_per_set(size_t mr, size_t lda, const qkv_gemm_blocking *cb)
{
    const size_t sets = cb->l1_way / cb->l1_line;
    size_t most = 0;
    for (size_t i = 0; i < mr; i++) {
        size_t same = 0;
        for (size_t j = 0; j < mr; j++)
            same += (i * lda * sizeof(float) / cb->l1_line) % sets == (j * lda * sizeof(float) / cb->l1_line) % sets;
        most = qkv_max(most, same);
    }
    return most;
}

/* The blocked path takes the packed-A order: a function of the table, the shape and lda.
   By shape where the table asks for it (A transposed with m n k above PA_TRANS_MIN_MNK:
   below, that order's items of two row panels, each packing its A and walking all of B,
   cost more than they save, and A is packed per item of the other order; Intel Xeon, one
   thread, 15-21 rounds of calls alternated in one process, medians of paired ratios, the
   other order against this one, A^T: AVX2 48^3 1.16x, 64^3 1.13x (A^T B^T too), 90^3
   1.08x, 100^3 0.98x; AVX-512 48^3 and 64^3 1.03-1.04x, 90^3 1.04x, 100^3 1.02x; above
   it, this order against the other: AVX2 256^3 1.08x, 20 x 300 x 200 1.07x, 300 x 20 x
   200 1.08x, 1024^3 1.29x, 128^3 0.99x; AVX-512 256^3 1.08x, 20 x 300 x 200 1.14x,
   128^3 1.00x, 112^3 0.96x; or n of twice pack_a_panels B
   panels, or of pack_a_panels with m of more than PA_MIN_PANELS row panels); on a
   half-rate core (cb.pa_crowd != 0) also where the rows of a row-major A crowd L1 sets
   (lda a multiple of 1024 floats puts all 12 rows of a tile in one set of 8 ways: 4096 x
   64 x 4096 read in place ran 25% slower than with lda 4112). lda == 0: any lda (may the
   order be taken?). */
static int packs_a_by_shape(const qkv_gemm_kernels *g, qkv_trans ta, size_t m, size_t n, size_t k)
{
    const size_t panels = g->pack_a_panels;
    const int trans_a = ta == QKV_TRANS && (double)m * (double)n * (double)k > PA_TRANS_MIN_MNK;
    return panels != 0 &&
           (trans_a || n >= 2 * panels * g->nr || (n >= panels * g->nr && m > PA_MIN_PANELS * g->mr));
}

static int packs_a(const qkv_gemm_kernels *g, qkv_trans ta, size_t lda, size_t m, size_t n, size_t k)
{
    if (packs_a_by_shape(g, ta, m, n, k))
        return 1;
    const qkv_gemm_blocking cb = qkv_gemm_blocking_of(g);
    if (g->pack_a_panels == 0 || cb.pa_crowd == 0 || cb.l1_line == 0 || cb.l1_way < cb.l1_line)
        return 0;
    return lda == 0 || rows_per_set(g->mr, lda, &cb) > cb.pa_crowd;
}

/* packed bytes of the whole op(B) of the narrow order (k blocks of depth kc) */
static double narrow_b_bytes(const qkv_gemm_kernels *g, size_t n, size_t k, size_t kc)
{
    return (double)k_blocks_of(k, kc) * (double)kc * (double)qkv_round_up(n, g->nr) * sizeof(float);
}

/* the narrow order for an op(B) of n columns, k blocks of depth kc: one NC block, and the
   whole packed op(B) (whole KC blocks of whole NR panels) within NARROW_B_BYTES */
static int narrow_ok(const qkv_gemm_kernels *g, qkv_trans ta, size_t n, size_t k, size_t kc)
{
    return ta == QKV_NOTRANS && n <= NARROW_COLS && narrow_b_bytes(g, n, k, kc) <= NARROW_B_BYTES;
}

/* the narrow order on several tasks with a copy of the packed op(B) per task
   (narrow_own_item): n within one NC block, op(B) within NARROW_OWN_BYTES, and an A from
   cache (one from memory keeps the shared op(B) and the items pulled from a counter, whose
   balance counts more there: 4096 x 64 x 4096 on two threads ran 2-3% slower with its rows
   cut in two, Intel Xeon, AVX-512 and AVX2) */
static int narrow_own_ok(const qkv_gemm_kernels *g, qkv_trans ta, size_t m, size_t n, size_t k, const blocking *b)
{
    return narrow_ok(g, ta, n, k, b->kc) && n <= b->nc && narrow_b_bytes(g, n, k, b->kc) <= NARROW_OWN_BYTES &&
           !qkv_from_memory(m, k);
}

/* the plan p reads B in place (see above): few rows (the table's b_in_place_rows, in the
   narrow order its b_in_place_narrow_rows), a row-major B with rows at most B_IN_PLACE_LDB
   floats apart, and rows of A read in place (a_group == 0: not the packed-A order, A not
   transposed), so no workspace at all */
static int b_in_place_ok(const qkv_gemm_kernels *g, qkv_trans tb, size_t m, size_t ldb, const gemm_plan *p)
{
    const size_t rows = p->narrow ? g->b_in_place_narrow_rows : g->b_in_place_rows;
    return tb == QKV_NOTRANS && p->a_group == 0 && m <= rows && ldb <= B_IN_PLACE_LDB;
}

/* the m rows cut into about n_ic equal blocks of whole MR-row panels (256 rows into 2: 132 +
   124, not 216 + 40), so that the items of a block weigh the same: sets p->b.mc and p->n_ic */
static void cut_rows(const qkv_gemm_kernels *g, size_t m, size_t n_ic, gemm_plan *p)
{
    p->b.mc = qkv_round_up((m + n_ic - 1) / n_ic, g->mr);
    p->n_ic = (m + p->b.mc - 1) / p->b.mc;
}

/* The plan of a call (whole == NULL), or of one region of the call whole (gemm_run): a
   region keeps the whole call's loop order, KC and A grouping, and holds its B block in L2
   (NC at most nc_in_l2: each task packs its own) */
static gemm_plan make_plan_of(const qkv_gemm_kernels *g, qkv_trans ta, size_t lda, size_t m, size_t n, size_t k,
                              const gemm_plan *whole)
{
    gemm_plan p;
    p.pack_a = whole ? whole->pack_a : packs_a(g, ta, lda, m, n, k);
    p.a_by_shape = whole ? whole->a_by_shape : p.pack_a && packs_a_by_shape(g, ta, m, n, k);
    const size_t kc = whole ? whole->b.kc : 0;
    if (p.pack_a) {
        p.b = plan_kc(g, 1, ta, m, n, k, kc);
        p.b.mc = qkv_min(p.b.mc, qkv_round_up((m + ITEMS_WANTED - 1) / ITEMS_WANTED, g->mr));
        if (p.a_by_shape) /* not a row-major A packed for crowding alone */
            p.b.mc = qkv_min(p.b.mc, PA_ITEM_PANELS * g->mr);
    } else {
        p.b = plan_in_place(g, ta, lda, m, n, k, kc);
    }
    if (p.pack_a || whole) /* the packed-A order's B block, or a region's (per task), in L2 */
        p.b.nc = qkv_min(p.b.nc, nc_in_l2(g, p.b.kc));
    cut_rows(g, m, (m + p.b.mc - 1) / p.b.mc, &p); /* as many blocks as MC asks for */
    /* split the columns only as far as needed for ITEMS_WANTED items, and never into
       chunks narrower than COL_CHUNK_MIN; the packed-A order keeps whole blocks */
    size_t n_jr = p.n_ic >= ITEMS_WANTED || p.pack_a ? 1 : (ITEMS_WANTED + p.n_ic - 1) / p.n_ic;
    n_jr = qkv_min(n_jr, qkv_max(1, p.b.nc / COL_CHUNK_MIN));
    p.col_chunk = qkv_round_up((p.b.nc + n_jr - 1) / n_jr, g->nr);
    p.n_jr = (p.b.nc + p.col_chunk - 1) / p.col_chunk;
    /* the in-place order still short of ITEMS_WANTED items (few column chunks, one MC block
       of rows: 384^3 made 3 items, which two tasks ran as 2 + 1) also splits the rows, into
       equal blocks of ROW_BLOCK_MIN rows at least (chosen when tasks shared a block's
       items; on one task it sets the order); the tiles stay on the same MR grid. Where
       the packed B block is wider than the model keeps in L2 (nc_in_l2), its items then go
       chunk by chunk, so that consecutive items share their B chunk and re-read only their
       rows of A, not every chunk of B from L3 once per row block (AVX2 300 x 1000 x 500, one
       thread: 5% slower row block by row block, 2% faster chunk by chunk); a block that
       stays in L2 keeps row blocks in a row */
    p.chunk_major = 0;
    if (!p.pack_a && p.n_ic * p.n_jr < ITEMS_WANTED) {
        const size_t n_ic = qkv_min((ITEMS_WANTED + p.n_jr - 1) / p.n_jr, qkv_max(1, m / ROW_BLOCK_MIN));
        if (n_ic > p.n_ic) {
            cut_rows(g, m, n_ic, &p);
            p.chunk_major = p.b.nc > nc_in_l2(g, p.b.kc);
        }
    }
    p.a_group = 0;
    if (p.pack_a && ta == QKV_NOTRANS && !p.a_by_shape)
        p.a_group = g->mr; /* packed for crowding alone */
    else if (p.pack_a || ta == QKV_TRANS)
        p.a_group = p.b.mc;
    p.narrow = !whole && narrow_ok(g, ta, n, k, p.b.kc) && n <= p.b.nc;
    p.b_blocks = p.narrow ? k_blocks_of(k, p.b.kc) : 1;
    p.b_in_place = whole ? whole->b_in_place : 0; /* qkv_gemm_run decides (b_in_place_ok) */
    p.gemv_tasks = (n + GEMV_COLS - 1) / GEMV_COLS;
    if (m == 1)
        p.parallel = (double)n * (double)k * sizeof(float) >= PARALLEL_BYTES;
    else
        p.parallel = 2.0 * (double)m * (double)n * (double)k >= PARALLEL_FLOPS;
    return p;
}

static gemm_plan make_plan(const qkv_gemm_kernels *g, qkv_trans ta, size_t lda, size_t m, size_t n, size_t k)
{
    return make_plan_of(g, ta, lda, m, n, k, NULL);
}

/* The narrow order on `tasks` tasks: its row blocks rounded up to a multiple of the task
   count where that leaves whole MR-row panels (a block of 96 rows into 2: 48 + 48), so
   that no task waits for the others with nothing to do. By the shape alone a problem of
   fewer than 2 ROW_BLOCK_MIN rows made one row block, which one task ran while the other
   had packed its share of op(B): on two threads slower than on one (Intel Xeon, AVX-512,
   96 x 96 x 1024 141 against 128 us). The cut does not change the bits: the tiles keep
   the MR x NR grid from row 0, and each item runs every pc block in order. One task keeps
   the plan by shape: every row of A meets op(B) once per row block, so more blocks would
   stream op(B) from L3 more often (96 x 128 x 8192: 4% slower with four). */
static void narrow_rows_for(const qkv_gemm_kernels *g, size_t m, size_t tasks, gemm_plan *p)
{
    const size_t panels = (m + g->mr - 1) / g->mr;
    const size_t want = qkv_min(panels, qkv_round_up(p->n_ic, tasks));
    if (tasks > 1 && want > p->n_ic)
        cut_rows(g, m, want, p);
}

/* B packing items of a block of `cols` columns: groups of B_PANELS NR-wide panels */
static size_t b_groups(const qkv_gemm_kernels *g, size_t cols)
{
    return ((cols + g->nr - 1) / g->nr + B_PANELS - 1) / B_PANELS;
}

/* the most items any phase of the call has: it never runs more tasks */
static size_t max_items(const qkv_gemm_kernels *g, const gemm_plan *p, size_t m)
{
    if (!p->parallel)
        return 1;
    if (m == 1)
        return p->gemv_tasks;
    return qkv_max(p->b_blocks * b_groups(g, p->b.nc), p->n_ic * p->n_jr);
}

/* The workspace of one call with the kernels g and n_slots task slots, in arena order:
   the gathered x of the m == 1 path (shared), or the packed B block (shared; in the narrow
   order all of op(B), one KC x NC block after another) and per slot
   the packed A block of the blocked path (mc x kc, where A is transposed or in the
   packed-A order; a row-major A read in place needs none). */
typedef struct gemm_ws {
    float *x, *bp;
    float *slots;    /* slot t at slots + t * slot_len: its A block (regions: its B block, then
                        its A block at b_len) */
    size_t slot_len; /* 0: no A blocks */
    size_t b_len;    /* regions: floats of a slot's B block */
} gemm_ws;

static void layout(qkv_arena *ar, const qkv_gemm_kernels *g, qkv_trans ta, qkv_trans tb, size_t m, size_t n,
                   size_t k, int pack_a, size_t n_slots, int regions, gemm_ws *w)
{
    *w = (gemm_ws){NULL, NULL, NULL, 0, 0};
    if (m == 1) {
        if (ta == QKV_TRANS && tb == QKV_TRANS)
            w->x = qkv_arena_floats(ar, k);
        return;
    }
    const blocking b = plan(g, pack_a, ta, m, n, k);
    if (regions) { /* per slot its B block, NC at most nc_in_l2 (make_plan_of), or in the narrow
                      order all of op(B) (gemm_run), then its A block */
        w->b_len = narrow_own_ok(g, ta, m, n, k, &b) ? qkv_round_up(k_blocks_of(k, b.kc) * b.kc * b.nc, 16)
                                                 : qkv_round_up(b.kc * qkv_min(b.nc, nc_in_l2(g, b.kc)), 16);
        w->slot_len = w->b_len + (ta == QKV_TRANS || pack_a ? qkv_round_up(b.mc * b.kc, 16) : 0);
        w->slots = qkv_arena_array(ar, w->slot_len, n_slots);
        return;
    }
    const size_t k_blocks = narrow_ok(g, ta, n, k, b.kc) ? k_blocks_of(k, b.kc) : 1;
    w->bp = qkv_arena_floats(ar, k_blocks * b.kc * b.nc);
    if (ta == QKV_TRANS || pack_a) { /* each slot 64-byte aligned: rounded up to 16 floats */
        w->slot_len = qkv_round_up(b.mc * b.kc, 16);
        w->slots = qkv_arena_array(ar, w->slot_len, n_slots);
    }
}

size_t qkv_gemm_ws_bytes(qkv_trans ta, qkv_trans tb, size_t m, size_t n, size_t k, size_t n_threads)
{
    size_t most = QKV_ARENA_ALIGN;
    if (m == 0 || n == 0 || k == 0)
        return most;
    for (size_t i = 0; qkv_kernels_built(i) != NULL; i++) {
        const qkv_gemm_kernels *g;
        for (size_t j = 0; (g = qkv_gemm_tile_of(qkv_kernels_built(i), j)) != NULL; j++) {
            /* either order where lda decides (packs_a) */
            const int by_shape = packs_a_by_shape(g, ta, m, n, k), may = packs_a(g, ta, 0, m, n, k);
            for (int pack_a = by_shape; pack_a <= may; pack_a++) {
                for (int regions = 0; regions <= (n_threads > 1); regions++) {
                    qkv_arena ar = qkv_arena_sizer();
                    gemm_ws w;
                    layout(&ar, g, ta, tb, m, n, k, pack_a, qkv_max(n_threads, 1), regions, &w);
                    const size_t bytes = qkv_arena_bytes(&ar);
                    if (bytes == 0)
                        return 0;
                    most = qkv_max(most, bytes);
                }
            }
        }
    }
    return most;
}

size_t qkv_gemm_workspace_size(size_t m, size_t n, size_t k, size_t n_threads)
{
    size_t most = 0;
    for (int t = 0; t < 4; t++) {
        const size_t bytes = qkv_gemm_ws_bytes((qkv_trans)(t & 1), (qkv_trans)(t >> 1), m, n, k, n_threads);
        if (bytes == 0)
            return 0;
        most = qkv_max(most, bytes);
    }
    return most;
}

/* The A operand of one macro-kernel: row panel ir (a multiple of MR) starts at
   a + ir * step, A(i, p) of it at [i * rs + p * cs] (packed: rs = 1, cs = MR, step kc;
   in place: rs = lda, cs = 1, step lda) */
typedef struct a_block {
    const float *a;
    size_t rs, cs, step;
} a_block;

/* The B operand of one macro-kernel: the panel of columns jr (a multiple of NR) starts at
   b + jr * step, B(p, j) of it at [p * ld + j] (packed: step kc, ld NR; in place, unpacked:
   step 1, ld ldb, so every tile is ukernel_sup at ldb) */
typedef struct b_block {
    const float *b;
    size_t step, ld;
    int packed;
    float *fill; /* packed: the block b, written where src != NULL */
    /* packed and src != NULL: the full micropanels are not written yet; the first full
       row (packed-A order) or the first full tile of each column (else) of the
       macro-kernel packs them from src (op(B) row-major in place, rows ldsrc apart) into
       the block as it computes (ukernel_row, ukernel_col) */
    const float *src;
    size_t ldsrc;
} b_block;

/* tile (ir, jr) of a macro-kernel: C(ir.., jr..) = alpha * A panel ir * B panel jr + beta C.
   An edge tile (fewer than MR rows or NR columns left) is ukernel_sup on its valid part:
   only its rows of A are read (a partial row panel in place needs no padding), masked
   columns write only its part of C, and no work is spent on the padding of a full tile. */
static inline void macro_tile(const qkv_gemm_kernels *g, int a_outer, size_t mc, size_t nc, size_t kc, float alpha,
                              const a_block *A, const b_block *B, float beta, float *c, size_t ldc, size_t ir,
                              size_t jr)
{
    const size_t MR = g->mr, NR = g->nr, mr = qkv_min(MR, mc - ir), nr = qkv_min(NR, nc - jr);
    const float *a_panel = A->a + ir * A->step, *b_panel = B->b + jr * B->step;
    float *cij = c + ir * ldc + jr;
    /* The tile below, asked for ahead where it comes next (ir inside jr): its rows are a
       stride apart, not a stream the hardware prefetchers follow, and with a short k the
       kernel's prefetch of its own C at its start does not cover a miss (Zen 3 AVX2:
       4096 x 4096 x 64 NT 35.4 -> 30.4 ms). Not where ir is outside jr: there the tile below
       comes a row of tiles later, and with ldc a multiple of 1024 floats its rows fall into
       the L1 sets of the current tile's rows, evicting the A micropanel and the B lines
       streaming in (AVX-512, Emerald Rapids Xeon, interleaved medians with the prefetch of
       B: 1024^3 1.13-1.15x, 1024 x 1024 x 64 NT 1.08-1.09x, 512^3 1.01-1.06x). */
    const float *below = !a_outer && ir + MR < mc ? cij + MR * ldc : NULL;
    if (B->packed && mr == MR && nr == NR)
        g->ukernel(kc, a_panel, A->rs, A->cs, b_panel, cij, ldc, alpha, beta, below);
    else
        g->ukernel_sup(mr, nr, kc, a_panel, A->rs, A->cs, b_panel, B->ld, cij, ldc, alpha, beta, below);
}

/* mc x nc block of C = alpha * A (mc x kc) * B (kc x nc, packed or in place) + beta * C,
   in the order of the plan: a_outer (packed A) keeps an A micropanel in L1 over the jr loop, else a B
   micropanel stays in L1 over the ir loop. Either way each tile is the same ukernel call.
   No software prefetch of the next B micropanel here: spread over the ir loop (a slice per
   tile) it measured no gain on Zen 4 AVX2, interleaved medians 1024^3 24.9 -> 25.1 ms (to
   L2), 27.3 (to L1), 2048^3 173 -> 182 ms (to L2); the hardware prefetchers follow the
   packed panels. */
static void macro_kernel(const qkv_gemm_kernels *g, int a_outer, size_t mc, size_t nc, size_t kc, float alpha,
                         const a_block *A, const b_block *B, float beta, float *c, size_t ldc)
{
    assert(B->src == NULL || (B->packed && mc >= g->mr && (a_outer || A->cs == 1 || A->cs == g->mr)));
    if (a_outer) {
        /* the full tiles of a row panel in one ukernel_row call (A and B packed); the first
           row packs the B micropanels where they are not yet */
        const size_t full = B->packed && A->rs == 1 && A->cs == g->mr ? nc / g->nr * g->nr : 0;
        for (size_t ir = 0; ir < mc; ir += g->mr) {
            size_t jr = 0;
            if (full != 0 && mc - ir >= g->mr) {
                const int fill = ir == 0 && B->src != NULL;
                g->ukernel_row(full / g->nr, kc, A->a + ir * A->step, B->fill, g->nr * B->step, c + ir * ldc, ldc, alpha,
                               beta, fill ? B->src : NULL, B->ldsrc);
                jr = full;
            }
            for (; jr < nc; jr += g->nr)
                macro_tile(g, a_outer, mc, nc, kc, alpha, A, B, beta, c, ldc, ir, jr);
        }
    } else {
        /* the full tiles of a column panel in one ukernel_col call where B is packed; the
           first tile packs the B micropanel where it is not yet */
        const size_t full = B->packed ? mc / g->mr * g->mr : 0;
        for (size_t jr = 0; jr < nc; jr += g->nr) {
            size_t ir = 0;
            if (full != 0 && nc - jr >= g->nr) {
                g->ukernel_col(full / g->mr, kc, A->a, A->rs, A->cs, g->mr * A->step, B->fill + jr * B->step, c + jr,
                               ldc, alpha, beta, full < mc, B->src != NULL ? B->src + jr : NULL, B->ldsrc);
                ir = full;
            }
            for (; ir < mc; ir += g->mr)
                macro_tile(g, a_outer, mc, nc, kc, alpha, A, B, beta, c, ldc, ir, jr);
        }
    }
}

/* Everything the work items of one call read: operands, plan, workspace, and the (jc, pc)
   block being worked on (written by gemm_run between jobs only) */
typedef struct gemm_call {
    const qkv_gemm_kernels *g;
    qkv_trans ta, tb;
    size_t m, n, k;
    float alpha, beta;
    const float *a, *b;
    size_t lda, ldb, ldc;
    float *c;
    gemm_plan p;
    gemm_ws w;
    size_t jc, nc, pc, kc;
    size_t row_cols; /* m == 1: output columns per item of this run (gemm_run) */
    size_t reg_tm, reg_tn; /* regions (grid_for): tm row parts x tn column parts, region r at
                              (r / tn, r % tn) (part_of); reg_tn == 0: none */
    size_t own_tasks; /* the narrow order with op(B) packed by each task: the tasks (each a
                         run of row blocks); 0: op(B) packed once and shared */
    int fill_b;       /* blocked_run: the first items pack the full B micropanels (fill_ok) */
} gemm_call;

/* B panels [j0 / NR, j0 / NR + B_PANELS) of the kc x nc block of op(B) at (pc, jc), packed
   into the block at dst (panel j at dst + j kc) */
static void pack_b_group(const gemm_call *cl, size_t pc, size_t kc, size_t jc, size_t nc, size_t j0, float *dst)
{
    const size_t NR = cl->g->nr, cols = qkv_min(B_PANELS * NR, nc - j0), j = jc + j0;
    const float *src = cl->tb == QKV_TRANS ? cl->b + j * cl->ldb + pc : cl->b + pc * cl->ldb + j;
    qkv_gemm_pack_b(cl->tb, kc, cols, src, cl->ldb, NR, dst + j0 * kc);
}

/* item i: B panels [i B_PANELS, (i + 1) B_PANELS) of the current block */
static void pack_b_item(void *ctx, size_t i, size_t slot)
{
    const gemm_call *cl = ctx;
    (void)slot;
    pack_b_group(cl, cl->pc, cl->kc, cl->jc, cl->nc, i * B_PANELS * cl->g->nr, cl->w.bp);
}

/* the narrow order, item i: group i % groups of the pc block i / groups, into that block's
   place in the packed op(B) (block q at w.bp + q kc nc: plan's kc and nc) */
static void pack_b_narrow_item(void *ctx, size_t i, size_t slot)
{
    const gemm_call *cl = ctx;
    (void)slot;
    const size_t NR = cl->g->nr, groups = b_groups(cl->g, cl->n);
    const size_t q = i / groups, pc = q * cl->p.b.kc;
    pack_b_group(cl, pc, qkv_min(cl->p.b.kc, cl->k - pc), 0, cl->n, (i % groups) * B_PANELS * NR,
                 cl->w.bp + q * cl->p.b.kc * cl->p.b.nc);
}

/* rows [ic, ic + mc) x columns jc + [j0, j0 + cols) of C, depth [pc, pc + kc), the packed B
   block of (jc, pc) at bp_block, workspace slot `slot`; fill: the item packs the full
   micropanels of its columns of the block as its first tiles read them (blocked_run) */
static void block_item(const gemm_call *cl, size_t ic, size_t mc, size_t j0, size_t cols, size_t pc, size_t kc,
                       float *bp_block, size_t slot, int fill)
{
    const size_t MR = cl->g->mr;
    /* In the packed-A order the item packs its rows of A (a transposed A would put each k
       step on its own cache line; a row-major one is packed where it meets enough B
       panels to pay, or where its rows crowd an L1 set). Otherwise a row-major A is read
       in place: per k step the microkernel broadcasts one float from each of MR rows,
       which walk forward together, so a row panel costs MR streams of L1 lines, the same
       lines packing would have read, without the copy. */
    const size_t a_rs = cl->ta == QKV_TRANS ? 1 : cl->lda, a_cs = cl->ta == QKV_TRANS ? cl->lda : 1;
    const float *a_ic = cl->a + ic * a_rs + pc * a_cs; /* op(A)(ic, pc) */
    const float beta = pc == 0 ? cl->beta : 1.0f; /* later k blocks accumulate */
    float *c_ic = cl->c + ic * cl->ldc + cl->jc + j0;
    /* B in place (b_in_place_ok: A in place too): B(pc, jc + j0) at ldb, else the packed block */
    b_block B = cl->p.b_in_place ? (b_block){cl->b + pc * cl->ldb + cl->jc + j0, 1, cl->ldb, 0, NULL, NULL, 0}
                                 : (b_block){bp_block + j0 * kc, kc, cl->g->nr, 1, bp_block + j0 * kc,
                                             fill ? cl->b + pc * cl->ldb + cl->jc + j0 : NULL, cl->ldb};
    if (cl->p.a_group == 0) {
        const a_block A = {a_ic, a_rs, a_cs, a_rs};
        macro_kernel(cl->g, 0, mc, cols, kc, cl->alpha, &A, &B, beta, c_ic, cl->ldc);
        return;
    }
    /* A packed a group of rows at a time (a_group), each group run over the item's columns
       right after. The group is the whole MC block, except for a row-major A packed because
       its rows crowd an L1 set with fewer B panels than the shape rule asks for (n = 64: 2
       tiles a panel): there packing is a large part of the time and the rows come from
       memory, so the group is one MR-row panel, and the next panel's rows are asked for
       (towards L2) before its tiles run. The rows of A, a stride apart and read in short
       runs the hardware prefetchers pick up late, arrive while the tiles compute (packing
       the whole MC block first left each row's first lines to memory latency). Either way
       the tiles are the same ukernel calls on the same values. bench_ab on Zen 4 (AVX-512,
       5 rounds x 3): 4096 x 64 x 4096 30.6 -> 26.9 ms on one thread (bench_gemm),
       16.0 -> 13.9 ms on two (p < 0.001 both); 256^3, 512^3, 1024^3 unchanged. Not where
       the shape rule packs: 512^3 (16 B panels a row panel) on two threads ran
       1.44 -> 1.72 ms (p < 0.001) panel by panel. */
    float *ap = cl->w.slots + slot * cl->w.slot_len;
    const size_t group = cl->p.a_group, line = 64 / sizeof(float);
    for (size_t ir = 0; ir < mc; ir += group) {
        const size_t rows = qkv_min(group, mc - ir);
        qkv_gemm_pack_a(cl->ta, rows, kc, a_ic + ir * a_rs, cl->lda, MR, ap);
        if (group < mc) /* panel by panel, so row-major: the next panel's rows */
            for (size_t i = ir + MR; i < qkv_min(ir + 2 * MR, mc); i++)
                for (size_t p = 0; p < kc; p += line)
                    __builtin_prefetch(a_ic + i * cl->lda + p, 0, 2);
        const a_block A = {ap, 1, MR, kc};
        macro_kernel(cl->g, cl->p.pack_a, rows, cols, kc, cl->alpha, &A, &B, beta, c_ic + ir * cl->ldc, cl->ldc);
        B.src = NULL; /* packed by the first group */
    }
}

/* item (ic block, column chunk) of the current (jc, pc) block, with workspace slot `slot` */
static void compute_item(void *ctx, size_t item, size_t slot)
{
    const gemm_call *cl = ctx;
    const size_t i_blk = cl->p.chunk_major ? item % cl->p.n_ic : item / cl->p.n_jr;
    const size_t j_blk = cl->p.chunk_major ? item / cl->p.n_ic : item % cl->p.n_jr;
    const size_t ic = i_blk * cl->p.b.mc, j0 = j_blk * cl->p.col_chunk;
    if (j0 >= cl->nc)
        return; /* the last nc block may be narrower: fewer chunks */
    block_item(cl, ic, qkv_min(cl->p.b.mc, cl->m - ic), j0, qkv_min(cl->p.col_chunk, cl->nc - j0), cl->pc, cl->kc,
               cl->w.bp, slot, cl->fill_b && i_blk == 0);
}

/* the narrow order, item i: ic block i over every pc block in order, all n columns */
static void narrow_item(void *ctx, size_t i, size_t slot)
{
    const gemm_call *cl = ctx;
    const size_t ic = i * cl->p.b.mc, mc = qkv_min(cl->p.b.mc, cl->m - ic);
    for (size_t pc = 0, q = 0; pc < cl->k; pc += cl->p.b.kc, q++)
        block_item(cl, ic, mc, 0, cl->n, pc, qkv_min(cl->p.b.kc, cl->k - pc),
                   cl->w.bp + q * cl->p.b.kc * cl->p.b.nc, slot, 0);
}

/* The narrow order on several tasks, task r of own_tasks: op(B) packed whole into the
   task's slot, then row blocks [r n_ic / own_tasks, (r + 1) n_ic / own_tasks) as
   narrow_item runs them. Against one packed op(B) shared by the tasks, which one phase
   packs (each task a share) before another computes, each task's op(B) stays in its own
   core's caches: no wait between the phases, and no line the other core packed. The tiles
   and their pc order are narrow_item's: the same bits. */
static void narrow_own_item(void *ctx, size_t r, size_t slot)
{
    const gemm_call *cl = ctx;
    gemm_call own = *cl;
    own.w.bp = cl->w.slots + slot * cl->w.slot_len;
    own.w.slots = own.w.bp + cl->w.b_len; /* its A block, slot 0 of its own */
    const size_t groups = cl->p.b_blocks * b_groups(cl->g, cl->n);
    for (size_t i = 0; i < groups; i++)
        pack_b_narrow_item(&own, i, 0);
    for (size_t i = r * cl->p.n_ic / cl->own_tasks; i < (r + 1) * cl->p.n_ic / cl->own_tasks; i++)
        narrow_item(&own, i, 0);
}

/* m == 1, item i: output columns [i row_cols, ...). op(A) is the row a[0..k) or, transposed,
   the column a[p * lda], gathered once into w.x for gemv_t, which loads x as vectors */
static void row_item(void *ctx, size_t i, size_t slot)
{
    const gemm_call *cl = ctx;
    (void)slot;
    const size_t j0 = i * cl->row_cols, cols = qkv_min(cl->row_cols, cl->n - j0);
    const size_t inca = cl->ta == QKV_TRANS ? cl->lda : 1;
    if (cl->tb == QKV_NOTRANS) /* B row by row: its rows are long contiguous streams */
        cl->g->gemv_ns(cols, cl->k, cl->alpha, cl->a, inca, cl->b + j0, cl->ldb, cl->beta, cl->c + j0);
    else
        cl->g->gemv_t(cols, cl->k, cl->alpha, inca != 1 ? cl->w.x : cl->a, cl->b + j0 * cl->ldb, cl->ldb, cl->beta,
                      cl->c + j0);
}

/* B packed on the way. Where op(B) is row-major, the full B micropanels of a block are not
   packed in a pass of their own: the first tiles that read each of them (the first row
   panel of the first item in the packed-A order, ukernel_row; the first tile of each
   column of the items of the first row block in the in-place order, ukernel_col) read it
   in place and store each row they load into the block, two vector stores a k step beside
   24 FMAs, where the pass copied it at the speed of the caches with the FMA pipes idle;
   the other tiles read the packed block as before. A last panel under NR columns is still
   packed first (qkv_gemm_pack_b: its zero padding). The items run in order on one task
   (blocked_run; several tasks run regions, each its own blocked_run), so the items of the
   first row block come before the others of their columns, and that block's first row
   panel is a full one (m >= MR). Same values in the same micropanels, the same tiles:
   the same bits. Only up to FILL_B_BYTES of op(B): a larger one comes from memory or L3,
   where the tiles that fetch it wait on each row (a stride apart) while the pass had many
   in flight. Intel Xeon, 15 rounds of calls alternated in one process, median of paired
   ratios against the pass: AVX-512 one thread 256^3 1.024-1.036, 300^3 1.029-1.050, 512^3
   1.024-1.033, 200 x 1000 x 500 1.019, 1000 x 500 x 500 1.012, 640^3 (1.6 MiB of B)
   0.994, and without the limit 1024^3 0.986, 2048^3 0.979; AVX2 one thread 256^3 1.024,
   300^3 1.025, 512^3 1.018, 200 x 1000 x 500 1.029. On two threads, with the row and
   column calls and FILL_COST_DIV below, against the build before all three (samples of
   about 2 GFLOP, so that the idle pool's spinning worker does not weigh): 256^3 1.049,
   300^3 1.096, 512^3 1.027, 1024 x 1024 x 64 NT 1.028, 1024^3 1.008. Source prefetch 16
   or 32 rows ahead instead of GEMM_PF_B_ROWS (8): no difference (0.97-1.02). */
static int fill_shape_ok(const qkv_gemm_kernels *g, qkv_trans tb, size_t m, size_t n, size_t k)
{
    return tb == QKV_NOTRANS && m >= g->mr && (double)k * (double)n * sizeof(float) <= FILL_B_BYTES;
}

static int fill_ok(const gemm_call *cl)
{
    return !cl->p.b_in_place && fill_shape_ok(cl->g, cl->tb, cl->m, cl->n, cl->k);
}

/* the (jc, pc) loops of the blocked path on one task: per block, B packed (or, fill_ok, its
   last partial panel, the rest by the items), then the items of the plan, in order */
static void blocked_run(gemm_call *cl)
{
    const size_t NR = cl->g->nr;
    cl->fill_b = fill_ok(cl);
    for (cl->jc = 0; cl->jc < cl->n; cl->jc += cl->p.b.nc) {
        cl->nc = qkv_min(cl->p.b.nc, cl->n - cl->jc);
        for (cl->pc = 0; cl->pc < cl->k; cl->pc += cl->p.b.kc) {
            cl->kc = qkv_min(cl->p.b.kc, cl->k - cl->pc);
            if (cl->fill_b) { /* only a last panel under NR columns here, the rest as they are used */
                const size_t full = cl->nc / NR * NR;
                if (full < cl->nc)
                    qkv_gemm_pack_b(cl->tb, cl->kc, cl->nc - full, cl->b + cl->pc * cl->ldb + cl->jc + full, cl->ldb,
                                    NR, cl->w.bp + full * cl->kc);
            } else if (!cl->p.b_in_place) {
                qkv_parallel_for(NULL, b_groups(cl->g, cl->nc), pack_b_item, cl);
            }
            qkv_parallel_for(NULL, cl->p.n_ic * cl->p.n_jr, compute_item, cl);
        }
    }
}

/* Regions: on several tasks the blocked path cuts C into tm x tn regions of whole MR-row
   and NR-column panels, and each task runs a region as one task runs a whole call: its own
   B blocks packed into its slot, its items in order, no task waiting for another between
   blocks. A region's items are the tiles the whole call would make (the same MR x NR grid:
   edge tiles only at the edges of C), with the whole call's loop order and k blocks, so
   every element sees the same ukernel calls in the same pc order: the same bits on any
   number of tasks. The grid makes the costliest region cheapest, counting its multiply-adds
   and PACK_COST of them per float it packs (B: its columns over all k; A, where packed:
   its rows over all k, once per NC block of its columns; B packed on the way, fill_ok, a
   quarter of that: FILL_COST_DIV). A region of n / 2 columns packs
   all of A, where the shared block of B it replaces had the tasks wait for each other twice
   per (jc, pc) block (the B phase, then the items): against those items, two threads on an
   Intel Xeon, 21 rounds of calls alternated in one process, medians: AVX-512 256^3 124 ->
   116 us, 384^3 410 -> 379 us, 512^3 929 -> 914 us, 1024^3 7.27 -> 7.12 ms, 2048^3 57.1 ->
   54.8 ms, 300 x 400 x 200 183 -> 173 us, 1024 x 1024 x 64 NT level (485-495 us); AVX2
   256^3 182 -> 170 us, 512^3 1.38 -> 1.34 ms, 1024^3 11.7 -> 11.0 ms, 1024 x 1024 x 64 NT
   760 -> 738 us, 300 x 1000 x 500 1.75 -> 1.52 ms. One thread runs the same code as
   before. */
/* a float of B packed on the way (fill_ok) against one packed in a pass, in the grid's cost:
   two stores beside the tiles' FMAs instead of a copy at the speed of the caches. With the
   pass's cost, 300^3 on two threads took column halves (each task packing all of A) over
   row halves (each all of B); with a quarter, row halves: Intel Xeon, AVX-512, 15 rounds of
   calls alternated in one process, median of paired ratios 300^3 1.086 [1.070 1.092], 512^3,
   256^3, 640^3, 1024^3, 200 x 1000 x 500 and 1000 x 500 x 500 1.000-1.008 */
#define FILL_COST_DIV 0.25
enum {
    REGION_MACS = 1 << 20, /* multiply-adds a region has at least (half of PARALLEL_FLOPS) */
    PACK_COST = 10,        /* multiply-adds a packed float costs, about (a 256 x 256 block of
                              B packs in 7 us, the 12 x 32 tile's 256^3 takes 186 us) */
    PACK_A_ROWS_COST = 30  /* the same for a row-major A, transposed into its micropanels
                              (below) */
};
/* PACK_A_ROWS_COST: a row-major A goes through 4 x 4 transposes into its micropanels, which
   the profile puts at about 18 multiply-adds a float (512^3, one thread: qkv_gemm_pack_a
   3.5% of the time); in two-thread runs a task that packs all of A (column halves) lost
   more than that to one that packs half of it and all of B on the way (row halves), and 30
   is what orders the measured grids right. With the copy's cost and equal parts of
   ceil(panels / parts) the grid cut 512^3 (43 row panels: 264 + 248 rows) and 1024 x 1024
   x 64 NT into column halves. With this cost (and parts of ceil(panels / parts) panels, as
   then): Intel Xeon, AVX-512, two threads, 21 rounds of calls alternated in one process,
   median of paired ratios [quartiles] against the former grid: 1024 x 1024 x 64 NT 1.065
   [1.031 1.099], 512^3 1.042 [1.029 1.060], 640^3 1.030 [1.011 1.060]; 4096 x 4096 x 64
   NT, 2048^3, 1024^3, 1000 x 500 x 500,
   300^3, 300 x 400 x 200, 256^3 and 200 x 1000 x 500 0.99-1.01 (the grids that stayed). A
   row-major A read in place (AVX2 here, the AVX-512 in-place order) packs nothing and
   costs nothing. */

/* part i of `parts` of the `len` rows or columns, cut at whole panels of `w` (MR or NR):
   part i starts at i len / parts rounded to the nearest panel boundary, so that the
   longest part exceeds len / parts by half a panel at most; a boundary halfway between two
   rounds up, so of two parts that can only differ by a panel the longer comes first (the
   caller's task starts on part 0 while a worker is still waking: 300 x 400 x 200, 25 row
   panels, ran 0.96x with 144 + 156 rows against 156 + 144); only the last part holds a
   partial panel (an edge tile only at an edge of C). No part is empty where len / parts >=
   w (grid_for). Against parts of ceil(panels / parts) panels, 512^3 on two threads (AVX-512: 42 full row panels and one
   of 8 rows) went from 264 + 248 rows to 252 + 260: perf put 3.7% of the worker's samples
   waiting before, 0.7% of the worker's and 2.7% of the caller's after; calls alternated in
   one process, 15 to 25 rounds, medians of paired ratios 0.99-1.013 (about the noise);
   300 x 400 x 200, 300^3, 256^3, 1000 x 500 x 500, 520^3 and 1000^3 1.000-1.014. */
static size_t part_start(size_t len, size_t w, size_t parts, size_t i)
{
    return i == parts ? len : qkv_min(len, (2 * i * len + parts * w) / (2 * parts * w) * w);
}

static void part_of(size_t len, size_t w, size_t parts, size_t i, size_t *start, size_t *count)
{
    *start = part_start(len, w, parts, i);
    *count = part_start(len, w, parts, i + 1) - *start;
}

/* the longest of the parts */
static size_t longest_part(size_t len, size_t w, size_t parts)
{
    size_t most = 0;
    for (size_t i = 0, s, c; i < parts; i++) {
        part_of(len, w, parts, i, &s, &c);
        most = qkv_max(most, c);
    }
    return most;
}

static void grid_for(gemm_call *cl, size_t tasks)
{
    /* parts of a full panel at least (part_of) */
    const size_t MR = cl->g->mr, NR = cl->g->nr, mp = qkv_max(1, cl->m / MR), np = qkv_max(1, cl->n / NR);
    const size_t nc = qkv_min(cl->p.b.nc, nc_in_l2(cl->g, cl->p.b.kc));
    const double k = (double)cl->k;
    /* a float of A costs a copy where A is transposed, a transpose where it is row-major */
    const double a_cost = cl->ta == QKV_TRANS ? PACK_COST : PACK_A_ROWS_COST;
    double best = -1.0;
    for (size_t tm = 1; tm <= qkv_min(tasks, mp); tm++) {
        const size_t tn = qkv_min(tasks / tm, np);
        const size_t rows = longest_part(cl->m, MR, tm), cols = longest_part(cl->n, NR, tn);
        /* B packed on the way (fill_ok for the region) costs the tiles a fraction of the pass */
        const int fills = fill_shape_ok(cl->g, cl->tb, rows, cols, cl->k);
        const double packed_b = (fills ? FILL_COST_DIV : 1.0) * k * (double)cols;
        const double packed_a = cl->p.a_group ? (double)rows * k * (double)((cols + nc - 1) / nc) : 0;
        const double cost = (double)rows * (double)cols * k + PACK_COST * packed_b + a_cost * packed_a;
        if (best < 0 || cost < best) {
            best = cost;
            cl->reg_tm = tm;
            cl->reg_tn = tn;
        }
    }
}

static size_t regions_of(const gemm_call *cl)
{
    return cl->reg_tm * cl->reg_tn;
}

/* region r, on the task's slot */
static void region_item(void *ctx, size_t r, size_t slot)
{
    const gemm_call *cl = ctx;
    size_t i0, j0;
    gemm_call sub = *cl;
    part_of(cl->m, cl->g->mr, cl->reg_tm, r / cl->reg_tn, &i0, &sub.m);
    part_of(cl->n, cl->g->nr, cl->reg_tn, r % cl->reg_tn, &j0, &sub.n);
    sub.a = cl->ta == QKV_TRANS ? cl->a + i0 : cl->a + i0 * cl->lda;
    sub.b = cl->tb == QKV_TRANS ? cl->b + j0 * cl->ldb : cl->b + j0;
    sub.c = cl->c + i0 * cl->ldc + j0;
    sub.p = make_plan_of(cl->g, cl->ta, cl->lda, sub.m, sub.n, cl->k, &cl->p);
    if (cl->w.slots != NULL) { /* none where B is read in place */
        sub.w.bp = cl->w.slots + slot * cl->w.slot_len;
        sub.w.slots = sub.w.bp + cl->w.b_len;
    }
    sub.reg_tn = 0;
    blocked_run(&sub);
}

static void gemm_run(gemm_call *cl, const qkv_threadpool *tp)
{
    const qkv_threadpool *pool = cl->p.parallel ? tp : NULL;
    if (cl->m == 1) {
        if (cl->w.x != NULL)
            for (size_t p = 0; p < cl->k; p++)
                cl->w.x[p] = cl->a[p * cl->lda];
        /* one item per task, n / tasks columns rounded up to 128 (one task: all n): each
           task reads the longest row segments of B it can (gemv_ns), or a contiguous run of
           rows of op(B) (gemv_t), and a task's part of B is the same from call to call, so
           where it fits the task's caches repeated calls find it there. A column's
           arithmetic does not depend on the chunking (kernels.h), so the bits do not
           either. Against 4 items of n / 4 columns (B from cache) on an Intel Xeon, 2
           threads, 21 rounds of calls alternated in one process, medians: 1x1024x1024 NN
           100 -> 88 us, NT 46.4 -> 38.9 us, 1x16384x64 NT 56.2 -> 49.2 us, 1x4096x64 NT 7.70
           -> 7.18 us, 1x3000x700 NN 166 -> 161 us, 1x512x1024 and 1x2048x2048 NN level.
           Against 1024-column items with B from memory on AMD EPYC Zen 1, 2 threads,
           1x4096x4096 (64 MiB), 3 rounds of alternated processes, medians of 5: 5245 ->
           4237 us, where the 2-thread read loop of the same bytes took 4114-4850 us */
        const size_t tasks = qkv_tasks_for(pool, cl->p.gemv_tasks);
        cl->row_cols = qkv_round_up((cl->n + tasks - 1) / tasks, 128);
        qkv_parallel_for(pool, (cl->n + cl->row_cols - 1) / cl->row_cols, row_item, cl);
        return;
    }
    if (cl->p.narrow && cl->p.b_in_place) { /* nothing to pack: the row blocks */
        qkv_parallel_for(pool, cl->p.n_ic, narrow_item, cl);
        return;
    }
    if (cl->p.narrow && cl->own_tasks != 0) {
        qkv_parallel_for(pool, cl->own_tasks, narrow_own_item, cl);
        return;
    }
    if (cl->p.narrow) { /* jc = 0, nc = n */
        qkv_parallel_for(pool, cl->p.b_blocks * b_groups(cl->g, cl->n), pack_b_narrow_item, cl);
        qkv_parallel_for(pool, cl->p.n_ic, narrow_item, cl);
        return;
    }
    if (cl->reg_tn != 0) {
        qkv_parallel_for(pool, regions_of(cl), region_item, cl);
        return;
    }
    blocked_run(cl);
}

/* Small and skinny problems (the BLIS "sup" idea): with A and B both row-major, the
   microkernel reads both in place (ukernel_sup: A rows and B rows at their leading
   dimensions, edge tiles through masked columns and fewer rows), so nothing is packed, no
   workspace is taken and no edge goes through a scratch tile. Worth it where packing is a
   visible part of the time: everything fits in L2 (m n k up to 160^3: 64^3, 128^3,
   77 x 300 x 129), or m is a few register tiles (each B micropanel is used at most 4
   times, so packing it cannot pay). k stays unblocked: its depth is the whole k, which
   only lengthens each FMA chain (the error bound holds for any k). */
static int small_ok(const qkv_gemm_kernels *g, qkv_trans ta, qkv_trans tb, size_t m, size_t n, size_t k)
{
    if (ta != QKV_NOTRANS || tb != QKV_NOTRANS)
        return 0;
    const double mnk = (double)m * (double)n * (double)k;
    return mnk <= 160.0 * 160.0 * 160.0 || (m <= 4 * g->mr && k <= 4096);
}

/* Threads: the items are chunks of `cols` columns (a multiple of NR), so every tile of C
   is the same ukernel_sup call whichever task runs it; a problem below PARALLEL_FLOPS is one
   chunk. */
typedef struct small_call {
    const qkv_gemm_kernels *g;
    size_t m, n, k;
    float alpha;
    const float *a;
    size_t lda;
    const float *b;
    size_t ldb;
    float beta;
    float *c;
    size_t ldc, cols;
} small_call;

static size_t small_cols(const qkv_gemm_kernels *g, size_t m, size_t n, size_t k)
{
    if (2.0 * (double)m * (double)n * (double)k < PARALLEL_FLOPS)
        return qkv_round_up(n, g->nr);
    return qkv_max(g->nr, qkv_round_up((n + ITEMS_WANTED - 1) / ITEMS_WANTED, g->nr));
}

/* Rows of the next tile with `left` rows of C to go: MR, except where the last two tiles
   would be MR rows and a few (MR + 1 to MR + MR / 2 left): two halves instead. A k step of
   a tile of r rows takes about max(r, 4) cycles on AVX2 6 x 16: its 2 r FMAs take r cycles
   on 2 pipes, and each of its 2 r chains takes one FMA a step, 4 cycles of latency. So 6 + 2
   rows cost 6 + 4 and 4 + 4 rows 4 + 4: 128 = 20 x 6 + 4 + 4 rows take 128 cycles a step
   where 21 x 6 + 2 took 130. The other tiles have the same floor (latency) under a cost
   that grows with r, so the halves never cost more there either. Each element of C
   is the same FMA chain in any tile height, so the bits do not change (checked against the
   former cut on 1080 shapes, m from 2 to 159, AVX2 and scalar). AMD EPYC Zen 3, one thread,
   the two builds in one process, calls alternated, medians of paired ratios [quartiles]:
   128^3 1.024 [1.003 1.039] (61 rounds), 134 x 128 x 128 1.013, 99 x 200 x 150 1.011 (31);
   unchanged cuts level, 130 x 128 x 128 1.002, 64^3 0.999. */
static size_t sup_rows(size_t MR, size_t left)
{
    if (left > MR && left <= MR + MR / 2)
        return (left + 1) / 2;
    return qkv_min(MR, left);
}

static void small_item(void *ctx, size_t item, size_t slot)
{
    const small_call *sc = ctx;
    const qkv_gemm_kernels *g = sc->g;
    const size_t MR = g->mr, NR = g->nr, j_end = qkv_min(sc->n, (item + 1) * sc->cols);
    (void)slot;
    for (size_t jr = item * sc->cols; jr < j_end; jr += NR) { /* a k x NR panel of B stays in L1 over ir */
        const size_t nr = qkv_min(NR, sc->n - jr);
        for (size_t ir = 0, mr; ir < sc->m; ir += mr) {
            mr = sup_rows(MR, sc->m - ir);
            float *cij = sc->c + ir * sc->ldc + jr;
            g->ukernel_sup(mr, nr, sc->k, sc->a + ir * sc->lda, sc->lda, 1, sc->b + jr, sc->ldb, cij, sc->ldc,
                           sc->alpha, sc->beta, ir + mr < sc->m ? cij + mr * sc->ldc : NULL);
        }
    }
}

/* The half-width tile (kernels.h: 4 x 24 for AVX2 on Zen 1) where the problem takes the
   packed path and C is wide enough that 24-column tiles waste little: from n = 256 on the
   last tile holds at least 8 of 24 columns in 11 or more (<= 3% of the arithmetic). On Zen
   1, calls of both tiles interleaved in one process, 21 paired rounds, median ratio of the
   pairs (6 x 16 time / 4 x 24 time) [quartiles]: 1024^3 1.037 [0.97, 1.15], 2048^3 1.035
   [0.99, 1.06], 512^3 1.039 [0.99, 1.08], 256^3 1.030 [1.01, 1.08], 1000^3 0.997 [0.94,
   1.08], 1024 x 1024 x 64 B^T 1.060 [1.03, 1.09], 4096 x 4096 x 64 B^T 1.019 [0.96, 1.07];
   medians of 7: 4096 x 64 x 4096 0.82-0.96 and 1024 x 64 x 1024 0.97 (n = 64: three tiles
   of 24 for 64 columns); the unpacked small path 0.81-1.26 (64^3 0.81-0.88), which the
   noise there could not settle, so it keeps the ISA's tile. */
enum { HALF_TILE_MIN_N = 256 };

const qkv_gemm_kernels *qkv_gemm_tile_for(const qkv_kernels *t, qkv_trans ta, qkv_trans tb, size_t m, size_t n,
                                          size_t k)
{
    return qkv_gemm_for(t, m > 1 && n >= HALF_TILE_MIN_N && !small_ok(t->gemm, ta, tb, m, n, k));
}

qkv_status qkv_gemm(qkv_trans ta, qkv_trans tb, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                    const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
    return qkv_gemm_run(qkv_gemm_tile_for(qkv_kernels_active(), ta, tb, m, n, k), NULL, ta, tb, m, n, k, alpha, a,
                        lda, b, ldb, beta, c, ldc, NULL, 0);
}

qkv_status qkv_gemm_ex(qkv_trans ta, qkv_trans tb, size_t m, size_t n, size_t k, float alpha, const float *a,
                       size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc,
                       const qkv_threadpool *tp, void *ws, size_t ws_size)
{
    if (!qkv_threadpool_ok(tp))
        return QKV_ERR_ARG;
    return qkv_gemm_run(qkv_gemm_tile_for(qkv_kernels_active(), ta, tb, m, n, k), tp, ta, tb, m, n, k, alpha, a, lda,
                        b, ldb, beta, c, ldc, ws, ws_size);
}

qkv_status qkv_gemm_run(const qkv_gemm_kernels *g, const qkv_threadpool *tp, qkv_trans ta, qkv_trans tb, size_t m,
                        size_t n, size_t k, float alpha, const float *a, size_t lda, const float *b, size_t ldb,
                        float beta, float *c, size_t ldc, void *ws, size_t ws_size)
{
    if ((unsigned)ta > QKV_TRANS || (unsigned)tb > QKV_TRANS)
        return QKV_ERR_ARG;
    /* stored shapes: A is a_rows x a_cols, B is b_rows x b_cols */
    const size_t a_rows = ta == QKV_TRANS ? k : m, a_cols = ta == QKV_TRANS ? m : k;
    const size_t b_rows = tb == QKV_TRANS ? n : k, b_cols = tb == QKV_TRANS ? k : n;
    if (lda < a_cols || ldb < b_cols || ldc < n)
        return QKV_ERR_ARG;
    if (m == 0 || n == 0)
        return QKV_OK;
    if (c == NULL || (k > 0 && (a == NULL || b == NULL)))
        return QKV_ERR_ARG;
    if (!qkv_extent_ok(m, n, ldc) || !qkv_extent_ok(a_rows, a_cols, lda) || !qkv_extent_ok(b_rows, b_cols, ldb))
        return QKV_ERR_SIZE;

    if (k == 0 || alpha == 0.0f) {
        scale_c(m, n, beta, c, ldc);
        return QKV_OK;
    }
    if (m > 1 && small_ok(g, ta, tb, m, n, k)) { /* no packing, no workspace */
        small_call sc = {g, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, small_cols(g, m, n, k)};
        qkv_parallel_for(sc.cols < n ? tp : NULL, (n + sc.cols - 1) / sc.cols, small_item, &sc);
        return QKV_OK;
    }
    gemm_call cl = {g, ta, tb, m, n, k, alpha, beta, a, b, lda, ldb, ldc, c, make_plan(g, ta, lda, m, n, k),
                    {NULL, NULL, NULL, 0, 0}, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    const qkv_threadpool *pool = cl.p.parallel ? tp : NULL;
    if (cl.p.narrow && pool != NULL)
        narrow_rows_for(g, m, pool->n_threads, &cl.p);
    cl.p.b_in_place = b_in_place_ok(g, tb, m, ldb, &cl.p);
    size_t slots = qkv_tasks_for(pool, max_items(g, &cl.p, m));
    const blocking lb = plan(g, cl.p.pack_a, ta, m, n, k); /* layout()'s */
    const int several = m > 1 && pool != NULL && pool->n_threads > 1;
    /* layout() gives each slot op(B) */
    if (several && cl.p.narrow && !cl.p.b_in_place && narrow_own_ok(g, ta, m, n, k, &lb)) {
        cl.own_tasks = qkv_tasks_for(pool, cl.p.n_ic);
        slots = cl.own_tasks;
    }
    const int regions = several && (!cl.p.narrow || cl.own_tasks != 0);
    if (regions && !cl.p.narrow) { /* REGION_MACS each at least: pool->n_threads of them, or fewer */
        const double most = (double)m * (double)n * (double)k / REGION_MACS;
        grid_for(&cl, most < (double)pool->n_threads ? qkv_max(1, (size_t)most) : pool->n_threads);
        slots = qkv_tasks_for(pool, regions_of(&cl));
    }
    if (cl.p.b_in_place) { /* no workspace: nothing is packed */
        gemm_run(&cl, tp);
        return QKV_OK;
    }
    qkv_arena ar = qkv_arena_sizer();
    layout(&ar, g, ta, tb, m, n, k, cl.p.pack_a, slots, regions, &cl.w);
    const size_t need = qkv_arena_bytes(&ar);
    if (need == 0)
        return QKV_ERR_SIZE;
    void *owned = NULL;
    if (ws == NULL) {
        if (ar.used > 0) {
            ws = owned = aligned_alloc(QKV_ARENA_ALIGN, ar.used); /* the driver's one allocator */
            if (ws == NULL)
                return QKV_ERR_NOMEM;
        }
    } else if (ws_size < need) {
        return QKV_ERR_SIZE;
    }
    ar = qkv_arena_on(ws);
    layout(&ar, g, ta, tb, m, n, k, cl.p.pack_a, slots, regions, &cl.w);
    gemm_run(&cl, tp);
    free(owned);
    return QKV_OK;
}
