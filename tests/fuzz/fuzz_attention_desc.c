/* libFuzzer target: qkv_attention descriptors taken from the input, every ISA.
 * Sizes (B, H, n_kv_heads incl. non-divisors and > H, n_q, n_kv incl. split-KV lengths,
 * d_k, d_v), the (B, H, N, D), (B, N, H, D), padded and broadcast layouts (a zero O stride
 * too), flags with unknown bits, windows (SIZE_MAX too), softcaps and scales incl. NaN, inf
 * and negative ones, kv_len incl. entries > n_kv, kv_dtype F32/F16/BF16/7, NULL pointers,
 * bad pools, huge strides, and workspaces NULL / exact / one byte short / misaligned.
 * Expected: the documented status (QKV_ERR_ARG before QKV_ERR_SIZE), computed here from the
 * descriptor; on any error o and lse untouched; qkv_attention_workspace_size 0 exactly for a
 * descriptor the call rejects; a valid call within the tolerance of tests/attn_ref.h of the
 * double reference (on the exactly widened K/V for F16/BF16), rows without a visible key
 * exactly +0 with lse -inf, O elements between the outputs untouched, and bit-identical to
 * the same call with tp == NULL and no workspace. abort() on a violation. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../attn_ref.h"
#include "fuzz_common.h"

/* a caller's pool that runs the tasks one after the other, last first */
static void reverse_run(void *pool, void (*task)(void *, size_t), void *arg, size_t n)
{
    (void)pool;
    for (size_t t = n; t-- > 0;)
        task(arg, t);
}

/* strides of a (B, Hx, N, D) tensor: 0 (B, H, N, D), 1 (B, N, H, D), 2 padded, 3 broadcast
   (bcast: the batch stride for Q, the token stride for K and V, the token stride for O);
   returns the elements spanned */
static size_t strides(int l, int bcast, size_t B, size_t Hx, size_t N, size_t D, size_t s[3])
{
    if (l == 1)
        s[0] = N * Hx * D, s[1] = D, s[2] = Hx * D;
    else if (l == 2)
        s[2] = D + 1, s[1] = N * (D + 1) + 3, s[0] = Hx * s[1] + 2;
    else
        s[0] = Hx * N * D, s[1] = N * D, s[2] = D;
    if (l == 3)
        s[bcast] = 0;
    return (B - 1) * s[0] + (Hx - 1) * s[1] + (N - 1) * s[2] + D;
}

static float byte_val(const uint8_t *src, size_t nsrc, size_t *j, float amp)
{
    return nsrc ? amp * ((float)src[(*j)++ % nsrc] - 128.0f) / 128.0f : 0.5f;
}

enum { HDR = 20 };

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t size)
{
    if (size < HDR)
        return 0;
    const int split = (d[4] & 0x80) != 0;
    const size_t B = split ? 1 : 1 + d[0] % 3, H = 1 + d[1] % 4;
    static const int kvh_mode[8] = {0, 1, 2, 3, 0, 1, 4, 5};
    const int km = kvh_mode[d[2] % 8];
    const size_t KVH = km == 0 ? 0 : km == 1 ? H : km == 2 ? (H % 2 ? 3 : H / 2) : km == 3 ? 1 : km == 4 ? H + 1 : 3;
    const size_t n_q = split ? 1 + d[3] % 2 : 1 + d[3] % 24;
    const size_t n_kv = split ? 1024 + (size_t)d[4] % 128 * 3 : 1 + d[4] % 48;
    const size_t d_k = 1 + d[5] % 20, d_v = 1 + d[6] % 20;
    const int lq = d[7] & 3, lk = (d[7] >> 2) & 3, lv = (d[7] >> 4) & 3, lo = (d[7] >> 6) & 3;
    const unsigned flags = d[8] % 9 == 8 ? 2u : d[8] & 1u;
    static const size_t windows[8] = {0, 0, 0, 1, 2, 7, 3, SIZE_MAX};
    /* the bad values (NaN, inf, negative caps) rare enough that most inputs stay valid */
    static const float caps[16] = {0, 0, 0, 0, 0, 0, 0, 0, 5.0f, 0.5f, 30.0f, 50.0f, 2.0f, -1.0f, NAN, INFINITY};
    static const float scales[16] = {0, 0, 0, 0, 0, 0, 0.125f, 1.0f, -1.0f, 3.0f, 0.5f, 2.0f, 0.3f, 0.7f, NAN, INFINITY};
    const size_t window = windows[d[9] % 8];
    const float softcap = caps[d[10] % 16], scale = scales[d[11] % 16];
    const int kvlen_mode = d[12] % 8 < 2 ? 0 : d[12] % 8 == 7 ? 3 : 1; /* 0 NULL, 1 from bytes, 3 one > n_kv */
    static const int dtypes[8] = {QKV_F32, QKV_F16, QKV_BF16, QKV_F32, QKV_F16, QKV_BF16, QKV_F32, 7};
    const int dt = dtypes[d[13] % 8];
    const int null_arg = d[14] % 32 <= 5 ? d[14] % 32 : 0; /* 1 desc, 2 q, 3 k, 4 v, 5 o NULL */
    const int with_lse = !(d[14] & 0x80);
    const int tp_mode = d[15] % 8 >= 6 ? 0 : d[15] % 8; /* 0 NULL, 1..3 threads, 4 run NULL, 5 n_threads 0 */
    static const int ws_modes[8] = {0, 1, 2, 3, 0, 1, 3, 0};
    const int ws_mode = ws_modes[d[16] % 8]; /* 0 NULL, 1 exact, 2 one byte short, 3 plenty, misaligned */
    const int huge = d[17] % 16 == 0;          /* k token stride SIZE_MAX / 2 */
    const float amp = d[18] & 1 ? 1.0f : 30.0f;
    const uint8_t *src = d + HDR;
    const size_t nsrc = size - HDR;
    size_t j = 0;

    qkv_attention_desc desc;
    memset(&desc, 0, sizeof desc);
    const size_t kh = KVH && KVH <= H && H % KVH == 0 ? KVH : H; /* for the buffers */
    desc.batch = B, desc.n_heads = H, desc.n_kv_heads = KVH, desc.n_q = n_q, desc.n_kv = n_kv;
    desc.d_k = d_k, desc.d_v = d_v, desc.scale = scale, desc.flags = flags, desc.window = window;
    desc.softcap = softcap, desc.kv_dtype = (qkv_dtype)dt;
    const size_t nq = strides(lq, 0, B, H, n_q, d_k, desc.q_stride);
    const size_t nk = strides(lk, 2, B, kh, n_kv, d_k, desc.k_stride);
    const size_t nv = strides(lv, 2, B, kh, n_kv, d_v, desc.v_stride);
    const size_t no = strides(lo, 2, B, H, n_q, d_v, desc.o_stride), nl = B * H * n_q;
    size_t kvl[3];
    int kvl_bad = 0;
    if (kvlen_mode) {
        for (size_t b = 0; b < B; b++)
            kvl[b] = nsrc ? src[j++ % nsrc] % (n_kv + 1) : n_kv;
        if (kvlen_mode == 3) {
            kvl[d[12] / 4 % B] = n_kv + 1 + d[12] / 16 % 2;
            kvl_bad = 1;
        }
        desc.kv_len = kvl;
    }
    if (huge)
        desc.k_stride[2] = SIZE_MAX / 2; /* (n_kv - 1) x it overflows any byte span */

    /* the status the header promises */
    const int desc_arg = (KVH && (KVH > H || H % KVH)) || flags > 1u || !isfinite(scale) || !(softcap >= 0.0f) ||
                         isinf(softcap) || kvl_bad || dt == 7 || (lo == 3 && n_q > 1);
    const int desc_size = huge && n_kv > 1;
    const int null_pool = tp_mode >= 4;
    qkv_status want = null_arg || null_pool || desc_arg ? QKV_ERR_ARG : desc_size ? QKV_ERR_SIZE : QKV_OK;
    const qkv_attention_desc *dp = null_arg == 1 ? NULL : &desc;
    const size_t need_ws = qkv_attention_workspace_size(dp, tp_mode >= 1 && tp_mode <= 3 ? (size_t)tp_mode : 1);
    if ((need_ws == 0) != (null_arg == 1 || desc_arg || desc_size))
        FAIL("workspace_size %zu for a descriptor that is %s", need_ws,
             null_arg == 1 || desc_arg || desc_size ? "invalid" : "valid");
    if (want == QKV_OK && ws_mode == 2)
        want = QKV_ERR_SIZE;

    /* the tensors: K and V in float (exact values of the 16-bit ones) */
    float *q = malloc(nq * sizeof(float)), *k = malloc(nk * sizeof(float)), *v = malloc(nv * sizeof(float));
    uint16_t *k16 = malloc(nk * 2), *v16 = malloc(nv * 2);
    float *o = malloc(no * sizeof(float)), *lse = malloc(nl * sizeof(float));
    float *o0 = malloc(no * sizeof(float)), *l0 = malloc(nl * sizeof(float));
    for (size_t i = 0; i < nq; i++)
        q[i] = byte_val(src, nsrc, &j, amp);
    for (size_t i = 0; i < nk; i++) {
        k[i] = byte_val(src, nsrc, &j, amp) * (dt == QKV_F16 ? 1.0f + 0x1p-12f : 1.0f); /* rounds */
        k16[i] = dt == QKV_BF16 ? ref_bf16_encode(k[i]) : ref_f16_encode(k[i]);
        if (dt == QKV_F16 || dt == QKV_BF16)
            k[i] = dt == QKV_F16 ? ref_f16_decode(k16[i]) : ref_bf16_decode(k16[i]);
    }
    for (size_t i = 0; i < nv; i++) {
        v[i] = byte_val(src, nsrc, &j, 1.0f);
        v16[i] = dt == QKV_BF16 ? ref_bf16_encode(v[i]) : ref_f16_encode(v[i]);
        if (dt == QKV_F16 || dt == QKV_BF16)
            v[i] = dt == QKV_F16 ? ref_f16_decode(v16[i]) : ref_bf16_decode(v16[i]);
    }
    const void *kin = dt == QKV_F16 || dt == QKV_BF16 ? (const void *)k16 : (const void *)k;
    const void *vin = dt == QKV_F16 || dt == QKV_BF16 ? (const void *)v16 : (const void *)v;

    /* the reference, once, and which O elements the outputs name */
    double *ref = NULL, *tol = NULL, *rl = NULL, *tl = NULL;
    unsigned char *named = NULL;
    if (want == QKV_OK) {
        ref = malloc(nl * d_v * sizeof(double)), tol = malloc(nl * d_v * sizeof(double));
        rl = malloc(nl * sizeof(double)), tl = malloc(nl * sizeof(double));
        named = calloc(no, 1);
        double *s = malloc(n_kv * sizeof(double));
        for (size_t b = 0; b < B; b++)
            for (size_t h = 0; h < H; h++)
                for (size_t i = 0; i < n_q; i++) {
                    const size_t x = (b * H + h) * n_q + i;
                    ref_row(&desc, q, k, v, b, h, i, s, ref + x * d_v, tol + x * d_v, rl + x, tl + x);
                    const size_t at = b * desc.o_stride[0] + h * desc.o_stride[1] + i * desc.o_stride[2];
                    memset(named + at, 1, d_v);
                }
        free(s);
    }

    const qkv_threadpool pools[6] = {{0, NULL, NULL}, {1, reverse_run, NULL}, {2, reverse_run, NULL},
                                     {3, reverse_run, NULL}, {2, NULL, NULL}, {0, reverse_run, NULL}};
    const qkv_threadpool *tp = tp_mode ? &pools[tp_mode] : NULL;
    const size_t ws_size = ws_mode == 1 ? need_ws : ws_mode == 2 ? (need_ws ? need_ws - 1 : 0) : need_ws + 4096;
    unsigned char *ws_block = ws_mode ? malloc(ws_size + 8) : NULL;
    void *ws = ws_mode == 3 ? ws_block + 3 : ws_block;

    for (int isa = 0; isa < QKV_ISA_COUNT; isa++) {
        if (qkv_isa_select((qkv_isa)isa) != QKV_OK)
            continue;
        for (size_t i = 0; i < no; i++)
            o[i] = 42.0f;
        for (size_t i = 0; i < nl; i++)
            lse[i] = 42.0f;
        const qkv_status st = qkv_attention(dp, null_arg == 2 ? NULL : q, null_arg == 3 ? NULL : kin,
                                            null_arg == 4 ? NULL : vin, null_arg == 5 ? NULL : o,
                                            with_lse ? lse : NULL, tp, ws, ws_size);
        if (st != want)
            FAIL("B %zu H %zu/%zu %zux%zu d %zu/%zu lay %d%d%d%d f %u w %zu cap %g s %g kvlen %d dt %d null %d tp %d ws %d "
                 "huge %d: status %d, want %d",
                 B, H, KVH, n_q, n_kv, d_k, d_v, lq, lk, lv, lo, flags, window, softcap, scale, kvlen_mode, dt, null_arg,
                 tp_mode, ws_mode, huge, (int)st, (int)want);
        if (st != QKV_OK) {
            for (size_t i = 0; i < no; i++)
                if (o[i] != 42.0f)
                    FAIL("status %d but o[%zu] written", (int)st, i);
            for (size_t i = 0; i < nl; i++)
                if (lse[i] != 42.0f)
                    FAIL("status %d but lse[%zu] written", (int)st, i);
            continue;
        }
        for (size_t b = 0; b < B; b++)
            for (size_t h = 0; h < H; h++)
                for (size_t i = 0; i < n_q; i++) {
                    const size_t x = (b * H + h) * n_q + i;
                    const float *oi = o + b * desc.o_stride[0] + h * desc.o_stride[1] + i * desc.o_stride[2];
                    for (size_t c = 0; c < d_v; c++) {
                        const double t = tol[x * d_v + c], r = ref[x * d_v + c];
                        const int ok = t == 0.0 ? oi[c] == 0.0f && !signbit(oi[c]) : fabs((double)oi[c] - r) <= t;
                        if (!ok)
                            FAIL("B %zu H %zu/%zu %zux%zu d %zu/%zu f %u w %zu cap %g s %g kvlen %d dt %d: "
                                 "o(%zu,%zu,%zu)[%zu] = %.9g, ref %.9g, tol %.3g",
                                 B, H, KVH, n_q, n_kv, d_k, d_v, flags, window, softcap, scale, kvlen_mode, dt, b, h, i,
                                 c, oi[c], r, t);
                    }
                    if (with_lse) {
                        const int ok = tl[x] == 0.0 ? isinf(lse[x]) && lse[x] < 0 : fabs((double)lse[x] - rl[x]) <= tl[x];
                        if (!ok)
                            FAIL("B %zu H %zu %zux%zu f %u w %zu cap %g: lse(%zu,%zu,%zu) = %.9g, ref %.9g, tol %.3g", B,
                                 H, n_q, n_kv, flags, window, softcap, b, h, i, lse[x], rl[x], tl[x]);
                    }
                }
        for (size_t i = 0; i < no; i++)
            if (!named[i] && o[i] != 42.0f)
                FAIL("o[%zu] between the outputs written", i);
        if (tp || ws) { /* the same call on the calling thread, allocating: bit-identical */
            for (size_t i = 0; i < no; i++)
                o0[i] = 42.0f;
            if (qkv_attention(&desc, q, kin, vin, o0, l0, NULL, NULL, 0) != QKV_OK ||
                memcmp(o, o0, no * sizeof(float)) != 0 || (with_lse && memcmp(lse, l0, nl * sizeof(float)) != 0))
                FAIL("tp %d ws %d: not bit-identical to tp NULL without a workspace", tp_mode, ws_mode);
        }
    }
    free(q), free(k), free(v), free(k16), free(v16), free(o), free(lse), free(o0), free(l0);
    free(ref), free(tol), free(rl), free(tl), free(named), free(ws_block);
    return 0;
}
