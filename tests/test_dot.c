/* qkv_dot against a double-precision reference, for every ISA the host supports.
 * Tolerance (include/qkv.h): |dot - ref| <= 2 n FLT_EPSILON sum |a_i b_i| (+ FLT_MIN for n = 0).
 * Lengths 0..2*16+1 and larger, every start alignment, guard pages before and after. */
#include "common.h"

static void fill(float *p, size_t n, int kind)
{
    for (size_t i = 0; i < n; i++) {
        switch (kind) {
        case 0: p[i] = rng_uniform(-1.0f, 1.0f); break;
        case 1: p[i] = rng_uniform(-1.0f, 1.0f) * ldexpf(1.0f, (int)(rng_u64() % 40) - 20); break; /* wide range */
        default: p[i] = (i & 1) ? 1e18f : -1e18f; break; /* cancellation */
        }
    }
}

static void check_dot(const float *a, const float *b, size_t n)
{
    double mag;
    const double ref = ref_dot(a, 1, b, 1, n, &mag);
    const float got = qkv_dot(a, b, n);
    const double tol = gemm_tol(n, 1.0, mag, 0.0, 0.0);
    CHECK(fabs(got - ref) <= tol, "dot n=%zu got %.9g ref %.17g tol %.3g", n, got, ref, tol);
}

int main(void)
{
    qkv_isa isas[QKV_ISA_COUNT];
    const int n_isa = isa_list(isas);
    static const size_t big[] = {63, 64, 65, 100, 127, 255, 256, 1000, 4096, 4097, 65536, 65537, 1u << 20};
    for (int k = 0; k < n_isa; k++) {
        CHECK(qkv_isa_select(isas[k]) == QKV_OK, "select");
        printf("  dot on %s\n", qkv_isa_name(isas[k]));

        /* n == 0 reads nothing, even with NULL pointers */
        CHECK(qkv_dot(NULL, NULL, 0) == 0.0f, "n=0");

        /* every length up to 2 * 16 + 1, at both ends of the guard page, every alignment */
        for (size_t n = 1; n <= 2 * 16 + 1 + 4; n++) {
            for (int where = GUARD_AFTER; where <= GUARD_BEFORE; where++) {
                for (size_t off = 0; off < 4; off++) {
                    guarded ga, gb;
                    float *a = guarded_alloc(&ga, n + off, where);
                    float *b = guarded_alloc(&gb, n + off, where);
                    float *pa = where == GUARD_AFTER ? a + off : a, *pb = where == GUARD_AFTER ? b + off : b;
                    fill(pa, n, (int)(n % 2));
                    fill(pb, n, 0);
                    check_dot(pa, pb, n);
                    CHECK(guarded_free(&ga) && guarded_free(&gb), "canary n=%zu", n);
                }
            }
        }
        for (size_t j = 0; j < sizeof big / sizeof big[0]; j++) {
            const size_t n = big[j];
            for (int kind = 0; kind < 3; kind++) {
                guarded ga, gb;
                float *a = guarded_alloc(&ga, n, GUARD_AFTER), *b = guarded_alloc(&gb, n, GUARD_AFTER);
                fill(a, n, kind);
                fill(b, n, kind == 2 ? 0 : kind);
                check_dot(a, b, n);
                CHECK(guarded_free(&ga) && guarded_free(&gb), "canary n=%zu", n);
            }
        }
        /* special values: inf propagates, NaN propagates, inf * 0 = NaN */
        float a[37], b[37];
        for (int i = 0; i < 37; i++)
            a[i] = b[i] = 1.0f;
        a[36] = INFINITY;
        CHECK(qkv_dot(a, b, 37) == INFINITY, "inf");
        a[36] = NAN;
        CHECK(isnan(qkv_dot(a, b, 37)), "nan");
        a[36] = INFINITY;
        b[36] = 0.0f;
        CHECK(isnan(qkv_dot(a, b, 37)), "inf*0");
        /* exact small integers: 1..n . 1 */
        for (int i = 0; i < 37; i++)
            a[i] = (float)(i + 1), b[i] = 1.0f;
        CHECK(qkv_dot(a, b, 37) == 703.0f, "exact sum");
    }
    return test_finish("test_dot");
}
