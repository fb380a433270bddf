/* Conversions between float and the 16-bit floats binary16 (F16) and bfloat16 (BF16),
 * instantiated once per ISA by kernels/<isa>.c over its vector layer (vh_*, vf_from_f16,
 * vh_from_f32_f16, vf_from_bf16, vh_from_f32_bf16; the arithmetic lives there: F16C,
 * vcvtph2ps/vcvtps2ph, fcvtl/fcvtn, integer RNE for BF16, bit manipulation for scalar).
 *
 * Accuracy: widening is exact; narrowing rounds to nearest even, overflows to inf (F16
 * past 65504) and keeps NaN a NaN (quiet), as kernels.h states. Every ISA gives the same
 * bits for all non-NaN inputs; NaNs come out quiet (the test checks NaN-ness, not payloads).
 * Four vectors per iteration so that the conversions of independent vectors overlap; the
 * tail is one masked (AVX-512) or buffered (AVX2, NEON) vector: no element past n is
 * touched on either side.
 * QKV_CVT_WIDEN(fn, from), QKV_CVT_NARROW(fn, to) and QKV_CVT_NARROW_BLOCKS(fn, BLOCK, block,
 * to) define one kernel fn around a vector
 * conversion; included without QKV_KERNEL_ISA (kernels/avx512_bf16.c) only the macros are
 * defined. */

#include <assert.h>

#ifndef QKV_KERNELS_CONVERT_F32_H
#define QKV_KERNELS_CONVERT_F32_H

#define QKV_CVT_WIDEN(fn, from)                                                              \
    void fn(const uint16_t *src, float *dst, size_t n)                           \
    {                                                                                            \
        assert(n == 0 || (src != NULL && dst != NULL));                                          \
        size_t i = 0;                                                                            \
        for (; i + 4 * VL <= n; i += 4 * VL) {                                                   \
            const vf a = from(vh_load(src + i)), b = from(vh_load(src + i + VL));                \
            const vf c = from(vh_load(src + i + 2 * VL)), d = from(vh_load(src + i + 3 * VL));   \
            vf_store(dst + i, a);                                                                \
            vf_store(dst + i + VL, b);                                                           \
            vf_store(dst + i + 2 * VL, c);                                                       \
            vf_store(dst + i + 3 * VL, d);                                                       \
        }                                                                                        \
        for (; i + VL <= n; i += VL)                                                             \
            vf_store(dst + i, from(vh_load(src + i)));                                           \
        if (i < n)                                                                               \
            vf_store_n(dst + i, n - i, from(vh_load_n(src + i, n - i)));                         \
    }

#define QKV_CVT_NARROW(fn, to)                                                               \
    void fn(const float *src, uint16_t *dst, size_t n)                           \
    {                                                                                            \
        assert(n == 0 || (src != NULL && dst != NULL));                                          \
        size_t i = 0;                                                                            \
        for (; i + 4 * VL <= n; i += 4 * VL) {                                                   \
            const vh a = to(vf_load(src + i)), b = to(vf_load(src + i + VL));                    \
            const vh c = to(vf_load(src + i + 2 * VL)), d = to(vf_load(src + i + 3 * VL));       \
            vh_store(dst + i, a);                                                                \
            vh_store(dst + i + VL, b);                                                           \
            vh_store(dst + i + 2 * VL, c);                                                       \
            vh_store(dst + i + 3 * VL, d);                                                       \
        }                                                                                        \
        for (; i + VL <= n; i += VL)                                                             \
            vh_store(dst + i, to(vf_load(src + i)));                                             \
        if (i < n)                                                                               \
            vh_store_n(dst + i, n - i, to(vf_load_n(src + i, n - i, 0.0f)));                     \
    }

/* the same with BLOCK floats at a time through block(src, dst) where the ISA converts a block
   faster than vector by vector, then vectors through to, then the masked tail */
#define QKV_CVT_NARROW_BLOCKS(fn, BLOCK, block, to)                                          \
    void fn(const float *src, uint16_t *dst, size_t n)                                       \
    {                                                                                            \
        assert(n == 0 || (src != NULL && dst != NULL));                                          \
        size_t i = 0;                                                                            \
        for (; i + (BLOCK) <= n; i += (BLOCK))                                                   \
            block(src + i, dst + i);                                                             \
        for (; i + VL <= n; i += VL)                                                             \
            vh_store(dst + i, to(vf_load(src + i)));                                             \
        if (i < n)                                                                               \
            vh_store_n(dst + i, n - i, to(vf_load_n(src + i, n - i, 0.0f)));                     \
    }

#endif

#ifdef QKV_KERNEL_ISA
QKV_CVT_WIDEN(QKV_ISA_FN(qkv_cvt_f16_f32), vf_from_f16)
QKV_CVT_WIDEN(QKV_ISA_FN(qkv_cvt_bf16_f32), vf_from_bf16)
QKV_CVT_NARROW(QKV_ISA_FN(qkv_cvt_f32_f16), vh_from_f32_f16)
#ifdef VH_BF16_BLOCK
/* the vector layer converts VH_BF16_BLOCK floats at a time faster than vector by vector */
QKV_CVT_NARROW_BLOCKS(QKV_ISA_FN(qkv_cvt_f32_bf16), VH_BF16_BLOCK, vh_from_f32_bf16_block, vh_from_f32_bf16)
#else
QKV_CVT_NARROW(QKV_ISA_FN(qkv_cvt_f32_bf16), vh_from_f32_bf16)
#endif
#endif
