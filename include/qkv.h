/* libqkv: SIMD microkernels and attention drivers for CPUs.
 *
 * The public contract is shared/API.md; this header implements the parts that exist.
 * C99/C11 and C++ compatible, row-major, float (IEEE binary32) unless stated.
 *
 * Thread safety: every function may be called from any number of threads at once.
 * qkv_isa_select() may run while other threads compute; it affects calls that start
 * after it returns. */
#ifndef QKV_H
#define QKV_H

#include <stddef.h>

#if defined(_WIN32) && defined(QKV_BUILDING_DLL)
#define QKV_API __declspec(dllexport)
#elif defined(__GNUC__)
#define QKV_API __attribute__((visibility("default")))
#else
#define QKV_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status and errors ------------------------------------------------------------ */

typedef enum qkv_status {
    QKV_OK = 0,
    QKV_ERR_ARG = 1,   /* NULL pointer where data is needed, zero/inconsistent size, bad flag, ld too small */
    QKV_ERR_SIZE = 2,  /* a size computation would overflow size_t, or a buffer is smaller than required */
    QKV_ERR_NOMEM = 3, /* an internal allocation failed (only possible when no workspace was given) */
    QKV_ERR_ISA = 4    /* the requested instruction set is not supported by this CPU or this build */
} qkv_status;

/* A static English message for s; never NULL, also for values outside the enum. */
QKV_API const char *qkv_strerror(qkv_status s);

/* "MAJOR.MINOR.PATCH" */
QKV_API const char *qkv_version(void);

/* ---- Instruction-set dispatch ----------------------------------------------------- */

typedef enum qkv_isa {
    QKV_ISA_SCALAR = 0,
    QKV_ISA_AVX2 = 1,   /* AVX2 + FMA + F16C, OS-enabled YMM state */
    QKV_ISA_AVX512 = 2, /* AVX-512 F, VL, BW, DQ, OS-enabled ZMM state */
    QKV_ISA_NEON = 3    /* AArch64 Advanced SIMD */
} qkv_isa;

/* Best ISA that both this CPU and this build support. */
QKV_API qkv_isa qkv_isa_detected(void);
/* The ISA whose kernels calls use now. At first use the environment variable QKV_ISA
   (scalar|avx2|avx512|neon) chooses it; an unknown or unsupported value falls back to
   qkv_isa_detected() with one line on stderr. */
QKV_API qkv_isa qkv_isa_active(void);
/* Switch every later call to isa's kernels. QKV_ERR_ISA if this CPU or build lacks it
   (or isa is not a qkv_isa value); the active ISA is then unchanged. Thread-safe. */
QKV_API qkv_status qkv_isa_select(qkv_isa isa);
/* "scalar", "avx2", "avx512", "neon"; "unknown" for other values. */
QKV_API const char *qkv_isa_name(qkv_isa isa);

/* ---- Kernels ---------------------------------------------------------------------- *
 * Hot-path calls with preconditions instead of status codes: pointers must be valid for
 * n elements (they may be NULL when n == 0). They never read or write past element n - 1,
 * whatever the alignment, and never allocate. */

/* sum a[i] * b[i]; n == 0 -> 0.0f. Error <= 2 n FLT_EPSILON sum |a[i] b[i]|. */
QKV_API float qkv_dot(const float *a, const float *b, size_t n);

/* y[i] = expf(x[i]); y may equal x (other overlaps are not allowed).
   At most 2 ULP from the correctly rounded result on [-87.3, 88.7]; exp(-inf) = 0,
   exp(+inf) = +inf, NaN -> NaN, 0 below about -103.97, +inf above about 88.72. */
QKV_API void qkv_exp(const float *x, float *y, size_t n);

/* y = softmax(scale * x), max-subtracted; y may equal x. Entries whose scaled value is
   -inf get weight 0; if every scaled entry is -inf the row is all zeros; a NaN anywhere
   (or a scaled +inf) makes the whole row NaN; n == 0 does nothing. */
QKV_API void qkv_softmax(const float *x, float *y, size_t n, float scale);

#ifdef __cplusplus
}
#endif

#endif /* QKV_H */
