/* The portable C kernels: every ISA's fallback, and the reference path on any CPU.
 * Vector layer kernels/simd/scalar.h: width 1, no FMA assumed (vf_fma rounds twice),
 * no tails to mask. For correctness on any CPU, not speed.
 * GEMM tile 4 x 4: 16 accumulators + 4 B + 1 A = 21 values, which fit the 32 FP
 * registers of AArch64; on x86-64 (16 XMM) the compiler spills or pairs them into SSE
 * vectors. Blocking MC/KC/NC 128/256/2048: a 128 x 256 block of A is 128 KiB (L2),
 * a B micropanel 4 KiB (L1). Edge tiles: the driver's scratch tile. */
#include "kernels/simd/scalar.h"

#define QKV_KERNEL_ISA scalar
#define GEMM_MR 4
#define GEMM_NV 4
#define GEMM_MC 128
#define GEMM_KC 256
#define GEMM_NC 2048
#include "kernels/instantiate.h"
