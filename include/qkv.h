/* libqkv: SIMD microkernels and attention drivers for CPUs.
 *
 * This header is the public contract: the comments beside each declaration say what it
 * does, what it checks and how accurate it is. C99/C11 and C++ compatible, row-major,
 * float (IEEE binary32) unless stated.
 *
 * Thread safety: every function may be called from any number of threads at once.
 * qkv_isa_select() may run while other threads compute; it affects calls that start
 * after it returns. */
#ifndef QKV_H
#define QKV_H

#include <stddef.h>

#if defined(_WIN32) && defined(QKV_BUILDING_DLL)
#define QKV_API __declspec(dllexport)
#elif defined(__GNUC__)
#define QKV_API __attribute__((visibility("default")))
#else
#define QKV_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status and errors ------------------------------------------------------------ */

typedef enum qkv_status {
    QKV_OK = 0,
    QKV_ERR_ARG = 1,   /* NULL pointer where data is needed, zero/inconsistent size, bad flag, ld too small */
    QKV_ERR_SIZE = 2,  /* a size computation would overflow size_t, or a buffer is smaller than required */
    QKV_ERR_NOMEM = 3, /* an internal allocation failed (only possible when no workspace was given) */
    QKV_ERR_ISA = 4    /* the requested instruction set is not supported by this CPU or this build */
} qkv_status;

/* A static English message for s; never NULL, also for values outside the enum. */
QKV_API const char *qkv_strerror(qkv_status s);

/* "MAJOR.MINOR.PATCH" */
QKV_API const char *qkv_version(void);

/* ---- Instruction-set dispatch ----------------------------------------------------- */

typedef enum qkv_isa {
    QKV_ISA_SCALAR = 0,
    QKV_ISA_AVX2 = 1,   /* AVX2 + FMA + F16C, OS-enabled YMM state */
    QKV_ISA_AVX512 = 2, /* AVX-512 F, VL, BW, DQ, OS-enabled ZMM state */
    QKV_ISA_NEON = 3    /* AArch64 Advanced SIMD */
} qkv_isa;

/* Best ISA that both this CPU and this build support. */
QKV_API qkv_isa qkv_isa_detected(void);
/* The ISA whose kernels calls use now. At first use the environment variable QKV_ISA
   (scalar|avx2|avx512|neon) chooses it; an unknown or unsupported value falls back to
   qkv_isa_detected() with one line on stderr. */
QKV_API qkv_isa qkv_isa_active(void);
/* Switch every later call to isa's kernels. QKV_ERR_ISA if this CPU or build lacks it
   (or isa is not a qkv_isa value); the active ISA is then unchanged. Thread-safe. */
QKV_API qkv_status qkv_isa_select(qkv_isa isa);
/* "scalar", "avx2", "avx512", "neon"; "unknown" for other values. */
QKV_API const char *qkv_isa_name(qkv_isa isa);

/* ---- Kernels ---------------------------------------------------------------------- *
 * Hot-path calls with preconditions instead of status codes: pointers must be valid for
 * n elements (they may be NULL when n == 0). They never read or write past element n - 1,
 * whatever the alignment, and never allocate. */

/* sum a[i] * b[i]; n == 0 -> 0.0f. Error <= 2 n FLT_EPSILON sum |a[i] b[i]|. Products and
   partial sums are float: one beyond FLT_MAX overflows to +-inf (or NaN), and the bound
   assumes none does. */
QKV_API float qkv_dot(const float *a, const float *b, size_t n);

/* y[i] = expf(x[i]); y may equal x (other overlaps are not allowed).
   At most 2 ULP from the correctly rounded result on [-87.3, 88.7]; exp(-inf) = 0,
   exp(+inf) = +inf, NaN -> NaN, 0 below about -103.97, +inf above about 88.72. */
QKV_API void qkv_exp(const float *x, float *y, size_t n);

/* y = softmax(scale * x), max-subtracted; y may equal x. Entries whose scaled value is
   -inf get weight 0; if every scaled entry is -inf the row is all zeros; a NaN anywhere
   (or a scaled +inf) makes the whole row NaN; n == 0 does nothing. An infinite scale is
   no limit (no one-hot argmax): each scaled entry scale * x[i] is +-inf, or NaN for
   x[i] = 0 or NaN, so the row is all zeros if every x[i] is nonzero with the sign
   opposite to scale (or an infinity of that sign) and all NaN otherwise. Outputs sum to 1
   within 1e-6 for any n (the sum of the exponentials is kept within 8 float roundings). */
QKV_API void qkv_softmax(const float *x, float *y, size_t n, float scale);

/* ---- Threads ---------------------------------------------------------------------- *
 * libqkv starts no thread of its own (except in qkv_threadpool_create): functions with a
 * tp argument run on a pool the caller owns (OpenMP, TBB, their own, or libqkv's below),
 * tp == NULL meaning the calling thread only. The work is cut into items by the problem's
 * shape only and the tasks share the items dynamically, so results are bit-identical for
 * every n_threads and to tp == NULL. A tp whose run is NULL or whose n_threads is 0 is
 * QKV_ERR_ARG. */

/* A pool: run(pool, task, arg, n_tasks) must call task(arg, t) exactly once for every t in
   [0, n_tasks), possibly concurrently, and return only when all calls have returned.
   libqkv never asks for more than n_threads tasks; t names a per-task scratch slot, and the
   tasks share the work items among themselves, so a pool that runs the tasks one after the
   other (in any order) is still correct. A task never calls run() of the same pool. */
typedef struct qkv_threadpool {
    size_t n_threads; /* >= 1 */
    void (*run)(void *pool, void (*task)(void *arg, size_t t), void *arg, size_t n_tasks);
    void *pool;
} qkv_threadpool;

/* libqkv's own pool: n_threads - 1 worker threads plus the calling thread, which runs
   task 0 (n_threads == 0: one per online CPU). Workers spin for about 0.1 ms after a
   job, then sleep: an idle pool costs no CPU. NULL if a thread or memory cannot be had.
   One call may use a pool at a time: concurrent calls on the same pool are serialized,
   never corrupted. */
QKV_API qkv_threadpool *qkv_threadpool_create(size_t n_threads);
/* Joins every worker and frees the pool; NULL: no-op. No call may be using it. */
QKV_API void qkv_threadpool_destroy(qkv_threadpool *tp);

/* ---- Matrix multiply -------------------------------------------------------------- */

typedef enum qkv_trans { QKV_NOTRANS = 0, QKV_TRANS = 1 } qkv_trans;

/* C (m x n) = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T as ta/tb say; op(A) is
   m x k, op(B) is k x n, all row-major: A is stored m x k (lda >= k) or, with QKV_TRANS,
   k x m (lda >= m); B is k x n (ldb >= n) or, with QKV_TRANS, n x k (ldb >= k); ldc >= n.
   beta == 0: C is written without being read (NaN in C does not propagate).
   m == 0 or n == 0: nothing to do, QKV_OK (a, b, c may then be NULL), provided ta, tb and
   the leading dimensions are valid: those checks come first.
   k == 0 or alpha == 0: C = beta * C, A and B are not read (may be NULL only if k == 0).
   Only the m x n window of C is written; padding columns of C are never touched.
   Error <= 2 k FLT_EPSILON sum_p |a_ip b_pj| per result (plus the rounding of alpha, beta);
   the products and sums are float, alpha is applied after them: an intermediate beyond
   FLT_MAX overflows, and the bound assumes none does.
   Status: QKV_ERR_ARG for a bad ta/tb, an ld below its minimum, or a NULL a, b (k > 0) or c;
   the ld checks hold whatever m, n, k are (m == 0 with lda = 1 < k is QKV_ERR_ARG);
   QKV_ERR_SIZE if a matrix would span more than PTRDIFF_MAX bytes; QKV_ERR_NOMEM if the
   packing workspace (allocated once per call, at most KC x NC + MC x KC floats of
   the active ISA's blocking on this machine, about 10 MiB for AVX2 with a 2 MiB L2; none
   for small products of row-major matrices) cannot be allocated.
   C must not overlap A or B. On any error C is unchanged. Thread-safe; single-threaded. */
QKV_API qkv_status qkv_gemm(qkv_trans ta, qkv_trans tb, size_t m, size_t n, size_t k,
                            float alpha, const float *a, size_t lda,
                            const float *b, size_t ldb,
                            float beta, float *c, size_t ldc);

/* Workspace bytes enough for any qkv_gemm_ex of these sizes (either transposition) on any
   ISA and any tp of at most n_threads threads (0 is taken as 1); 0 on overflow. */
QKV_API size_t qkv_gemm_workspace_size(size_t m, size_t n, size_t k, size_t n_threads);

/* qkv_gemm spread over tp: macro-tiles of C are the work items (k is never split, so each
   element of C is one chain of the same operations whatever the thread count), the packed
   blocks of B are shared by the tasks, the blocks of A and edge tiles are per task.
   Problems too small to pay for threads run on one task. ws: ws_size bytes of any
   alignment, or NULL (allocated once per call). Same contract, checks and error bound as
   qkv_gemm; additionally QKV_ERR_ARG for a bad tp and QKV_ERR_SIZE for ws_size below what
   this call needs (qkv_gemm_workspace_size(m, n, k, tp->n_threads) is always enough). With
   a workspace the call allocates nothing. */
QKV_API qkv_status qkv_gemm_ex(qkv_trans ta, qkv_trans tb, size_t m, size_t n, size_t k,
                               float alpha, const float *a, size_t lda,
                               const float *b, size_t ldb,
                               float beta, float *c, size_t ldc,
                               const qkv_threadpool *tp, void *ws, size_t ws_size);

/* ---- Data types and conversions --------------------------------------------------- *
 * Element types of tensors that need not be float (the attention descriptor's K/V type):
 * F16 is IEEE 754 binary16, BF16 is bfloat16 (the high 16 bits of a float), each passed as
 * 16-bit patterns (uint16_t, _Float16, __bf16 ...). */
typedef enum qkv_dtype { QKV_F32 = 0, QKV_F16 = 1, QKV_BF16 = 2 } qkv_dtype;

/* dst[i] = src[i] converted; F32 -> F16 and F32 -> BF16 round to nearest even, keep
   infinities and NaN (a NaN stays a NaN), overflow to infinity (F16 past 65504);
   F16/BF16 -> F32 is exact. One allowance: F32 -> BF16 may turn a subnormal F32 input into
   a zero of the same sign (the AVX512_BF16 converter does); everything else is exact RNE.
   F16 <-> BF16 goes through float (exact), so it rounds once, to nearest even, with
   overflow to infinity. The same type on both sides is a copy of the bits. src and dst
   must not overlap unless they are equal and the element sizes match. Any pair of
   qkv_dtype values; QKV_ERR_ARG for an unknown type or a NULL pointer with n > 0 (then
   nothing is written); n == 0 does nothing (NULL pointers allowed). Never reads or writes
   outside the n elements of each array, any alignment; never allocates. */
QKV_API qkv_status qkv_convert(const void *src, qkv_dtype src_type, void *dst, qkv_dtype dst_type, size_t n);

/* ---- Attention --------------------------------------------------------------------- *
 * All inputs contiguous row-major; outputs must not overlap inputs. Every function checks
 * all arguments before writing anything: on any error no output byte is modified.
 * Status: QKV_ERR_ARG for a NULL pointer, a zero size, unknown flag bits (and below the
 * other cases named); QKV_ERR_SIZE if a matrix would span more than PTRDIFF_MAX bytes or a
 * workspace is too small; QKV_ERR_NOMEM if an internal allocation fails. */

/* query i attends key j only if j <= i + (n_kv - n_q) (bottom-right aligned, so a KV-cache
   decode step is the same call as a prefill); a query row with no visible key (possible
   only when n_kv < n_q) gets an all-zero output row */
#define QKV_CAUSAL 1u

/* The simple self-attention, no weights and no scaling: W = softmax(X X^T) row-wise,
   Z = W X. x: n x d, z: n x d, weights: n x n or NULL (not computed). Z comes from the
   fused kernel of qkv_sdpa (no n x n buffer); W from qkv_dot and qkv_softmax. */
QKV_API qkv_status qkv_attention_simple(const float *x, size_t n, size_t d, float *z, float *weights);

/* Scaled dot-product attention, one head: O = softmax(scale Q K^T [+ causal mask]) V.
   q: n_q x d_k, k: n_kv x d_k, v: n_kv x d_v, o: n_q x d_v; any n_q, n_kv, d_k, d_v >= 1.
   scale <= 0 means 1/sqrt(d_k); a NaN or infinite scale is QKV_ERR_ARG. flags: 0 or
   QKV_CAUSAL. One fused FlashAttention-2 style pass (qkv_attention's core): no n_q x n_kv
   buffer; the workspace (allocated once per call) is O(tile x (d_k + d_v)) floats,
   independent of n_q and n_kv (d = 64, 16384 x 16384: 152,512 bytes). Error per output: the GEMM bound on the scores and on P V, exp within
   2 ULP (the qkv_exp contract), stable for logits of any finite magnitude. The scale is
   applied to q before the dot products (scale q rounded once), so only a logit that itself
   overflows float (or a partial sum of one beyond FLT_MAX) overflows: a score of +inf or
   NaN makes that query's row NaN (as for qkv_softmax), scores of -inf weigh 0, and a row
   whose visible scores are all -inf is zeros. A key the mask hides has no influence at all,
   whatever its K and V rows hold (NaN, inf): outputs of queries that do not see it are
   bit-identical to a call without it. */
QKV_API qkv_status qkv_sdpa(const float *q, const float *k, const float *v, float *o,
                            size_t n_q, size_t n_kv, size_t d_k, size_t d_v,
                            float scale, unsigned flags);

/* Self-attention with trainable weights: Q = X Wq, K = X Wk, V = X Wv (qkv_gemm), then
   Z = softmax(Q K^T / sqrt(d_out) [+ causal mask]) V (the qkv_sdpa kernel).
   x: n x d_in; wq, wk, wv: d_in x d_out each; z: n x d_out; flags as qkv_sdpa.
   Allocates 3 n d_out floats, the attention workspace and the GEMM packing once per call. */
QKV_API qkv_status qkv_self_attention(const float *x, size_t n, size_t d_in,
                                      const float *wq, const float *wk, const float *wv, size_t d_out,
                                      unsigned flags, float *z);

/* Multi-head attention: Transformer encoder self-attention, masked decoder
   self-attention (QKV_CAUSAL) and decoder-encoder cross-attention. */
typedef struct qkv_mha {
    size_t d_model;                 /* E; E % n_heads == 0; head size E / n_heads */
    size_t n_heads;                 /* h */
    const float *wq, *wk, *wv, *wo; /* E x E each (wk, wv: see n_kv_heads) */
    const float *bq, *bk, *bv, *bo; /* E each, or NULL for no bias */
    int torch_layout;               /* 0: W is (in x out), y = x W + b.
                                       1: W is (out x in) as torch.nn.Linear, y = x W^T + b */
    size_t n_kv_heads;              /* 0 or h: every head has its own K, V. Else a divisor of h
                                       (GQA; 1 = MQA): wk, wv are E x (n_kv_heads E/h) (in x out;
                                       transposed with torch_layout), bk, bv have n_kv_heads E/h
                                       entries, and query head i reads KV head i / (h / n_kv_heads) */
} qkv_mha;

/* Exact workspace bytes of qkv_mha_forward(m, any batch, ., n_q, ., n_kv, ...): Q, K, V of
   one batch item and the sdpa tile workspace, plus 64 bytes of alignment slack (any ws
   pointer works). For self-attention pass n_kv = n_q. Independent of the active ISA.
   0 if m is one that qkv_mha_forward rejects with QKV_ERR_ARG (NULL, a NULL weight, E or
   h zero, E % h != 0, torch_layout not 0/1: the same check), n_q or n_kv is 0, or the
   size overflows. */
QKV_API size_t qkv_mha_workspace_size(const qkv_mha *m, size_t n_q, size_t n_kv);
/* Workspace bytes enough for qkv_mha_forward(m, batch, ., n_q, ., n_kv, ...) with any tp of
   at most n_threads threads (0 is taken as 1); 0 in the cases above. */
QKV_API size_t qkv_mha_workspace_size_mt(const qkv_mha *m, size_t batch, size_t n_q, size_t n_kv,
                                         size_t n_threads);

/* x_q: batch x n_q x E; x_kv: batch x n_kv x E, or NULL for self-attention (then n_kv is
   taken to be n_q, whatever is passed); out: batch x n_q x E. Head i uses columns
   [i E/h, (i+1) E/h) of Q = x_q Wq + bq, K = x_kv Wk + bk, V = x_kv Wv + bv, scale
   1/sqrt(E/h); the heads are concatenated in place and projected: out = concat Wo + bo.
   flags: 0 or QKV_CAUSAL (masked decoder self-attention). With torch_layout = 1,
   in_proj_weight[0:E], [E:2E], [2E:3E] and out_proj.weight of a
   torch.nn.MultiheadAttention(E, h, batch_first=True) plug in directly.
   ws: ws_size bytes of workspace, any alignment, or NULL (allocated and freed inside).
   tp: the projections, their biases and the attention run on it; NULL: the calling thread
   only. Results are bit-identical for every thread count.
   Status: QKV_ERR_ARG for a NULL m, x_q, out or weight, E or h or batch or n_q zero,
   E % h != 0, x_kv given with n_kv = 0, torch_layout not 0/1, unknown flag bits, a bad tp;
   QKV_ERR_SIZE for ws_size < qkv_mha_workspace_size_mt(m, batch, n_q, n_kv, tp's
   n_threads) (with ws != NULL; qkv_mha_workspace_size() is enough for tp == NULL) or a
   size overflow; QKV_ERR_NOMEM only if ws is NULL and the one allocation fails. With a
   workspace the call allocates nothing (the projections' GEMM packing lives in it too). */
QKV_API qkv_status qkv_mha_forward(const qkv_mha *m, size_t batch,
                                   const float *x_q, size_t n_q,
                                   const float *x_kv, size_t n_kv,
                                   unsigned flags, float *out,
                                   void *ws, size_t ws_size,
                                   const qkv_threadpool *tp);

/* ---- Batched attention: qkv_attention ----------------------------------------------- *
 * One call computes every (batch item, query head) of scaled dot-product attention in the
 * layouts that models use, fused (no n_q x n_kv buffer), spread over a thread pool. */

typedef struct qkv_attention_desc {
    size_t batch, n_heads; /* B >= 1, H >= 1 query heads */
    size_t n_kv_heads;     /* 0 or H: one KV head per query head. Else a divisor of H (GQA;
                              1 = MQA): query head h reads KV head h / (H / n_kv_heads) */
    size_t n_q, n_kv;      /* queries and keys per (item, head); n_kv is the capacity when
                              kv_len is given */
    size_t d_k, d_v;       /* head sizes of Q/K and of V/O */
    /* Element strides of each tensor: [0] between batch items, [1] between heads, [2]
       between tokens (rows); the last dimension (d_k or d_v) is contiguous.
       PyTorch (B, H, N, D):      {H*N*D, N*D, D}
       interleaved (B, N, H, D):  {N*H*D, D, H*D}   (a fused QKV projection's output too)
       A stride may be 0 (broadcast). O's strides must not make two outputs overlap (a zero
       O stride over more than one element is QKV_ERR_ARG). */
    size_t q_stride[3], k_stride[3], v_stride[3], o_stride[3];
    float scale;           /* <= 0: 1/sqrt(d_k); NaN or infinite: QKV_ERR_ARG */
    unsigned flags;        /* 0 or QKV_CAUSAL */
    size_t window;         /* 0: none. w > 0: query at position p sees key j only if
                              |j - p| < w (with QKV_CAUSAL: p - w < j <= p, the sliding
                              window of Mistral / Gemma) */
    float softcap;         /* 0: none. c > 0: each scaled score s becomes c * tanh(s / c)
                              (Gemma 2); NaN, infinite or negative: QKV_ERR_ARG */
    const size_t *kv_len;  /* NULL: every item has n_kv keys. Else kv_len[b] <= n_kv keys for
                              item b; keys past kv_len[b] are never read (padding of a batched
                              KV cache). kv_len[b] == 0 gives zero rows */
    qkv_dtype kv_dtype;    /* element type of K and V; F16 and BF16 are widened to float
                              exactly and accumulated in float */
} qkv_attention_desc;

/* Positions are bottom-right aligned per item: with L = (kv_len ? kv_len[b] : n_kv), query
   i sits at p = i + L - n_q and sees key j iff j < L, (QKV_CAUSAL) j <= p, and (window) the
   window test. A query with no visible key gets a zero output row and lse = -inf. A key it
   does not see has no influence at all on its outputs, whatever that key's K and V hold. */

/* Enough workspace bytes for qkv_attention(d, ...) on any ISA with any tp of at most
   n_threads threads (0 is taken as 1); 0 if d is invalid or the size overflows. O(tile) per
   thread, independent of n_q and n_kv, plus (decode with few heads: the key range split
   into chunks) one row of partial results per query row and chunk. */
QKV_API size_t qkv_attention_workspace_size(const qkv_attention_desc *d, size_t n_threads);

/* q: float, k and v: kv_dtype, o: float, laid out by the strides above.
   lse: NULL, or B x H x n_q floats (index (b H + h) n_q + i): the natural log of the sum of
   exp over the visible (scaled, capped) scores of that query: lets a caller merge partial
   attentions computed over disjoint key ranges (split-KV, ring or context parallelism
   across devices or machines): O = sum_r exp(lse_r - lse) O_r with lse = logsumexp_r lse_r.
   ws: workspace of ws_size bytes (any alignment), or NULL (allocated once per call).
   Results are bit-identical for every thread count. Errors (nothing written): QKV_ERR_ARG
   for a NULL desc, q, k, v or o, a zero size, H not a multiple of n_kv_heads, unknown flag
   bits, a bad scale or softcap, a kv_len[b] > n_kv, an unknown kv_dtype, a zero O stride
   over more than one element, a bad tp; QKV_ERR_SIZE for a tensor whose byte span
   overflows or ws_size too small; QKV_ERR_NOMEM only when ws is NULL.
   Accuracy: the GEMM bound on scores and on P V (k = d_k, n_kv); softcap adds the error of
   one tanh (<= 2 ULP); F16/BF16 inputs are exact in float; the scale multiplies q before
   the dot products, so only a logit that itself overflows float overflows (+inf or NaN
   scores make that query's row NaN; -inf scores weigh 0). */
QKV_API qkv_status qkv_attention(const qkv_attention_desc *d,
                                 const float *q, const void *k, const void *v, float *o, float *lse,
                                 const qkv_threadpool *tp, void *ws, size_t ws_size);

#ifdef __cplusplus
}
#endif

#endif /* QKV_H */
