/* Internal: size arithmetic, overflow checks and the workspace arena that every driver
 * carves its memory from (GEMM packing, attention tiles, MHA buffers). Baseline flags.
 *
 * The arena. A driver describes its workspace once, in a layout function that takes every
 * region in order with qkv_arena_floats(). Run on a sizing arena (no memory) the layout
 * adds up the bytes; run again on the caller's or the allocated block it hands out the
 * pointers. Sizing and carving are the same code, so they cannot disagree. Every region
 * starts 64-byte aligned (a cache line, and any vector load). An overflow anywhere is
 * sticky: qkv_arena_bytes() is then 0, which every driver reports as QKV_ERR_SIZE. */
#ifndef QKV_ARENA_H
#define QKV_ARENA_H

#include <stddef.h>
#include <stdint.h>

static inline size_t qkv_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

static inline size_t qkv_max(size_t a, size_t b)
{
    return a > b ? a : b;
}

/* x rounded up to a multiple of m (x + m - 1 must not overflow: sizes of tiles, not of
   caller tensors) */
static inline size_t qkv_round_up(size_t x, size_t m)
{
    return (x + m - 1) / m * m;
}

/* a * b without overflow: 1 and *r = a * b, or 0 */
static inline int qkv_mul_ok(size_t a, size_t b, size_t *r)
{
    return !__builtin_mul_overflow(a, b, r);
}

/* 1 if a rows x cols float matrix with leading dimension ld >= cols spans at most
   PTRDIFF_MAX bytes, so that every element offset is a valid pointer difference */
static inline int qkv_extent_ok(size_t rows, size_t cols, size_t ld)
{
    const size_t max = (size_t)PTRDIFF_MAX / sizeof(float);
    if (rows == 0 || cols == 0)
        return 1;
    return cols <= max && rows - 1 <= (max - cols) / ld;
}

typedef struct qkv_arena {
    unsigned char *base; /* NULL: a sizing arena */
    size_t used;         /* bytes taken, a multiple of 64 */
    int overflow;
} qkv_arena;

#define QKV_ARENA_ALIGN 64

/* an arena that only adds up sizes */
static inline qkv_arena qkv_arena_sizer(void)
{
    return (qkv_arena){NULL, 0, 0};
}

/* an arena on a block of any alignment (its first 64-byte boundary is used) */
static inline qkv_arena qkv_arena_on(void *block)
{
    const uintptr_t p = ((uintptr_t)block + QKV_ARENA_ALIGN - 1) & ~(uintptr_t)(QKV_ARENA_ALIGN - 1);
    return (qkv_arena){(unsigned char *)p, 0, 0};
}

/* the next region of count floats (NULL on a sizing arena or after an overflow) */
static inline float *qkv_arena_floats(qkv_arena *a, size_t count)
{
    size_t bytes;
    if (a->overflow || !qkv_mul_ok(count, sizeof(float), &bytes) || bytes > SIZE_MAX - (QKV_ARENA_ALIGN - 1)) {
        a->overflow = 1;
        return NULL;
    }
    bytes = qkv_round_up(bytes, QKV_ARENA_ALIGN);
    if (a->used > SIZE_MAX - bytes) {
        a->overflow = 1;
        return NULL;
    }
    float *p = a->base ? (float *)(void *)(a->base + a->used) : NULL;
    a->used += bytes;
    return p;
}

/* the next region of rows x cols floats, the product overflow-checked */
static inline float *qkv_arena_array(qkv_arena *a, size_t rows, size_t cols)
{
    size_t count;
    if (!qkv_mul_ok(rows, cols, &count)) {
        a->overflow = 1;
        return NULL;
    }
    return qkv_arena_floats(a, count);
}

/* bytes a block of any alignment must have to hold what the arena took: the regions plus
   64 bytes of alignment slack; 0 after an overflow */
static inline size_t qkv_arena_bytes(const qkv_arena *a)
{
    return a->overflow || a->used > SIZE_MAX - QKV_ARENA_ALIGN ? 0 : a->used + QKV_ARENA_ALIGN;
}

#endif
