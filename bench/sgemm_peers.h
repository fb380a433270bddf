/* The SGEMM peers of the libqkv benchmarks (bench_gemm, and the unfused attention composites
 * of bench_attention), in one place: every library found at configure time, each called
 * row-major and pinned to one thread (libqkv's kernels are single-threaded).
 *
 *   peer      call          macro (bench/meson.build: bench_sgemm_args, bench_sgemm_deps)
 *   openblas  cblas_sgemm   QKV_BENCH_HAVE_OPENBLAS
 *   blis      bli_sgemm     QKV_BENCH_HAVE_BLIS
 *   onednn    dnnl_sgemm    QKV_BENCH_HAVE_DNNL
 *
 * BLIS exports cblas_sgemm too: BLIS is called through bli_sgemm only, OpenBLAS is linked
 * first, and sgemm_peers() checks at run time (dladdr) that cblas_sgemm really is
 * OpenBLAS's before it offers the OpenBLAS peer. */
#ifndef QKV_BENCH_SGEMM_PEERS_H
#define QKV_BENCH_SGEMM_PEERS_H

#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <vector>

#ifdef QKV_BENCH_HAVE_OPENBLAS
#include <cblas.h>
#endif
#ifdef QKV_BENCH_HAVE_BLIS
#include <blis.h>
#endif
#ifdef QKV_BENCH_HAVE_DNNL
#include <dnnl.h>
#endif
#ifdef QKV_BENCH_HAVE_OPENMP
#include <omp.h>
#endif

namespace qkv_bench {

/* C (m x n) = alpha A op(B), row-major, beta 0: A m x k (lda = k), B k x n (ldb = n) or,
   with trans_b, n x k (ldb = k), C m x n (ldc = n) */
using SgemmFn = void (*)(bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float *a,
                         const float *b, float *c);

struct SgemmPeer {
    const char *name; /* the impl part of benchmark names: openblas, blis, onednn */
    SgemmFn fn;
};

#ifdef QKV_BENCH_HAVE_OPENBLAS
inline void sgemm_openblas(bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float *a,
                           const float *b, float *c)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha, a,
                (int)k, b, (int)(trans_b ? k : n), 0.0f, c, (int)n);
}

inline bool cblas_is_openblas()
{
    Dl_info info;
    return dladdr(reinterpret_cast<void *>(&cblas_sgemm), &info) != 0 && info.dli_fname != nullptr &&
           std::strstr(info.dli_fname, "openblas") != nullptr;
}
#endif

#ifdef QKV_BENCH_HAVE_BLIS
inline void sgemm_blis(bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float *a,
                       const float *b, float *c)
{
    float zero = 0.0f;
    /* row-major: row stride ld, column stride 1 */
    bli_sgemm(BLIS_NO_TRANSPOSE, trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, (dim_t)m, (dim_t)n, (dim_t)k, &alpha,
              const_cast<float *>(a), (inc_t)k, 1, const_cast<float *>(b), (inc_t)(trans_b ? k : n), 1, &zero, c,
              (inc_t)n, 1);
}
#endif

#ifdef QKV_BENCH_HAVE_DNNL
inline void sgemm_onednn(bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float *a,
                         const float *b, float *c)
{
    dnnl_sgemm('N', trans_b ? 'T' : 'N', (dnnl_dim_t)m, (dnnl_dim_t)n, (dnnl_dim_t)k, alpha, a, (dnnl_dim_t)k, b,
               (dnnl_dim_t)(trans_b ? k : n), 0.0f, c, (dnnl_dim_t)n);
}
#endif

/* Every SGEMM peer of this build, each set to one thread; prog names the program in the
   message printed when OpenBLAS has to be skipped. */
inline std::vector<SgemmPeer> sgemm_peers(const char *prog)
{
    std::vector<SgemmPeer> peers;
#ifdef QKV_BENCH_HAVE_OPENMP
    omp_set_num_threads(1); /* BLIS and oneDNN parallelize through OpenMP */
#endif
#ifdef QKV_BENCH_HAVE_OPENBLAS
#ifdef QKV_BENCH_HAVE_OPENBLAS_SET_NUM_THREADS
    openblas_set_num_threads(1);
#endif
    if (cblas_is_openblas())
        peers.push_back({"openblas", sgemm_openblas});
    else
        std::fprintf(stderr, "%s: cblas_sgemm does not resolve to OpenBLAS; OpenBLAS skipped\n", prog);
#endif
#ifdef QKV_BENCH_HAVE_BLIS
    bli_thread_set_num_threads(1);
    peers.push_back({"blis", sgemm_blis});
#endif
#ifdef QKV_BENCH_HAVE_DNNL
    peers.push_back({"onednn", sgemm_onednn});
#endif
    (void)prog;
    return peers;
}

/* Every SGEMM peer to n threads (sgemm_peers() sets them to one): OpenBLAS, BLIS and the
   OpenMP pool oneDNN runs on */
inline void sgemm_peers_set_threads(int n)
{
#ifdef QKV_BENCH_HAVE_OPENMP
    omp_set_num_threads(n);
#endif
#if defined(QKV_BENCH_HAVE_OPENBLAS) && defined(QKV_BENCH_HAVE_OPENBLAS_SET_NUM_THREADS)
    openblas_set_num_threads(n);
#endif
#ifdef QKV_BENCH_HAVE_BLIS
    bli_thread_set_num_threads(n);
#endif
    (void)n;
}

} // namespace qkv_bench

#endif
