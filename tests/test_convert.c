/* qkv_convert and the conversion kernels of every kernel table (kernels.h), against a
 * reference written here from the definitions: a binary16 or bfloat16 pattern means
 * (-1)^s 2^(e - bias) (1 + m / 2^p) (subnormal: 2^(1 - bias) m / 2^p), evaluated in double
 * with ldexp; narrowing picks the nearer of the two representable neighbours of |x|, the
 * even pattern on a tie, and infinity past the largest finite value plus half its ULP.
 * Nothing here shares code with the library's scalar kernels.
 *
 * Per ISA (and, where dispatch swapped in the AVX512_BF16 converter, the plain AVX-512
 * table's integer path too): all 2^16 F16 and all 2^16 BF16 patterns widened (exact; NaN
 * stays NaN of its sign) and narrowed back (exact round trip for non-NaN); a dense F32
 * sweep (every QKV_CONVERT_STRIDE-th pattern, default 4099) plus boundary cases (65504 /
 * 65520, F16 subnormals and the smallest normal, every RNE tie of both formats, infinities,
 * signed zeros, NaNs with payloads, F32 subnormals under the BF16 allowance); lengths
 * 0..2*16+1 at every offset from a PROT_NONE page before or after both arrays; every pair
 * of qkv_dtype through qkv_convert, in place where allowed; bad arguments. */
#include "common.h"

#include "kernels.h"

/* ---- reference ------------------------------------------------------------------------ */

static int f16_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
static int bf16_is_nan(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0; }

/* |value| of a non-NaN pattern with ebits exponent bits and p fraction bits; the all-ones
   exponent with zero fraction is taken as 2^(emax + 1), the value past the largest finite
   one (so it doubles as the rounding neighbour that means infinity) */
static double ref_magnitude(uint32_t pattern, int ebits, int p)
{
    const uint32_t e = pattern >> p, m = pattern & ((1u << p) - 1);
    const int bias = (1 << (ebits - 1)) - 1;
    if (e == 0)
        return ldexp((double)m, 1 - bias - p);
    return ldexp((double)((1u << p) + m), (int)e - bias - p);
}

static double ref_f16_value(uint16_t h)
{
    const double a = (h & 0x7c00) == 0x7c00 ? INFINITY : ref_magnitude(h & 0x7fffu, 5, 10);
    return (h & 0x8000) ? -a : a;
}

static double ref_bf16_value(uint16_t h)
{
    const double a = (h & 0x7f80) == 0x7f80 ? INFINITY : ref_magnitude(h & 0x7fffu, 8, 7);
    return (h & 0x8000) ? -a : a;
}

/* round |x| (non-NaN) to the nearest pattern of the format: binary search over the
   magnitudes of patterns 0 .. inf_pattern (monotonic in the pattern), ties to even */
static uint16_t ref_round(double x, int ebits, int p)
{
    const uint16_t sign = signbit(x) ? 0x8000 : 0;
    const uint32_t inf_pattern = ((1u << ebits) - 1) << p;
    const double a = fabs(x);
    if (isinf(a))
        return (uint16_t)(sign | inf_pattern);
    uint32_t lo = 0, hi = inf_pattern; /* magnitude(lo) <= a < magnitude(hi) */
    if (a >= ref_magnitude(inf_pattern, ebits, p))
        return (uint16_t)(sign | inf_pattern);
    while (hi - lo > 1) {
        const uint32_t mid = (lo + hi) / 2;
        if (ref_magnitude(mid, ebits, p) <= a)
            lo = mid;
        else
            hi = mid;
    }
    const double dlo = a - ref_magnitude(lo, ebits, p), dhi = ref_magnitude(hi, ebits, p) - a;
    const uint32_t r = dlo < dhi ? lo : dhi < dlo ? hi : (lo & 1) ? hi : lo;
    return (uint16_t)(sign | r);
}

static uint16_t ref_f32_to_f16(float x) { return ref_round(x, 5, 10); }
static uint16_t ref_f32_to_bf16(float x) { return ref_round(x, 8, 7); }

static int f32_is_subnormal(float x) { return x != 0 && fabsf(x) < FLT_MIN; }

/* ---- checks ----------------------------------------------------------------------------- */

static const char *g_what = ""; /* which table's kernels, for messages */

/* got: a narrowed pattern of x; bf16: which format */
static void check_narrow(float x, uint16_t got, int bf16)
{
    const uint32_t xb = float_to_bits(x);
    if (isnan(x)) {
        CHECK(bf16 ? bf16_is_nan(got) : f16_is_nan(got), "%s f32 0x%08x -> %s 0x%04x: NaN expected", g_what, xb,
              bf16 ? "bf16" : "f16", got);
        return;
    }
    const uint16_t want = bf16 ? ref_f32_to_bf16(x) : ref_f32_to_f16(x);
    /* the one allowance: F32 -> BF16 may flush a subnormal input to a zero of its sign */
    const int allowed = bf16 && f32_is_subnormal(x) && got == (uint16_t)((xb >> 16) & 0x8000);
    CHECK(got == want || allowed, "%s f32 0x%08x (%a) -> %s 0x%04x, expected 0x%04x", g_what, xb, (double)x,
          bf16 ? "bf16" : "f16", got, want);
}

static void check_widen(uint16_t h, float got, int bf16)
{
    const double want = bf16 ? ref_bf16_value(h) : ref_f16_value(h);
    const int nan = bf16 ? bf16_is_nan(h) : f16_is_nan(h);
    if (nan)
        CHECK(isnan(got) && !!signbit(got) == !!(h & 0x8000), "%s %s 0x%04x -> %a: NaN of the sign expected", g_what,
              bf16 ? "bf16" : "f16", h, (double)got);
    else
        CHECK(float_to_bits(got) == float_to_bits((float)want), "%s %s 0x%04x -> %a, expected %a", g_what,
              bf16 ? "bf16" : "f16", h, (double)got, want);
}

/* all 2^16 patterns widened, then narrowed back */
static void test_exhaustive16(const qkv_kernels *k, int bf16)
{
    static uint16_t h[65536], back[65536];
    static float f[65536];
    for (uint32_t i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    (bf16 ? k->cvt_bf16_f32 : k->cvt_f16_f32)(h, f, 65536);
    (bf16 ? k->cvt_f32_bf16 : k->cvt_f32_f16)(f, back, 65536);
    for (uint32_t i = 0; i < 65536; i++) {
        check_widen(h[i], f[i], bf16);
        const int nan = bf16 ? bf16_is_nan(h[i]) : f16_is_nan(h[i]);
        /* a BF16 subnormal is an F32 subnormal: the allowance may flush it on the way back */
        const int flushed = bf16 && f32_is_subnormal(f[i]) && back[i] == (h[i] & 0x8000);
        if (nan)
            CHECK(bf16 ? bf16_is_nan(back[i]) : f16_is_nan(back[i]), "%s round trip of NaN 0x%04x gave 0x%04x",
                  g_what, h[i], back[i]);
        else
            CHECK(back[i] == h[i] || flushed, "%s %s round trip 0x%04x -> 0x%04x", g_what, bf16 ? "bf16" : "f16",
                  h[i], back[i]);
    }
}

/* the boundary cases, each with its bit neighbours and both signs */
static size_t boundary_cases(float *out, size_t cap)
{
    static const uint32_t base[] = {
        0x00000000, 0x7f800000, 0x7f7fffff,             /* zero, inf, FLT_MAX */
        0x477fe000, 0x477ff000, 0x47800000,             /* 65504, 65520 (tie to inf), 65536 */
        0x33800000, 0x33000000, 0x33400000, 0x32800000, /* 2^-24, 2^-25 (tie to 0), 3 2^-26, 2^-26 */
        0x33c00000, 0x38800000, 0x387fc000, 0x387fe000, /* 3 2^-25 (tie), 2^-14, its neighbours */
        0x3f801000, 0x3f803000, 0x3f808000, 0x3f818000, /* 1 + 2^-11, 1 + 3 2^-11, 1 + 2^-8, 1 + 3 2^-8 */
        0x00000001, 0x00008000, 0x00018000, 0x007fffff, /* F32 subnormals, BF16 ties among them */
        0x00800000, 0x7f7f7fff, 0x7f7f8000, 0x7f7e8000, /* FLT_MIN, below / at the BF16 overflow tie */
        0x7f800001, 0x7f802000, 0x7f810000, 0x7fbfffff, /* signaling NaNs, payload low or high */
        0x7fc00000, 0x7fc00001, 0x7fffffff, 0x7fe00000, /* quiet NaNs */
    };
    size_t n = 0;
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
        for (int d = -2; d <= 2; d++)
            for (uint32_t s = 0; s <= 1; s++)
                if (n < cap)
                    out[n++] = bits_to_float((base[i] + (uint32_t)d) ^ (s << 31));
    /* every tie of BF16 (low half 0x8000) and its neighbours, every pattern */
    for (uint32_t hi = 0; hi < 65536; hi++)
        for (uint32_t lo = 0x7fff; lo <= 0x8001; lo++)
            if (n < cap)
                out[n++] = bits_to_float(hi << 16 | lo);
    /* every tie of F16 (midpoint of two finite neighbours, exact in float) and its neighbours */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        const float mid = (float)((ref_magnitude(h, 5, 10) + ref_magnitude(h + 1, 5, 10)) / 2);
        for (int d = -1; d <= 1; d++)
            for (uint32_t s = 0; s <= 1; s++)
                if (n < cap)
                    out[n++] = bits_to_float((float_to_bits(mid) + (uint32_t)d) ^ (s << 31));
    }
    return n;
}

static void run_narrow(const qkv_kernels *k, const float *x, size_t n)
{
    uint16_t *h = malloc(n * sizeof *h), *b = malloc(n * sizeof *b);
    k->cvt_f32_f16(x, h, n);
    k->cvt_f32_bf16(x, b, n);
    for (size_t i = 0; i < n; i++) {
        check_narrow(x[i], h[i], 0);
        check_narrow(x[i], b[i], 1);
    }
    free(h);
    free(b);
}

static void test_sweep(const qkv_kernels *k, uint32_t stride)
{
    const size_t cap = 65536 * 3 + 0x7c00 * 6 + 4096;
    float *x = malloc(cap * sizeof *x);
    const size_t nb = boundary_cases(x, cap);
    run_narrow(k, x, nb);
    /* every stride-th pattern, in chunks */
    size_t m = 0;
    for (uint64_t u = 0; u < (1ull << 32); u += stride) {
        x[m++] = bits_to_float((uint32_t)u);
        if (m == cap) {
            run_narrow(k, x, m);
            m = 0;
        }
    }
    run_narrow(k, x, m);
    free(x);
}

/* lengths 0..4*16+17 (every path of a kernel that takes 4 vectors, 2, then 1, then a masked
   tail, such as the AVX512_BF16 one) with the arrays off elements away from a guard page after (off = 0:
   the last element touches it) or before them (off = 0: the first does), off 0..31: every
   start alignment of both element sizes within a 64-byte line. The canary check covers
   every byte of the mapping outside the n elements. */
static void shrink_to(guarded *g, void *p, size_t bytes)
{
    g->p = p;
    g->bytes = bytes;
}

static void test_tails(const qkv_kernels *k)
{
    for (size_t n = 0; n <= 4 * 16 + 17; n++)
        for (int where = GUARD_AFTER; where <= GUARD_BEFORE; where++)
            for (size_t off = 0; off < 32; off++) {
                guarded gf, gh, gw;
                const size_t len = n + off, at = where == GUARD_AFTER ? 0 : off;
                float *f = guarded_alloc(&gf, len, where) + at, *w = guarded_alloc(&gw, len, where) + at;
                uint16_t *h = guarded_alloc_u16(&gh, len, where) + at;
                shrink_to(&gf, f, n * sizeof *f);
                shrink_to(&gw, w, n * sizeof *w);
                shrink_to(&gh, h, n * sizeof *h);
                for (size_t i = 0; i < n; i++)
                    f[i] = rng_uniform(-70000.0f, 70000.0f) * (i % 3 == 0 ? 0x1p-20f : 1.0f);
                for (int bf16 = 0; bf16 <= 1; bf16++) {
                    (bf16 ? k->cvt_f32_bf16 : k->cvt_f32_f16)(f, h, n);
                    for (size_t i = 0; i < n; i++)
                        check_narrow(f[i], h[i], bf16);
                    (bf16 ? k->cvt_bf16_f32 : k->cvt_f16_f32)(h, w, n);
                    for (size_t i = 0; i < n; i++)
                        check_widen(h[i], w[i], bf16);
                }
                const int ok_f = guarded_free(&gf), ok_w = guarded_free(&gw), ok_h = guarded_free(&gh);
                CHECK(ok_f && ok_w && ok_h, "%s canary n=%zu off=%zu where=%d", g_what, n, off, where);
            }
}

static void test_table(const qkv_kernels *k, uint32_t stride)
{
    test_exhaustive16(k, 0);
    test_exhaustive16(k, 1);
    test_sweep(k, stride);
    test_tails(k);
}

/* ---- qkv_convert -------------------------------------------------------------------------- */

static size_t dsize(qkv_dtype t) { return t == QKV_F32 ? 4 : 2; }

/* element i of an array of type t as a double (NaN for NaN) */
static double value_of(const void *p, qkv_dtype t, size_t i)
{
    if (t == QKV_F32)
        return ((const float *)p)[i];
    const uint16_t h = ((const uint16_t *)p)[i];
    if (t == QKV_F16)
        return f16_is_nan(h) ? NAN : ref_f16_value(h);
    return bf16_is_nan(h) ? NAN : ref_bf16_value(h);
}

static void check_converted(const void *src, qkv_dtype st, const void *dst, qkv_dtype dt, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (st == dt) {
            CHECK(memcmp((const char *)src + i * dsize(st), (const char *)dst + i * dsize(dt), dsize(st)) == 0,
                  "copy %d: element %zu differs", (int)st, i);
            continue;
        }
        const double v = value_of(src, st, i);
        if (dt == QKV_F32) {
            const float got = ((const float *)dst)[i];
            CHECK(isnan(v) ? isnan(got) : float_to_bits(got) == float_to_bits((float)v), "%d -> f32 [%zu]: %a vs %a",
                  (int)st, i, (double)got, v);
            continue;
        }
        const uint16_t got = ((const uint16_t *)dst)[i];
        if (isnan(v)) {
            CHECK(dt == QKV_F16 ? f16_is_nan(got) : bf16_is_nan(got), "%d -> %d [%zu]: NaN expected", (int)st, (int)dt,
                  i);
            continue;
        }
        /* F16 and BF16 values are exact floats; from F16 none is an F32 subnormal */
        const float x = (float)v;
        const uint16_t want = dt == QKV_F16 ? ref_f32_to_f16(x) : ref_f32_to_bf16(x);
        const int allowed = dt == QKV_BF16 && st == QKV_F32 && f32_is_subnormal(x) && got == (signbit(x) ? 0x8000 : 0);
        CHECK(got == want || allowed, "%d -> %d [%zu] (%a): 0x%04x, expected 0x%04x", (int)st, (int)dt, i, v, got,
              want);
    }
}

/* n elements of type t: random magnitudes over the whole range of the type, specials mixed in */
static void fill_random(void *p, qkv_dtype t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const uint32_t u = (uint32_t)rng_u64();
        if (t == QKV_F32) {
            static const uint32_t special[] = {0x7f800000, 0xff800000, 0x7fc00123, 0x80000000, 0x477ff000, 0x00000001};
            ((float *)p)[i] = bits_to_float(i % 7 == 0 ? special[(i / 7) % 6] : i % 2 ? u : (u & 0x8fffffffu) | 0x30000000u);
        } else
            ((uint16_t *)p)[i] = (uint16_t)u;
    }
}

static void test_convert_api(void)
{
    const size_t n = 1500; /* crosses qkv_convert's 512-element F16 <-> BF16 chunks */
    char *src = malloc(n * 4), *dst = malloc(n * 4), *copy = malloc(n * 4);
    for (int st = QKV_F32; st <= QKV_BF16; st++)
        for (int dt = QKV_F32; dt <= QKV_BF16; dt++) {
            fill_random(src, (qkv_dtype)st, n);
            CHECK(qkv_convert(src, (qkv_dtype)st, dst, (qkv_dtype)dt, n) == QKV_OK, "convert %d -> %d", st, dt);
            check_converted(src, (qkv_dtype)st, dst, (qkv_dtype)dt, n);
            if (dsize((qkv_dtype)st) == dsize((qkv_dtype)dt)) { /* in place */
                memcpy(copy, src, n * dsize((qkv_dtype)st));
                CHECK(qkv_convert(copy, (qkv_dtype)st, copy, (qkv_dtype)dt, n) == QKV_OK, "in place %d -> %d", st, dt);
                CHECK(memcmp(copy, dst, n * dsize((qkv_dtype)dt)) == 0, "in place %d -> %d differs", st, dt);
            }
        }
    /* bad arguments: QKV_ERR_ARG and dst untouched; n == 0 with NULL is fine */
    memset(dst, 0x5a, n * 4);
    memcpy(copy, dst, n * 4);
    static const int bad_types[] = {-1, 3, 1000};
    for (size_t i = 0; i < sizeof bad_types / sizeof bad_types[0]; i++) {
        CHECK(qkv_convert(src, (qkv_dtype)bad_types[i], dst, QKV_F32, n) == QKV_ERR_ARG, "src type %d", bad_types[i]);
        CHECK(qkv_convert(src, QKV_F32, dst, (qkv_dtype)bad_types[i], n) == QKV_ERR_ARG, "dst type %d", bad_types[i]);
        CHECK(qkv_convert(src, (qkv_dtype)bad_types[i], dst, QKV_F16, 0) == QKV_ERR_ARG, "type %d, n 0", bad_types[i]);
    }
    for (int st = QKV_F32; st <= QKV_BF16; st++)
        for (int dt = QKV_F32; dt <= QKV_BF16; dt++) {
            CHECK(qkv_convert(NULL, (qkv_dtype)st, dst, (qkv_dtype)dt, n) == QKV_ERR_ARG, "NULL src %d -> %d", st, dt);
            CHECK(qkv_convert(src, (qkv_dtype)st, NULL, (qkv_dtype)dt, 1) == QKV_ERR_ARG, "NULL dst %d -> %d", st, dt);
            CHECK(qkv_convert(NULL, (qkv_dtype)st, NULL, (qkv_dtype)dt, 0) == QKV_OK, "NULL, n 0, %d -> %d", st, dt);
            CHECK(qkv_convert(src, (qkv_dtype)st, dst, (qkv_dtype)dt, 0) == QKV_OK, "n 0, %d -> %d", st, dt);
        }
    CHECK(memcmp(dst, copy, n * 4) == 0, "a failed or empty call wrote to dst");
    free(src);
    free(dst);
    free(copy);
}

int main(void)
{
    const char *env = getenv("QKV_CONVERT_STRIDE");
    uint32_t stride = env ? (uint32_t)strtoul(env, NULL, 10) : 4099;
    if (stride == 0)
        stride = 1;
    qkv_isa isas[QKV_ISA_COUNT];
    const int n_isa = isa_list(isas);
    for (int j = 0; j < n_isa; j++) {
        CHECK(qkv_isa_select(isas[j]) == QKV_OK, "select");
        const qkv_kernels *active = qkv_kernels_active();
        const long before = g_checks;
        g_what = qkv_isa_name(isas[j]);
        test_table(active, stride);
        test_convert_api();
        printf("  %s: %ld checks (F32 sweep stride %u)\n", g_what, g_checks - before, stride);
        /* the plain table of the same ISA, where dispatch chose a variant (AVX512_BF16) */
        for (size_t i = 0; qkv_kernels_built(i) != NULL; i++) {
            const qkv_kernels *b = qkv_kernels_built(i);
            if (b->isa == isas[j] && b != active) {
                const long b0 = g_checks;
                printf("  %s: dispatch chose a variant (cvt_f32_bf16 %s); testing the plain table too\n", g_what,
                       b->cvt_f32_bf16 == active->cvt_f32_bf16 ? "same" : "differs");
                g_what = "plain table";
                test_table(b, stride);
                printf("  %s plain table: %ld checks\n", qkv_isa_name(isas[j]), g_checks - b0);
            }
        }
    }
    return test_finish("convert");
}
