/* Dispatch: detection, selection, names, status strings, the QKV_ISA variable.
 * Usage: test_dispatch [EXPECTED]   EXPECTED = the ISA name that must be active at first
 * use ("detected" = qkv_isa_detected()); meson runs it with several QKV_ISA values. */
#include "common.h"

#include <pthread.h>

static qkv_isa first_seen[8];
static pthread_barrier_t barrier;

static void *racer(void *arg)
{
    pthread_barrier_wait(&barrier);
    first_seen[(size_t)arg] = qkv_isa_active();
    return NULL;
}

int main(int argc, char **argv)
{
    /* 8 threads make the first library call at the same moment */
    pthread_t t[8];
    pthread_barrier_init(&barrier, NULL, 8);
    for (size_t i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, racer, (void *)i);
    for (size_t i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
    const qkv_isa initial = first_seen[0];
    for (size_t i = 1; i < 8; i++)
        CHECK(first_seen[i] == initial, "racing first use: thread %zu saw %s", i, qkv_isa_name(first_seen[i]));

    const qkv_isa detected = qkv_isa_detected();
    const char *env = getenv("QKV_ISA");
    printf("  detected %s, active %s (QKV_ISA=%s)\n", qkv_isa_name(detected), qkv_isa_name(initial),
           env ? env : "(unset)");
    if (argc > 1) {
        const char *want = strcmp(argv[1], "detected") == 0 ? qkv_isa_name(detected) : argv[1];
        CHECK(strcmp(qkv_isa_name(initial), want) == 0, "initial ISA %s, expected %s", qkv_isa_name(initial), want);
    } else if (!env) {
        CHECK(initial == detected, "without QKV_ISA the detected ISA is active");
    }

    /* scalar always works; the detected one always works; select changes active */
    CHECK(qkv_isa_select(QKV_ISA_SCALAR) == QKV_OK && qkv_isa_active() == QKV_ISA_SCALAR, "select scalar");
    CHECK(qkv_isa_select(detected) == QKV_OK && qkv_isa_active() == detected, "select detected");
#if defined(__x86_64__)
    CHECK(qkv_isa_select(QKV_ISA_NEON) == QKV_ERR_ISA, "neon on x86");
    CHECK(detected == QKV_ISA_SCALAR || detected == QKV_ISA_AVX2 || detected == QKV_ISA_AVX512, "x86 detection");
    /* AVX-512 implies AVX2 in this library's definition */
    if (qkv_isa_select(QKV_ISA_AVX512) == QKV_OK)
        CHECK(qkv_isa_select(QKV_ISA_AVX2) == QKV_OK, "avx512 without avx2");
#elif defined(__aarch64__)
    CHECK(qkv_isa_select(QKV_ISA_AVX2) == QKV_ERR_ISA && qkv_isa_select(QKV_ISA_AVX512) == QKV_ERR_ISA,
          "x86 ISAs on aarch64");
    CHECK(detected == QKV_ISA_NEON, "NEON is baseline on AArch64");
#endif
    /* a failed select leaves the active ISA alone */
    qkv_isa_select(QKV_ISA_SCALAR);
    CHECK(qkv_isa_select((qkv_isa)99) == QKV_ERR_ISA && qkv_isa_active() == QKV_ISA_SCALAR, "bad enum");
    CHECK(qkv_isa_select((qkv_isa)-1) == QKV_ERR_ISA && qkv_isa_active() == QKV_ISA_SCALAR, "negative enum");

    CHECK(strcmp(qkv_isa_name(QKV_ISA_SCALAR), "scalar") == 0 && strcmp(qkv_isa_name(QKV_ISA_AVX2), "avx2") == 0 &&
              strcmp(qkv_isa_name(QKV_ISA_AVX512), "avx512") == 0 && strcmp(qkv_isa_name(QKV_ISA_NEON), "neon") == 0,
          "names");
    CHECK(qkv_isa_name((qkv_isa)42) != NULL, "name of unknown");
    for (int s = -1; s <= 6; s++) {
        const char *m = qkv_strerror((qkv_status)s);
        CHECK(m != NULL && m[0] != '\0', "strerror(%d)", s);
    }
    CHECK(strcmp(qkv_strerror(QKV_OK), qkv_strerror(QKV_ERR_ARG)) != 0, "distinct messages");
    int maj, min, pat;
    char tail;
    CHECK(sscanf(qkv_version(), "%d.%d.%d%c", &maj, &min, &pat, &tail) == 3, "version %s", qkv_version());

    /* every table's kernels are callable and agree on an exactly representable case */
    qkv_isa isas[QKV_ISA_COUNT];
    const int n = isa_list(isas);
    for (int k = 0; k < n; k++) {
        qkv_isa_select(isas[k]);
        const float a[5] = {1, 2, 3, 4, 5}, b[5] = {1, 1, 1, 1, 1};
        CHECK(qkv_dot(a, b, 5) == 15.0f, "dot on %s", qkv_isa_name(isas[k]));
        float e[1] = {0.0f};
        qkv_exp(e, e, 1);
        CHECK(e[0] == 1.0f, "exp(0) on %s", qkv_isa_name(isas[k]));
    }
    return test_finish("test_dispatch");
}
