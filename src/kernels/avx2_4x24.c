/* The AVX2 GEMM on a 4 x 24 register tile, for cores that run AVX2 through a 128-bit
 * datapath (AMD Zen 1 / Zen+: every YMM operation is two passes). The GEMM kernels alone
 * (kernels/gemm_f32.h, named *_f32_avx2_4x24); the AVX2 table keeps its 6 x 16 tile, which
 * the attention core and every other core use; dispatch.c hands this one to the public GEMM
 * (qkv_gemm, qkv_gemm_ex, the MHA projections) on such a core (kernels.h, qkv_gemm_for).
 * Register budget: 12 accumulators + 3 B + 1 A broadcast = 16/16 YMM.
 * Why: on Zen 1 a `vbroadcastss ymm, m32` is two ops; 6 x 16 takes one broadcast per two
 * FMAs, this tile one per three, with the same 12 chains for 2 pipes x 4-5 cycles of FMA
 * latency. In L1 (bench_ukernels, peak_frac, medians of 7, one Zen 1 VM): packed k 64
 * 0.88 against 6 x 16's 0.65, in place k 64 0.87 / 0.76, in place k 256 0.86 / 0.81, but
 * packed k 256 0.89 / 0.95; a scratch k loop on a busier day of that VM gave 6 x 16
 * 76-81% and 4 x 24 82-98%. In the library it is ahead by 2-6% on large wide problems and
 * behind where n = 64 (gemm/driver.c, qkv_gemm_tile_for, has the figures and the rule).
 * 3 x 32 (one broadcast per four FMAs) ran 88-97% in that scratch loop but lost to this
 * tile on 1000^3 and 77 x 300 x 129 in the library.
 * Fallback blocking (normally derived at start-up from the caches, gemm/blocking.h): a B
 * micropanel 384 x 24 x 4 = 36 KiB, a 144 x 384 block of A 216 KiB, NC 4080 (170 tiles).
 * Edge tiles: as the 6 x 16 kernels (masked columns, fewer rows). */
#include "kernels/simd/avx2.h"

#define QKV_KERNEL_ISA avx2_4x24
#define QKV_GEMM_TILE_ONLY
#define GEMM_MR 4
#define GEMM_NV 3
#define GEMM_MC 144
#define GEMM_KC 384
#define GEMM_NC 4080
/* the gemv kernels are the 6 x 16 unit's: the same register budget (kernels/avx2.c) */
#define GEMV_T_JB 2
#define GEMV_N_ACC 8
#include "kernels/instantiate.h"
