/* Allocation-failure injection for tests/test_gemm.c and tests/test_attention.c (not for
 * statically linked tests, where it would collide with libc's aligned_alloc). */
#ifndef QKV_TEST_ALLOC_HOOK_H
#define QKV_TEST_ALLOC_HOOK_H

#include <stdlib.h>
#include <string.h>

/* ---- allocation failure injection -----------------------------------------------------
 * libqkv's drivers allocate only through aligned_alloc (qkv_gemm, qkv_sdpa,
 * qkv_attention_simple, qkv_self_attention, qkv_mha_forward without a workspace); this
 * definition interposes it (the test is linked dynamically against libc) and fails on
 * demand, or fills the new block with the byte g_alloc_fill (>= 0) to show that no result
 * depends on what the memory held. Where something else replaces it (valgrind does), the
 * hook has no effect: alloc_hook_works() says so and the NOMEM checks are skipped (valgrind
 * then reports any read of the uninitialised block itself). */
static volatile int g_fail_alloc; /* volatile: GCC knows aligned_alloc as a builtin that reads no globals */
static volatile int g_alloc_fill = -1;
__attribute__((noinline)) void *aligned_alloc(size_t alignment, size_t size)
{
    void *p = NULL;
    if (g_fail_alloc)
        return NULL;
    if (posix_memalign(&p, alignment < sizeof(void *) ? sizeof(void *) : alignment, size))
        return NULL;
    if (g_alloc_fill >= 0)
        memset(p, g_alloc_fill, size);
    return p;
}

static int alloc_hook_works(void)
{
    g_fail_alloc = 1;
    void *(*volatile call)(size_t, size_t) = aligned_alloc; /* a real call, as the library makes */
    void *p = call(64, 64);
    g_fail_alloc = 0;
    free(p);
    return p == NULL;
}

#endif
