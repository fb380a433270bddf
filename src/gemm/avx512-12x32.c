/* GEMM, AVX-512 F/VL/BW/DQ (see gemm/ukernel_impl.h for the algorithm, kernels.h for the
 * contract). Tile 12 x 32, the row-major mirror of BLIS skx's 32 x 12: 24 accumulators +
 * 2 B + 1 A broadcast = 27/32 ZMM registers; 24 chains cover 2 FMA pipes x 4 cycles with
 * room to spare, and NR = 32 divides the attention head sizes 64 and 128.
 * Blocking from BLIS skx scaled to this tile (MC 240 = 20 x 12, KC 256, NC 3072): a B
 * micropanel is 32 KiB (L1), a block of A 240 KiB (L2). Not tuned on hardware: this machine
 * exposes no AVX-512, so the kernel is verified through the emulation build only.
 * Tails: scratch tile in the driver; gemv_t/gemv_n use __mmask16 masked loads and stores. */
#include "gemm/tiles.h"
#include "kernels.h"
#include "simd/avx512.h"

#define QKV_FN(name) name##_avx512
#define GEMM_MR QKV_GEMM_MR_AVX512
#define GEMM_NV 2
#define GEMM_MC 240
#define GEMM_KC 256
#define GEMM_NC 3072
#include "gemm/ukernel_impl.h"
_Static_assert(GEMM_NR == QKV_GEMM_NR_AVX512, "gemm/tiles.h names this tile");
