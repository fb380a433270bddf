/* Internal to gemm/: packing of op(A) and op(B) blocks into the micropanel layouts that the
 * microkernel contract in kernels.h defines. Baseline flags (gemm/pack.c). */
#ifndef QKV_GEMM_PACK_H
#define QKV_GEMM_PACK_H

#include <stddef.h>

#include "qkv.h"

/* mc x kc block of op(A) -> ceil(mc / mr) micropanels of mr x kc, element (i, p) of panel
   q at dst[q * mr * kc + p * mr + i]; rows past mc are 0. a points at op(A)(0, 0) of the
   block: element (i, p) is a[i * lda + p] (QKV_NOTRANS) or a[p * lda + i] (QKV_TRANS). */
void qkv_gemm_pack_a(qkv_trans ta, size_t mc, size_t kc, const float *a, size_t lda, size_t mr, float *dst);

/* kc x nc block of op(B) -> ceil(nc / nr) micropanels of kc x nr, element (p, j) of panel
   q at dst[q * nr * kc + p * nr + j]; columns past nc are 0. b points at op(B)(0, 0) of the
   block: element (p, j) is b[p * ldb + j] (QKV_NOTRANS) or b[j * ldb + p] (QKV_TRANS). */
void qkv_gemm_pack_b(qkv_trans tb, size_t kc, size_t nc, const float *b, size_t ldb, size_t nr, float *dst);

#endif
