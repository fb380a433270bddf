/* Internal: the GEMM cache blocking (MC, KC, NC) of each ISA, derived at start-up from the
 * register tile and the cache sizes of this machine (gemm/blocking.c), chosen once inside
 * dispatch's pthread_once and read-only afterwards. Baseline flags. */
#ifndef QKV_GEMM_BLOCKING_H
#define QKV_GEMM_BLOCKING_H

#include <stddef.h>

/* one data (or unified) cache level as the hardware reports it; size == 0: unknown */
typedef struct qkv_cache_level {
    size_t size;  /* bytes available to one core (a shared level: its share) */
    size_t ways;  /* associativity (a fully associative level: size / line) */
    size_t line;  /* bytes per line */
} qkv_cache_level;

typedef struct qkv_caches {
    qkv_cache_level l1d, l2, l3;
} qkv_caches;

typedef struct qkv_gemm_blocking {
    size_t mc, kc, nc;
    size_t l2_way; /* bytes of one L2 way (sets x line), 0 if unknown: qkv_gemm_mc_in_place() */
    size_t nc_l2;  /* NC of the packed-A order, where the block of B is the one that stays in L2
                      (gemm/driver.c), or streams from L3 (a half-rate core, an L2 of fewer
                      than QKV_GEMM_L2_PANELS_MIN micropanels: below); nc where L2 is unknown */
    size_t kc_pa;  /* KC of the packed-A order: kc, except on a half-rate core (below) */
    size_t pa_crowd;  /* a row-major A also takes the packed-A order where more than this many
                         of its MR rows fall into one L1 set (0: never; a half-rate core,
                         below) */
    size_t l1_way, l1_line; /* bytes of one L1 way and of a line, 0 if unknown */
} qkv_gemm_blocking;

/* sane ranges of every blocking, derived or from QKV_GEMM_BLOCKING (beyond them the
   workspace grows without a plausible gain). A derived NC stops at QKV_GEMM_NC_DERIVED_MAX:
   a 4096-column block of B already makes the repacking of the jc loop rare, and a larger
   one only grows the workspace (a machine with a big L3 share would otherwise get NC in
   the hundreds of thousands). */
enum {
    QKV_GEMM_KC_MIN = 16,
    QKV_GEMM_KC_MAX = 2048,
    QKV_GEMM_MC_MAX = 4096,
    QKV_GEMM_NC_MAX = 8192,
    QKV_GEMM_NC_DERIVED_MAX = 4096,
    QKV_GEMM_L2_PANELS_MIN = 16, /* the packed-A order's B block in L2 from 16 micropanels */
};

/* The analytical model of Low, Igual, Smith and Quintana-Orti ("Analytical modeling is
   enough for high-performance BLIS", ACM TOMS 43(2), 2016) for an MR x NR tile of floats,
   each level an LRU set-associative cache of W ways:
     KC: the KC x NR micropanel of B stays in L1 while MR x KC micropanels of A stream
         through it; one way is left to C, the other W1 - 1 are split between A and B,
         C_A ways for A and W1 - 1 - C_A for B, and KC is the largest depth that fits both:
         KC = max over C_A of min(C_A (L1 / W1) / (MR 4), (W1 - 1 - C_A) (L1 / W1) / (NR 4)).
         The paper splits the ways in the ratio MR : NR, C_A = floor((W1 - 1) MR / (MR + NR));
         where that floor is exact the two agree (12-way 48 KiB L1: AVX-512 12 x 32 KC 256,
         AVX2 6 x 16 KC 512), but with few ways it throws away most of L1: an 8-way 32 KiB
         L1 (AMD Zen 3) gives the AVX2 6 x 16 tile C_A = 1, KC 168 (B micropanel 11 KiB), where
         C_A = 2 gives KC 320 (20 KiB). Measured there, MC 36, medians of 9 interleaved
         processes, KC 168 -> 320: 4096 x 64 x 4096 49.7 -> 42.6 ms, 1024^3 36.8 -> 35.2,
         1000^3 33.7 -> 32.2 (MC 72: 48.1 -> 43.4, 36.2 -> 35.6, 32.2 -> 29.8).
     MC: the MC x KC block of A stays in L2 next to one KC x NR micropanel of B and C:
         C_A = W2 - 1 - ceil(KC NR 4 / (L2 / W2)) ways, MC = C_A (L2 / W2) / (KC 4),
         rounded down to a multiple of MR.
     NC: the KC x NC block of B stays in this core's share of L3 next to the block of A:
         C_B = W3 - 1 - ceil(MC KC 4 / (L3 / W3)) ways, NC = C_B (L3 / W3) / (KC 4),
         rounded down to a multiple of NR, at most QKV_GEMM_NC_DERIVED_MAX.
     NC_L2, the loop order that packs A and keeps the KC x NC block of B in L2 (the roles of
         the model's MC block and B micropanel mirrored: one MR x KC micropanel of A stays
         in L1 while the B micropanels stream from L2): half of the L2 ways, at most
         C_B = W2 - 1 - ceil(KC MR 4 / (L2 / W2)), NC_L2 = C_B (L2 / W2) / (KC 4) rounded
         down to a multiple of NR. The half, not the model's C_B: on an AVX-512 Xeon (2 MiB
         16-way L2, KC 256, model C_B 14 ways = NC 1792) 2048^3 ran at 0.81x of oneDNN with
         NC 2048, 0.94x with 1024 and 0.91x with 512 (interleaved runs, medians); the L2
         also holds the C tiles and what the prefetchers bring ahead.
         Where that half holds fewer than QKV_GEMM_L2_PANELS_MIN B micropanels, the B block
         streams from L3 instead (NC_L2 from L3 as NC above, at KC_PA): on an AMD EPYC Zen 3
         (512 KiB 8-way L2, AVX2 6 x 16, KC 320: half the L2 is 192 columns, 12
         micropanels) NC_L2 4096 against 192, scripts/bench_ab.sh, 5 rounds x 3
         repetitions, one thread / two: 1024^3 1.07-1.15x / 1.13x, 2048^3 1.15x / 1.16x,
         1000^3 1.08x, 1024 x 1024 x 64 B^T 1.00-1.07x / 0.91-1.04x (the noise there),
         4096 x 4096 x 64 B^T 1.01x. Through QKV_GEMM_BLOCKING, a shallower KC that fits
         more micropanels in the same half (160 x 384) gained nothing (1.01-1.03x), a deeper
         KC with the L3 block (384..672) no more than the noise (up to 10% there). The
         Xeon's 32 micropanels keep the L2 block (above); the bound sits between the two.
         An AMD EPYC Zen 1 (512 KiB L2 as well, 6 x 16 and 4 x 24 at 12 and 10
         micropanels) takes the L3 block too, not measured there.
     Half rate (half_rate != 0: a core that runs the ISA's vectors through a datapath half
         as wide, two passes an FMA, as AMD Zen 4 does with 512-bit vectors: its AVX-512
         FMA peak equals its AVX2 peak). A k step of the tile then takes twice the cycles
         and needs half the bytes per cycle from the caches, so in the packed-A order the
         operands can come from one level further out: the B block streams from L3 (NC_L2
         = NC, from L3 as above), and only the A micropanel must stay in L1: KC_PA, the
         largest multiple of 16 whose MR x KC_PA micropanel takes half of L1 (never below
         KC). Longer k runs per microkernel call also halve the loads and stores of C.
         Measured on an AMD EPYC Zen 4 (32 KiB 8-way L1, 1 MiB 8-way L2; model KC 160,
         NC_L2 800 for 12 x 32), medians of 5 alternated runs: KC 336 with NC 1600..2400
         against 160 with 800: 1024^3 24.7-25.0 -> 22.0-23.4 ms, 2048^3 189-196 -> 169-182
         ms, 1000^3 25.0 -> 21.0 ms. Otherwise KC_PA = KC.
         PA_CROWD: on a half-rate core also a row-major A whose MR rows put more than
         W1 / 2 of themselves into one L1 set (lda a multiple of the L1 way: all of them)
         takes the packed-A order whatever n is, since conflict misses on the rows read in
         place cost more there than packing (Zen 4, 5 alternated runs: 4096 x 64 x 4096
         34.6 -> 30.9 ms; lda 4112 instead of 4096 had given 23.4 against 27.7 ms in place);
         elsewhere 0 (by shape only, as measured on the Xeon). Not for AVX2 6 x 16 on the
         same Zen 4 (full rate, 6 rows of lda 1024 floats in one set): the packed-A order
         where the rows crowd, interleaved in one process, medians: 1024 x 64 x 1024 1.29
         -> 1.52 ms, 1024^3 25.7 -> 25.8 ms, 4096 x 64 x 4096 33.2 -> 32.6 ms; packing A in
         the in-place order instead: 1.50, 27.8, 32.3 ms. Padding lda or ldc by 16 floats
         changed none of them beyond noise.
   Every value is clamped to the ranges above; a level that is unknown (size 0) keeps the
   fallback's value for what it sets (fallback: the ISA's constants in kernels/<isa>.c; NC_L2
   then is NC, KC_PA is KC). */
qkv_gemm_blocking qkv_gemm_blocking_derive(size_t mr, size_t nr, const qkv_caches *caches, int half_rate,
                                           qkv_gemm_blocking fallback);

/* MC for a block of A read in place (row-major A, not packed) with leading dimension lda
   and depth kc, from the MC of a packed (contiguous) block, b->mc, never larger. The model
   assumes the block of A is contiguous. Rows kc floats long at a stride of lda floats
   cover only f = min(1, 4 kc / gcd(4 lda, L2 way)) of the L2 sets (1024 x 1024 with kc 256:
   a quarter), and the C tiles, written at a stride of the same kind, crowd the same sets.
   f = 1: the model's MC; f < 1: an eighth of it. Measured on an AVX-512 Xeon (2 MiB 16-way
   L2, model MC 1788 at KC 256), MC in {216, 444, 888, 1788}: 1024^3 NN (f = 1/4) 15.5 ms
   at 1788, 13.2 at 444, 11.4 at 216; 512^3 (f = 1/2) best at 216; 4096 x 64 x 4096 NN
   (f = 1/16) 17.7 ms at 1788, 15.0 at 216; 4096 x 4096 x 64 NT (rows of A contiguous,
   f = 1) wants all of it: 16.8 ms at 1788, 19.7 at 444. */
size_t qkv_gemm_mc_in_place(const qkv_gemm_blocking *b, size_t mr, size_t lda, size_t kc);

/* NC of the packed-A order for a call of depth kc: the width whose kc x NC block of B takes
   what the model's kc_pa x nc_l2 block does in L2 (a multiple of nr), so nc_l2 at kc_pa
   and wider for a shallower kc (k = 64 in S = Q K^T), never above b->nc nor below nc_l2.
   A region's B block (per task) stays within kc_pa x nc_l2 floats. */
size_t qkv_gemm_nc_in_l2(const qkv_gemm_blocking *b, size_t nr, size_t kc);

/* QKV_GEMM_BLOCKING="mc,kc,nc" (tuning only): 1 and *out when the text is three decimal
   numbers with MC a multiple of MR in [MR, QKV_GEMM_MC_MAX], KC in [QKV_GEMM_KC_MIN,
   QKV_GEMM_KC_MAX], NC a multiple of NR in [NR, QKV_GEMM_NC_MAX]; else 0 and *out unchanged.
   Its MC is used as given for every A (l2_way = 0: no in-place adjustment), its KC and NC
   for both loop orders (kc_pa = kc, nc_l2 = nc). The fields it does not set (pa_crowd,
   l1_way, l1_line: the L1 facts and the crowding rule of this core) keep the values *out
   holds on entry, the derived ones. */
int qkv_gemm_blocking_parse(const char *text, size_t mr, size_t nr, qkv_gemm_blocking *out);

#endif
