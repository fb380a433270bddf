/* Array exp (see exp/exp_core.h for the algorithm and accuracy, exp/exp_impl.h for the loop).
 * ISA: portable C, width 1, no FMA assumed. Compiled with this ISA's flags only. */
#include "kernels.h"
#include "simd/scalar.h"

#define QKV_FN(name) name##_scalar
#include "exp/exp_impl.h"
