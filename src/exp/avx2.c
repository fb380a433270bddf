/* Array exp (see exp/exp_core.h for the algorithm and accuracy, exp/exp_impl.h for the loop).
 * ISA: AVX2 + FMA, 8 lanes, _mm256_maskload/maskstore tails. Compiled with this ISA's flags only. */
#include "kernels.h"
#include "simd/avx2.h"

#define QKV_FN(name) name##_avx2
#include "exp/exp_impl.h"
