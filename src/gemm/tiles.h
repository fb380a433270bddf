/* Internal: the register tile MR x NR of each ISA's GEMM microkernel, as constants, so that
 * code which relies on them at compile time (attention/sdpa.c: its tiles are multiples of
 * every MR and NR) can check it. The tile files gemm/<isa>-<tile>.c take their MR from here
 * and assert their NR against it; the kernel tables carry the same numbers at run time. */
#ifndef QKV_GEMM_TILES_H
#define QKV_GEMM_TILES_H

#define QKV_GEMM_MR_SCALAR 4
#define QKV_GEMM_NR_SCALAR 4
#define QKV_GEMM_MR_AVX2 6
#define QKV_GEMM_NR_AVX2 16
#define QKV_GEMM_MR_AVX512 12
#define QKV_GEMM_NR_AVX512 32
#define QKV_GEMM_MR_NEON 8
#define QKV_GEMM_NR_NEON 12

/* X(ISA) for every ISA above */
#define QKV_GEMM_TILES(X) X(SCALAR) X(AVX2) X(AVX512) X(NEON)

#endif
