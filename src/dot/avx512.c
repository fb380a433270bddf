/* Dot product (see dot/dot_impl.h: 4 accumulators, pairwise reduction, masked tail).
 * ISA: AVX-512 F/VL/BW/DQ, 16 lanes, __mmask16 tails. Compiled with this ISA's flags only. */
#include "kernels.h"
#include "simd/avx512.h"

#define QKV_FN(name) name##_avx512
#include "dot/dot_impl.h"
