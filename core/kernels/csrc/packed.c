/* The packed layouts (quants.h): a matrix's rows regrouped 16 at a time at load, so that one vector register holds
 * the same four elements of every row of a group. Plain copies, the same on every instruction set; the kernels that
 * read them are dots_avx512.c's and dots_avx2.c's. */
#include "quants.h"

_Static_assert(Q4_0X16_BLOCK == PACK_ROWS * sizeof(block_q4_0), "a packed group is its rows' bytes, regrouped");
_Static_assert(Q4_1X16_BLOCK == PACK_ROWS * sizeof(block_q4_1), "a packed group is its rows' bytes, regrouped");
_Static_assert(Q8_0X16_BLOCK == PACK_ROWS * sizeof(block_q8_0), "a packed group is its rows' bytes, regrouped");
_Static_assert(Q5_0X16_BLOCK == PACK_ROWS * sizeof(block_q5_0), "a packed group is its rows' bytes, regrouped");
_Static_assert(Q5_1X16_BLOCK == PACK_ROWS * sizeof(block_q5_1), "a packed group is its rows' bytes, regrouped");
_Static_assert(Q4_KX16_BLOCK == PACK_ROWS * sizeof(block_q4_K), "a packed group is its rows' bytes, regrouped");
_Static_assert(Q5_KX16_BLOCK == PACK_ROWS * sizeof(block_q5_K), "a packed group is its rows' bytes, regrouped");
_Static_assert(K4X16_QUANTS(0) + 32 * 64 == Q4_KX16_BLOCK && K4X16_QUANTS(1) + 32 * 64 == Q5_KX16_BLOCK,
               "the quants' 32 registers end each K-quant group's block");
_Static_assert(Q6_KX16_BLOCK == PACK_ROWS * sizeof(block_q6_K), "a packed group is its rows' bytes, regrouped");
_Static_assert(Q3_KX16_BLOCK == PACK_ROWS * sizeof(block_q3_K), "a packed group is its rows' bytes, regrouped");

/* A packed group is one contiguous stream. On the Xeons measured (Sapphire Rapids, AMX) one core's loads alone
 * keep too few lines in flight to draw the memory's bandwidth (the read loop: 12.9 GB/s on one core, 29.5 on two),
 * and asking for the stream 4 KB ahead into L2 shortened the 1B shape's step 13-22% (benchmarks/prefetch.py). On
 * the AMD EPYCs measured the hardware prefetchers kept up alone and software prefetches cost more than they saved,
 * so there the kernels ask for nothing, but for one: the AVX2 Q5_K kernel, which works longest on each byte of the
 * AVX2 kernels (its fifth bits merged into each nibble). On the EPYC AVX-512 running the AVX2 kernels, the 1B
 * Q5_K_M's step, interleaved step by step with none: 8 KB ahead 0.86-0.93x; the other types' files 0.92-1.04x, within
 * the runs' noise (prefetch.py --kernels avx2). */
enum { INTEL_PREFETCH_BYTES = 4096, AVX2_Q5_K_PREFETCH_BYTES = 8192 };
int ll_prefetch_ahead = 0, ll_prefetch_avx2_q5_K = 0;

LL_API void ll_choose_prefetch(void) {
    ll_prefetch_ahead = 0;
    ll_prefetch_avx2_q5_K = AVX2_Q5_K_PREFETCH_BYTES;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();  /* needed before __builtin_cpu_is in a constructor */
    if (__builtin_cpu_is("intel")) ll_prefetch_ahead = ll_prefetch_avx2_q5_K = INTEL_PREFETCH_BYTES;
#endif
}

__attribute__((constructor)) static void choose_prefetch(void) {
    ll_choose_prefetch();
}

LL_API void ll_set_prefetch(int bytes) {
    ll_prefetch_ahead = ll_prefetch_avx2_q5_K = bytes > 0 ? bytes : 0;
}

LL_API int ll_prefetch(void) {
    return ll_prefetch_ahead;
}

/* The legacy types' blocks are `head` float16 fields (the scale; Q4_1's minimum), then `words` 4-byte words of
 * quants: the group's block holds each field of the 16 rows side by side, then the words. */
static void pack_legacy(const void *rows, int count, int n, void *out, size_t block_bytes, int head, int words) {
    const int blocks = n / QK;
    const size_t group_block = PACK_ROWS * block_bytes;
    for (int g = 0; g < count / PACK_ROWS; g++)
        for (int b = 0; b < blocks; b++) {
            uint8_t *o = (uint8_t *)out + ((size_t)g * blocks + b) * group_block;
            for (int r = 0; r < PACK_ROWS; r++) {
                const uint8_t *x = (const uint8_t *)rows + ((size_t)(g * PACK_ROWS + r) * blocks + b) * block_bytes;
                for (int h = 0; h < head; h++) memcpy(o + 32 * h + 2 * r, x + 2 * h, 2);
                for (int k = 0; k < words; k++) memcpy(o + 32 * head + 64 * k + 4 * r, x + 2 * head + 4 * k, 4);
            }
        }
}

void ll_pack_q4_0x16(const void *rows, int count, int n, void *out) {
    pack_legacy(rows, count, n, out, sizeof(block_q4_0), 1, 4);
}

void ll_pack_q4_1x16(const void *rows, int count, int n, void *out) {
    pack_legacy(rows, count, n, out, sizeof(block_q4_1), 2, 4);
}

void ll_pack_q8_0x16(const void *rows, int count, int n, void *out) {
    pack_legacy(rows, count, n, out, sizeof(block_q8_0), 1, 8);
}

/* Q5_0 and Q5_1: the fifth bits (qh) are the first word, the nibbles the four after it. */
void ll_pack_q5_0x16(const void *rows, int count, int n, void *out) {
    pack_legacy(rows, count, n, out, sizeof(block_q5_0), 1, 5);
}

void ll_pack_q5_1x16(const void *rows, int count, int n, void *out) {
    pack_legacy(rows, count, n, out, sizeof(block_q5_1), 2, 5);
}

/* Q4_K and Q5_K: the same fields, Q5_K's fifth bits (qh) between the scales and the quants. */
static void pack_k4(const void *rows, int count, int n, void *out, const int five) {
    const int blocks = n / QK_K;
    const size_t block_bytes = five ? sizeof(block_q5_K) : sizeof(block_q4_K), group_block = PACK_ROWS * block_bytes;
    const size_t qs_at = five ? 48 : 16, packed_qs_at = K4X16_QUANTS(five);
    for (int g = 0; g < count / PACK_ROWS; g++)
        for (int b = 0; b < blocks; b++) {
            uint8_t *o = (uint8_t *)out + ((size_t)g * blocks + b) * group_block;
            for (int r = 0; r < PACK_ROWS; r++) {
                const uint8_t *x = (const uint8_t *)rows + ((size_t)(g * PACK_ROWS + r) * blocks + b) * block_bytes;
                memcpy(o + 2 * r, x, 2);            /* d */
                memcpy(o + 32 + 2 * r, x + 2, 2);   /* dmin */
                for (int w = 0; w < 3; w++) memcpy(o + 64 + 64 * w + 4 * r, x + 4 + 4 * w, 4);
                if (five)
                    for (int w = 0; w < 8; w++) memcpy(o + K4X16_FIFTH_BITS + 64 * w + 4 * r, x + 16 + 4 * w, 4);
                for (int w = 0; w < 32; w++) memcpy(o + packed_qs_at + 64 * w + 4 * r, x + qs_at + 4 * w, 4);
            }
        }
}

void ll_pack_q4_Kx16(const void *rows, int count, int n, void *out) { pack_k4(rows, count, n, out, 0); }

void ll_pack_q5_Kx16(const void *rows, int count, int n, void *out) { pack_k4(rows, count, n, out, 1); }

void ll_pack_q6_Kx16(const void *rows, int count, int n, void *out) {
    const int blocks = n / QK_K;
    for (int g = 0; g < count / PACK_ROWS; g++)
        for (int b = 0; b < blocks; b++) {
            uint8_t *o = (uint8_t *)out + ((size_t)g * blocks + b) * Q6_KX16_BLOCK;
            for (int r = 0; r < PACK_ROWS; r++) {
                const block_q6_K *x = (const block_q6_K *)rows + (size_t)(g * PACK_ROWS + r) * blocks + b;
                memcpy(o + 2 * r, &x->d, 2);
                for (int w = 0; w < 4; w++) memcpy(o + 32 + 64 * w + 4 * r, x->scales + 4 * w, 4);
                for (int h = 0; h < 2; h++)
                    for (int w = 0; w < 8; w++) {
                        uint8_t *q = o + 288 + 192 * (8 * h + w) + 4 * r;
                        memcpy(q, x->ql + 64 * h + 4 * w, 4);
                        memcpy(q + 64, x->ql + 64 * h + 32 + 4 * w, 4);
                        memcpy(q + 128, x->qh + 32 * h + 4 * w, 4);
                    }
            }
        }
}

/* Q3_K (quants.h): d, the scales' words, then the third bits' and low bits' words in the kernels' order, each
 * field's rows side by side. */
void ll_pack_q3_Kx16(const void *rows, int count, int n, void *out) {
    const int blocks = n / QK_K;
    for (int g = 0; g < count / PACK_ROWS; g++)
        for (int b = 0; b < blocks; b++) {
            uint8_t *o = (uint8_t *)out + ((size_t)g * blocks + b) * Q3_KX16_BLOCK;
            for (int r = 0; r < PACK_ROWS; r++) {
                const block_q3_K *x = (const block_q3_K *)rows + (size_t)(g * PACK_ROWS + r) * blocks + b;
                memcpy(o + 2 * r, &x->d, 2);
                for (int w = 0; w < 3; w++) memcpy(o + Q3X16_SCALES + 64 * w + 4 * r, x->scales + 4 * w, 4);
                for (int w = 0; w < 8; w++) {
                    memcpy(o + Q3X16_THIRD(w) + 4 * r, x->hmask + 4 * w, 4);
                    for (int c = 0; c < 2; c++) memcpy(o + Q3X16_LOW(c, w) + 4 * r, x->qs + 32 * c + 4 * w, 4);
                }
            }
        }
}
