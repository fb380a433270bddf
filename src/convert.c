/* qkv_convert: any pair of qkv_dtype values, through the active table's conversion kernels
 * (kernels.h). Baseline flags.
 *
 * Float on one side: one kernel call. F16 <-> BF16: through float in chunks of a stack
 * buffer (widening is exact, so the one rounding is the narrowing one). Every chunk is read
 * whole before its part of dst is written, which makes src == dst (both 2 bytes per
 * element) safe. Same type: memmove. */
#include <string.h>

#include "kernels.h"

enum { CHUNK = 512 }; /* floats of the F16 <-> BF16 stack buffer: 2 KiB */

static size_t dtype_size(qkv_dtype t) { return t == QKV_F32 ? sizeof(float) : sizeof(uint16_t); }

qkv_status qkv_convert(const void *src, qkv_dtype src_type, void *dst, qkv_dtype dst_type, size_t n)
{
    if ((unsigned)src_type > QKV_BF16 || (unsigned)dst_type > QKV_BF16 || (n > 0 && (src == NULL || dst == NULL)))
        return QKV_ERR_ARG;
    if (n == 0)
        return QKV_OK;
    if (src_type == dst_type) {
        if (src != dst)
            memmove(dst, src, n * dtype_size(src_type));
        return QKV_OK;
    }
    const qkv_kernels *k = qkv_kernels_active();
    if (src_type == QKV_F32) {
        (dst_type == QKV_F16 ? k->cvt_f32_f16 : k->cvt_f32_bf16)(src, dst, n);
        return QKV_OK;
    }
    const qkv_cvt_widen_fn widen = src_type == QKV_F16 ? k->cvt_f16_f32 : k->cvt_bf16_f32;
    if (dst_type == QKV_F32) {
        widen(src, dst, n);
        return QKV_OK;
    }
    const qkv_cvt_narrow_fn narrow = dst_type == QKV_F16 ? k->cvt_f32_f16 : k->cvt_f32_bf16;
    const uint16_t *s = src;
    uint16_t *d = dst;
    float buf[CHUNK];
    for (size_t i = 0; i < n; i += CHUNK) {
        const size_t m = n - i < CHUNK ? n - i : CHUNK;
        widen(s + i, buf, m);
        narrow(buf, d + i, m);
    }
    return QKV_OK;
}
