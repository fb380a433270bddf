/* Online-softmax step of the fused attention (see attention/online_softmax_impl.h; the
 * driver is attention/sdpa.c). ISA: AVX2 + FMA, 8 lanes. Compiled with this ISA's flags only. */
#include "kernels.h"
#include "simd/avx2.h"

#define QKV_FN(name) name##_avx2
#include "attention/online_softmax_impl.h"
