/* The GEMM cache blocking from the cache sizes (the model: gemm/blocking.h) and the
 * QKV_GEMM_BLOCKING tuning override. Plain integer arithmetic, baseline flags; called once
 * per ISA from dispatch.c's pthread_once. */
#include "gemm/blocking.h"

#include "arena.h" /* qkv_min, qkv_max */

static size_t clamp(size_t x, size_t lo, size_t hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* the bytes of one way of a level, 0 when the level is unknown or not a usable cache */
static size_t way_bytes(const qkv_cache_level *c)
{
    if (c->size == 0 || c->ways < 2 || c->line == 0 || c->size % c->ways != 0)
        return 0;
    return c->size / c->ways;
}

/* ways that a block of bytes occupies, rounded up */
static size_t ways_of(size_t bytes, size_t way)
{
    return (bytes + way - 1) / way;
}

/* NC from L3 for depth kc next to an mc x kc block of A; nc when L3 is unknown or too small */
static size_t nc_from_l3(const qkv_cache_level *l3, size_t nr, size_t mc, size_t kc, size_t nc)
{
    const size_t w3 = way_bytes(l3), s = sizeof(float);
    if (w3 == 0)
        return nc;
    const size_t taken = 1 + ways_of(mc * kc * s, w3); /* C, and the block of A */
    if (l3->ways <= taken)
        return nc;
    return clamp((l3->ways - taken) * w3 / (kc * s) / nr * nr, nr, QKV_GEMM_NC_DERIVED_MAX / nr * nr);
}

qkv_gemm_blocking qkv_gemm_blocking_derive(size_t mr, size_t nr, const qkv_caches *caches, int half_rate,
                                           qkv_gemm_blocking fallback)
{
    const size_t s = sizeof(float);
    qkv_gemm_blocking b = fallback;
    b.l2_way = way_bytes(&caches->l2);
    const size_t w1 = way_bytes(&caches->l1d), w2 = way_bytes(&caches->l2);
    if (w1 != 0 && caches->l1d.ways >= 3) {
        /* ca ways of L1 for the A micropanels, the other W1 - 1 - ca for the B micropanel:
           the whole number of ways that lets KC be largest with both fitting */
        size_t best = 0;
        for (size_t ca = 1; ca + 2 <= caches->l1d.ways; ca++) {
            const size_t kc_a = ca * w1 / (mr * s), kc_b = (caches->l1d.ways - 1 - ca) * w1 / (nr * s);
            best = qkv_max(best, kc_a < kc_b ? kc_a : kc_b);
        }
        b.kc = clamp(best / 8 * 8, QKV_GEMM_KC_MIN, QKV_GEMM_KC_MAX);
    }
    if (w2 != 0) {
        const size_t taken = 1 + ways_of(b.kc * nr * s, w2); /* C, and the B micropanel */
        if (caches->l2.ways > taken) {
            const size_t mc = (caches->l2.ways - taken) * w2 / (b.kc * s);
            b.mc = clamp(mc / mr * mr, mr, QKV_GEMM_MC_MAX / mr * mr);
        }
    }
    b.nc = nc_from_l3(&caches->l3, nr, b.mc, b.kc, b.nc);
    b.kc_pa = b.kc;
    b.nc_l2 = b.nc; /* L2 unknown: the NC of the other order */
    if (half_rate) { /* the A micropanel alone in half of L1, the B block from L3; rows of A
                        crowding L1 are packed */
        if (w1 != 0) {
            b.kc_pa = clamp(qkv_max(b.kc, caches->l1d.size / 2 / (mr * s) / 16 * 16), QKV_GEMM_KC_MIN, QKV_GEMM_KC_MAX);
            b.pa_crowd = caches->l1d.ways / 2;
            b.l1_way = w1;
            b.l1_line = caches->l1d.line;
        }
        b.nc_l2 = nc_from_l3(&caches->l3, nr, b.mc, b.kc_pa, b.nc);
        return b;
    }
    if (w2 != 0 && caches->l2.ways >= 4) {
        /* half the ways, less C and one A micropanel if those take more */
        const size_t taken = 1 + ways_of(b.kc * mr * s, w2);
        const size_t cb = caches->l2.ways > taken ? qkv_min(caches->l2.ways / 2, caches->l2.ways - taken) : 1;
        b.nc_l2 = clamp(cb * w2 / (b.kc * s) / nr * nr, nr, QKV_GEMM_NC_DERIVED_MAX / nr * nr);
        if (b.nc_l2 < QKV_GEMM_L2_PANELS_MIN * nr) /* an L2 too small for the B block: from L3 */
            b.nc_l2 = nc_from_l3(&caches->l3, nr, b.mc, b.kc_pa, b.nc_l2);
    }
    return b;
}

static size_t gcd(size_t a, size_t b)
{
    while (b != 0) {
        const size_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

size_t qkv_gemm_mc_in_place(const qkv_gemm_blocking *b, size_t mr, size_t lda, size_t kc)
{
    if (b->l2_way == 0 || lda == 0)
        return b->mc;
    const size_t s = sizeof(float), g = gcd(lda * s, b->l2_way);
    if (kc * s >= g) /* the rows cover every set */
        return b->mc;
    return qkv_max(mr, b->mc / 8 / mr * mr); /* f < 1: an eighth of the model's MC */
}

size_t qkv_gemm_nc_in_l2(const qkv_gemm_blocking *b, size_t nr, size_t kc)
{
    if (kc == 0 || kc >= b->kc_pa)
        return b->nc_l2;
    return qkv_max(b->nc_l2, qkv_min(b->nc, b->nc_l2 * b->kc_pa / kc / nr * nr));
}

/* a decimal number in [1, 10^6] up to the next ',' or the end; *p moves past it */
static int parse_size(const char **p, size_t *v)
{
    const char *s = *p;
    size_t x = 0;
    int digits = 0;
    for (; *s >= '0' && *s <= '9'; s++, digits++) {
        if (digits >= 7)
            return 0;
        x = x * 10 + (size_t)(*s - '0');
    }
    if (digits == 0 || x == 0)
        return 0;
    *v = x;
    *p = s;
    return 1;
}

int qkv_gemm_blocking_parse(const char *text, size_t mr, size_t nr, qkv_gemm_blocking *out)
{
    qkv_gemm_blocking b = *out; /* what the override does not set stays as derived */
    const char *p = text;
    b.l2_way = 0; /* used as given: no in-place adjustment of MC */
    if (p == NULL || !parse_size(&p, &b.mc) || *p++ != ',' || !parse_size(&p, &b.kc) || *p++ != ',' ||
        !parse_size(&p, &b.nc) || *p != '\0')
        return 0;
    if (b.mc % mr != 0 || b.mc > QKV_GEMM_MC_MAX || b.kc < QKV_GEMM_KC_MIN || b.kc > QKV_GEMM_KC_MAX ||
        b.nc % nr != 0 || b.nc > QKV_GEMM_NC_MAX)
        return 0;
    b.kc_pa = b.kc; /* the same KC and NC for both loop orders */
    b.nc_l2 = b.nc;
    *out = b;
    return 1;
}
