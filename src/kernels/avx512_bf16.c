/* F32 -> BF16 with AVX512_BF16: vcvtneps2bf16 rounds 16 floats to nearest even in one
 * instruction (NaN -> quiet NaN, overflow -> inf) and treats subnormal inputs as zero,
 * which kernels.h allows for cvt_f32_bf16. Its own unit because it needs -mavx512bf16,
 * which the AVX-512 unit must not be compiled with (that unit runs on every AVX-512 CPU);
 * dispatch.c puts it in the AVX-512 table only where CPUID says the CPU has the extension.
 * The loop and tails are those of kernels/convert_f32.h (__mmask16 float loads, __mmask32
 * 16-bit stores, nothing past n touched). */
#include "kernels/simd/avx512.h"
#include "kernels.h"

#include "kernels/convert_f32.h"

/* __m256bh and __m256i are both 32-byte vectors: the cast keeps the bits */
static inline vh vh_from_f32_bf16_native(vf v) { return (vh)_mm512_cvtneps_pbh(v); }

QKV_CVT_NARROW(qkv_cvt_f32_bf16_avx512bf16, vh_from_f32_bf16_native)
