/* GEMM, AArch64 Advanced SIMD (see gemm/ukernel_impl.h for the algorithm, kernels.h for the
 * contract). Tile 8 x 12 (BLIS armv8a): 24 accumulators + 3 B + 1 A broadcast = 28/32
 * Q registers; 24 chains cover 2 FMA pipes x 4 cycles. Blocking from BLIS armv8a (MC 120,
 * KC 640, NC 3072): a B micropanel 30 KiB (L1 of Cortex-A7x class cores is 32-64 KiB), a block
 * of A 300 KiB (L2). Tails: scratch tile in the driver; gemv_t/gemv_n go through a 4-float
 * stack buffer (simd/neon.h), never past the last element. */
#include "gemm/tiles.h"
#include "kernels.h"
#include "simd/neon.h"

#define QKV_FN(name) name##_neon
#define GEMM_MR QKV_GEMM_MR_NEON
#define GEMM_NV 3
#define GEMM_MC 120
#define GEMM_KC 640
#define GEMM_NC 3072
#include "gemm/ukernel_impl.h"
_Static_assert(GEMM_NR == QKV_GEMM_NR_NEON, "gemm/tiles.h names this tile");
