/* Dot product (see dot/dot_impl.h: 4 accumulators, pairwise reduction, masked tail).
 * ISA: AArch64 Advanced SIMD, 4 lanes, buffered tails. Compiled with this ISA's flags only. */
#include "kernels.h"
#include "simd/neon.h"

#define QKV_FN(name) name##_neon
#include "dot/dot_impl.h"
