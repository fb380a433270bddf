/* The AArch64 Advanced SIMD kernels (kernels/simd/neon.h: 4 lanes, buffered tails).
 * GEMM tile 8 x 12 (BLIS armv8a): 24 accumulators + 3 B + 2 A (8 values, used by lane:
 * vfmaq_laneq_f32, simd/neon.h) = 29/32 Q registers, no spills (GCC 12 -O3: the former
 * 8 broadcast registers spilled 2 accumulators); 24 chains cover 2 FMA pipes x 4 cycles. Fallback blocking from BLIS armv8a (MC 120,
 * KC 640, NC 3072; derived from the caches where sysfs has them): a B micropanel 30 KiB (L1 of Cortex-A7x class cores is 32-64 KiB), a block
 * of A 300 KiB (L2). Edge tiles: the driver's scratch tile; gemv_t/gemv_n tails go
 * through a 4-float stack buffer (kernels/simd/neon.h), never past the last element. */
#include "kernels/simd/neon.h"

#define QKV_KERNEL_ISA neon
#define GEMM_MR 8
#define GEMM_NV 3
#define GEMM_MC 120
#define GEMM_KC 640
#define GEMM_NC 3072
/* gemv_t_multi 4 x 4 chains + 4 B + 1 x = 21 of 32 q registers; gemv_n_multi 16 chains + 4 + 1 = 21 */
#define GEMV_T_JB 4
#define GEMV_N_ACC 16
#include "kernels/instantiate.h"
