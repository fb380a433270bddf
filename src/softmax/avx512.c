/* Softmax, three passes with exp fused into the sum (see softmax/softmax_impl.h).
 * ISA: AVX-512 F/VL/BW/DQ, 16 lanes, __mmask16 tails, vscalefps for 2^n. Compiled with this ISA's flags only. */
#include "kernels.h"
#include "simd/avx512.h"

#define QKV_FN(name) name##_avx512
#include "softmax/softmax_impl.h"
