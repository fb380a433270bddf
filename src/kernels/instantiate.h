/* Every f32 kernel of one ISA, instantiated by that ISA's unit kernels/<isa>.c, which is
 * compiled with the ISA's flags only (meson.build: one static library per ISA). The unit
 * defines, before including this file:
 *   QKV_KERNEL_ISA        the ISA's name as in src/isa_list.h (e.g. avx2)
 *   GEMM_MR, GEMM_NV, GEMM_MC, GEMM_KC, GEMM_NC   its GEMM register tile and blocking
 *                         (kernels/gemm_f32.h), justified in the unit's header; MR and
 *                         NR = NV x VL must be the tile src/isa_list.h names
 * and includes its vector layer kernels/simd/<isa>.h. Every kernel is then named
 * <kernel>_f32_<isa> (qkv_dot_f32_avx2, qkv_gemm_f32_avx2, ...), as kernels.h declares;
 * the conversions, whose names already say both types, are <kernel>_<isa>
 * (qkv_cvt_f16_f32_avx2: F16 -> F32), through QKV_ISA_FN. A unit that defines
 * QKV_GEMM_TILE_ONLY as well gets the GEMM kernels alone: a second register tile of an ISA
 * (kernels/avx2_4x24.c), whose name (QKV_KERNEL_ISA) is the unit's. */
#ifndef QKV_KERNEL_ISA
#error "define QKV_KERNEL_ISA before including kernels/instantiate.h"
#endif

#include "kernels.h"

#define QKV_FN_CAT(name, isa) name##_f32_##isa
#define QKV_FN_EXPAND(name, isa) QKV_FN_CAT(name, isa)
#define QKV_FN(name) QKV_FN_EXPAND(name, QKV_KERNEL_ISA)
#define QKV_ISA_FN_CAT(name, isa) name##_##isa
#define QKV_ISA_FN_EXPAND(name, isa) QKV_ISA_FN_CAT(name, isa)
#define QKV_ISA_FN(name) QKV_ISA_FN_EXPAND(name, QKV_KERNEL_ISA)

#ifdef QKV_GEMM_TILE_ONLY
/* a second GEMM register tile of an ISA (kernels/avx2_4x24.c): the GEMM kernels alone,
   named after the unit (qkv_gemm_f32_avx2_4x24), the tile free of src/isa_list.h's */
#include "kernels/gemm_f32.h"
#else
#include "kernels/dot_f32.h"
#include "kernels/exp_f32.h"
#include "kernels/softmax_f32.h"
#include "kernels/gemm_f32.h"
#include "kernels/attn_update_f32.h"
#include "kernels/softcap_f32.h"
#include "kernels/convert_f32.h"

#define QKV_TILE_OF(what, isa) QKV_TILE_CAT(what, isa)
#define QKV_TILE_CAT(what, isa) QKV_GEMM_##what##_##isa
_Static_assert(GEMM_MR == QKV_TILE_OF(MR, QKV_KERNEL_ISA) && GEMM_NR == QKV_TILE_OF(NR, QKV_KERNEL_ISA),
               "the unit's GEMM tile is the one src/isa_list.h names");
#endif
