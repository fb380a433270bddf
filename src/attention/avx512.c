/* Online-softmax step of the fused attention (see attention/online_softmax_impl.h; the
 * driver is attention/sdpa.c). ISA: AVX-512 F/VL/BW/DQ, 16 lanes, vscalefps for 2^n. Compiled with this ISA's flags only. */
#include "kernels.h"
#include "simd/avx512.h"

#define QKV_FN(name) name##_avx512
#include "attention/online_softmax_impl.h"
