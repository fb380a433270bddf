/* The one list of the instruction sets libqkv knows. Dispatch, the kernel tables and the
 * tests expand it; meson.build holds the matching build list (name, CPU family, compiler
 * flags) and generates isa_built.h, QKV_ISA_BUILT(X), with the entries this build carries.
 *
 * X(ID, name, detect, MR, NR): the public enum value is QKV_ISA_<ID> (include/qkv.h), name
 * is what qkv_isa_name() and the QKV_ISA variable say and the suffix of the ISA's kernels
 * (qkv_dot_f32_<name>, from src/kernels/<name>.c with src/kernels/simd/<name>.h), detect is
 * an expression over dispatch.c's CPU helpers that is true when this CPU and OS run the ISA
 * (every helper exists on every architecture, false where it does not apply), and MR x NR
 * is the register tile of its GEMM microkernel (the unit checks it at compile time; code
 * that relies on tile sizes, as attention/core.c does, checks them against every entry).
 * Order: increasing preference; detection picks the last supported entry. The macros that
 * expand the list take (ID, name, ...) when they need only the first fields. */
#ifndef QKV_ISA_LIST_H
#define QKV_ISA_LIST_H

#define QKV_ISA_LIST(X)                                                                       \
    X(SCALAR, scalar, 1, 4, 4)                                                                \
    X(AVX2, avx2, cpu_x86_avx2(), 6, 16)                                                      \
    X(AVX512, avx512, cpu_x86_avx512(), 12, 32)                                               \
    X(NEON, neon, cpu_arm_neon(), 8, 12)

/* the number of ISAs in the list: arrays indexed by qkv_isa have this many entries */
#define QKV_ISA_ONE(ID, ...) +1
enum { QKV_ISA_COUNT = 0 QKV_ISA_LIST(QKV_ISA_ONE) };
#undef QKV_ISA_ONE

/* QKV_GEMM_MR_<name>, QKV_GEMM_NR_<name>: each ISA's register tile as constants */
#define QKV_ISA_TILE(ID, name, detect, mr, nr) QKV_GEMM_MR_##name = mr, QKV_GEMM_NR_##name = nr,
enum { QKV_ISA_LIST(QKV_ISA_TILE) };
#undef QKV_ISA_TILE

#endif
