/* quant/blocks.h: the on-disk block layouts of ggml's quantized types.
 *
 * One struct per type, each pinned to its byte size right after it, so that a
 * padding surprise fails the build instead of corrupting files. Plain C with no
 * libc beyond <stdint.h>, so that nvcc compiles it too (quant/cuda/ shares these
 * structs with the device code; LC_BLOCK_ASSERT is C11's _Static_assert in C and
 * C++'s static_assert under nvcc, so the sizes are pinned on both sides). The f16 fields hold
 * IEEE binary16 bits in host order; GGUF is little-endian, so these structs are
 * the file bytes only on little-endian hosts (quant/quant_impl.h refuses others).
 *
 * Every type reconstructs x[i] from small integers q and one or two scales:
 *   Q8_0  x = d*q,            q in [-128, 127]
 *   Q4_0  x = d*(q - 8),      q in [0, 15]
 *   Q4_1  x = d*q + m,        q in [0, 15]
 *   Q5_0  x = d*(q - 16),     q in [0, 31], 5th bit in qh
 *   Q5_1  x = d*q + m,        q in [0, 31], 5th bit in qh
 *   Q2_K  256 = 16 sub-blocks of 16, x = d*sc[s]*q - dmin*mn[s], 4-bit sc and mn, q in [0, 3]
 *   Q3_K  256 = 16 sub-blocks of 16, x = d*(sc[s] - 32)*(q - 4), 6-bit sc, q in [0, 7]
 *   Q4_K  256 = 8 sub-blocks of 32, x = d*sc[s]*q - dmin*mn[s], 6-bit sc and mn
 *   Q5_K  256 = 8 sub-blocks of 32, as Q4_K with q in [0, 31], 5th bit in qh
 *   Q6_K  256 = 16 sub-blocks of 16, x = d*sc[s]*(q - 32), int8 sc, q in [0, 63]
 * and the types quant/ only dequantizes (quant/types.h LC_DEQUANT_TYPES):
 *   Q8_1, Q8_K     ggml's activation types: x = d*q (Q8_K's d is a binary32)
 *   IQ*            grid codebooks (quant/iq_tables.h) with sign masks and 4-bit scales
 *   IQ4_NL, IQ4_XS x = d*kvalues_iq4nl[q], a fixed non-linear 4-bit codebook
 *   TQ1_0, TQ2_0   ternary: x = d*(q - 1), q in {0, 1, 2}, base-3 or 2-bit packed
 *   MXFP4, NVFP4   E2M1 codes with an E8M0 (MXFP4) or unsigned E4M3 (NVFP4) scale
 *   Q1_0, Q2_0     x = +-d (one bit), x = d*(q - 1), q in [0, 3]
 * Byte layouts are drawn in quant/ref.c, ref_k.c, ref_iq.c and ref_dq.c. */
#ifndef LC_QUANT_BLOCKS_H
#define LC_QUANT_BLOCKS_H

#include <stdint.h>

#ifdef __cplusplus
#define LC_BLOCK_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define LC_BLOCK_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#define LC_QK8_0 32
#define LC_QK4_0 32
#define LC_QK4_1 32
#define LC_QK5_0 32
#define LC_QK5_1 32
#define LC_QK_K  256
#define LC_K_SCALE_SIZE 12   /* Q4_K: eight 6-bit scales and eight 6-bit mins */
#define LC_QK8_1 32
#define LC_QK4_NL 32
#define LC_QK_MXFP4 32
#define LC_QK_NVFP4 64
#define LC_QK_NVFP4_SUB 16   /* NVFP4: one scale per 16 elements */
#define LC_QK1_0 128
#define LC_QK2_0 64

typedef struct {
    uint16_t d;                 /* scale, binary16 bits */
    int8_t   qs[LC_QK8_0];
} lc_block_q8_0;
LC_BLOCK_ASSERT(sizeof(lc_block_q8_0) == 2 + LC_QK8_0, "q8_0 block is 34 bytes");

typedef struct {
    uint16_t d;
    uint8_t  qs[LC_QK4_0 / 2];  /* element j in the low nibble, j+16 in the high */
} lc_block_q4_0;
LC_BLOCK_ASSERT(sizeof(lc_block_q4_0) == 2 + LC_QK4_0 / 2, "q4_0 block is 18 bytes");

typedef struct {
    uint16_t d;
    uint16_t m;                 /* block minimum, binary16 bits */
    uint8_t  qs[LC_QK4_1 / 2];
} lc_block_q4_1;
LC_BLOCK_ASSERT(sizeof(lc_block_q4_1) == 4 + LC_QK4_1 / 2, "q4_1 block is 20 bytes");

typedef struct {
    uint16_t d;
    uint8_t  qh[4];             /* bit j = 5th bit of element j, little-endian u32 */
    uint8_t  qs[LC_QK5_0 / 2];
} lc_block_q5_0;
LC_BLOCK_ASSERT(sizeof(lc_block_q5_0) == 2 + 4 + LC_QK5_0 / 2, "q5_0 block is 22 bytes");

typedef struct {
    uint16_t d;
    uint16_t m;
    uint8_t  qh[4];
    uint8_t  qs[LC_QK5_1 / 2];
} lc_block_q5_1;
LC_BLOCK_ASSERT(sizeof(lc_block_q5_1) == 4 + 4 + LC_QK5_1 / 2, "q5_1 block is 24 bytes");

/* ---- K super-blocks ---- */

typedef struct {
    uint8_t  scales[LC_QK_K / 16];       /* low nibble sc, high nibble mn, per sub-block */
    uint8_t  qs[LC_QK_K / 4];            /* 2-bit levels */
    uint16_t d;                          /* scale of the 4-bit sub-block scales */
    uint16_t dmin;                       /* scale of the 4-bit sub-block mins */
} lc_block_q2_K;
LC_BLOCK_ASSERT(sizeof(lc_block_q2_K) == LC_QK_K / 16 + LC_QK_K / 4 + 4, "q2_K block is 84 bytes");

typedef struct {
    uint8_t  hmask[LC_QK_K / 8];         /* bit 2 of each level */
    uint8_t  qs[LC_QK_K / 4];            /* bits 0-1 of each level */
    uint8_t  scales[12];                 /* sixteen 6-bit scales, biased by 32 */
    uint16_t d;
} lc_block_q3_K;
LC_BLOCK_ASSERT(sizeof(lc_block_q3_K) == LC_QK_K / 8 + LC_QK_K / 4 + 12 + 2,
               "q3_K block is 110 bytes");

typedef struct {
    uint16_t d;                          /* scale of the 6-bit sub-block scales */
    uint16_t dmin;                       /* scale of the 6-bit sub-block mins */
    uint8_t  scales[LC_K_SCALE_SIZE];
    uint8_t  qs[LC_QK_K / 2];
} lc_block_q4_K;
LC_BLOCK_ASSERT(sizeof(lc_block_q4_K) == 4 + LC_K_SCALE_SIZE + LC_QK_K / 2,
               "q4_K block is 144 bytes");

typedef struct {
    uint16_t d;
    uint16_t dmin;
    uint8_t  scales[LC_K_SCALE_SIZE];    /* packed as Q4_K's */
    uint8_t  qh[LC_QK_K / 8];            /* bit 4 of each level */
    uint8_t  qs[LC_QK_K / 2];            /* bits 0-3, nibbles as Q4_K's */
} lc_block_q5_K;
LC_BLOCK_ASSERT(sizeof(lc_block_q5_K) == 4 + LC_K_SCALE_SIZE + LC_QK_K / 8 + LC_QK_K / 2,
               "q5_K block is 176 bytes");

typedef struct {
    uint8_t  ql[LC_QK_K / 2];            /* low 4 bits */
    uint8_t  qh[LC_QK_K / 4];            /* high 2 bits */
    int8_t   scales[LC_QK_K / 16];       /* 8-bit sub-block scales */
    uint16_t d;
} lc_block_q6_K;
LC_BLOCK_ASSERT(sizeof(lc_block_q6_K) == LC_QK_K / 2 + LC_QK_K / 4 + LC_QK_K / 16 + 2,
               "q6_K block is 210 bytes");

/* ---- dequantize-only types ---- */

typedef struct {
    uint16_t d;
    uint16_t s;                          /* d * sum(qs), for ggml's dot products */
    int8_t   qs[LC_QK8_1];
} lc_block_q8_1;
LC_BLOCK_ASSERT(sizeof(lc_block_q8_1) == 4 + LC_QK8_1, "q8_1 block is 36 bytes");

typedef struct {
    uint8_t  d[4];                       /* binary32 scale bits, little-endian */
    int8_t   qs[LC_QK_K];
    uint8_t  bsums[LC_QK_K / 16 * 2];    /* int16 sums of 16 qs, unused by dequantize */
} lc_block_q8_K;
LC_BLOCK_ASSERT(sizeof(lc_block_q8_K) == 4 + LC_QK_K + LC_QK_K / 8, "q8_K block is 292 bytes");

typedef struct {
    uint16_t d;
    uint8_t  qs[LC_QK_K / 4];            /* per 32: 4 grid bytes, then u32 signs|scale */
} lc_block_iq2_xxs;
LC_BLOCK_ASSERT(sizeof(lc_block_iq2_xxs) == 2 + LC_QK_K / 4, "iq2_xxs block is 66 bytes");

typedef struct {
    uint16_t d;
    uint8_t  qs[LC_QK_K / 4];            /* u16 each: 9-bit grid index | 7-bit signs << 9 */
    uint8_t  scales[LC_QK_K / 32];
} lc_block_iq2_xs;
LC_BLOCK_ASSERT(sizeof(lc_block_iq2_xs) == 2 + LC_QK_K / 4 + LC_QK_K / 32,
               "iq2_xs block is 74 bytes");

typedef struct {
    uint16_t d;
    uint8_t  qs[LC_QK_K / 4];            /* 32 low grid bytes, then 32 sign bytes */
    uint8_t  qh[LC_QK_K / 32];
    uint8_t  scales[LC_QK_K / 32];
} lc_block_iq2_s;
LC_BLOCK_ASSERT(sizeof(lc_block_iq2_s) == 2 + LC_QK_K / 4 + LC_QK_K / 16,
               "iq2_s block is 82 bytes");

typedef struct {
    uint16_t d;
    uint8_t  qs[3 * LC_QK_K / 8];        /* 64 grid bytes, then 8 u32 signs|scale */
} lc_block_iq3_xxs;
LC_BLOCK_ASSERT(sizeof(lc_block_iq3_xxs) == 2 + 3 * LC_QK_K / 8, "iq3_xxs block is 98 bytes");

typedef struct {
    uint16_t d;
    uint8_t  qs[LC_QK_K / 4];
    uint8_t  qh[LC_QK_K / 32];
    uint8_t  signs[LC_QK_K / 8];
    uint8_t  scales[LC_QK_K / 64];
} lc_block_iq3_s;
LC_BLOCK_ASSERT(sizeof(lc_block_iq3_s) == 2 + 13 * LC_QK_K / 32 + LC_QK_K / 64,
               "iq3_s block is 110 bytes");

typedef struct {
    uint16_t d;
    uint8_t  qs[LC_QK_K / 8];
    uint8_t  qh[LC_QK_K / 16];           /* u16 each: 3 high index bits x4, scale, sign */
} lc_block_iq1_s;
LC_BLOCK_ASSERT(sizeof(lc_block_iq1_s) == 2 + LC_QK_K / 8 + LC_QK_K / 16,
               "iq1_s block is 50 bytes");

typedef struct {
    uint8_t  qs[LC_QK_K / 8];
    uint8_t  qh[LC_QK_K / 16];
    uint8_t  scales[LC_QK_K / 32];       /* 4 u16: 3-bit scales, and d in the top nibbles */
} lc_block_iq1_m;
LC_BLOCK_ASSERT(sizeof(lc_block_iq1_m) == LC_QK_K / 8 + LC_QK_K / 16 + LC_QK_K / 32,
               "iq1_m block is 56 bytes");

typedef struct {
    uint16_t d;
    uint8_t  qs[LC_QK4_NL / 2];
} lc_block_iq4_nl;
LC_BLOCK_ASSERT(sizeof(lc_block_iq4_nl) == 2 + LC_QK4_NL / 2, "iq4_nl block is 18 bytes");

typedef struct {
    uint16_t d;
    uint8_t  scales_h[2];                /* u16: bits 4-5 of the eight 6-bit scales */
    uint8_t  scales_l[LC_QK_K / 64];     /* bits 0-3, two per byte */
    uint8_t  qs[LC_QK_K / 2];
} lc_block_iq4_xs;
LC_BLOCK_ASSERT(sizeof(lc_block_iq4_xs) == 4 + LC_QK_K / 64 + LC_QK_K / 2,
               "iq4_xs block is 136 bytes");

typedef struct {
    uint8_t  qs[(LC_QK_K - 4 * LC_QK_K / 64) / 5];   /* 5 trits per byte */
    uint8_t  qh[LC_QK_K / 64];                       /* 4 trits per byte */
    uint16_t d;
} lc_block_tq1_0;
LC_BLOCK_ASSERT(sizeof(lc_block_tq1_0) == (LC_QK_K - 4 * LC_QK_K / 64) / 5 + LC_QK_K / 64 + 2,
               "tq1_0 block is 54 bytes");

typedef struct {
    uint8_t  qs[LC_QK_K / 4];            /* 2 bits per trit */
    uint16_t d;
} lc_block_tq2_0;
LC_BLOCK_ASSERT(sizeof(lc_block_tq2_0) == LC_QK_K / 4 + 2, "tq2_0 block is 66 bytes");

typedef struct {
    uint8_t  e;                          /* E8M0 scale */
    uint8_t  qs[LC_QK_MXFP4 / 2];        /* E2M1 codes, element j | element j+16 << 4 */
} lc_block_mxfp4;
LC_BLOCK_ASSERT(sizeof(lc_block_mxfp4) == 1 + LC_QK_MXFP4 / 2, "mxfp4 block is 17 bytes");

typedef struct {
    uint8_t  d[LC_QK_NVFP4 / LC_QK_NVFP4_SUB];   /* unsigned E4M3 scale per 16 */
    uint8_t  qs[LC_QK_NVFP4 / 2];
} lc_block_nvfp4;
LC_BLOCK_ASSERT(sizeof(lc_block_nvfp4) == LC_QK_NVFP4 / LC_QK_NVFP4_SUB + LC_QK_NVFP4 / 2,
               "nvfp4 block is 36 bytes");

typedef struct {
    uint16_t d;
    uint8_t  qs[LC_QK1_0 / 8];           /* bit j set: +d, clear: -d */
} lc_block_q1_0;
LC_BLOCK_ASSERT(sizeof(lc_block_q1_0) == 2 + LC_QK1_0 / 8, "q1_0 block is 18 bytes");

typedef struct {
    uint16_t d;
    uint8_t  qs[LC_QK2_0 / 4];           /* element j in bits 2*(j%4) of byte j/4 */
} lc_block_q2_0;
LC_BLOCK_ASSERT(sizeof(lc_block_q2_0) == 2 + LC_QK2_0 / 4, "q2_0 block is 18 bytes");

#endif
