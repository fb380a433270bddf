/* F32 -> BF16 with AVX512_BF16. vcvtne2ps2bf16 rounds two vectors of 16 floats to nearest
 * even into one ZMM of 32 bfloat16 (NaN -> quiet NaN, overflow -> inf) and treats subnormal
 * inputs as zero, which kernels.h allows for cvt_f32_bf16. One instruction per 32 floats
 * where vcvtneps2bf16 takes one per 16: on an AVX-512 Xeon both are two uops, so the
 * two-source form halves the conversion work, and a whole ZMM is stored at a time.
 * The loop is kernels/convert_f32.h's QKV_CVT_NARROW_BLOCKS: blocks of two pairs, then
 * vcvtneps2bf16 per vector, the last one masked (__mmask16 float loads, __mmask32 16-bit
 * stores): nothing past n is touched.
 * Its own unit because it needs -mavx512bf16, which the AVX-512 unit must not be compiled
 * with (that unit runs on every AVX-512 CPU); dispatch.c puts it in the AVX-512 table only
 * where CPUID says the CPU has the extension. */
#include <string.h>

#include "kernels/simd/avx512.h"
#include "kernels.h"

#include "kernels/convert_f32.h"

/* __m256bh and __m256i are both 32-byte vectors: the cast keeps the bits */
static inline vh vh_from_f32_bf16_native(vf v) { return (vh)_mm512_cvtneps_pbh(v); }

/* src[0..32) -> dst[0..32): the low 16 floats to the low half (the second operand); the
   64 bytes stored with memcpy, one unaligned ZMM store once compiled */
static inline void bf16_pair(const float *src, uint16_t *dst)
{
    const __m512bh r = _mm512_cvtne2ps_pbh(vf_load(src + VL), vf_load(src));
    _Static_assert(sizeof r == 2 * VL * sizeof(uint16_t), "32 bfloat16 per vector pair");
    memcpy(dst, &r, sizeof r);
}

/* two independent pairs a block: one pair per loop trip measured 101 ns at 4096, two 91 */
static inline void bf16_block(const float *src, uint16_t *dst)
{
    bf16_pair(src, dst);
    bf16_pair(src + 2 * VL, dst + 2 * VL);
}

QKV_CVT_NARROW_BLOCKS(qkv_cvt_f32_bf16_avx512bf16, 4 * VL, bf16_block, vh_from_f32_bf16_native)
