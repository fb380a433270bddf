/* The AArch64 Advanced SIMD kernels (kernels/simd/neon.h: 4 lanes, buffered tails).
 * GEMM tile 8 x 12 (BLIS armv8a): 24 accumulators + 3 B + 1 A broadcast = 28/32
 * Q registers; 24 chains cover 2 FMA pipes x 4 cycles. Blocking from BLIS armv8a (MC 120,
 * KC 640, NC 3072): a B micropanel 30 KiB (L1 of Cortex-A7x class cores is 32-64 KiB), a block
 * of A 300 KiB (L2). Edge tiles: the driver's scratch tile; gemv_t/gemv_n tails go
 * through a 4-float stack buffer (kernels/simd/neon.h), never past the last element. */
#include "kernels/simd/neon.h"

#define QKV_KERNEL_ISA neon
#define GEMM_MR 8
#define GEMM_NV 3
#define GEMM_MC 120
#define GEMM_KC 640
#define GEMM_NC 3072
#include "kernels/instantiate.h"
