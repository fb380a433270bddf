/* Online-softmax step of the fused attention (see attention/online_softmax_impl.h; the
 * driver is attention/sdpa.c). ISA: AArch64 Advanced SIMD, 4 lanes. Compiled with this ISA's flags only. */
#include "kernels.h"
#include "simd/neon.h"

#define QKV_FN(name) name##_neon
#include "attention/online_softmax_impl.h"
