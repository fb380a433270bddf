/* Softmax, three passes with exp fused into the sum (see softmax/softmax_impl.h).
 * ISA: AArch64 Advanced SIMD, 4 lanes, buffered tails. Compiled with this ISA's flags only. */
#include "kernels.h"
#include "simd/neon.h"

#define QKV_FN(name) name##_neon
#include "softmax/softmax_impl.h"
