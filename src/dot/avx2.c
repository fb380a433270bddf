/* Dot product (see dot/dot_impl.h: 4 accumulators, pairwise reduction, masked tail).
 * ISA: AVX2 + FMA, 8 lanes, _mm256_maskload/maskstore tails. Compiled with this ISA's flags only. */
#include "kernels.h"
#include "simd/avx2.h"

#define QKV_FN(name) name##_avx2
#include "dot/dot_impl.h"
