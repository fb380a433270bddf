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

/* CPUID leaf 0's vendor words (ebx, ecx, edx) say "AuthenticAMD" */
static int x86_vendor_amd(unsigned b, unsigned c, unsigned d)
{
    return b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;
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

/* AVX-512 through a 256-bit datapath, two passes per 512-bit operation (AMD Zen 4: family
   0x19 with AVX-512; its earlier members have none): the GEMM blocking's half rate
   (gemm/blocking.h). Zen 5 (family 0x1A) has the full 512-bit datapath on servers. */
static __attribute__((unused)) int cpu_x86_avx512_half_rate(void)
{
#if defined(QKV_X86) && !defined(QKV_AVX512_EMULATION)
    unsigned a, b, c, d;
    if (!cpu_x86_avx512() || !__get_cpuid(0, &a, &b, &c, &d))
        return 0;
    if (!x86_vendor_amd(b, c, d))
        return 0;
    __cpuid(1, a, b, c, d);
    return ((a >> 8) & 0xf) + ((a >> 20) & 0xff) == 0x19; /* base + extended family */
#else
    return 0;
#endif
}

/* AVX2 through a 128-bit datapath, two passes per YMM operation: AMD Zen 1 and Zen+
   (family 0x17 below model 0x30; Zen 2, model 0x30 on, runs 256 bits at once). The public
   GEMM takes the AVX2 table's second tile there for large problems (qkv_gemm_for). */
static __attribute__((unused)) int cpu_x86_avx2_half_width(void)
{
#ifdef QKV_X86
    unsigned a, b, c, d;
    if (!cpu_x86_avx2() || !__get_cpuid(0, &a, &b, &c, &d) || !x86_vendor_amd(b, c, d))
        return 0;
    __cpuid(1, a, b, c, d);
    const unsigned family = ((a >> 8) & 0xf) + ((a >> 20) & 0xff), model = ((a >> 4) & 0xf) | ((a >> 12) & 0xf0);
    return family == 0x17 && model < 0x30;
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

/* ---- cache sizes (for the GEMM blocking, gemm/blocking.h) ------------------------------ *
 * x86: the deterministic cache parameters, CPUID leaf 4 (Intel) or 0x8000001D (AMD, with
 * TOPOEXT), one subleaf per cache: type, level, ways, partitions, line size, sets and the
 * number of logical processors sharing it. A shared level counts as its share per core
 * (size x threads sharing L1 / threads sharing it). AArch64 Linux: the same numbers from
 * /sys/devices/system/cpu/cpu0/cache/index*, where readable. Anything unreadable stays 0
 * and the blocking falls back to the ISA's constants. */

#ifdef QKV_X86
static void x86_caches(qkv_caches *out)
{
    unsigned a, b, c, d, leaf = 4;
    const unsigned max_ext = __get_cpuid_max(0x80000000u, NULL);
    __cpuid(0, a, b, c, d);
    const unsigned max_std = a;
    if (x86_vendor_amd(b, c, d) || b == 0x6f677948u) { /* or "HygonGenuine" */
        if (max_ext < 0x8000001Du)
            return;
        __cpuid(0x80000001u, a, b, c, d);
        if (!((c >> 22) & 1)) /* TOPOEXT */
            return;
        leaf = 0x8000001Du;
    } else if (max_std < 4) {
        return;
    }
    size_t l1_share = 1;
    for (unsigned i = 0; i < 16; i++) {
        __cpuid_count(leaf, i, a, b, c, d);
        const unsigned type = a & 31, level = (a >> 5) & 7;
        if (type == 0)
            break;
        if (type != 1 && type != 3) /* data or unified */
            continue;
        const size_t share = ((a >> 14) & 0xfff) + 1, line = (b & 0xfff) + 1;
        size_t ways = (b >> 22) + 1;
        const size_t size = ways * (((b >> 12) & 0x3ff) + 1) * line * ((size_t)c + 1);
        if ((a >> 9) & 1) /* fully associative */
            ways = size / line;
        qkv_cache_level lv = {size, ways, line};
        if (level == 1) {
            out->l1d = lv;
            l1_share = share;
        } else if (level == 2 || level == 3) {
            /* the share of one core: the threads of a core share its L1 */
            const size_t cores = share / l1_share > 0 ? share / l1_share : 1;
            lv.size /= cores;
            lv.size -= lv.size % ways; /* whole ways, for the model */
            *(level == 2 ? &out->l2 : &out->l3) = lv;
        }
    }
}
#endif

#if defined(__aarch64__) && defined(__linux__)
/* the start of the sysfs file dir/file into text (NUL-terminated); 0 if unreadable */
static int sysfs_read(const char *dir, const char *file, char *text, size_t size)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    const size_t got = fread(text, 1, size - 1, f);
    fclose(f);
    text[got] = '\0';
    return 1;
}

/* the first number in a sysfs file (with a K or M suffix: scaled), 0 if unreadable */
static size_t sysfs_number(const char *dir, const char *file)
{
    char text[64];
    if (!sysfs_read(dir, file, text, sizeof text))
        return 0;
    char *end;
    const unsigned long long v = strtoull(text, &end, 10);
    return (size_t)v * (*end == 'K' ? 1024 : *end == 'M' ? 1024 * 1024 : 1);
}

/* the number of CPUs in a list such as "0-3,8" */
static size_t sysfs_cpu_count(const char *dir)
{
    char text[256];
    if (!sysfs_read(dir, "shared_cpu_list", text, sizeof text))
        return 1;
    size_t count = 0;
    for (char *p = text; *p >= '0' && *p <= '9';) {
        const unsigned long lo = strtoul(p, &p, 10);
        unsigned long hi = lo;
        if (*p == '-')
            hi = strtoul(p + 1, &p, 10);
        count += hi >= lo ? hi - lo + 1 : 1;
        if (*p == ',')
            p++;
    }
    return count > 0 ? count : 1;
}

static void sysfs_caches(qkv_caches *out)
{
    for (int i = 0; i < 8; i++) {
        char dir[96], type[16] = "";
        snprintf(dir, sizeof dir, "/sys/devices/system/cpu/cpu0/cache/index%d", i);
        char path[128];
        snprintf(path, sizeof path, "%s/type", dir);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            break;
        const int ok = fgets(type, sizeof type, f) != NULL;
        fclose(f);
        if (!ok || (strncmp(type, "Data", 4) != 0 && strncmp(type, "Unified", 7) != 0))
            continue;
        const size_t level = sysfs_number(dir, "level"), ways = sysfs_number(dir, "ways_of_associativity");
        const size_t line = sysfs_number(dir, "coherency_line_size");
        size_t size = sysfs_number(dir, "size");
        if (size == 0 || ways == 0 || line == 0)
            continue;
        if (level >= 2) {
            size /= sysfs_cpu_count(dir);
            size -= size % ways;
        }
        const qkv_cache_level lv = {size, ways, line};
        if (level == 1)
            out->l1d = lv;
        else if (level == 2)
            out->l2 = lv;
        else if (level == 3)
            out->l3 = lv;
    }
}
#endif

static qkv_caches read_caches(void)
{
    qkv_caches c = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
#ifdef QKV_X86
    x86_caches(&c);
#elif defined(__aarch64__) && defined(__linux__)
    sysfs_caches(&c);
#endif
    return c;
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
        .attn_row = qkv_attn_row_f32_##name,                                                      \
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

/* per qkv_isa and GEMM tile (qkv_gemm_tile_of): the blocking of a built ISA's tile,
   written once inside pthread_once (g_blocking_start keeps it), afterwards only by
   qkv_gemm_blocking_want() in tests */
static qkv_gemm_blocking g_blocking[QKV_ISA_COUNT][QKV_GEMM_TILES];
static qkv_gemm_blocking g_blocking_start[QKV_ISA_COUNT][QKV_GEMM_TILES];

/* ---- GEMM tiles ------------------------------------------------------------------------ */

#ifdef QKV_HAVE_AVX2_4X24
static int g_avx2_half_width; /* written once inside pthread_once */
#endif
/* the tile the public GEMM asks for, (mr << 16) | nr; 0: this core's choice. Set once from
   QKV_GEMM_TILE inside pthread_once, afterwards by qkv_gemm_tile_want() alone */
static atomic_uint g_tile_want;

static void init_once(void);

const qkv_gemm_kernels *qkv_gemm_tile_of(const qkv_kernels *t, size_t i)
{
    if (i == 0)
        return t->gemm;
#ifdef QKV_HAVE_AVX2_4X24
    if (i == 1 && t->isa == QKV_ISA_AVX2)
        return &qkv_gemm_f32_avx2_4x24;
#endif
    return NULL;
}

static unsigned tile_code(size_t mr, size_t nr)
{
    return mr < 256 && nr < 256 ? (unsigned)(mr << 16 | nr) : 0;
}

const qkv_gemm_kernels *qkv_gemm_for(const qkv_kernels *t, int wide)
{
    const unsigned want = atomic_load_explicit(&g_tile_want, memory_order_relaxed);
    if (want != 0) {
        const qkv_gemm_kernels *g;
        for (size_t i = 0; (g = qkv_gemm_tile_of(t, i)) != NULL; i++)
            if (tile_code(g->mr, g->nr) == want)
                return g;
        return t->gemm;
    }
#ifdef QKV_HAVE_AVX2_4X24
    if (g_avx2_half_width && t->isa == QKV_ISA_AVX2 && wide)
        return &qkv_gemm_f32_avx2_4x24;
#else
    (void)wide;
#endif
    return t->gemm;
}

void qkv_gemm_tile_want(size_t mr, size_t nr)
{
    pthread_once(&g_once, init_once);
    atomic_store_explicit(&g_tile_want, tile_code(mr, nr), memory_order_relaxed);
}

/* QKV_GEMM_TILE=<mr>x<nr>: the public GEMM's tile where the active table has one of that
   size (for tuning and A/B runs), else one message and no change */
static void init_tile(void)
{
    const char *env = getenv("QKV_GEMM_TILE");
    if (env == NULL || *env == '\0')
        return;
    unsigned mr = 0, nr = 0;
    char end = 0;
    int known = 0;
    if (sscanf(env, "%ux%u%c", &mr, &nr, &end) == 2)
        for (size_t i = 0; qkv_kernels_built(i) != NULL; i++) {
            const qkv_gemm_kernels *g;
            for (size_t j = 0; (g = qkv_gemm_tile_of(qkv_kernels_built(i), j)) != NULL; j++)
                known |= g->mr == mr && g->nr == nr;
        }
    if (known)
        atomic_store_explicit(&g_tile_want, tile_code(mr, nr), memory_order_relaxed);
    else
        fprintf(stderr, "libqkv: QKV_GEMM_TILE=%s ignored: no GEMM tile of this build has that size (mr x nr)\n",
                env);
}

static void blocking_from_env(qkv_isa chosen, const char *env, const qkv_caches *caches);

/* the derived blocking of every built ISA; QKV_GEMM_BLOCKING=mc,kc,nc replaces the one of
   the chosen ISA when valid for its tile (else one message and no change), "show" prints
   the caches and every built ISA's blocking */
static void init_blocking(qkv_isa chosen)
{
    const qkv_caches caches = read_caches();
    const int avx512_half_rate = cpu_x86_avx512_half_rate();
    for (size_t i = 0; qkv_kernels_built(i) != NULL; i++) {
        const qkv_kernels *t = qkv_kernels_built(i);
        const qkv_gemm_kernels *g;
        for (size_t j = 0; (g = qkv_gemm_tile_of(t, j)) != NULL; j++)
            g_blocking[t->isa][j] = qkv_gemm_blocking_derive(
                g->mr, g->nr, &caches, t->isa == QKV_ISA_AVX512 && avx512_half_rate, qkv_gemm_blocking_fallback(g));
    }
    const char *env = getenv("QKV_GEMM_BLOCKING");
    if (env != NULL && *env != '\0')
        blocking_from_env(chosen, env, &caches);
    memcpy(g_blocking_start, g_blocking, sizeof g_blocking);
}

/* QKV_GEMM_BLOCKING: "show", or mc,kc,nc for the chosen ISA's tile (init_blocking) */
static void blocking_from_env(qkv_isa chosen, const char *env, const qkv_caches *caches)
{
    if (strcmp(env, "show") == 0) {
        fprintf(stderr, "libqkv: caches per core: L1d %zu B %zu-way, L2 %zu B %zu-way, L3 %zu B %zu-way\n",
                caches->l1d.size, caches->l1d.ways, caches->l2.size, caches->l2.ways, caches->l3.size,
                caches->l3.ways);
        for (size_t i = 0; qkv_kernels_built(i) != NULL; i++) {
            const qkv_kernels *t = qkv_kernels_built(i);
            const qkv_gemm_kernels *g;
            for (size_t j = 0; (g = qkv_gemm_tile_of(t, j)) != NULL; j++) {
                const qkv_gemm_blocking b = g_blocking[t->isa][j];
                fprintf(stderr,
                        "libqkv: gemm blocking %s (tile %zux%zu%s): mc,kc,nc = %zu,%zu,%zu (kc,nc with A packed: "
                        "%zu,%zu)%s\n",
                        qkv_isa_name(t->isa), g->mr, g->nr, qkv_gemm_for(t, 1) == g ? ", qkv_gemm's" : "", b.mc, b.kc,
                        b.nc, b.kc_pa, b.nc_l2,
                        b.pa_crowd != 0 && g->pack_a_panels != 0 ? "; A packed where its rows crowd an L1 set" : "");
            }
        }
        return;
    }
    /* the tile qkv_gemm uses on the chosen ISA for large problems */
    const qkv_gemm_kernels *g = qkv_gemm_for(table_for(chosen), 1), *gj;
    size_t tile = 0;
    for (size_t j = 0; (gj = qkv_gemm_tile_of(table_for(chosen), j)) != NULL; j++)
        if (gj == g)
            tile = j;
    if (!qkv_gemm_blocking_parse(env, g->mr, g->nr, &g_blocking[chosen][tile]))
        fprintf(stderr,
                "libqkv: QKV_GEMM_BLOCKING=%s ignored: want mc,kc,nc with mc a multiple of %zu (at most %d), "
                "kc in [%d, %d], nc a multiple of %zu (at most %d) for %s\n",
                env, g->mr, (int)QKV_GEMM_MC_MAX, (int)QKV_GEMM_KC_MIN, (int)QKV_GEMM_KC_MAX, g->nr,
                (int)QKV_GEMM_NC_MAX, qkv_isa_name(chosen));
}

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
#ifdef QKV_HAVE_AVX2_4X24
    g_avx2_half_width = cpu_x86_avx2_half_width();
#endif
    init_tile();
    init_blocking(chosen);
    atomic_store_explicit(&g_active, table_for(chosen), memory_order_release);
}

/* the slot of tile g in g_blocking and g_blocking_start: 1 and *isa, *j where a built table
   has g, else 0 */
static int blocking_slot(const qkv_gemm_kernels *g, size_t *isa, size_t *j)
{
    for (size_t i = 0; qkv_kernels_built(i) != NULL; i++) {
        const qkv_kernels *t = qkv_kernels_built(i);
        for (size_t k = 0; qkv_gemm_tile_of(t, k) != NULL; k++)
            if (qkv_gemm_tile_of(t, k) == g) {
                *isa = (size_t)t->isa;
                *j = k;
                return 1;
            }
    }
    return 0;
}

void qkv_gemm_blocking_want(const qkv_gemm_kernels *g, const qkv_gemm_blocking *b)
{
    pthread_once(&g_once, init_once);
    size_t isa, j;
    if (blocking_slot(g, &isa, &j))
        g_blocking[isa][j] = b != NULL ? *b : g_blocking_start[isa][j];
}

qkv_gemm_blocking qkv_gemm_blocking_of(const qkv_gemm_kernels *g)
{
    pthread_once(&g_once, init_once);
    size_t isa, j;
    return blocking_slot(g, &isa, &j) ? g_blocking[isa][j] : qkv_gemm_blocking_fallback(g);
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
