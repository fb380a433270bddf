/* Dot product (see dot/dot_impl.h: 4 accumulators, pairwise reduction, masked tail).
 * ISA: portable C, width 1, no FMA assumed. Compiled with this ISA's flags only. */
#include "kernels.h"
#include "simd/scalar.h"

#define QKV_FN(name) name##_scalar
#include "dot/dot_impl.h"
