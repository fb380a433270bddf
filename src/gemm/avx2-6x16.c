/* GEMM, AVX2 + FMA (see gemm/ukernel_impl.h for the algorithm, kernels.h for the contract).
 * Tile 6 x 16 (BLIS haswell): 12 accumulators + 2 B + 1 A broadcast = 15/16 YMM registers.
 * Per k step: 2 B loads + 6 broadcast loads feed 12 FMAs, so the 2 FMA pipes (not the load
 * ports) set the pace, and 12 independent chains cover 2 pipes x 4 cycles of latency.
 * Blocking tuned on AMD EPYC Zen 4 (32 KiB L1d, 1 MiB L2; MC 72..288 x KC 256..512 tried,
 * within noise of each other at 1024^3, KC 384 best at K = 4096): a B micropanel is
 * 384 x 16 x 4 = 24 KiB (L1), a 144 x 384 block of A 216 KiB (L2), packed B ~6 MiB (L3).
 * Tails: scratch tile in the driver; gemv_t/gemv_n mask with _mm256_maskload/maskstore. */
#include "gemm/tiles.h"
#include "kernels.h"
#include "simd/avx2.h"

#define QKV_FN(name) name##_avx2
#define GEMM_MR QKV_GEMM_MR_AVX2
#define GEMM_NV 2
#define GEMM_MC 144
#define GEMM_KC 384
#define GEMM_NC 4080
#include "gemm/ukernel_impl.h"
_Static_assert(GEMM_NR == QKV_GEMM_NR_AVX2, "gemm/tiles.h names this tile");
