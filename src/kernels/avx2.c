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
/* gemv_t_multi 4 x 2 chains + 2 B + 1 x = 11 of 16 YMM; gemv_n_multi 8 chains + 4 broadcasts + 1 B = 13 */
#define GEMV_T_JB 2
#define GEMV_N_ACC 8
#include "kernels/instantiate.h"
