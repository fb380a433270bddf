/* Online-softmax step of the fused attention (see attention/online_softmax_impl.h; the
 * driver is attention/sdpa.c). ISA: portable C, width 1, no FMA assumed. Compiled with this ISA's flags only. */
#include "kernels.h"
#include "simd/scalar.h"

#define QKV_FN(name) name##_scalar
#include "attention/online_softmax_impl.h"
