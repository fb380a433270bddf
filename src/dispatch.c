/* CPU feature detection and the kernel tables, one per ISA.
 *
 * Compiled with baseline flags only: nothing here may execute an AVX or SVE instruction
 * before detection has said the CPU and the OS support it.
 *
 * The active table is an atomic pointer. Detection and the QKV_ISA environment variable
 * are read exactly once (pthread_once); qkv_isa_select() swaps the pointer atomically, so
 * a call that already loaded the old table finishes on it and later calls use the new one. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define QKV_X86 1
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

#ifndef QKV_VERSION_STRING
#define QKV_VERSION_STRING "0.1.0"
#endif

/* one table per ISA: every kernel of that ISA, named qkv_<op>_<isa> (kernels.h) */
#define QKV_TABLE(ID, sfx)                                                                        \
    static const qkv_kernels table_##sfx = {                                                       \
        .isa = QKV_ISA_##ID,                                                                      \
        .dot = qkv_dot_##sfx,                                                                      \
        .exp = qkv_exp_##sfx,                                                                      \
        .softmax = qkv_softmax_##sfx,                                                              \
        .gemm = &qkv_gemm_##sfx,                                                                   \
        .attn_update = qkv_attn_update_##sfx,                                                      \
    };

QKV_TABLE(SCALAR, scalar)
#ifdef QKV_HAVE_AVX2
QKV_TABLE(AVX2, avx2)
#endif
#ifdef QKV_HAVE_AVX512
QKV_TABLE(AVX512, avx512)
#endif
#ifdef QKV_HAVE_NEON
QKV_TABLE(NEON, neon)
#endif

/* ---- detection ---------------------------------------------------------------------- */

#ifdef QKV_X86
static unsigned long long read_xcr0(void)
{
    unsigned lo, hi;
    /* xgetbv with ECX = 0; only called after CPUID said OSXSAVE is set. */
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static int x86_has(qkv_isa isa)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    const int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
    if (!(fma && osxsave && avx && f16c))
        return 0;
    const unsigned long long xcr0 = read_xcr0();
    if ((xcr0 & 0x6) != 0x6) /* XMM and YMM state enabled by the OS */
        return 0;
    if (__get_cpuid_max(0, NULL) < 7)
        return 0;
    __cpuid_count(7, 0, a, b, c, d);
    const int avx2 = (b >> 5) & 1;
    if (isa == QKV_ISA_AVX2)
        return avx2;
#ifdef QKV_AVX512_EMULATION
    if (isa == QKV_ISA_AVX512) /* test build: the AVX-512 kernels run on emulated intrinsics */
        return avx2;
#endif
    if (isa == QKV_ISA_AVX512) {
        const int f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1;
        /* opmask (bit 5), upper ZMM0-15 (bit 6) and ZMM16-31 (bit 7) state */
        return avx2 && f && dq && bw && vl && (xcr0 & 0xe0) == 0xe0;
    }
    return 0;
}
#endif

static int isa_supported(qkv_isa isa)
{
    switch (isa) {
    case QKV_ISA_SCALAR:
        return 1;
#ifdef QKV_HAVE_AVX2
    case QKV_ISA_AVX2:
        return x86_has(QKV_ISA_AVX2);
#endif
#ifdef QKV_HAVE_AVX512
    case QKV_ISA_AVX512:
        return x86_has(QKV_ISA_AVX512);
#endif
#ifdef QKV_HAVE_NEON
    case QKV_ISA_NEON:
#if defined(__linux__) && defined(HWCAP_ASIMD)
        return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#else
        return 1; /* Advanced SIMD is part of the AArch64 baseline */
#endif
#endif
    default:
        return 0;
    }
}

static const qkv_kernels *table_for(qkv_isa isa)
{
    switch (isa) {
#ifdef QKV_HAVE_AVX2
    case QKV_ISA_AVX2:
        return &table_avx2;
#endif
#ifdef QKV_HAVE_AVX512
    case QKV_ISA_AVX512:
        return &table_avx512;
#endif
#ifdef QKV_HAVE_NEON
    case QKV_ISA_NEON:
        return &table_neon;
#endif
    default:
        return &table_scalar;
    }
}

const qkv_kernels *qkv_kernels_built(size_t i)
{
    static const qkv_kernels *const built[] = {
        &table_scalar,
#ifdef QKV_HAVE_AVX2
        &table_avx2,
#endif
#ifdef QKV_HAVE_AVX512
        &table_avx512,
#endif
#ifdef QKV_HAVE_NEON
        &table_neon,
#endif
    };
    return i < sizeof built / sizeof built[0] ? built[i] : NULL;
}

/* ---- the active table --------------------------------------------------------------- */

static _Atomic(const qkv_kernels *) g_active;
static qkv_isa g_detected; /* written once inside pthread_once, read-only afterwards */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* isa_supported() of every qkv_isa value, read once inside pthread_once (CPUID traps to
   the hypervisor on virtual machines: tens of microseconds a query), read-only afterwards */
static unsigned char g_supported[QKV_ISA_NEON + 1];

static int isa_usable(qkv_isa isa)
{
    return (unsigned)isa < sizeof g_supported && g_supported[isa];
}

static void init_once(void)
{
    static const qkv_isa order[] = {QKV_ISA_AVX512, QKV_ISA_AVX2, QKV_ISA_NEON};
    for (size_t i = 0; i < sizeof g_supported; i++)
        g_supported[i] = (unsigned char)isa_supported((qkv_isa)i);
    g_detected = QKV_ISA_SCALAR;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        if (isa_usable(order[i])) {
            g_detected = order[i];
            break;
        }
    }
    qkv_isa chosen = g_detected;
    const char *env = getenv("QKV_ISA");
    if (env && *env) {
        int found = 0;
        for (int i = QKV_ISA_SCALAR; i <= QKV_ISA_NEON; i++) {
            if (strcmp(env, qkv_isa_name((qkv_isa)i)) == 0) {
                found = 1;
                if (isa_usable((qkv_isa)i))
                    chosen = (qkv_isa)i;
                else
                    fprintf(stderr, "libqkv: QKV_ISA=%s is not supported by this CPU or build; using %s\n",
                            env, qkv_isa_name(g_detected));
            }
        }
        if (!found)
            fprintf(stderr, "libqkv: QKV_ISA=%s is unknown (scalar|avx2|avx512|neon); using %s\n", env,
                    qkv_isa_name(g_detected));
    }
    atomic_store_explicit(&g_active, table_for(chosen), memory_order_release);
}

const qkv_kernels *qkv_kernels_active(void)
{
    const qkv_kernels *k = atomic_load_explicit(&g_active, memory_order_acquire);
    if (__builtin_expect(k == NULL, 0)) {
        pthread_once(&g_once, init_once);
        k = atomic_load_explicit(&g_active, memory_order_acquire);
    }
    return k;
}

qkv_isa qkv_isa_detected(void)
{
    pthread_once(&g_once, init_once);
    return g_detected;
}

qkv_isa qkv_isa_active(void)
{
    return qkv_kernels_active()->isa;
}

qkv_status qkv_isa_select(qkv_isa isa)
{
    pthread_once(&g_once, init_once);
    if (!isa_usable(isa))
        return QKV_ERR_ISA;
    atomic_store_explicit(&g_active, table_for(isa), memory_order_release);
    return QKV_OK;
}

const char *qkv_isa_name(qkv_isa isa)
{
    switch (isa) {
    case QKV_ISA_SCALAR: return "scalar";
    case QKV_ISA_AVX2: return "avx2";
    case QKV_ISA_AVX512: return "avx512";
    case QKV_ISA_NEON: return "neon";
    default: return "unknown";
    }
}

const char *qkv_strerror(qkv_status s)
{
    switch (s) {
    case QKV_OK: return "success";
    case QKV_ERR_ARG: return "invalid argument (NULL pointer, zero or inconsistent size, bad flag, leading dimension too small)";
    case QKV_ERR_SIZE: return "size overflows size_t or buffer too small";
    case QKV_ERR_NOMEM: return "out of memory";
    case QKV_ERR_ISA: return "instruction set not supported by this CPU or build";
    default: return "unknown status";
    }
}

const char *qkv_version(void)
{
    return QKV_VERSION_STRING;
}

/* ---- public kernel entry points ----------------------------------------------------- */

float qkv_dot(const float *a, const float *b, size_t n)
{
    return qkv_kernels_active()->dot(a, b, n);
}

void qkv_exp(const float *x, float *y, size_t n)
{
    qkv_kernels_active()->exp(x, y, n);
}

void qkv_softmax(const float *x, float *y, size_t n, float scale)
{
    qkv_kernels_active()->softmax(x, y, n, scale);
}
