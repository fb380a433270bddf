/* The AVX2 + FMA kernels (kernels/simd/avx2.h: 8 lanes, _mm256_maskload/maskstore tails).
 * GEMM tile 6 x 16 (BLIS haswell): 12 accumulators + 2 B + 1 A broadcast = 15/16 YMM registers.
 * Per k step: 2 B loads + 6 broadcast loads feed 12 FMAs, so the 2 FMA pipes (not the load
 * ports) set the pace, and 12 independent chains cover 2 pipes x 4 cycles of latency.
 * Fallback blocking (caches unreadable; normally derived at start-up, gemm/blocking.h),
 * tuned on AMD EPYC Zen 4 (32 KiB L1d, 1 MiB L2; MC 72..288 x KC 256..512 tried,
 * within noise of each other at 1024^3, KC 384 best at K = 4096): a B micropanel is
 * 384 x 16 x 4 = 24 KiB (L1), a 144 x 384 block of A 216 KiB (L2), packed B ~6 MiB (L3).
 * Edge tiles: the driver's scratch tile; gemv_t/gemv_n mask their tails.
 * On cores with a 128-bit datapath (Zen 1) the public GEMM takes the 4 x 24 tile of
 * kernels/avx2_4x24.c for large wide problems; this tile stays everywhere else. */
#include "kernels/simd/avx2.h"

#define QKV_KERNEL_ISA avx2
#define GEMM_MR 6
#define GEMM_NV 2
#define GEMM_MC 144
#define GEMM_KC 384
#define GEMM_NC 4080
/* the driver's packed-A order (gemm/driver.c) from 60 B panels (n >= 1920, or n >= 960
   with more than 32 row panels, m > 192): there a row of C takes about a page, and the
   in-place order, which walks its B micropanel down an MC block of rows (up to 894 on an
   Intel Xeon with a 2 MiB L2), writes each tile's 6 rows into 6 pages, more pages per
   column than the DTLB holds, where the packed-A order walks C along its rows (the likely
   cause, not measured: that VM exposes no hardware counters). Intel Xeon
   (2 vCPUs, 48 KiB L1d, 2 MiB L2), calls alternated in one process, medians of 9-11 paired
   ratios against A in place, one thread / two: 1024^3 1.02x / 1.00x, 2048^3 1.04x /
   1.03x, 1024 x 1024 x 64 NT 1.06x / 1.03x, 4096 x 4096 x 64 NT 1.19x / 1.19x, 1024 x
   2048 x 256 1.05x / 1.04x, 200 x 1024 x 512 1.03x / 0.97x. From 8 panels, as AVX-512
   does, the narrower shapes lost on two threads (256^3 0.97x, 300^3 0.96x, 512^3 0.96x,
   1000 x 500 x 500 0.95x; one thread 0.99-1.01x), and from 32 as well (two threads: 512^3
   0.95x, 768^3 0.96x, 600 x 800 x 700 0.96x; 1000^3 1.04x / 1.02x). From 60 rather than
   64 (n from 960, not 1024), the same Xeon, 11-15 rounds, one thread / two: 1000^3 1.04-1.08x
   / 1.04-1.05x, 960^3 1.04x / 1.01x, 984^3 1.03x / 1.02x, 1000 x 1000 x 512 1.04x / 1.01x,
   200 x 1000 x 512 1.03x / 1.01x; 600 x 1000 x 700, 1000 x 960 x 300 and 1000 x 1000 x 64
   NT 0.99-1.02x. B prefetched 8 k steps ahead in that order, where its micropanels stream
   from L2: 2048^3 1.02x, 1024 x 1024 x 64 NT 1.03x, 4096 x 4096 x 64 NT 1.01x against
   none; only there (GEMM_PF_B_ROW_ONLY): where the B micropanel stays in L1 (the in-place
   order, attention) the prefetch takes load slots for nothing (in-place order without it
   300^3, 512^3, 1000^3 and 1000 x 500 x 500 1.01x, 2048^3 level; sdpa 1024 x 64 and 2048 x
   64 ran 5-7% slower with it, bench_ab). */
#define GEMM_PACK_A_PANELS 60
/* B read in place, not packed, in the driver's narrow order (n within 128, op(B) otherwise
   packed whole up front) up to 128 rows of C (gemm/driver.c), as the AVX-512 table does in
   both orders: AMD EPYC Zen 3 (32 KiB L1d, 512 KiB L2), the two builds in one process, calls
   alternated, 21 rounds, median of paired ratios against packing, one thread / two: 96 x 96
   x 1024 1.07x / 1.25x, 64 x 64 x 1024 1.09x / 1.21x, 120 x 64 x 4096 1.01x / 1.09x, 128 x
   128 x 512 1.03x / 1.26x. In the blocked order (A in place) it lost there: 128 x 1024 x 64
   0.65x / 0.67x (rows of B 4 KiB apart), 128 x 512 x 512 0.95x / 0.94x, 96 x 384 x 768
   0.98x / 0.96x, 64 x 512 x 512 1.00x / 0.96x; 100 x 300 x 1000, 128 x 256 x 256, 64 x 256
   x 1024 and 32 x 4096 x 4096 0.97-1.01x. So the blocked order keeps packing B. The
   two-thread ratios in one process overstate it (the other build's pool spins 0.1 ms after
   its calls, and packing has one more phase to wait in): scripts/bench_ab.sh, separate
   processes, 5 rounds x 3, bench_threads 96 x 96 x 1024 241 -> 231 us (-4.1%, p 0.02) on one
   thread, 152 -> 147 us (-3.3%, p 0.43) on two. Not measured on Zen 1, whose narrow
   problems also run this tile. */
#define GEMM_B_IN_PLACE_NARROW_ROWS 128
#define GEMM_PF_B_ROWS 8
#define GEMM_PF_B_ROW_ONLY 1
/* the k loop unrolled 4 steps a trip (kernels/avx512.c says why): with the packed-A
   order above, against one step, Intel Xeon, one thread, 21 rounds of calls alternated in
   one process, medians: 4096 x 64 x 4096 1.06x, 256^3 and 512^3 1.02x, 2048^3 1.02x,
   1000^3 and 1024 x 1024 x 64 NT 1.01x, 64^3 1.02x, 128^3 0.99x, 77 x 300 x 129 0.98x
   ([0.95 1.02]); 2 steps a trip against 4: level within noise, 4096 x 64 x 4096 0.96x. */
#define GEMM_K_STEPS 4
/* gemv_t_multi 4 x 2 chains + 2 B + 1 x = 11 of 16 YMM; gemv_n_multi 8 chains + 4 broadcasts + 1 B = 13 */
#define GEMV_T_JB 2
#define GEMV_N_ACC 8
/* gemv_ns (m = 1, B row-major): 6 rows of B per pass over the partial sums, not 4 (6
   broadcasts + the sum + a row of B: 8 of 16 YMM); a third fewer loads and stores of the sums,
   whose buffer (16 KiB where B comes from memory) shares L1 with the rows of B streaming
   through it. AMD EPYC Zen 3, the two builds in one process, calls alternated, 21-31 rounds,
   median of paired ratios, one thread / two: 1x2048x2048 1.21x / 1.09x, 1x1024x4096 1.16x /
   1.08x, 1x4096x1024 1.09x / 1.10x, 1x3072x768 1.03x / 1.06x, 1x4096x4096 1.02x / 1.02x,
   1x4096x256 1.02x / 1.04x, 1x1024x1024 0.99x / 1.06-1.08x, 1x1000x999 0.98x / 1.06x,
   1x512x512 and 1x256x1024 0.99-1.03x. 8 rows: 1x1024x1024 0.97x / 0.90x (likely because
   8 rows 4 KiB apart fall into one 8-way L1 set; not measured, no PMU there). In separate
   processes (scripts/bench_ab.sh, 5 rounds x 3) the same direction, none significant:
   1x4096x4096 2.99 -> 2.72 ms / 2.10 -> 2.02 ms, 1x1024x1024 71.9 -> 73.0 us / 53.6 -> 50.1
   us. Each y[j] stays one chain of FMAs in p order. */
#define GEMV_NS_ROWS 6
#include "kernels/instantiate.h"
