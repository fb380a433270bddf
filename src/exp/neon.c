/* Array exp (see exp/exp_core.h for the algorithm and accuracy, exp/exp_impl.h for the loop).
 * ISA: AArch64 Advanced SIMD, 4 lanes, buffered tails. Compiled with this ISA's flags only. */
#include "kernels.h"
#include "simd/neon.h"

#define QKV_FN(name) name##_neon
#include "exp/exp_impl.h"
