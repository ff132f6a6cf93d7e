/* quant/blocks.h: the on-disk block layouts of ggml's quantized types.
 *
 * One struct per type, each pinned to its byte size right after it, so that a
 * padding surprise fails the build instead of corrupting files. Plain C with no
 * libc beyond <stdint.h>, so that nvcc can compile it too. The f16 fields hold
 * IEEE binary16 bits in host order; GGUF is little-endian, so these structs are
 * the file bytes only on little-endian hosts (quant/quant_impl.h refuses others).
 *
 * Every type reconstructs x[i] from small integers q and one or two scales:
 *   Q8_0  x = d*q,            q in [-128, 127]
 *   Q4_0  x = d*(q - 8),      q in [0, 15]
 *   Q4_1  x = d*q + m,        q in [0, 15]
 *   Q5_0  x = d*(q - 16),     q in [0, 31], 5th bit in qh
 *   Q5_1  x = d*q + m,        q in [0, 31], 5th bit in qh
 *   Q4_K  256 = 8 sub-blocks of 32, x = d*sc[s]*q - dmin*mn[s], 6-bit sc and mn
 *   Q6_K  256 = 16 sub-blocks of 16, x = d*sc[s]*(q - 32), int8 sc, q in [0, 63]
 * Byte layouts are drawn in quant/ref.c and quant/ref_k.c. */
#ifndef LC_QUANT_BLOCKS_H
#define LC_QUANT_BLOCKS_H

#include <stdint.h>

#define LC_QK8_0 32
#define LC_QK4_0 32
#define LC_QK4_1 32
#define LC_QK5_0 32
#define LC_QK5_1 32
#define LC_QK_K  256
#define LC_K_SCALE_SIZE 12   /* Q4_K: eight 6-bit scales and eight 6-bit mins */

typedef struct {
    uint16_t d;                 /* scale, binary16 bits */
    int8_t   qs[LC_QK8_0];
} lc_block_q8_0;
_Static_assert(sizeof(lc_block_q8_0) == 2 + LC_QK8_0, "q8_0 block is 34 bytes");

typedef struct {
    uint16_t d;
    uint8_t  qs[LC_QK4_0 / 2];  /* element j in the low nibble, j+16 in the high */
} lc_block_q4_0;
_Static_assert(sizeof(lc_block_q4_0) == 2 + LC_QK4_0 / 2, "q4_0 block is 18 bytes");

typedef struct {
    uint16_t d;
    uint16_t m;                 /* block minimum, binary16 bits */
    uint8_t  qs[LC_QK4_1 / 2];
} lc_block_q4_1;
_Static_assert(sizeof(lc_block_q4_1) == 4 + LC_QK4_1 / 2, "q4_1 block is 20 bytes");

typedef struct {
    uint16_t d;
    uint8_t  qh[4];             /* bit j = 5th bit of element j, little-endian u32 */
    uint8_t  qs[LC_QK5_0 / 2];
} lc_block_q5_0;
_Static_assert(sizeof(lc_block_q5_0) == 2 + 4 + LC_QK5_0 / 2, "q5_0 block is 22 bytes");

typedef struct {
    uint16_t d;
    uint16_t m;
    uint8_t  qh[4];
    uint8_t  qs[LC_QK5_1 / 2];
} lc_block_q5_1;
_Static_assert(sizeof(lc_block_q5_1) == 4 + 4 + LC_QK5_1 / 2, "q5_1 block is 24 bytes");

typedef struct {
    uint16_t d;                          /* scale of the 6-bit sub-block scales */
    uint16_t dmin;                       /* scale of the 6-bit sub-block mins */
    uint8_t  scales[LC_K_SCALE_SIZE];
    uint8_t  qs[LC_QK_K / 2];
} lc_block_q4_K;
_Static_assert(sizeof(lc_block_q4_K) == 4 + LC_K_SCALE_SIZE + LC_QK_K / 2,
               "q4_K block is 144 bytes");

typedef struct {
    uint8_t  ql[LC_QK_K / 2];            /* low 4 bits */
    uint8_t  qh[LC_QK_K / 4];            /* high 2 bits */
    int8_t   scales[LC_QK_K / 16];       /* 8-bit sub-block scales */
    uint16_t d;
} lc_block_q6_K;
_Static_assert(sizeof(lc_block_q6_K) == LC_QK_K / 2 + LC_QK_K / 4 + LC_QK_K / 16 + 2,
               "q6_K block is 210 bytes");

#endif
