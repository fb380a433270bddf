/* The AVX-512 F/VL/BW/DQ kernels (kernels/simd/avx512.h: 16 lanes, __mmask16 tails,
 * vscalefps for the 2^n of exp).
 * GEMM tile 12 x 32, the row-major mirror of BLIS skx's 32 x 12: 24 accumulators +
 * 2 B + 1 A broadcast = 27/32 ZMM registers; 24 chains cover 2 FMA pipes x 4 cycles with
 * room to spare, and NR = 32 divides the attention head sizes 64 and 128.
 * Blocking from BLIS skx scaled to this tile (MC 240 = 20 x 12, KC 256, NC 3072): a B
 * micropanel is 32 KiB (L1), a block of A 240 KiB (L2); not yet tuned on
 * hardware. Edge tiles: the driver's scratch tile; gemv_t/gemv_n mask their tails. */
#include "kernels/simd/avx512.h"

#define QKV_KERNEL_ISA avx512
#define GEMM_MR 12
#define GEMM_NV 2
#define GEMM_MC 240
#define GEMM_KC 256
#define GEMM_NC 3072
#include "kernels/instantiate.h"
