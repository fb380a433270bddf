/* Softmax, three passes with exp fused into the sum (see softmax/softmax_impl.h).
 * ISA: AVX2 + FMA, 8 lanes, _mm256_maskload/maskstore tails. Compiled with this ISA's flags only. */
#include "kernels.h"
#include "simd/avx2.h"

#define QKV_FN(name) name##_avx2
#include "softmax/softmax_impl.h"
