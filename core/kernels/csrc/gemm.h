/* What the GEMM of a prompt's pass shares across instruction sets: the activation panel's layout, a weight block
 * unpacked into signed bytes, and the unpacking of each type (AVX2 instructions, which AVX-512 CPUs run too).
 *
 * The panel: per LL_GEMM_LANES tokens and block, the block's quants in groups of 4, each group the lanes' 4 bytes
 * side by side (moved to unsigned by +128), then the lanes' scales as floats, then Q8_1's d * sum(quants) as floats
 * or the k-quants' sub-block sums as int16 pairs. A weight block is unpacked once into signed bytes, and each group
 * of 4 of its bytes is broadcast against a panel register: one instruction adds 4 products to every token's sum.
 * The +128 comes off as 128 times the weights' own sum, per block, exactly; the floats then take quants.c's
 * canonical steps, lane by lane.
 */
#ifndef LL_GEMM_H
#define LL_GEMM_H

#include "quants.h"

#include <stdlib.h>

#if LL_GEMM_LANES

#define GEMM_INLINE static inline __attribute__((always_inline))

/* A weight block unpacked: its whole numbers as signed bytes and what the float steps need. */
typedef struct {
    int8_t q[QK_K] __attribute__((aligned(64)));
    int32_t scale[16];    /* each sub-block's integer scale (k-quants) */
    int32_t correction;   /* 128 * sum over sub-blocks of scale * (sum of its q): what the +128 adds */
    float d, m;           /* the scale; Q4_1/Q5_1's minimum or the k-quants' dmin */
    int32_t min_pairs[4]; /* Q4_K/Q5_K: the minimums of sub-blocks 2p and 2p + 1 as two int16 */
} unpacked;

/* The panel's bytes per block and group of lanes, by activation type. */
GEMM_INLINE int panel_block_bytes(int activation) {
    return activation == LL_Q8_K ? (QK_K + 4 + 16) * LL_GEMM_LANES
         : activation == LL_Q8_1 ? (QK + 8) * LL_GEMM_LANES : (QK + 4) * LL_GEMM_LANES;
}

/* One block's 32 nibbles as bytes: elements 0..15 (low nibbles), then 16..31. */
GEMM_INLINE __m256i gemm_nibbles_32(const uint8_t *qs) {
    const __m128i packed = _mm_loadu_si128((const __m128i *)qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0x0F));
}

/* A Q5 block's 32 fifth bits -> 32 bytes, 0x10 where the bit is set. */
GEMM_INLINE __m256i gemm_fifth_bits(const uint8_t *bits) {
    uint32_t word;
    memcpy(&word, bits, 4);
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)word),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
    const __m256i marked = _mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_and_si256(_mm256_cmpeq_epi8(marked, _mm256_set1_epi64x(-1)), _mm256_set1_epi8(0x10));
}

/* The sum of 32 unsigned bytes. */
GEMM_INLINE int gemm_byte_sum(__m256i v) {
    const __m256i s = _mm256_sad_epu8(v, _mm256_setzero_si256());
    const __m128i t = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    return (int)(_mm_cvtsi128_si64(t) + _mm_extract_epi64(t, 1));
}

/* The sum of eight 32-bit lanes. */
GEMM_INLINE int gemm_int_sum(__m256i v) {
    __m128i sum = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, 0x4E));
    return _mm_cvtsi128_si32(_mm_add_epi32(sum, _mm_shuffle_epi32(sum, 0xB1)));
}

/* Stores 32 signed bytes (the unsigned ones less `offset`) and returns the sum of the unsigned ones. */
GEMM_INLINE int gemm_store_32(int8_t *q, __m256i unsigned_bytes, int offset) {
    _mm256_storeu_si256((__m256i *)q, _mm256_sub_epi8(unsigned_bytes, _mm256_set1_epi8((char)offset)));
    return gemm_byte_sum(unsigned_bytes);
}

/* Each type's unpacking of block b of row r (w_stride bytes apart from the one before, in the file's layout). */
GEMM_INLINE void unpack_q4_0(const void *w, size_t w_stride, int r, int b, unpacked *u) {
    const void *row = (const char *)w + (size_t)r * w_stride;
    const block_q4_0 *x = (const block_q4_0 *)row + b;
    u->correction = 128 * (gemm_store_32(u->q, gemm_nibbles_32(x->qs), 8) - 8 * QK);
    u->d = half_to_float(x->d);
}

GEMM_INLINE void unpack_q4_1(const void *w, size_t w_stride, int r, int b, unpacked *u) {
    const void *row = (const char *)w + (size_t)r * w_stride;
    const block_q4_1 *x = (const block_q4_1 *)row + b;
    u->correction = 128 * gemm_store_32(u->q, gemm_nibbles_32(x->qs), 0);
    u->d = half_to_float(x->d);
    u->m = half_to_float(x->m);
}

GEMM_INLINE void unpack_q5_0(const void *w, size_t w_stride, int r, int b, unpacked *u) {
    const void *row = (const char *)w + (size_t)r * w_stride;
    const block_q5_0 *x = (const block_q5_0 *)row + b;
    const __m256i v = _mm256_or_si256(gemm_nibbles_32(x->qs), gemm_fifth_bits(x->qh));
    u->correction = 128 * (gemm_store_32(u->q, v, 16) - 16 * QK);
    u->d = half_to_float(x->d);
}

GEMM_INLINE void unpack_q5_1(const void *w, size_t w_stride, int r, int b, unpacked *u) {
    const void *row = (const char *)w + (size_t)r * w_stride;
    const block_q5_1 *x = (const block_q5_1 *)row + b;
    const __m256i v = _mm256_or_si256(gemm_nibbles_32(x->qs), gemm_fifth_bits(x->qh));
    u->correction = 128 * gemm_store_32(u->q, v, 0);
    u->d = half_to_float(x->d);
    u->m = half_to_float(x->m);
}

GEMM_INLINE void unpack_q8_0(const void *w, size_t w_stride, int r, int b, unpacked *u) {
    const void *row = (const char *)w + (size_t)r * w_stride;
    const block_q8_0 *x = (const block_q8_0 *)row + b;
    const __m256i v = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)x->qs), _mm256_set1_epi8((char)0x80));
    u->correction = 128 * (gemm_store_32(u->q, v, 0x80) - 128 * QK);
    u->d = half_to_float(x->d);
}

GEMM_INLINE void unpack_k4(const void *row, int b, unpacked *u, const int five) {
    const uint8_t *block = (const uint8_t *)row + (size_t)b * (five ? sizeof(block_q5_K) : sizeof(block_q4_K));
    const __m256i low4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    const __m256i high_bits = five ? _mm256_loadu_si256((const __m256i *)(block + 16)) : _mm256_setzero_si256();
    uint64_t scale_word, min_word;
    k_scale_bytes(block + 4, &scale_word, &min_word);
    uint8_t scales[8], mins[8];
    memcpy(scales, &scale_word, 8);
    memcpy(mins, &min_word, 8);
    /* Each sub-block's quants weighted by its scale, in 16 bits: at most 4 x 2 x 2 x 31 x 63 = 31,248. */
    __m256i weighted = _mm256_setzero_si256();
    for (int k = 0; k < 4; k++) {
        const __m256i bits = _mm256_loadu_si256((const __m256i *)(block + (five ? 48 : 16) + 32 * k));
        __m256i low = _mm256_and_si256(bits, low4), high = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low4);
        if (five) {
            low = _mm256_or_si256(low, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(high_bits, 2 * k), one), 4));
            high = _mm256_or_si256(
                high, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(high_bits, 2 * k + 1), one), 4));
        }
        _mm256_storeu_si256((__m256i *)(u->q + 64 * k), low);
        _mm256_storeu_si256((__m256i *)(u->q + 64 * k + 32), high);
        weighted = _mm256_add_epi16(weighted, _mm256_maddubs_epi16(low, _mm256_set1_epi8((char)scales[2 * k])));
        weighted = _mm256_add_epi16(weighted, _mm256_maddubs_epi16(high, _mm256_set1_epi8((char)scales[2 * k + 1])));
        u->scale[2 * k] = scales[2 * k];
        u->scale[2 * k + 1] = scales[2 * k + 1];
        u->min_pairs[k] = (int32_t)((uint32_t)mins[2 * k] | (uint32_t)mins[2 * k + 1] << 16);
    }
    u->correction = 128 * gemm_int_sum(_mm256_madd_epi16(weighted, _mm256_set1_epi16(1)));
    ll_half dh, mh;
    memcpy(&dh, block, 2);
    memcpy(&mh, block + 2, 2);
    u->d = half_to_float(dh);
    u->m = half_to_float(mh);
}

GEMM_INLINE void unpack_q4_K(const void *w, size_t w_stride, int r, int b, unpacked *u) {
    unpack_k4((const char *)w + (size_t)r * w_stride, b, u, 0);
}
GEMM_INLINE void unpack_q5_K(const void *w, size_t w_stride, int r, int b, unpacked *u) {
    unpack_k4((const char *)w + (size_t)r * w_stride, b, u, 1);
}

/* Q6_K in element order: quarter q of half h is ql's low (q < 2) or high nibbles of bytes 32 (q & 1) + l, with
 * bits 2q..2q+1 of qh[l] on top; minus 32. Sub-blocks of 16 with int8 scales. */
GEMM_INLINE void unpack_q6_K(const void *w, size_t w_stride, int r, int b, unpacked *u) {
    const void *row = (const char *)w + (size_t)r * w_stride;
    const block_q6_K *x = (const block_q6_K *)row + b;
    const __m256i low4 = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(3);
    /* Each sub-block's whole values weighted by its signed scale: 16-bit pairs of at most 2 x 63 x 128, widened. */
    __m256i weighted = _mm256_setzero_si256();
    int scale_sum = 0;
    for (int half = 0; half < 2; half++) {
        const __m256i h = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * half));
        for (int quarter = 0; quarter < 4; quarter++) {
            const __m256i l = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * half + 32 * (quarter & 1)));
            const __m256i nibble = quarter < 2 ? _mm256_and_si256(l, low4)
                                               : _mm256_and_si256(_mm256_srli_epi16(l, 4), low4);
            const __m256i v = _mm256_or_si256(
                nibble, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2 * quarter), two), 4));
            _mm256_storeu_si256((__m256i *)(u->q + 128 * half + 32 * quarter), _mm256_sub_epi8(v, _mm256_set1_epi8(32)));
            const int group = 8 * half + 2 * quarter;
            const __m256i scale =
                _mm256_set_m128i(_mm_set1_epi8(x->scales[group + 1]), _mm_set1_epi8(x->scales[group]));
            const __m256i pairs = _mm256_maddubs_epi16(v, scale);
            weighted = _mm256_add_epi32(weighted, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
            scale_sum += x->scales[group] + x->scales[group + 1];
        }
    }
    const int correction = gemm_int_sum(weighted) - 32 * 16 * scale_sum;
    for (int g = 0; g < 16; g++) u->scale[g] = x->scales[g];
    u->correction = 128 * correction;
    u->d = half_to_float(x->d);
}

/* The packed layouts (quants.h): row r's block b gathered back into a file block, then unpacked as the file's. */
GEMM_INLINE const uint8_t *packed_block(const void *w, size_t w_stride, int r, int b, size_t group_block) {
    return (const uint8_t *)w + (size_t)(r / PACK_ROWS) * PACK_ROWS * w_stride + (size_t)b * group_block;
}

GEMM_INLINE void gather_legacy(const uint8_t *o, int lane, uint8_t *block, int head, int words) {
    for (int h = 0; h < head; h++) memcpy(block + 2 * h, o + 32 * h + 2 * lane, 2);
    for (int k = 0; k < words; k++) memcpy(block + 2 * head + 4 * k, o + 32 * head + 64 * k + 4 * lane, 4);
}

/* A legacy type's packed row (gather_legacy's layout: HEAD float16 fields, then WORDS words), gathered back into a
 * file block and unpacked as the file's. */
#define UNPACK_PACKED_LEGACY(NAME, GROUP_BLOCK, HEAD, WORDS)                                                      \
    GEMM_INLINE void unpack_##NAME##x16(const void *w, size_t w_stride, int r, int b, unpacked *u) {              \
        block_##NAME x;                                                                                           \
        gather_legacy(packed_block(w, w_stride, r, b, GROUP_BLOCK), r % PACK_ROWS, (uint8_t *)&x, HEAD, WORDS);   \
        unpack_##NAME(&x, 0, 0, 0, u);                                                                            \
    }
UNPACK_PACKED_LEGACY(q4_0, Q4_0X16_BLOCK, 1, 4)
UNPACK_PACKED_LEGACY(q4_1, Q4_1X16_BLOCK, 2, 4)
UNPACK_PACKED_LEGACY(q5_0, Q5_0X16_BLOCK, 1, 5)
UNPACK_PACKED_LEGACY(q5_1, Q5_1X16_BLOCK, 2, 5)
UNPACK_PACKED_LEGACY(q8_0, Q8_0X16_BLOCK, 1, 8)

/* Q4_K's and Q5_K's packed block (packed.c's pack_k4), gathered back into the file's block. */
GEMM_INLINE void unpack_k4x16(const void *w, size_t w_stride, int r, int b, unpacked *u, const int five) {
    const uint8_t *o = packed_block(w, w_stride, r, b, five ? Q5_KX16_BLOCK : Q4_KX16_BLOCK);
    const int lane = r % PACK_ROWS;
    uint8_t x[sizeof(block_q5_K)];  /* the file's block: d, dmin, scales, (Q5_K: qh,) qs */
    memcpy(x, o + 2 * lane, 2);
    memcpy(x + 2, o + 32 + 2 * lane, 2);
    for (int k = 0; k < 3; k++) memcpy(x + 4 + 4 * k, o + 64 + 64 * k + 4 * lane, 4);
    if (five)
        for (int k = 0; k < 8; k++) memcpy(x + 16 + 4 * k, o + K4X16_FIFTH_BITS + 64 * k + 4 * lane, 4);
    for (int k = 0; k < 32; k++) memcpy(x + (five ? 48 : 16) + 4 * k, o + K4X16_QUANTS(five) + 64 * k + 4 * lane, 4);
    unpack_k4(x, 0, u, five);
}

/* Eight words (`spacing` bytes apart) of four neighbouring lanes, as each lane's 32 bytes stored whole at rows,
 * rows + stride, ...: a 4x4 transpose of 32-bit words in registers. Gathered word by word, the block's later 32-byte
 * load could not be forwarded from eight 4-byte stores and waited for them to reach the cache. */
GEMM_INLINE void gather_words4(const uint8_t *o, size_t spacing, uint8_t *rows, size_t stride) {
#define GATHER_WORD(k) _mm_loadu_si128((const __m128i *)(o + spacing * (k)))
    const __m256i a = _mm256_set_m128i(GATHER_WORD(4), GATHER_WORD(0));
    const __m256i b = _mm256_set_m128i(GATHER_WORD(5), GATHER_WORD(1));
    const __m256i c = _mm256_set_m128i(GATHER_WORD(6), GATHER_WORD(2));
    const __m256i d = _mm256_set_m128i(GATHER_WORD(7), GATHER_WORD(3));
#undef GATHER_WORD
    const __m256i ab_low = _mm256_unpacklo_epi32(a, b), ab_high = _mm256_unpackhi_epi32(a, b);
    const __m256i cd_low = _mm256_unpacklo_epi32(c, d), cd_high = _mm256_unpackhi_epi32(c, d);
    _mm256_storeu_si256((__m256i *)rows, _mm256_unpacklo_epi64(ab_low, cd_low));
    _mm256_storeu_si256((__m256i *)(rows + stride), _mm256_unpackhi_epi64(ab_low, cd_low));
    _mm256_storeu_si256((__m256i *)(rows + 2 * stride), _mm256_unpacklo_epi64(ab_high, cd_high));
    _mm256_storeu_si256((__m256i *)(rows + 3 * stride), _mm256_unpackhi_epi64(ab_high, cd_high));
}

GEMM_INLINE void unpack_q4_Kx16(const void *w, size_t w_stride, int r, int b, unpacked *u) {
    unpack_k4x16(w, w_stride, r, b, u, 0);
}

GEMM_INLINE void unpack_q5_Kx16(const void *w, size_t w_stride, int r, int b, unpacked *u) {
    unpack_k4x16(w, w_stride, r, b, u, 1);
}

/* Rows r0..r0 + 3 of one packed group at once, where the GEMM takes four (r0 a multiple of 4; fewer go row by
 * row): their quants and fifth bits gathered by gather_words4, the rest word by word as unpack_k4x16 does. */
GEMM_INLINE void unpack4_k4x16(const void *w, size_t w_stride, int r0, int b, unpacked *u, const int five) {
    const uint8_t *o = packed_block(w, w_stride, r0, b, five ? Q5_KX16_BLOCK : Q4_KX16_BLOCK);
    const int first = r0 % PACK_ROWS, quants = five ? 48 : 16;
    uint8_t x[4][sizeof(block_q5_K)] __attribute__((aligned(32)));
    for (int r = 0; r < 4; r++) {
        const int lane = first + r;
        memcpy(x[r], o + 2 * lane, 2);
        memcpy(x[r] + 2, o + 32 + 2 * lane, 2);
        for (int k = 0; k < 3; k++) memcpy(x[r] + 4 + 4 * k, o + 64 + 64 * k + 4 * lane, 4);
    }
    if (five) gather_words4(o + K4X16_FIFTH_BITS + 4 * first, 64, x[0] + 16, sizeof x[0]);
    for (int k = 0; k < 4; k++)
        gather_words4(o + K4X16_QUANTS(five) + 8 * 64 * k + 4 * first, 64, x[0] + quants + 32 * k, sizeof x[0]);
    for (int r = 0; r < 4; r++) unpack_k4(x[r], 0, &u[r], five);
}

GEMM_INLINE void unpack4_q4_Kx16(const void *w, size_t w_stride, int r0, int b, unpacked *u) {
    unpack4_k4x16(w, w_stride, r0, b, u, 0);
}

GEMM_INLINE void unpack4_q5_Kx16(const void *w, size_t w_stride, int r0, int b, unpacked *u) {
    unpack4_k4x16(w, w_stride, r0, b, u, 1);
}

GEMM_INLINE void unpack_q6_Kx16(const void *w, size_t w_stride, int r, int b, unpacked *u) {
    const uint8_t *o = packed_block(w, w_stride, r, b, Q6_KX16_BLOCK);
    const int lane = r % PACK_ROWS;
    block_q6_K x;
    memcpy(&x.d, o + 2 * lane, 2);
    for (int k = 0; k < 4; k++) memcpy(x.scales + 4 * k, o + 32 + 64 * k + 4 * lane, 4);
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 8; k++) {
            const uint8_t *q = o + 288 + 192 * (8 * h + k) + 4 * lane;
            memcpy(x.ql + 64 * h + 4 * k, q, 4);
            memcpy(x.ql + 64 * h + 32 + 4 * k, q + 64, 4);
            memcpy(x.qh + 32 * h + 4 * k, q + 128, 4);
        }
    unpack_q6_K(&x, 0, 0, 0, u);
}

/* Q3_K in element order: chunk j of half c (32 elements) is bits 2j..2j+1 of qs[32c + l], with bit 4c + j of
 * hmask[l] as 4 on top (value + 4, 0..7); sub-blocks of 16 with the scales less 32. */
GEMM_INLINE void unpack_q3_K(const block_q3_K *x, unpacked *u) {
    const __m256i two = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1), four = _mm256_set1_epi8(4);
    const __m256i third = _mm256_loadu_si256((const __m256i *)x->hmask);
    int scales[16], scale_sum = 0;
    for (int g = 0; g < 16; g++) scale_sum += scales[g] = q3_scale(x->scales, g) - 32;
    /* Each sub-block's values (+4) weighted by its signed scale: 16-bit pairs of at most 2 x 7 x 32, widened. */
    __m256i weighted = _mm256_setzero_si256();
    for (int c = 0; c < 2; c++) {
        const __m256i low = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * c));
        for (int j = 0; j < 4; j++) {
            const __m256i v = _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi16(low, 2 * j), two),
                _mm256_and_si256(_mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(third, 4 * c + j), one), 2),
                                 four));
            _mm256_storeu_si256((__m256i *)(u->q + 128 * c + 32 * j), _mm256_sub_epi8(v, four));
            const int group = 8 * c + 2 * j;
            const __m256i scale =
                _mm256_set_m128i(_mm_set1_epi8((char)scales[group + 1]), _mm_set1_epi8((char)scales[group]));
            weighted = _mm256_add_epi32(weighted, _mm256_madd_epi16(_mm256_maddubs_epi16(v, scale),
                                                                    _mm256_set1_epi16(1)));
        }
    }
    for (int g = 0; g < 16; g++) u->scale[g] = scales[g];
    u->correction = 128 * (gemm_int_sum(weighted) - 4 * 16 * scale_sum);
    u->d = half_to_float(x->d);
}

GEMM_INLINE void unpack_q3_Kx16(const void *w, size_t w_stride, int r, int b, unpacked *u) {
    const uint8_t *o = packed_block(w, w_stride, r, b, Q3_KX16_BLOCK);
    const int lane = r % PACK_ROWS;
    block_q3_K x;
    memcpy(&x.d, o + 2 * lane, 2);
    for (int k = 0; k < 3; k++) memcpy(x.scales + 4 * k, o + Q3X16_SCALES + 64 * k + 4 * lane, 4);
    for (int k = 0; k < 8; k++) {
        memcpy(x.hmask + 4 * k, o + Q3X16_THIRD(k) + 4 * lane, 4);
        for (int c = 0; c < 2; c++) memcpy(x.qs + 32 * c + 4 * k, o + Q3X16_LOW(c, k) + 4 * lane, 4);
    }
    unpack_q3_K(&x, u);
}

/* Four words (`spacing` bytes apart) of four neighbouring lanes as each lane's 16 bytes: gather_words4's half. */
GEMM_INLINE void gather_words4_half(const uint8_t *o, size_t spacing, uint8_t *rows, size_t stride) {
    const __m128i a = _mm_loadu_si128((const __m128i *)o), b = _mm_loadu_si128((const __m128i *)(o + spacing));
    const __m128i c = _mm_loadu_si128((const __m128i *)(o + 2 * spacing));
    const __m128i d = _mm_loadu_si128((const __m128i *)(o + 3 * spacing));
    const __m128i ab_low = _mm_unpacklo_epi32(a, b), ab_high = _mm_unpackhi_epi32(a, b);
    const __m128i cd_low = _mm_unpacklo_epi32(c, d), cd_high = _mm_unpackhi_epi32(c, d);
    _mm_storeu_si128((__m128i *)rows, _mm_unpacklo_epi64(ab_low, cd_low));
    _mm_storeu_si128((__m128i *)(rows + stride), _mm_unpackhi_epi64(ab_low, cd_low));
    _mm_storeu_si128((__m128i *)(rows + 2 * stride), _mm_unpacklo_epi64(ab_high, cd_high));
    _mm_storeu_si128((__m128i *)(rows + 3 * stride), _mm_unpackhi_epi64(ab_high, cd_high));
}

/* Four rows of a packed legacy type at once (gather_legacy's layout: HEAD float16 fields, then WORDS words): the
 * words by gather_words4 (8) or its half (4), the fields one by one. */
#define UNPACK_ROWS_LEGACY(NAME, GROUP_BLOCK, HEAD, WORDS)                                                        \
    GEMM_INLINE void unpack4_##NAME##x16(const void *w, size_t w_stride, int r0, int b, unpacked *u) {            \
        const uint8_t *o = packed_block(w, w_stride, r0, b, GROUP_BLOCK);                                         \
        const int first = r0 % PACK_ROWS;                                                                         \
        block_##NAME x[4];                                                                                        \
        for (int r = 0; r < 4; r++)                                                                               \
            for (int h = 0; h < HEAD; h++) memcpy((uint8_t *)&x[r] + 2 * h, o + 32 * h + 2 * (first + r), 2);     \
        const uint8_t *q = o + 32 * HEAD + 4 * first;                                                             \
        if (WORDS == 8) gather_words4(q, 64, (uint8_t *)&x[0] + 2 * HEAD, sizeof x[0]);                           \
        else gather_words4_half(q, 64, (uint8_t *)&x[0] + 2 * HEAD, sizeof x[0]);                                 \
        for (int r = 0; r < 4; r++) unpack_##NAME(&x[r], 0, 0, 0, &u[r]);                                         \
    }
UNPACK_ROWS_LEGACY(q4_0, Q4_0X16_BLOCK, 1, 4)
UNPACK_ROWS_LEGACY(q4_1, Q4_1X16_BLOCK, 2, 4)
UNPACK_ROWS_LEGACY(q8_0, Q8_0X16_BLOCK, 1, 8)

/* Four Q6_K rows of one group at once, as unpack4_k4x16: each half's low-nibble, upper-nibble and high-bit words
 * (192 bytes apart) by gather_words4, the scales and d word by word. */
GEMM_INLINE void unpack4_q6_Kx16(const void *w, size_t w_stride, int r0, int b, unpacked *u) {
    const uint8_t *o = packed_block(w, w_stride, r0, b, Q6_KX16_BLOCK);
    const int first = r0 % PACK_ROWS;
    block_q6_K x[4] __attribute__((aligned(32)));
    for (int r = 0; r < 4; r++) {
        const int lane = first + r;
        memcpy(&x[r].d, o + 2 * lane, 2);
        for (int k = 0; k < 4; k++) memcpy(x[r].scales + 4 * k, o + 32 + 64 * k + 4 * lane, 4);
    }
    for (int h = 0; h < 2; h++) {
        const uint8_t *q = o + 288 + 192 * 8 * h + 4 * first;
        gather_words4(q, 192, x[0].ql + 64 * h, sizeof x[0]);
        gather_words4(q + 64, 192, x[0].ql + 64 * h + 32, sizeof x[0]);
        gather_words4(q + 128, 192, x[0].qh + 32 * h, sizeof x[0]);
    }
    for (int r = 0; r < 4; r++) unpack_q6_K(&x[r], 0, 0, 0, &u[r]);
}

/* The file's layouts: four rows unpacked one at a time. */
#define UNPACK4_BY_ROW(NAME)                                                                                      \
    GEMM_INLINE void unpack4_##NAME(const void *w, size_t w_stride, int r0, int b, unpacked *u) {                 \
        for (int r = 0; r < 4; r++) unpack_##NAME(w, w_stride, r0 + r, b, &u[r]);                               \
    }
UNPACK4_BY_ROW(q4_0)
UNPACK4_BY_ROW(q4_1)
UNPACK4_BY_ROW(q5_0)
UNPACK4_BY_ROW(q5_1)
UNPACK4_BY_ROW(q8_0)
UNPACK4_BY_ROW(q5_0x16)  /* five words a row: gathered one row at a time */
UNPACK4_BY_ROW(q5_1x16)
UNPACK4_BY_ROW(q4_K)
UNPACK4_BY_ROW(q5_K)
UNPACK4_BY_ROW(q6_K)
UNPACK4_BY_ROW(q3_Kx16)

/* Packed Q4_K's tiles (both instruction sets): sub-blocks 2p and 2p + 1's activation sums (two of the 16-element sums each) as two int16 in one word, p < 4,
 * in the order the minimums' registers pair them: (0, 2), (1, 3), (4, 6), (5, 7). */
GEMM_INLINE void k_activation_pairs(const block_q8_K *y, int32_t words[4]) {
    int16_t sums[8];
    for (int j = 0; j < 8; j++) sums[j] = (int16_t)(y->bsums[2 * j] + y->bsums[2 * j + 1]);
    static const int first[4] = {0, 1, 4, 5};
    for (int p = 0; p < 4; p++)
        words[p] = (int32_t)((uint32_t)(uint16_t)sums[first[p]] | (uint32_t)(uint16_t)sums[first[p] + 2] << 16);
}

/* A packed type's tile entry (quants.h's packed_tiles_fn): each token count unrolled on its own. */
#define PACKED_TILES_ENTRY(NAME, TILE, ...)                                                                      \
    void ll_packed_tiles_##NAME(int n, const void *group, const void *a, size_t a_stride, int C, float *out) {   \
        switch (C) {                                                                                            \
        case 1: TILE(n, group, a, a_stride, 1, out __VA_ARGS__); break;                                         \
        case 2: TILE(n, group, a, a_stride, 2, out __VA_ARGS__); break;                                         \
        case 3: TILE(n, group, a, a_stride, 3, out __VA_ARGS__); break;                                         \
        default: TILE(n, group, a, a_stride, 4, out __VA_ARGS__); break;                                        \
        }                                                                                                       \
    }

/* Eight rows' results for eight tokens (rows results[0], results[stride], ...) as each token's eight outputs side by
 * side: the standard 8x8 transpose of floats in registers. */
GEMM_INLINE void gemm_transpose8(const float *results, size_t stride, __m256 t[8]) {
    __m256 a[8], b[8];
    for (int i = 0; i < 8; i++) a[i] = _mm256_loadu_ps(results + (size_t)i * stride);
    for (int i = 0; i < 8; i += 2) {
        b[i] = _mm256_unpacklo_ps(a[i], a[i + 1]);
        b[i + 1] = _mm256_unpackhi_ps(a[i], a[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        a[i] = _mm256_shuffle_ps(b[i], b[i + 2], 0x44);
        a[i + 1] = _mm256_shuffle_ps(b[i], b[i + 2], 0xEE);
        a[i + 2] = _mm256_shuffle_ps(b[i + 1], b[i + 3], 0x44);
        a[i + 3] = _mm256_shuffle_ps(b[i + 1], b[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm256_permute2f128_ps(a[i], a[i + 4], 0x20);
        t[i + 4] = _mm256_permute2f128_ps(a[i], a[i + 4], 0x31);
    }
}

/* A panel of rows' results (row r's tokens at results + r * stride) into out, token by token (out's rows
 * out_stride apart): eight rows by eight tokens transposed in registers, the rows past the last eight and the
 * tokens past the last eight one by one. The same floats, added to out or not, in any order. A token's line of out
 * is written whole at once and asked for (for writing) 16 tokens ahead: a fresh output misses every cache, and its
 * fetch then overlaps the transposes (8,192 rows x 256 tokens, one thread: 27.2-27.8 ms against 28.3-31.6). */
GEMM_INLINE void gemm_write_out(const float *results, size_t stride, int rows, int tokens, float *out,
                                size_t out_stride, int accumulate) {
    const int whole_rows = rows & ~7, whole_tokens = tokens & ~7;
    for (int token = 0; token < whole_tokens; token += 8)
        for (int r = 0; r < whole_rows; r += 8) {
            if (r == 0)
                for (int i = 0; i < 8 && token + 16 + i < tokens; i++)
                    __builtin_prefetch(out + (size_t)(token + 16 + i) * out_stride, 1, 3);
            __m256 t[8];
            gemm_transpose8(results + (size_t)r * stride + token, stride, t);
            for (int i = 0; i < 8; i++) {
                float *target = out + (size_t)(token + i) * out_stride + r;
                _mm256_storeu_ps(target, accumulate ? _mm256_add_ps(_mm256_loadu_ps(target), t[i]) : t[i]);
            }
        }
    for (int token = 0; token < tokens; token++) {
        float *target = out + (size_t)token * out_stride;
        for (int r = token < whole_tokens ? whole_rows : 0; r < rows; r++) {
            const float value = results[(size_t)r * stride + token];
            target[r] = accumulate ? target[r] + value : value;
        }
    }
}

/* Rows whose results are written out together, a line of each token's output row at a time. */
#define GEMM_ROWS 16

/* Each type's GEMM: BLOCK elements a block in sub-blocks of SUB with integer scales when SCALED; MINIMUM 1: Q8_1's
 * m * s, 2: the k-quants' dmin * d * sum(minimum * sub-block sum). The entry walks rows by 4; for each block it
 * unpacks the rows' blocks once and runs the instruction set's NAME##_gemm_block over every token, two groups of
 * lanes a call, the tokens' float sums kept in a buffer that stays in the first-level cache (4 rows x 2 sums x the
 * pass's tokens: 16 KB for 512). */
/* Each shape of the instruction set's block kernel compiled on its own, its loops unrolled for that shape alone (one
 * function holding all four kept fewer of its sums in registers: half the speed). */
#define GEMM_SHAPE(NAME, R, TV)                                                                                   \
    static __attribute__((noinline)) void NAME##_gemm_##R##x##TV(                                                 \
        const unpacked *u, const char *panel, size_t group_stride, float (*sums)[2][LL_GEMM_LANES],               \
        float (*minimums)[2][LL_GEMM_LANES]) {                                                                    \
        NAME##_gemm_block(u, R, panel, group_stride, TV, sums, minimums);                                         \
    }

#define GEMM_ENTRY(NAME, BLOCK, MINIMUM, ACTIVATION)                                                              \
    GEMM_SHAPE(NAME, 4, 2) GEMM_SHAPE(NAME, 4, 1) GEMM_SHAPE(NAME, 1, 2) GEMM_SHAPE(NAME, 1, 1)                   \
    void ll_gemm_##NAME(int n, const void *w, size_t w_stride, int rows, const void *panel, int tokens,            \
                        float *out, size_t out_stride, int accumulate) {                                          \
        const int bytes = panel_block_bytes(ACTIVATION);                                                          \
        const size_t group_stride = (size_t)(n / BLOCK) * bytes;                                                  \
        const int groups = (tokens + LL_GEMM_LANES - 1) / LL_GEMM_LANES, pairs = (groups + 1) / 2;                \
        /* sums[pair][r][t][lane], then the minimums', then the results of GEMM_ROWS rows by token */             \
        const size_t floats = (size_t)pairs * 4 * 2 * LL_GEMM_LANES, padded = (size_t)groups * LL_GEMM_LANES;     \
        float *buffer = aligned_alloc(64, (2 * floats + GEMM_ROWS * padded) * sizeof(float));                     \
        if (!buffer) return; /* the caller's scratch came first: this is 48 KB for 512 tokens */                  \
        float(*sums)[4][2][LL_GEMM_LANES] = (float(*)[4][2][LL_GEMM_LANES])buffer;                                \
        float(*minimums)[4][2][LL_GEMM_LANES] = (float(*)[4][2][LL_GEMM_LANES])(buffer + floats);                 \
        float *results = buffer + 2 * floats;                                                                     \
        unpacked u[4];                                                                                            \
        for (int first = 0; first < rows; first += GEMM_ROWS) {                                                   \
            const int panel_rows = rows - first < GEMM_ROWS ? rows - first : GEMM_ROWS;                           \
            for (int r0 = first; r0 < first + panel_rows;) {                                                      \
                const int R = first + panel_rows - r0 >= 4 ? 4 : 1;                                              \
                memset(buffer, 0, 2 * floats * sizeof(float));                                                    \
                for (int b = 0; b < n / BLOCK; b++) {                                                             \
                    if (R == 4) unpack4_##NAME(w, w_stride, r0, b, u);                                            \
                    else                                                                                          \
                        for (int r = 0; r < R; r++) unpack_##NAME(w, w_stride, r0 + r, b, &u[r]);                \
                    const char *block = (const char *)panel + (size_t)b * bytes;                                  \
                    for (int pair = 0; pair < pairs; pair++) {                                                    \
                        const char *p = block + (size_t)(2 * pair) * group_stride;                                \
                        const int TV = groups - 2 * pair >= 2 ? 2 : 1;                                            \
                        if (R == 4 && TV == 2) NAME##_gemm_4x2(u, p, group_stride, sums[pair], minimums[pair]);   \
                        else if (R == 4) NAME##_gemm_4x1(u, p, group_stride, sums[pair], minimums[pair]);         \
                        else if (TV == 2) NAME##_gemm_1x2(u, p, group_stride, sums[pair], minimums[pair]);        \
                        else NAME##_gemm_1x1(u, p, group_stride, sums[pair], minimums[pair]);                     \
                    }                                                                                             \
                }                                                                                                 \
                for (int r = 0; r < R; r++)                                                                       \
                    for (int group = 0; group < groups; group++) {                                                \
                        const float *sum = sums[group / 2][r][group % 2];                                         \
                        const float *minimum = minimums[group / 2][r][group % 2];                                 \
                        float *result = results + (size_t)(r0 - first + r) * padded + (size_t)group * LL_GEMM_LANES; \
                        for (int lane = 0; lane < LL_GEMM_LANES; lane++)                                          \
                            result[lane] = MINIMUM == 2   ? sum[lane] - minimum[lane]                            \
                                           : MINIMUM == 1 ? sum[lane] + minimum[lane]                            \
                                                          : sum[lane];                                           \
                    }                                                                                             \
                r0 += R;                                                                                          \
            }                                                                                                     \
            gemm_write_out(results, padded, panel_rows, tokens, out + first, out_stride, accumulate);            \
        }                                                                                                         \
        free(buffer);                                                                                             \
    }

/* Every quant type's GEMM, from an instruction set's GEMM_KERNEL(NAME, BLOCK, SUB, SCALED, MINIMUM, ACTIVATION). */
#define GEMM_TYPES(KERNEL)                                                                                        \
    KERNEL(q4_0, QK, QK, 0, 0, LL_Q8_0)                                                                           \
    KERNEL(q4_1, QK, QK, 0, 1, LL_Q8_1)                                                                           \
    KERNEL(q5_0, QK, QK, 0, 0, LL_Q8_0)                                                                           \
    KERNEL(q5_1, QK, QK, 0, 1, LL_Q8_1)                                                                           \
    KERNEL(q8_0, QK, QK, 0, 0, LL_Q8_0)                                                                           \
    KERNEL(q4_K, QK_K, 32, 1, 2, LL_Q8_K)                                                                         \
    KERNEL(q5_K, QK_K, 32, 1, 2, LL_Q8_K)                                                                         \
    KERNEL(q6_K, QK_K, 16, 1, 0, LL_Q8_K)                                                                         \
    GEMM_ENTRY(q4_0, QK, 0, LL_Q8_0)                                                                              \
    GEMM_ENTRY(q4_1, QK, 1, LL_Q8_1)                                                                              \
    GEMM_ENTRY(q5_0, QK, 0, LL_Q8_0)                                                                              \
    GEMM_ENTRY(q5_1, QK, 1, LL_Q8_1)                                                                              \
    GEMM_ENTRY(q8_0, QK, 0, LL_Q8_0)                                                                              \
    GEMM_ENTRY(q4_K, QK_K, 2, LL_Q8_K)                                                                            \
    GEMM_ENTRY(q5_K, QK_K, 2, LL_Q8_K)                                                                            \
    GEMM_ENTRY(q6_K, QK_K, 0, LL_Q8_K)

#endif
#endif
