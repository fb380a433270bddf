/* The AVX-512 F/VL/BW/DQ kernels (kernels/simd/avx512.h: 16 lanes, __mmask16 tails,
 * vscalefps for the 2^n of exp).
 * GEMM tile 12 x 32, the row-major mirror of BLIS skx's 32 x 12: 24 accumulators +
 * 2 B + 1 A broadcast = 27/32 ZMM registers; 24 chains cover 2 FMA pipes x 4 cycles with
 * room to spare, and NR = 32 divides the attention head sizes 64 and 128.
 * Tile choice under the constraints: 32 ZMM; 2 FMA pipes x 4 cycles need >= 8 independent
 * accumulators; NR must divide the head sizes 64 and 128 and, with MR, sdpa's 96-wide
 * tiles. 16 x 32 needs 32 + 3 > 32 registers; 8 x 48 and 6 x 64 (fewer loads per FMA)
 * fail 64 or 96; 14 x 32 (28 + 3 = 31) does not divide 96. 12 x 32 remains: per k step 2 B
 * loads + 12 broadcast loads feed 24 FMAs (12 cycles on 2 pipes), 24 chains >= 8.
 * bench_ukernels here: 90% of the in-process peak at k = 256 (87% at k = 64).
 * As a GEMM-only second tile (kernels/avx2_4x24.c's way, free of the head sizes), 8 x 48
 * lost too, on an Intel Xeon (2 vCPUs, 48 KiB L1d, 2 MiB L2; 12 x 32 at 82-83% of the
 * peak in bench_ukernels, packed and stream alike). A scratch k loop in L1 gave it 184-190
 * GFLOP/s against 173-181 for 12 x 32, but in the library its microkernel ran level
 * (packed k 256: 171 against 172 GFLOP/s; its B prefetch, three lines a k step, cost 6% in
 * L1), and calls alternated in one process, 11 rounds, medians, 8 x 48 against 12 x 32, one
 * thread / two: with the packed-A order and the B prefetch (KC 192) 256^3 0.87x / 0.87x,
 * 480^3 0.99x / 0.93x, 512^3 0.94x / 0.96x, 1024^3 0.96x / 0.98x, 2048^3 0.97x / 0.96x,
 * 1024 x 1024 x 64 NT 0.98x / 1.01x, 4096 x 64 x 4096 0.71x / 0.74x; with A in place and
 * no prefetch 256^3 0.89x / 0.89x, 480^3 0.99x / 1.01x, 512^3 0.94x / 0.97x, 1024^3 0.86x /
 * 0.89x, 1024 x 1024 x 64 NT 0.89x / 0.96x (256 columns leave a 16-wide edge tile; 480
 * none). With A packed into blocks of MC rows and the jr loop outside ir (its B micropanel
 * in L1, no B prefetch, no prefetch of the tile below), where its microkernel led 12 x 32
 * by 4-7% over a packed block of A in L2 (182 against 170-174 GFLOP/s, MC 240, k 192 /
 * 256), calls ran, MC 240 / 480, one thread: 512^3 0.99x / 0.98x, 1024^3 0.95x / 0.93x,
 * 1024 x 1024 x 64 NT 0.87x / 0.90x (not taken apart; what differs: the 16-wide edge
 * panel of 1024 columns, a k block more of C traffic at KC 192, tiles walking down C); 6 x
 * 64 the same way (KC 128, MC 240 / 480: 256^3 0.94x / 0.98x, 512^3 0.96x / 0.95x, 1024^3
 * 0.95x / 0.95x, 1024 x 1024 x 64 NT 0.97x / 1.00x). The
 * same Xeon streams the B block from L2 at no cost to 12 x 32 (bench_ukernels stream/k256
 * = packed/k256), so the k loop itself sets the ceiling there.
 * Fallback blocking (caches unreadable; normally derived at start-up, gemm/blocking.h):
 * BLIS skx scaled to this tile (MC 240 = 20 x 12, KC 256, NC 3072).
 * Edge tiles: the driver's scratch tile, or ukernel_sup's masked columns and row count
 * (an edge of at most 16 columns computes one vector per row, not two);
 * gemv_t/gemv_n mask their tails. */
#include "kernels/simd/avx512.h"

#define QKV_KERNEL_ISA avx512
#define GEMM_MR 12
#define GEMM_NV 2
#define GEMM_MC 240
#define GEMM_KC 256
#define GEMM_NC 3072
/* the GEMM driver packs A from 8 B panels (n >= 256) on and keeps its micropanel in L1 over
   the jr loop (gemm/driver.c). Against reading A in place with the B micropanel in L1,
   medians of 15 interleaved calls in one process on an AVX-512 Xeon: 512^3 1.02x,
   1024^3 1.05x, 2048^3 1.04x, 1000^3 1.13x, 1024 x 1024 x 64 NT 1.26x, 4096 x 4096 x 64 NT
   1.37x, A^T 1024^3 1.38x. From 8 panels since the order's items are at most two row
   panels (before, 256^3 measured 0.92x with 16 items a block): n from 256 to 511, medians
   of interleaved calls on an Emerald Rapids Xeon, two runs, one thread 1.00-1.14x (256^3
   1.02-1.05x, 256 x 256 x 64 NT 1.09-1.14x, 1000 x 500 x 500 1.12-1.13x, 300^3 level), two
   threads 1.03-1.58x (the row panels make more items than the in-place order's column
   chunks: 256^3 1.04-1.37x, 1000 x 500 x 500 1.23-1.32x). Not re-measured on a half-rate
   core (Zen 4). The AVX2 6 x 16 tile there: 0.96-1.0x on the squares and 1024 x 1024 x 64,
   1.25x on 4096 x 4096 x 64; it takes the packed-A order from 60 B panels (kernels/avx2.c).
   Since the in-place order splits its rows too where it has few items, the driver keeps A
   in place below 16 B panels where m is at most 32 row panels (PA_MIN_PANELS): on an Intel
   Xeon (2 vCPUs, 48 KiB L1d, 2 MiB L2), 21 rounds of calls alternated in one process,
   in place against packed, medians, one thread / two: 256^3 1.03x / 1.16x, 256 x 256 x 64
   NT 1.02x / 1.23x, 300^3 1.03x / 1.03x, 64 x 300 x 500 1.03x / 1.26x, 128 x 480 x 1024
   1.01x / 1.05x, 384^3 level. Wide n keeps the packed order at any m (384 x
   1024 x 64 NT in place 0.90x / 0.92x, 200 x 2000 x 300 0.96x / 1.05x). */
#define GEMM_PACK_A_PANELS 8
/* a row-major B read in place, unpacked, up to 128 rows of C (A read in place, rows of B
   at most a page apart): 1.07-1.18x on one thread, 1.0-1.25x on two (gemm/driver.c) */
#define GEMM_B_IN_PLACE_ROWS 128
/* B 8 k steps (1 KiB) ahead, two lines a step: in the packed-A order the B micropanels
   stream from L2 (the model's NC_L2 block), and 24 FMAs a step leave the loads little slack
   for an L1 miss. Interleaved medians on an Emerald Rapids Xeon (full-rate AVX-512), with
   the driver's prefetch of the tile below left out of that order: 1024^3 1.08x, 512^3
   1.03x, 1024 x 1024 x 64 NT 1.02-1.04x, 4096 x 4096 x 64 NT 1.05x; 4 and 16 steps ahead
   the same within noise. The AVX2 6 x 16 tile keeps B in L1 (A in place) and measured no
   gain from it. */
#define GEMM_PF_B_ROWS 8
/* the k loop unrolled 4 steps a trip: one pointer update per 4 steps, not one per step
   (the loop had 3 adds and a compare-and-branch per 24 FMAs, and Intel's two 512-bit FMA
   ports also take integer ops). Intel Xeon (2 vCPUs), 31 rounds of calls alternated in
   one process, median of the paired ratios, one thread: 64^3 1.02x, 128^3 1.05x, 40 x 200
   x 300 1.04x, 77 x 300 x 129 1.03x, 256^3, 480 x 480 x 256, 1024 x 1024 x 64 NT and 96 x
   96 x 1024 1.00-1.01x, 512^3 1.01x, 4096 x 64 x 4096 1.02x; sdpa 1024 x 64 level. 2
   steps: 77 x 300 x 129 0.96x and 4096 x 64 x 4096 0.98x of 4. The AVX2 6 x 16 tile
   measured level (0.99-1.02x) then, and takes 4 steps since its packed-A order
   (kernels/avx2.c). */
#define GEMM_K_STEPS 4
/* gemv_t_multi 4 x 4 chains + 4 B + 1 x = 21 ZMM; gemv_n_multi 16 chains + 4 broadcasts + 1 B = 21 */
#define GEMV_T_JB 4
#define GEMV_N_ACC 16
#include "kernels/instantiate.h"
