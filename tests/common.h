/* Shared test helpers: a check counter, a deterministic RNG, guard-page buffers, a caller's
 * pool that runs its tasks last first, the loop over every ISA the host supports; the
 * references, tolerances and ULP distance are in oracles.h. */
#ifndef QKV_TEST_COMMON_H
#define QKV_TEST_COMMON_H

#define _GNU_SOURCE
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "isa_list.h"
#include "oracles.h"
#include "qkv.h"

static long g_checks, g_failures;

/* CHECK(cond, fmt, ...): count it; on failure print where and why (first 20 only). */
#define CHECK(cond, ...)                                                                \
    do {                                                                                \
        g_checks++;                                                                     \
        if (!(cond)) {                                                                  \
            if (++g_failures <= 20) {                                                   \
                fprintf(stderr, "FAIL %s:%d [%s] ", __FILE__, __LINE__,                 \
                        qkv_isa_name(qkv_isa_active()));                                \
                fprintf(stderr, __VA_ARGS__);                                           \
                fputc('\n', stderr);                                                    \
            }                                                                           \
        }                                                                               \
    } while (0)

static inline int test_finish(const char *name)
{
    printf("%s: %ld checks, %ld failed\n", name, g_checks, g_failures);
    return g_failures ? 1 : 0;
}

/* xorshift64*: deterministic across runs and platforms */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static inline uint64_t rng_u64(void)
{
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * 0x2545f4914f6cdd1dull;
}
/* uniform in [lo, hi) */
static inline float rng_uniform(float lo, float hi)
{
    return lo + (hi - lo) * (float)((rng_u64() >> 40) * 0x1p-24);
}

/* the run of a caller's qkv_threadpool that runs the tasks one after the other, last first
   (a pool whose order is as far from the built-in one as it gets) */
static inline void reverse_run(void *pool, void (*task)(void *, size_t), void *arg, size_t n_tasks)
{
    (void)pool;
    for (size_t t = n_tasks; t-- > 0;)
        task(arg, t);
}

/* ISAs to test on this host, into out[QKV_ISA_COUNT] (src/isa_list.h): every one
   qkv_isa_select() accepts, or, if the variable QKV_TEST_ISAS is set (e.g. "scalar" for the
   valgrind run), those named in it. Prints what it skips. */
static inline int isa_list(qkv_isa *out)
{
    int n = 0;
    const char *only = getenv("QKV_TEST_ISAS");
    for (int i = 0; i < QKV_ISA_COUNT; i++) {
        if (only && !strstr(only, qkv_isa_name((qkv_isa)i)))
            printf("  skip %s: not in QKV_TEST_ISAS\n", qkv_isa_name((qkv_isa)i));
        else if (qkv_isa_select((qkv_isa)i) == QKV_OK)
            out[n++] = (qkv_isa)i;
        else
            printf("  skip %s: not supported by this CPU or build\n", qkv_isa_name((qkv_isa)i));
    }
    return n;
}

/* ---- guard-page buffers -------------------------------------------------------------
 * guarded_alloc(n, GUARD_AFTER): n floats ending exactly at a PROT_NONE page, so any access
 * to element n faults. GUARD_BEFORE: n floats starting right after a PROT_NONE page.
 * guarded_alloc_u16: the same for n uint16_t (F16/BF16 arrays).
 * The rest of the accessible pages are filled with a canary byte and checked by
 * guarded_free(), which catches stray writes that stay inside the mapping. */
enum { GUARD_AFTER = 0, GUARD_BEFORE = 1 };
typedef struct guarded {
    unsigned char *map;
    size_t map_len, page;
    unsigned char *p; /* the array */
    size_t bytes;
    int where;
} guarded;

/* the caches of an AMD Zen 4 EPYC (a half-rate AVX-512 core of this machine kind), as a
   qkv_caches initializer (gemm/blocking.h): 32 KiB 8-way L1d, 1 MiB 8-way L2, 32 MiB 16-way
   L3 per CCD, 64-byte lines. For the GEMM tests that run the blocking such a core derives */
#define ZEN4_CACHES {{32768, 8, 64}, {1048576, 8, 64}, {33554432, 16, 64}}

#define CANARY 0xA5

static inline void *guarded_alloc_bytes(guarded *g, size_t bytes, int where)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t data_pages = (bytes + page - 1) / page + 1;
    g->page = page;
    g->map_len = (data_pages + 1) * page;
    g->map = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g->map == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    memset(g->map, CANARY, g->map_len);
    g->bytes = bytes;
    g->where = where;
    if (where == GUARD_AFTER) {
        mprotect(g->map + data_pages * page, page, PROT_NONE);
        g->p = g->map + data_pages * page - bytes;
    } else {
        mprotect(g->map, page, PROT_NONE);
        g->p = g->map + page;
    }
    return g->p;
}

static inline float *guarded_alloc(guarded *g, size_t n, int where)
{
    return guarded_alloc_bytes(g, n * sizeof(float), where);
}

static inline uint16_t *guarded_alloc_u16(guarded *g, size_t n, int where)
{
    return guarded_alloc_bytes(g, n * sizeof(uint16_t), where);
}

/* returns 1 if the canary bytes around the array are intact */
static inline int guarded_free(guarded *g)
{
    const unsigned char *lo = g->where == GUARD_AFTER ? g->map : g->map + g->page;
    const unsigned char *hi = g->where == GUARD_AFTER ? g->map + g->map_len - g->page : g->map + g->map_len;
    const unsigned char *a = g->p, *b = g->p + g->bytes;
    int ok = 1;
    for (const unsigned char *c = lo; c < a; c++)
        ok &= *c == CANARY;
    for (const unsigned char *c = b; c < hi; c++)
        ok &= *c == CANARY;
    munmap(g->map, g->map_len);
    return ok;
}

#endif
