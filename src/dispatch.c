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

#include "isa_built.h"
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

/* ---- detection ---------------------------------------------------------------------- *
 * The CPU helpers that the detect expressions of isa_list.h use; each exists on every
 * architecture and is false where it does not apply. */

#ifdef QKV_X86
static unsigned long long read_xcr0(void)
{
    unsigned lo, hi;
    /* xgetbv with ECX = 0; only called after CPUID said OSXSAVE is set. */
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

/* AVX2 + FMA + F16C with OS-enabled YMM state; *leaf7_ebx and *xcr0 for the callers that
   need more */
static int x86_avx2(unsigned *leaf7_ebx, unsigned long long *xcr0)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    const int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
    if (!(fma && osxsave && avx && f16c))
        return 0;
    *xcr0 = read_xcr0();
    if ((*xcr0 & 0x6) != 0x6 || __get_cpuid_max(0, NULL) < 7) /* XMM and YMM state enabled by the OS */
        return 0;
    __cpuid_count(7, 0, a, b, c, d);
    *leaf7_ebx = b;
    return (b >> 5) & 1;
}
#endif

static __attribute__((unused)) int cpu_x86_avx2(void)
{
#ifdef QKV_X86
    unsigned b;
    unsigned long long xcr0;
    return x86_avx2(&b, &xcr0);
#else
    return 0;
#endif
}

static __attribute__((unused)) int cpu_x86_avx512(void)
{
#ifdef QKV_X86
    unsigned b;
    unsigned long long xcr0;
    if (!x86_avx2(&b, &xcr0))
        return 0;
#ifdef QKV_AVX512_EMULATION
    return 1; /* test build: the AVX-512 kernels run on emulated intrinsics */
#endif
    const int f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1;
    /* opmask (bit 5), upper ZMM0-15 (bit 6) and ZMM16-31 (bit 7) state */
    return f && dq && bw && vl && (xcr0 & 0xe0) == 0xe0;
#else
    return 0;
#endif
}

/* AVX512_BF16 (CPUID leaf 7 subleaf 1, EAX bit 5) on top of AVX-512: not an ISA of the
   list, a variant of the AVX-512 table (table_avx512_bf16) */
static __attribute__((unused)) int cpu_x86_avx512_bf16(void)
{
#ifdef QKV_X86
    if (!cpu_x86_avx512())
        return 0;
#ifdef QKV_AVX512_EMULATION
    return 1; /* test build: vcvtneps2bf16 is emulated too */
#endif
    unsigned a, b, c, d;
    __cpuid_count(7, 0, a, b, c, d);
    if (a < 1) /* highest subleaf of leaf 7 */
        return 0;
    __cpuid_count(7, 1, a, b, c, d);
    return (a >> 5) & 1;
#else
    return 0;
#endif
}

static __attribute__((unused)) int cpu_arm_neon(void)
{
#if defined(__aarch64__) && defined(__linux__) && defined(HWCAP_ASIMD)
    return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#elif defined(__aarch64__)
    return 1; /* Advanced SIMD is part of the AArch64 baseline */
#else
    return 0;
#endif
}

/* one table per ISA of this build: every kernel of that ISA (kernels.h); f32_bf16 is the
   cvt_f32_bf16 kernel, the one field with a variant (below) */
#define QKV_TABLE_INIT(ID, name, f32_bf16)                                                       \
    {                                                                                            \
        .isa = QKV_ISA_##ID,                                                                     \
        .dot = qkv_dot_f32_##name,                                                                \
        .exp = qkv_exp_f32_##name,                                                                \
        .softmax = qkv_softmax_f32_##name,                                                        \
        .gemm = &qkv_gemm_f32_##name,                                                             \
        .attn_update = qkv_attn_update_f32_##name,                                                \
        .softcap = qkv_softcap_f32_##name,                                                        \
        .cvt_f16_f32 = qkv_cvt_f16_f32_##name,                                                    \
        .cvt_f32_f16 = qkv_cvt_f32_f16_##name,                                                    \
        .cvt_bf16_f32 = qkv_cvt_bf16_f32_##name,                                                  \
        .cvt_f32_bf16 = f32_bf16,                                                                 \
    }
#define QKV_TABLE(ID, name) static const qkv_kernels table_##name = QKV_TABLE_INIT(ID, name, qkv_cvt_f32_bf16_##name);
QKV_ISA_BUILT(QKV_TABLE)
#undef QKV_TABLE

/* The AVX-512 table on CPUs with AVX512_BF16: F32 -> BF16 by vcvtneps2bf16 (a unit of its
   own, compiled with -mavx512bf16). table_for() hands it out instead of table_avx512 when
   init_once() found the extension, so qkv_isa_select(QKV_ISA_AVX512) and detection pick it
   alike; qkv_kernels_built() lists the plain table (same GEMM). */
#ifdef QKV_HAVE_AVX512_BF16
static const qkv_kernels table_avx512_bf16 = QKV_TABLE_INIT(AVX512, avx512, qkv_cvt_f32_bf16_avx512bf16);
static int g_avx512_bf16; /* written once inside pthread_once, before any table_for() */
#endif
#undef QKV_TABLE_INIT

/* arrays indexed by qkv_isa have QKV_ISA_COUNT entries: every enum value of the list fits */
#define QKV_CHECK_ENUM(ID, ...) _Static_assert((int)QKV_ISA_##ID < (int)QKV_ISA_COUNT, "enum outside the list");
QKV_ISA_LIST(QKV_CHECK_ENUM)
#undef QKV_CHECK_ENUM

/* the table of a built ISA, NULL for one this build does not carry */
static const qkv_kernels *table_for(qkv_isa isa)
{
#ifdef QKV_HAVE_AVX512_BF16
    if (isa == QKV_ISA_AVX512 && g_avx512_bf16)
        return &table_avx512_bf16;
#endif
    switch (isa) {
#define QKV_CASE(ID, name)                                                                       \
    case QKV_ISA_##ID:                                                                           \
        return &table_##name;
        QKV_ISA_BUILT(QKV_CASE)
#undef QKV_CASE
    default:
        return NULL;
    }
}

const qkv_kernels *qkv_kernels_built(size_t i)
{
#define QKV_ADDRESS(ID, name) &table_##name,
    static const qkv_kernels *const built[] = {QKV_ISA_BUILT(QKV_ADDRESS)};
#undef QKV_ADDRESS
    return i < sizeof built / sizeof built[0] ? built[i] : NULL;
}

/* ---- the active table --------------------------------------------------------------- */

static _Atomic(const qkv_kernels *) g_active;
static qkv_isa g_detected; /* written once inside pthread_once, read-only afterwards */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* per qkv_isa: 1 if this build carries the ISA and this CPU and OS run it. Evaluated once
   inside pthread_once (CPUID traps to the hypervisor on virtual machines: tens of
   microseconds a query), read-only afterwards. */
static unsigned char g_supported[QKV_ISA_COUNT];

static int isa_usable(qkv_isa isa)
{
    return (unsigned)isa < QKV_ISA_COUNT && g_supported[isa];
}

static void init_once(void)
{
#ifdef QKV_HAVE_AVX512_BF16
    g_avx512_bf16 = cpu_x86_avx512_bf16();
#endif
    g_detected = QKV_ISA_SCALAR;
#define QKV_DETECT(ID, name, detect, ...)                                                             \
    g_supported[QKV_ISA_##ID] = table_for(QKV_ISA_##ID) != NULL && (detect);                     \
    if (g_supported[QKV_ISA_##ID])                                                               \
        g_detected = QKV_ISA_##ID; /* the list is in increasing preference */
    QKV_ISA_LIST(QKV_DETECT)
#undef QKV_DETECT
    qkv_isa chosen = g_detected;
    const char *env = getenv("QKV_ISA");
    if (env && *env) {
        int found = 0;
        for (int i = 0; i < QKV_ISA_COUNT; i++) {
            if (strcmp(env, qkv_isa_name((qkv_isa)i)) == 0) {
                found = 1;
                if (isa_usable((qkv_isa)i))
                    chosen = (qkv_isa)i;
                else
                    fprintf(stderr, "libqkv: QKV_ISA=%s is not supported by this CPU or build; using %s\n",
                            env, qkv_isa_name(g_detected));
            }
        }
        if (!found) {
#define QKV_NAME(ID, name, ...) " " #name
            fprintf(stderr, "libqkv: QKV_ISA=%s is unknown (one of:" QKV_ISA_LIST(QKV_NAME) "); using %s\n", env,
                    qkv_isa_name(g_detected));
#undef QKV_NAME
        }
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
#define QKV_NAME(ID, name, ...)                                                               \
    case QKV_ISA_##ID:                                                                           \
        return #name;
        QKV_ISA_LIST(QKV_NAME)
#undef QKV_NAME
    default:
        return "unknown";
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
