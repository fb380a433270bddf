/* GEMM, portable C fallback (see gemm/ukernel_impl.h for the algorithm, kernels.h for the
 * contract). Tile 4 x 4: 16 accumulators + 4 B + 1 A = 21 values, which fit the 32 FP
 * registers of AArch64; on x86-64 (16 XMM) the compiler spills or pairs them into SSE
 * vectors. This path is for correctness on any CPU, not speed. No FMA is assumed (vf_fma
 * rounds twice). Blocking MC/KC/NC 128/256/2048: a 128 x 256 block of A is 128 KiB (L2),
 * a B micropanel 4 KiB (L1). Tails: the driver's scratch tile for the microkernel;
 * width-1 vectors need no masking in gemv_t/gemv_n. */
#include "gemm/tiles.h"
#include "kernels.h"
#include "simd/scalar.h"

#define QKV_FN(name) name##_scalar
#define GEMM_MR QKV_GEMM_MR_SCALAR
#define GEMM_NV 4
#define GEMM_MC 128
#define GEMM_KC 256
#define GEMM_NC 2048
#include "gemm/ukernel_impl.h"
_Static_assert(GEMM_NR == QKV_GEMM_NR_SCALAR, "gemm/tiles.h names this tile");
