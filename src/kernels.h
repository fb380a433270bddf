/* Internal: the kernel table. One constant table per ISA lives in dispatch.c; drivers and
 * the public entry points call through qkv_kernels_active() and never name an ISA file.
 *
 * Kernel contracts (every ISA implements them identically, see include/qkv.h):
 *   dot(a, b, n)           sum of a[i]*b[i], n == 0 -> 0
 *   exp(x, y, n)           y[i] = exp(x[i]), y == x allowed
 *   softmax(x, y, n, s)    y = softmax(s * x), y == x allowed
 * None reads or writes outside [0, n) of its arrays, for any alignment. */
#ifndef QKV_KERNELS_H
#define QKV_KERNELS_H

#include <stddef.h>

#include "qkv.h"

typedef float (*qkv_dot_fn)(const float *a, const float *b, size_t n);
typedef void (*qkv_exp_fn)(const float *x, float *y, size_t n);
typedef void (*qkv_softmax_fn)(const float *x, float *y, size_t n, float scale);

typedef struct qkv_kernels {
    qkv_isa isa;
    qkv_dot_fn dot;
    qkv_exp_fn exp;
    qkv_softmax_fn softmax;
} qkv_kernels;

/* The table in use now (never NULL). */
const qkv_kernels *qkv_kernels_active(void);

/* Per-ISA kernels: defined in <op>/<isa>.c, compiled with that ISA's flags only. */
#define QKV_DECLARE_ISA(isa)                                                    \
    float qkv_dot_##isa(const float *a, const float *b, size_t n);               \
    void qkv_exp_##isa(const float *x, float *y, size_t n);                      \
    void qkv_softmax_##isa(const float *x, float *y, size_t n, float scale);

QKV_DECLARE_ISA(scalar)
QKV_DECLARE_ISA(avx2)
QKV_DECLARE_ISA(avx512)
QKV_DECLARE_ISA(neon)

#endif
