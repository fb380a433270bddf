/* Softmax, three passes with exp fused into the sum (see softmax/softmax_impl.h).
 * ISA: portable C, width 1, no FMA assumed. Compiled with this ISA's flags only. */
#include "kernels.h"
#include "simd/scalar.h"

#define QKV_FN(name) name##_scalar
#include "softmax/softmax_impl.h"
