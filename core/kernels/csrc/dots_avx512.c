/* AVX-512 (BW, VL, DQ and VNNI) kernels of the quant types: tiles of up to 4 weight rows by 4 tokens (a decode step,
 * a short pass), and the GEMM of a prompt's pass, whose vector lanes are 16 tokens.
 *
 * Both compute the canonical dot of quants.c to the last bit: each block's products summed exactly as integers,
 * then the same scalar float steps block after block. The tiles sum a row's elements in vector lanes and reduce
 * each block's lanes to one integer; the GEMM puts 16 tokens in the lanes of one register, so a block's sum for
 * each token is whole in its lane, and the float steps run for 16 tokens at once with the same roundings.
 * Built where -march=native has these extensions (Ice Lake and later Xeons, Zen 4): the type table then points
 * to these kernels, and dots_avx2.c leaves its own quant kernels out.
 */
#include "gemm.h"

#if LL_AVX512_DOTS

#define INLINE static inline __attribute__((always_inline))
enum { LANES = LL_GEMM_LANES };
#define W_ROW(i) ((const char *)w + (size_t)(i) * w_stride)
#define A_ROW(j) ((const char *)a + (size_t)(j) * a_stride)

/* ---- reductions of integer lanes: exact, so any order gives the canonical block sums ---- */

/* The sums of the low and high 8 lanes of v. */
INLINE void halves_sum(__m512i v, int *low, int *high) {
    v = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_BADC));
    v = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_CDAB));
    v = _mm512_add_epi32(v, _mm512_shuffle_i32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    *low = _mm_cvtsi128_si32(_mm512_castsi512_si128(v));
    *high = _mm_cvtsi128_si32(_mm512_extracti32x4_epi32(v, 2));
}

INLINE int sum_8(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

INLINE int sum_16(__m512i v) {
    return sum_8(_mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1)));
}

/* ---- unpacking a weight block into signed bytes ---- */

/* Two 16-byte nibble arrays -> 64 bytes: block 0's low nibbles (its elements 0..15), then its high ones
 * (16..31), then block 1's, as two consecutive activation blocks lay out their 64 quants. */
INLINE __m512i nibbles_64(const uint8_t *qs0, const uint8_t *qs1) {
    const __m512i both = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs0))),
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs1)), 1);
    /* the second and fourth 16 bytes shifted down by a nibble (16-bit lanes 8..15 and 24..31) */
    return _mm512_and_si512(_mm512_mask_srli_epi16(both, 0xFF00FF00u, both, 4), _mm512_set1_epi8(0x0F));
}

/* One block's 32 nibbles as bytes: elements 0..15 (low nibbles), then 16..31. */
INLINE __m256i nibbles_32(const uint8_t *qs) {
    const __m128i packed = _mm_loadu_si128((const __m128i *)qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0x0F));
}

/* 32 quants of each of two activation blocks, side by side. */
INLINE __m512i pair_512(const int8_t *q0, const int8_t *q1) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)q0)),
                              _mm256_loadu_si256((const __m256i *)q1), 1);
}

/* The fifth bits of a Q5 block, one bit per quant, in the order nibbles_32 gives. */
INLINE __mmask32 fifth_bits(const uint8_t *qh) {
    uint32_t bits;
    memcpy(&bits, qh, 4);
    return (__mmask32)bits;
}


/* ---- tiles: R weight rows by C tokens, for decode steps and short passes ---- */

/* A decode step reads each weight once, from memory: each row's blocks this many ahead are asked for early. */
#ifndef PREFETCH_BLOCKS
#define PREFETCH_BLOCKS 32
#endif
#ifndef PREFETCH_SUPER_BLOCKS
#define PREFETCH_SUPER_BLOCKS 4
#endif

/* Legacy 32-element types, two blocks at a time: q holds the weights as unsigned bytes (offset by OFFSET for the
 * signed types), and sum_j (q - OFFSET) a_j = dpbusd(q, a) - dpbusd(OFFSET, a); a lone last block runs at half
 * width. MINIMUM types add m * s (Q8_1's d * sum(a)). Two rows' lane sums reduce together where the tile has
 * them. */
#define LEGACY_TILE(NAME, WBLOCK, ABLOCK, UNPACK2, UNPACK1, OFFSET, MINIMUM)                                   \
    INLINE void NAME##_tile(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, const int R, \
                            const int C, float *out) {                                                        \
        float sums[4][DOT_ROWS], minimums[4][DOT_ROWS];                                                       \
        for (int i = 0; i < R; i++)                                                                           \
            for (int j = 0; j < C; j++) sums[i][j] = minimums[i][j] = 0.0f;                                   \
        const int blocks = n / QK;                                                                            \
        int b = 0;                                                                                            \
        for (; b + 2 <= blocks; b += 2) {                                                                     \
            __m512i q[4];                                                                                     \
            float dw[4][2], mw[4][2];                                                                         \
            for (int i = 0; i < R; i++) {                                                                     \
                const WBLOCK *x = (const WBLOCK *)W_ROW(i) + b;                                               \
                _mm_prefetch((const char *)(x + PREFETCH_BLOCKS), _MM_HINT_T0);                               \
                q[i] = UNPACK2;                                                                               \
                dw[i][0] = half_to_float(x[0].d);                                                             \
                dw[i][1] = half_to_float(x[1].d);                                                             \
                mw[i][0] = MINIMUM ? MINIMUM_OF(&x[0]) : 0.0f;                                                \
                mw[i][1] = MINIMUM ? MINIMUM_OF(&x[1]) : 0.0f;                                                \
            }                                                                                                 \
            for (int j = 0; j < C; j++) {                                                                     \
                const ABLOCK *y = (const ABLOCK *)A_ROW(j) + b;                                               \
                const __m512i v = pair_512(y[0].qs, y[1].qs);                                                 \
                const float dy0 = half_to_float(y[0].d), dy1 = half_to_float(y[1].d);                         \
                const __m512i offset = OFFSET ? _mm512_dpbusd_epi32(_mm512_setzero_si512(),                   \
                                                                    _mm512_set1_epi8((char)OFFSET), v)        \
                                              : _mm512_setzero_si512();                                       \
                for (int i = 0; i < R; i++) {                                                                 \
                    int s0, s1;                                                                               \
                    halves_sum(_mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), q[i], v), offset),\
                               &s0, &s1);                                                                     \
                    sums[i][j] = fmaf(dw[i][0] * dy0, (float)s0, sums[i][j]);                                 \
                    if (MINIMUM) minimums[i][j] = fmaf(mw[i][0], SUM_OF(&y[0]), minimums[i][j]);              \
                    sums[i][j] = fmaf(dw[i][1] * dy1, (float)s1, sums[i][j]);                                 \
                    if (MINIMUM) minimums[i][j] = fmaf(mw[i][1], SUM_OF(&y[1]), minimums[i][j]);              \
                }                                                                                             \
            }                                                                                                 \
        }                                                                                                     \
        for (; b < blocks; b++) {                                                                             \
            __m256i q[4];                                                                                     \
            float dw[4], mw[4];                                                                               \
            for (int i = 0; i < R; i++) {                                                                     \
                const WBLOCK *x = (const WBLOCK *)W_ROW(i) + b;                                               \
                q[i] = UNPACK1;                                                                               \
                dw[i] = half_to_float(x->d);                                                                  \
                mw[i] = MINIMUM ? MINIMUM_OF(x) : 0.0f;                                                       \
            }                                                                                                 \
            for (int j = 0; j < C; j++) {                                                                     \
                const ABLOCK *y = (const ABLOCK *)A_ROW(j) + b;                                               \
                const __m256i v = _mm256_loadu_si256((const __m256i *)y->qs);                                  \
                const float dy = half_to_float(y->d);                                                         \
                const __m256i offset = OFFSET ? _mm256_dpbusd_epi32(_mm256_setzero_si256(),                   \
                                                                    _mm256_set1_epi8((char)OFFSET), v)        \
                                              : _mm256_setzero_si256();                                       \
                for (int i = 0; i < R; i++) {                                                                 \
                    const int s = sum_8(_mm256_sub_epi32(                                                     \
                        _mm256_dpbusd_epi32(_mm256_setzero_si256(), q[i], v), offset));                       \
                    sums[i][j] = fmaf(dw[i] * dy, (float)s, sums[i][j]);                                      \
                    if (MINIMUM) minimums[i][j] = fmaf(mw[i], SUM_OF(y), minimums[i][j]);                     \
                }                                                                                             \
            }                                                                                                 \
        }                                                                                                     \
        for (int i = 0; i < R; i++)                                                                           \
            for (int j = 0; j < C; j++) out[i * C + j] = sums[i][j] + minimums[i][j];                         \
    }

/* A decode step's four rows at once (one token): each block pair's 4 x 16 lane sums reduce together to 8 integers
 * (15 instructions, not 4 x 8), and the float steps run with the four rows in the lanes of one register, each lane
 * the canonical sequence of its row, block after block. */
#define LEGACY_ROWS4(NAME, WBLOCK, ABLOCK, UNPACK2, UNPACK1, OFFSET, MINIMUM)                                          \
    INLINE void NAME##_rows4(int n, const void *w, size_t w_stride, const void *a, float *out) {               \
        __m128 sums = _mm_setzero_ps(), minimums = _mm_setzero_ps();                                          \
        const ABLOCK *y = (const ABLOCK *)a;                                                                  \
        const int blocks = n / QK;                                                                            \
        /* z's lanes (see below) holding rows 0..3 of the pair's first block, then of its second */          \
        const __m512i order = _mm512_setr_epi32(0, 8, 1, 9, 4, 12, 5, 13, 0, 0, 0, 0, 0, 0, 0, 0);           \
        int b = 0;                                                                                            \
        for (; b + 2 <= blocks; b += 2) {                                                                     \
            const __m512i v = pair_512(y[b].qs, y[b + 1].qs);                                                 \
            const __m512i offset = OFFSET ? _mm512_dpbusd_epi32(_mm512_setzero_si512(),                       \
                                                                _mm512_set1_epi8((char)OFFSET), v)            \
                                          : _mm512_setzero_si512();                                           \
            __m512i t[4];                                                                                     \
            ll_half halves[8];                                                                                \
            float mw[8];                                                                                      \
            for (int i = 0; i < 4; i++) {                                                                     \
                const WBLOCK *x = (const WBLOCK *)W_ROW(i) + b;                                               \
                _mm_prefetch((const char *)(x + PREFETCH_BLOCKS), _MM_HINT_T0);                               \
                const __m512i p = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), UNPACK2, v), offset); \
                /* 128-bit lane 0: the first block's 4 partial sums, lane 2: the second's */                  \
                t[i] = _mm512_add_epi32(p, _mm512_shuffle_i32x4(p, p, _MM_SHUFFLE(2, 3, 0, 1)));              \
                halves[i] = x[0].d;                                                                           \
                halves[4 + i] = x[1].d;                                                                       \
                mw[i] = MINIMUM ? MINIMUM_OF(&x[0]) : 0.0f;                                                   \
                mw[4 + i] = MINIMUM ? MINIMUM_OF(&x[1]) : 0.0f;                                               \
            }                                                                                                 \
            /* [row 0 first, row 0 second, row 1 first, row 1 second], each 4 partials; rows 2 and 3 alike */ \
            const __m512i u01 = _mm512_shuffle_i32x4(t[0], t[1], _MM_SHUFFLE(2, 0, 2, 0));                    \
            const __m512i u23 = _mm512_shuffle_i32x4(t[2], t[3], _MM_SHUFFLE(2, 0, 2, 0));                    \
            const __m512i x2 = _mm512_add_epi32(_mm512_unpacklo_epi32(u01, u23), _mm512_unpackhi_epi32(u01, u23)); \
            /* each 128-bit lane k: [u01's k-th total, u23's k-th total, again, again] */                     \
            const __m512i z = _mm512_add_epi32(x2, _mm512_shuffle_epi32(x2, _MM_PERM_BADC));                  \
            const __m256 f = _mm256_cvtepi32_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi32(order, z)));  \
            __m128i packed;                                                                                   \
            memcpy(&packed, halves, sizeof packed);                                                           \
            const __m256 dw = _mm256_cvtph_ps(packed);                                                        \
            const __m256 dy = _mm256_set_m128(_mm_set1_ps(half_to_float(y[b + 1].d)),                         \
                                              _mm_set1_ps(half_to_float(y[b].d)));                            \
            const __m256 scale = _mm256_mul_ps(dw, dy);                                                       \
            sums = _mm_fmadd_ps(_mm256_castps256_ps128(scale), _mm256_castps256_ps128(f), sums);              \
            if (MINIMUM) minimums = _mm_fmadd_ps(_mm_loadu_ps(mw), _mm_set1_ps(SUM_OF(&y[b])), minimums);     \
            sums = _mm_fmadd_ps(_mm256_extractf128_ps(scale, 1), _mm256_extractf128_ps(f, 1), sums);          \
            if (MINIMUM) minimums = _mm_fmadd_ps(_mm_loadu_ps(mw + 4), _mm_set1_ps(SUM_OF(&y[b + 1])), minimums); \
        }                                                                                                     \
        float row_sums[4], row_minimums[4];                                                                   \
        _mm_storeu_ps(row_sums, sums);                                                                        \
        _mm_storeu_ps(row_minimums, minimums);                                                                \
        for (; b < blocks; b++) /* a lone last block: each row's sequence goes on from its lane */            \
            for (int i = 0; i < 4; i++) {                                                                     \
                const WBLOCK *x = (const WBLOCK *)W_ROW(i) + b;                                               \
                const __m256i v = _mm256_loadu_si256((const __m256i *)y[b].qs);                                \
                const __m256i offset = OFFSET ? _mm256_dpbusd_epi32(_mm256_setzero_si256(),                   \
                                                                    _mm256_set1_epi8((char)OFFSET), v)        \
                                              : _mm256_setzero_si256();                                       \
                const int s = sum_8(_mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), UNPACK1, v), offset)); \
                row_sums[i] = fmaf(half_to_float(x->d) * half_to_float(y[b].d), (float)s, row_sums[i]);       \
                if (MINIMUM) row_minimums[i] = fmaf(MINIMUM_OF(x), SUM_OF(&y[b]), row_minimums[i]);           \
            }                                                                                                 \
        for (int i = 0; i < 4; i++) out[i] = MINIMUM ? row_sums[i] + row_minimums[i] : row_sums[i];           \
    }

#define MINIMUM_OF(x) 0.0f
#define SUM_OF(y) 0.0f
LEGACY_TILE(q4_0, block_q4_0, block_q8_0, nibbles_64(x[0].qs, x[1].qs), nibbles_32(x->qs), 8, 0)
LEGACY_ROWS4(q4_0, block_q4_0, block_q8_0, nibbles_64(x[0].qs, x[1].qs), nibbles_32(x->qs), 8, 0)
/* Q8_0: signed bytes moved to unsigned by +128 (an exclusive or of the sign bit). */
LEGACY_TILE(q8_0, block_q8_0, block_q8_0,
            _mm512_xor_si512(pair_512(x[0].qs, x[1].qs), _mm512_set1_epi8((char)0x80)),
            _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)x->qs), _mm256_set1_epi8((char)0x80)), 0x80, 0)
LEGACY_ROWS4(q8_0, block_q8_0, block_q8_0,
             _mm512_xor_si512(pair_512(x[0].qs, x[1].qs), _mm512_set1_epi8((char)0x80)),
             _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)x->qs), _mm256_set1_epi8((char)0x80)), 0x80, 0)
/* Q5_0: the nibble plus 16 for a set fifth bit, offset 16. */
#define Q5_PAIR _mm512_or_si512(nibbles_64(x[0].qs, x[1].qs), _mm512_maskz_set1_epi8((__mmask64)fifth_bits(x[0].qh) | \
                                                  ((__mmask64)fifth_bits(x[1].qh) << 32), 0x10))
#define Q5_ONE _mm256_or_si256(nibbles_32(x->qs), _mm256_maskz_set1_epi8(fifth_bits(x->qh), 0x10))
LEGACY_TILE(q5_0, block_q5_0, block_q8_0, Q5_PAIR, Q5_ONE, 16, 0)
LEGACY_ROWS4(q5_0, block_q5_0, block_q8_0, Q5_PAIR, Q5_ONE, 16, 0)
#undef MINIMUM_OF
#undef SUM_OF
#define MINIMUM_OF(x) half_to_float((x)->m)
#define SUM_OF(y) half_to_float((y)->s)
LEGACY_TILE(q4_1, block_q4_1, block_q8_1, nibbles_64(x[0].qs, x[1].qs), nibbles_32(x->qs), 0, 1)
LEGACY_ROWS4(q4_1, block_q4_1, block_q8_1, nibbles_64(x[0].qs, x[1].qs), nibbles_32(x->qs), 0, 1)
LEGACY_TILE(q5_1, block_q5_1, block_q8_1, Q5_PAIR, Q5_ONE, 0, 1)
LEGACY_ROWS4(q5_1, block_q5_1, block_q8_1, Q5_PAIR, Q5_ONE, 0, 1)
#undef Q5_PAIR
#undef Q5_ONE
#undef MINIMUM_OF
#undef SUM_OF

/* Two 32-byte halves side by side. */
INLINE __m512i halves(__m256i low, __m256i high) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
}

/* Bit `shift` of each byte, as 0 or 1. */
INLINE __m256i bit_of(__m256i bytes, int shift) {
    return _mm256_and_si256(_mm256_srli_epi16(bytes, shift), _mm256_set1_epi8(1));
}

/* A Q4_K or Q5_K super-block's eight 6-bit scales and eight 6-bit minimums, as 16-bit lanes. */
INLINE void k_scales_mins(const uint8_t *packed, __m128i *scales16, __m128i *mins16) {
    uint64_t scales, mins;
    k_scale_bytes(packed, &scales, &mins);
    *scales16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)scales));
    *mins16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)mins));
}

/* The sum of mins16's lanes times each sub-block's activation sum (two of the 16-element sums). */
INLINE int k_minimum_sum(__m128i mins16, const block_q8_K *y) {
    const __m256i bsums = _mm256_loadu_si256((const __m256i *)y->bsums);
    const __m256i paired = _mm256_madd_epi16(bsums, _mm256_set1_epi16(1));
    const __m128i pairs = _mm_packs_epi32(_mm256_castsi256_si128(paired), _mm256_extracti128_si256(paired, 1));
    const __m128i weighted = _mm_madd_epi16(mins16, pairs);
    const __m128i folded = _mm_add_epi32(weighted, _mm_shuffle_epi32(weighted, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm_cvtsi128_si32(_mm_add_epi32(folded, _mm_shuffle_epi32(folded, 1)));
}

/* Q4_K and Q5_K: each 64 elements of a super-block are two sub-blocks (low nibbles, then high) with their own
 * 6-bit scales; maddubs pairs them with the activations and vpdpwssd weighs each sub-block by its scale. */
INLINE void k4_tile(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, const int R, const int C,
                    float *out, const int five) {
    float sums[4][DOT_ROWS], minimums[4][DOT_ROWS];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) sums[i][j] = minimums[i][j] = 0.0f;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const size_t block_bytes = five ? sizeof(block_q5_K) : sizeof(block_q4_K);
    for (int b = 0; b < n / QK_K; b++) {
        const uint8_t *block[4];
        __m128i scales16[4], mins16[4];
        __m256i high_bits[4];
        for (int i = 0; i < R; i++) {
            block[i] = (const uint8_t *)W_ROW(i) + b * block_bytes;
            for (size_t line = 0; line < block_bytes; line += 64)
                _mm_prefetch((const char *)block[i] + PREFETCH_SUPER_BLOCKS * block_bytes + line, _MM_HINT_T0);
            k_scales_mins(block[i] + 4, &scales16[i], &mins16[i]);
            high_bits[i] = five ? _mm256_loadu_si256((const __m256i *)(block[i] + 16)) : _mm256_setzero_si256();
        }
        __m512i products[4][DOT_ROWS];
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++) products[i][j] = _mm512_setzero_si512();
        for (int k = 0; k < 4; k++) {
            __m512i q[4], scale[4];
            for (int i = 0; i < R; i++) {
                const __m256i bits = _mm256_loadu_si256((const __m256i *)(block[i] + (five ? 48 : 16) + 32 * k));
                __m256i low = _mm256_and_si256(bits, low4), high = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low4);
                if (five) {
                    low = _mm256_or_si256(low, _mm256_slli_epi16(bit_of(high_bits[i], 2 * k), 4));
                    high = _mm256_or_si256(high, _mm256_slli_epi16(bit_of(high_bits[i], 2 * k + 1), 4));
                }
                q[i] = halves(low, high);
                /* sub-block 2k's scale in the low 16 lanes, 2k + 1's in the high 16 */
                const __m512i pick = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * k)),
                                                        _mm256_set1_epi16((short)(2 * k + 1)), 1);
                scale[i] = _mm512_permutexvar_epi16(pick, _mm512_castsi128_si512(scales16[i]));
            }
            for (int j = 0; j < C; j++) {
                const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                const __m512i v = _mm512_loadu_si512((const void *)(y->qs + 64 * k));
                for (int i = 0; i < R; i++)
                    products[i][j] = _mm512_dpwssd_epi32(products[i][j], _mm512_maddubs_epi16(q[i], v), scale[i]);
            }
        }
        for (int i = 0; i < R; i++) {
            ll_half dh, mh;
            memcpy(&dh, block[i], 2);
            memcpy(&mh, block[i] + 2, 2);
            const float d = half_to_float(dh), dmin = half_to_float(mh);
            for (int j = 0; j < C; j++) {
                const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                sums[i][j] = fmaf(d * y->d, (float)sum_16(products[i][j]), sums[i][j]);
                minimums[i][j] = fmaf(dmin * y->d, (float)k_minimum_sum(mins16[i], y), minimums[i][j]);
            }
        }
    }
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) out[i * C + j] = sums[i][j] - minimums[i][j];
}

INLINE void q4_K_tile(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, const int R, const int C,
                      float *out) {
    k4_tile(n, w, w_stride, a, a_stride, R, C, out, 0);
}

INLINE void q5_K_tile(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, const int R, const int C,
                      float *out) {
    k4_tile(n, w, w_stride, a, a_stride, R, C, out, 1);
}

/* Sixteen-element groups' int8 scales, four of them: each repeated over its group's 8 16-bit lanes. */
INLINE __m512i group_scales(const int8_t *s) {
    uint32_t four;
    memcpy(&four, s, 4);
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)four),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
    return _mm512_cvtepi8_epi16(spread);
}

/* Q6_K: per 128 elements, 64 bytes of low nibbles and 32 of high bit pairs; 64 elements per instruction, each
 * 16 with its own int8 scale. The stored values are value + 32: that offset comes off once per super-block. */
INLINE void q6_K_tile(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, const int R, const int C,
                      float *out) {
    float sums[4][DOT_ROWS];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) sums[i][j] = 0.0f;
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    for (int b = 0; b < n / QK_K; b++) {
        __m512i products[4][DOT_ROWS];
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++) products[i][j] = _mm512_setzero_si512();
        for (int half = 0; half < 2; half++) {
            for (int pair = 0; pair < 2; pair++) {  /* quarters 0 and 1 (low nibbles), then 2 and 3 (high) */
                __m512i q[4], scale[4];
                for (int i = 0; i < R; i++) {
                    const block_q6_K *x = (const block_q6_K *)W_ROW(i) + b;
                    if (half == 0 && pair == 0)
                        for (size_t line = 0; line < sizeof(block_q6_K); line += 64)
                            _mm_prefetch((const char *)(x + PREFETCH_SUPER_BLOCKS) + line, _MM_HINT_T0);
                    const __m512i l = _mm512_loadu_si512((const void *)(x->ql + 64 * half));
                    const __m512i nibble = pair == 0 ? _mm512_and_si512(l, low4)
                                                     : _mm512_and_si512(_mm512_srli_epi16(l, 4), low4);
                    const __m256i h = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * half));
                    const __m256i pair_bits = _mm256_set1_epi8(3);
                    const __m512i bits = halves(_mm256_and_si256(_mm256_srli_epi16(h, 4 * pair), pair_bits),
                                                _mm256_and_si256(_mm256_srli_epi16(h, 4 * pair + 2), pair_bits));
                    q[i] = _mm512_or_si512(nibble, _mm512_slli_epi16(bits, 4));
                    scale[i] = group_scales(x->scales + 8 * half + 4 * pair);
                }
                for (int j = 0; j < C; j++) {
                    const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                    const __m512i v = _mm512_loadu_si512((const void *)(y->qs + 128 * half + 64 * pair));
                    for (int i = 0; i < R; i++)
                        products[i][j] = _mm512_dpwssd_epi32(products[i][j], _mm512_maddubs_epi16(q[i], v), scale[i]);
                }
            }
        }
        for (int i = 0; i < R; i++) {
            const block_q6_K *x = (const block_q6_K *)W_ROW(i) + b;
            const float d = half_to_float(x->d);
            const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
            for (int j = 0; j < C; j++) {
                const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                const int offset = sum_8(_mm256_madd_epi16(scales16, _mm256_loadu_si256((const __m256i *)y->bsums)));
                sums[i][j] = fmaf(d * y->d, (float)(sum_16(products[i][j]) - 32 * offset), sums[i][j]);
            }
        }
    }
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) out[i * C + j] = sums[i][j];
}

/* Each kernel specialised for the tile shapes project() uses, so its loops unroll into registers: 1 x 1 for a
 * decode step (2 x 1 for the legacy 4- and 5-bit types, model.c's decode_rows), 4 x C for a short pass, and the
 * edges. The switch is on the shape, not the type: each type has its own entry. */
#define TILE_ENTRY(NAME, FOUR_BY_ONE)                                                                           \
    void ll_tiles_##NAME(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, int R, int C,    \
                         float *out) {                                                                          \
        switch (R * 8 + C) {                                                                                    \
        case 1 * 8 + 1: NAME##_tile(n, w, w_stride, a, a_stride, 1, 1, out); break;                             \
        case 2 * 8 + 1: NAME##_tile(n, w, w_stride, a, a_stride, 2, 1, out); break;                             \
        case 4 * 8 + 1: FOUR_BY_ONE(n, w, w_stride, a, a_stride, 4, 1, out); break;                             \
        case 4 * 8 + 2: FOUR_BY_ONE(n, w, w_stride, a, a_stride, 4, 2, out); break;                             \
        case 4 * 8 + 3: FOUR_BY_ONE(n, w, w_stride, a, a_stride, 4, 3, out); break;                             \
        case 4 * 8 + 4: FOUR_BY_ONE(n, w, w_stride, a, a_stride, 4, 4, out); break;                             \
        case 1 * 8 + 2: NAME##_tile(n, w, w_stride, a, a_stride, 1, 2, out); break;                             \
        case 1 * 8 + 3: NAME##_tile(n, w, w_stride, a, a_stride, 1, 3, out); break;                             \
        case 1 * 8 + 4: NAME##_tile(n, w, w_stride, a, a_stride, 1, 4, out); break;                             \
        default:                                                                                                \
            for (int i = 0; i < R; i++)                                                                         \
                for (int j = 0; j < C; j++)                                                                     \
                    NAME##_tile(n, W_ROW(i), w_stride, A_ROW(j), a_stride, 1, 1, out + i * C + j);              \
        }                                                                                                       \
    }

/* The legacy types' four-row shapes run NAME##_rows4, a token at a time (a short pass's tokens too: its lanes
 * reduce four rows' sums together where the general tile reduces each row and token alone); every other shape
 * their general tile. Both give each row and token the same canonical sequence. */
#define LEGACY_ENTRY(NAME)                                                                                      \
    INLINE void NAME##_decode(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, int R,      \
                              int C, float *out) {                                                              \
        (void)R;                                                                                                \
        if (C == 1) {                                                                                           \
            NAME##_rows4(n, w, w_stride, a, out);                                                               \
            return;                                                                                             \
        }                                                                                                       \
        float four[4];                                                                                          \
        for (int j = 0; j < C; j++) {                                                                           \
            NAME##_rows4(n, w, w_stride, (const char *)a + (size_t)j * a_stride, four);                         \
            for (int i = 0; i < 4; i++) out[i * C + j] = four[i];                                               \
        }                                                                                                       \
    }
LEGACY_ENTRY(q4_0) LEGACY_ENTRY(q4_1) LEGACY_ENTRY(q5_0) LEGACY_ENTRY(q5_1) LEGACY_ENTRY(q8_0)
TILE_ENTRY(q4_0, q4_0_decode) TILE_ENTRY(q4_1, q4_1_decode) TILE_ENTRY(q5_0, q5_0_decode)
TILE_ENTRY(q5_1, q5_1_decode) TILE_ENTRY(q8_0, q8_0_decode)
TILE_ENTRY(q4_K, q4_K_tile) TILE_ENTRY(q5_K, q5_K_tile) TILE_ENTRY(q6_K, q6_K_tile)

/* ---- Q4_0 and Q8_0 packed 16 rows a group (quants.h's packed layout): what llama.cpp's repacked Q4_0 does for the
 * same reason. A decode step in the file's layout spends most of its work reducing each row's vector lanes to one
 * sum per block (the four-row kernel above: 8.5 GB/s a core on Q4_0); with one row per lane the sums need no
 * reduction, and a step reads at DRAM speed (21 GB/s a core, 31.7 on two, against 15.8). Each lane still takes the
 * canonical float steps of its row, block after block: the same bits as the tiles above. ---- */

/* A group's block: the 16 rows' scales (float16), then the quants: register k's lane r holds row r's bytes
 * qs[4k..4k+3]. Q4_0: four registers, whose low nibbles are elements 4k..4k+3 and high nibbles 16+4k..16+4k+3;
 * Q8_0: eight, elements 4k..4k+3. */
/* The packed kernels prefetch only where packed.c's choice says (Intel: 4 KB ahead into L2). On the EPYCs a packed
 * group's one contiguous stream is followed by the hardware prefetchers alone, and a prefetch per line cost more than
 * it saved (the 1B shape's step, interleaved with and without 8 blocks ahead: Q4_K_M 27.5 -> 19.1 ms, Q8_0 48.7 ->
 * 34.2 ms, Q4_0 even). The k-quants' blocks are 36-53 lines: asked for all at once as a block starts, the requests
 * filled the core's miss buffers and the loop stalled on the prefetches themselves (perf: 43% of Q4_K's samples on
 * the instruction after one), so those kernels ask for each line as they come to the line it stands in for, and
 * the Xeon's step shortened 4-8% (Llama-2-7B shape Q4_K_M 164 -> 158 ms, Llama-3-8B Q5_K_M 220 -> 202 ms,
 * interleaved step by step; benchmarks/prefetch.py measures the distance). */

/* A group's row results for token j (row i in lane i) into out[i * C + j]. */
INLINE void store_group(__m512 rows, int j, int C, float *out) {
    float lanes[PACK_ROWS];
    _mm512_storeu_ps(lanes, rows);
    for (int i = 0; i < PACK_ROWS; i++) out[i * C + j] = lanes[i];
}

/* The canonical float step of a Q6_K or Q3_K group's block b (its rows' d the block's first 32 bytes): each row's
 * sum += d * the activations' d * its whole number, for each token. */
INLINE void k16_float_step(const uint8_t *o, const __m512i *total, const void *a, size_t a_stride, int b, const int C,
                           __m512 *sums) {
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)o));
    for (int j = 0; j < C; j++) {
        const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
        sums[j] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(y->d)), _mm512_cvtepi32_ps(total[j]), sums[j]);
    }
}

/* Each row's fifth bits first..first + 3 (its lane's word's bits; first a multiple of 4) as bit 4 of its lane's bytes
 * 0..3, over the nibbles. */
INLINE __m512i with_fifth_bits(__m512i nibbles, __m512i qh, const int first) {
    const int byte = first / 8;
    const __m512i spread = _mm512_shuffle_epi8(  /* the lane's byte holding the four bits, in each of its bytes */
        qh, _mm512_set4_epi32(0x0C0C0C0C + byte * 0x01010101, 0x08080808 + byte * 0x01010101,
                              0x04040404 + byte * 0x01010101, byte * 0x01010101));
    const __mmask64 set = _mm512_test_epi8_mask(spread, _mm512_set1_epi32((int)(0x08040201u << (first % 8))));
    return _mm512_or_si512(nibbles, _mm512_maskz_set1_epi8(set, 0x10));
}

/* eight: Q8_0 (signed bytes, +128 to make them unsigned); else Q4_0 (nibbles, which are the values + 8), or with
 * minimum Q4_1 (nibbles, the values themselves; its rows' minimums after the scales, Q8_1 activations); five: Q5_0
 * and Q5_1, the same with each value's fifth bit on its nibble (Q5_0's values + 16). */
INLINE void legacy_x16_tile(int n, const void *group, const void *a, size_t a_stride, const int C, float *out,
                            const int eight, const int minimum, const int five) {
    const int blocks = n / QK;
    const size_t group_block = eight     ? Q8_0X16_BLOCK
                               : five    ? (minimum ? Q5_1X16_BLOCK : Q5_0X16_BLOCK)
                               : minimum ? Q4_1X16_BLOCK
                                         : Q4_0X16_BLOCK;
    const int fifth_bits = minimum ? 64 : 32, quants = fifth_bits + (five ? 64 : 0);
    const __m512i low4 = _mm512_set1_epi8(0x0F), sign = _mm512_set1_epi8((char)0x80);
    __m512 sums[DOT_ROWS], minimums[DOT_ROWS];
    for (int j = 0; j < C; j++) sums[j] = minimums[j] = _mm512_setzero_ps();
    for (int b = 0; b < blocks; b++) {
        const uint8_t *o = (const uint8_t *)group + (size_t)b * group_block;
        prefetch_ahead(o, group_block);
        __m512i q[8];  /* q[k]: elements 4k..4k+3 of every row, as unsigned bytes */
        const __m512i qh = five ? _mm512_loadu_si512((const void *)(o + fifth_bits)) : _mm512_setzero_si512();
        for (int k = 0; k < (eight ? 8 : 4); k++) {
            const __m512i x = _mm512_loadu_si512((const void *)(o + quants + 64 * k));
            if (eight) {
                q[k] = _mm512_xor_si512(x, sign);
            } else {
                q[k] = _mm512_and_si512(x, low4);
                q[4 + k] = _mm512_and_si512(_mm512_srli_epi16(x, 4), low4);
                if (five) {
                    q[k] = with_fifth_bits(q[k], qh, 4 * k);
                    q[4 + k] = with_fifth_bits(q[4 + k], qh, 16 + 4 * k);
                }
            }
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)o));
        const __m512 mw = minimum ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(o + 32))) : dw;
        for (int j = 0; j < C; j++) {
            /* Q8_1's block is Q8_0's with its d * sum(quants) between the scale and the quants */
            const size_t y_bytes = minimum ? sizeof(block_q8_1) : sizeof(block_q8_0);
            const uint8_t *y = (const uint8_t *)A_ROW(j) + (size_t)b * y_bytes;
            const int8_t *yq = (const int8_t *)(y + (minimum ? 4 : 2));
            ll_half yd;
            memcpy(&yd, y, 2);
            __m512i sum = _mm512_setzero_si512();
            for (int k = 0; k < 8; k++) {
                int32_t four;
                memcpy(&four, yq + 4 * k, 4);
                sum = _mm512_dpbusd_epi32(sum, q[k], _mm512_set1_epi32(four));
            }
            __m512i exact = sum;
            if (!minimum) {  /* the bytes are the values + 8 (+16, +128): that times the activations' sum comes off */
                const __m256i v = _mm256_loadu_si256((const __m256i *)yq);
                const char by = eight ? (char)0x80 : five ? 16 : 8;
                const int offset = sum_8(_mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(by), v));
                exact = _mm512_sub_epi32(sum, _mm512_set1_epi32(offset));
            }
            const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(half_to_float(yd)));
            sums[j] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(exact), sums[j]);
            if (minimum) {
                ll_half ys;
                memcpy(&ys, y + 2, 2);
                minimums[j] = _mm512_fmadd_ps(mw, _mm512_set1_ps(half_to_float(ys)), minimums[j]);
            }
        }
    }
    for (int j = 0; j < C; j++) {
        store_group(_mm512_add_ps(sums[j], minimums[j]), j, C, out);  /* Q4_0, Q8_0: + 0, the tiles' sum + minimum */
    }
}

PACKED_TILES_ENTRY(q4_0x16, legacy_x16_tile, , 0, 0, 0)
PACKED_TILES_ENTRY(q4_1x16, legacy_x16_tile, , 0, 1, 0)
PACKED_TILES_ENTRY(q8_0x16, legacy_x16_tile, , 1, 0, 0)
PACKED_TILES_ENTRY(q5_0x16, legacy_x16_tile, , 0, 0, 1)
PACKED_TILES_ENTRY(q5_1x16, legacy_x16_tile, , 0, 1, 1)

/* Each byte's bits moved left by `by` (right where it is negative); bits crossing into a neighbour byte are the
 * caller's to mask off. */
INLINE __m512i shift_bits(__m512i v, const int by) {
    return by >= 0 ? _mm512_slli_epi16(v, by) : _mm512_srli_epi16(v, -by);
}

/* ---- Q4_K packed 16 rows a group: the same idea for the k-quants' 4-bit type, the most downloaded one. Per
 * super-block: the 16 rows' d, then their dmin (float16), three registers of 6-bit scales and minimums (register w's
 * lane r: row r's scales[4w..4w+3], unpacked with the bit steps of k_scales_mins, 16 rows at once), then 32
 * registers of quants (register w's lane r: row r's qs[4w..4w+3]: low nibbles of sub-block 2(w / 8), high nibbles
 * of the next). A sub-block's sums are whole in each lane, weighted by its row's scale exactly as integers, and the
 * minimums' term is the rows' minimums against the activations' sub-block sums: the canonical integers, then the
 * canonical float steps lane by lane. ---- */

INLINE void k4x16_tile(int n, const void *group, const void *a, size_t a_stride, const int C, float *out,
                       const int five) {
    const int blocks = n / QK_K;
    const size_t group_block = five ? Q5_KX16_BLOCK : Q4_KX16_BLOCK, quants = K4X16_QUANTS(five);
    const __m512i sixteen = _mm512_set1_epi8(0x10);
    const __m512i low4 = _mm512_set1_epi8(0x0F), six = _mm512_set1_epi8(0x3f), four = _mm512_set1_epi8(0x0f),
                  two = _mm512_set1_epi8(3), low_byte = _mm512_set1_epi16(0xFF), byte = _mm512_set1_epi32(0xFF);
    __m512 sums[DOT_ROWS], minimums[DOT_ROWS];
    for (int j = 0; j < C; j++) sums[j] = minimums[j] = _mm512_setzero_ps();
    for (int b = 0; b < blocks; b++) {
        const uint8_t *o = (const uint8_t *)group + (size_t)b * group_block;
        prefetch_ahead(o, quants);  /* the scales; each register of quants as the loop below comes to it */
        const __m512i w0 = _mm512_loadu_si512((const void *)(o + 64)), w1 = _mm512_loadu_si512((const void *)(o + 128)),
                      w2 = _mm512_loadu_si512((const void *)(o + 192));
        /* bytes j of each lane: the scales (minimums) of sub-blocks j, then 4 + j */
        const __m512i scales[2] = {
            _mm512_and_si512(w0, six),
            _mm512_or_si512(_mm512_and_si512(w2, four),
                            _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(w0, 6), two), 4))};
        const __m512i mins[2] = {
            _mm512_and_si512(w1, six),
            _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(w2, 4), four),
                            _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(w1, 6), two), 4))};
        __m512i total[DOT_ROWS];
        for (int j = 0; j < C; j++) total[j] = _mm512_setzero_si512();
        for (int k = 0; k < 4; k++) {  /* sub-blocks 2k (low nibbles) and 2k + 1 (high) */
            __m512i low_sum[DOT_ROWS], high_sum[DOT_ROWS];
            for (int j = 0; j < C; j++) low_sum[j] = high_sum[j] = _mm512_setzero_si512();
            for (int w = 0; w < 8; w++) {
                prefetch_ahead(o + quants + 64 * (8 * k + w), 64);
                const __m512i x = _mm512_loadu_si512((const void *)(o + quants + 64 * (8 * k + w)));
                __m512i low = _mm512_and_si512(x, low4), high = _mm512_and_si512(_mm512_srli_epi16(x, 4), low4);
                if (five) {  /* Q5_K: bits 2k and 2k + 1 of the fifth-bit bytes, each to bit 4 (16) of its value */
                    const __m512i h = _mm512_loadu_si512((const void *)(o + K4X16_FIFTH_BITS + 64 * w));
                    low = _mm512_ternarylogic_epi32(low, shift_bits(h, 4 - 2 * k), sixteen, 0xF8);  /* a | (b & c) */
                    high = _mm512_ternarylogic_epi32(high, shift_bits(h, 3 - 2 * k), sixteen, 0xF8);
                }
                for (int j = 0; j < C; j++) {
                    const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                    int32_t first, second;
                    memcpy(&first, y->qs + 64 * k + 4 * w, 4);
                    memcpy(&second, y->qs + 64 * k + 32 + 4 * w, 4);
                    low_sum[j] = _mm512_dpbusd_epi32(low_sum[j], low, _mm512_set1_epi32(first));
                    high_sum[j] = _mm512_dpbusd_epi32(high_sum[j], high, _mm512_set1_epi32(second));
                }
            }
            const __m512i scale = scales[k / 2];
            const __m512i low_scale = _mm512_and_si512(_mm512_srli_epi32(scale, 16 * (k % 2)), byte);
            const __m512i high_scale = _mm512_and_si512(_mm512_srli_epi32(scale, 16 * (k % 2) + 8), byte);
            for (int j = 0; j < C; j++)
                total[j] = _mm512_add_epi32(total[j], _mm512_add_epi32(_mm512_mullo_epi32(low_sum[j], low_scale),
                                                                       _mm512_mullo_epi32(high_sum[j], high_scale)));
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)o));
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(o + 32)));
        /* the minimums as int16: lanes' (m0, m2), (m1, m3), (m4, m6), (m5, m7) */
        const __m512i min_words[4] = {_mm512_and_si512(mins[0], low_byte),
                                      _mm512_and_si512(_mm512_srli_epi16(mins[0], 8), low_byte),
                                      _mm512_and_si512(mins[1], low_byte),
                                      _mm512_and_si512(_mm512_srli_epi16(mins[1], 8), low_byte)};
        for (int j = 0; j < C; j++) {
            const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
            int32_t pairs[4];
            k_activation_pairs(y, pairs);
            __m512i m = _mm512_setzero_si512();
            for (int p = 0; p < 4; p++) m = _mm512_dpwssd_epi32(m, min_words[p], _mm512_set1_epi32(pairs[p]));
            const __m512 yd = _mm512_set1_ps(y->d);
            sums[j] = _mm512_fmadd_ps(_mm512_mul_ps(d, yd), _mm512_cvtepi32_ps(total[j]), sums[j]);
            minimums[j] = _mm512_fmadd_ps(_mm512_mul_ps(dmin, yd), _mm512_cvtepi32_ps(m), minimums[j]);
        }
    }
    for (int j = 0; j < C; j++) {
        store_group(_mm512_sub_ps(sums[j], minimums[j]), j, C, out);
    }
}

PACKED_TILES_ENTRY(q4_Kx16, k4x16_tile, , 0)
PACKED_TILES_ENTRY(q5_Kx16, k4x16_tile, , 1)

/* ---- Q6_K packed 16 rows a group (quants.h): per half and word, three registers give the four quarters of four
 * elements of every row, whole 6-bit values (unsigned, value + 32) for vpdpbusd. Each 16-element sub-block's sum
 * stays in its row's lane; the +32 comes off as 32 times the activations' sub-block sum before the row's int8 scale
 * weights it: the canonical integer, then the canonical float step, lane by lane. ---- */

INLINE void q6_Kx16_tile(int n, const void *group, const void *a, size_t a_stride, const int C, float *out) {
    const int blocks = n / QK_K;
    const __m512i low4 = _mm512_set1_epi8(0x0F), two = _mm512_set1_epi8(3);
    __m512 sums[DOT_ROWS];
    for (int j = 0; j < C; j++) sums[j] = _mm512_setzero_ps();
    for (int b = 0; b < blocks; b++) {
        const uint8_t *o = (const uint8_t *)group + (size_t)b * Q6_KX16_BLOCK;
        prefetch_ahead(o, 288);  /* d and the scales; each word's three registers as the loop below comes to them */
        __m512i total[DOT_ROWS];
        for (int j = 0; j < C; j++) total[j] = _mm512_setzero_si512();
        for (int h = 0; h < 2; h++)
            for (int s = 0; s < 2; s++) {  /* words 4s..4s+3: elements 16s..16s+15 of each quarter */
                __m512i part[DOT_ROWS][4];
                for (int j = 0; j < C; j++)
                    for (int q = 0; q < 4; q++) part[j][q] = _mm512_setzero_si512();
                for (int w = 4 * s; w < 4 * s + 4; w++) {
                    const uint8_t *p = o + 288 + 192 * (8 * h + w);
                    prefetch_ahead(p, 192);
                    const __m512i first = _mm512_loadu_si512((const void *)p),
                                  second = _mm512_loadu_si512((const void *)(p + 64)),
                                  high = _mm512_loadu_si512((const void *)(p + 128));
                    const __m512i e[4] = {
                        _mm512_or_si512(_mm512_and_si512(first, low4),
                                        _mm512_slli_epi16(_mm512_and_si512(high, two), 4)),
                        _mm512_or_si512(_mm512_and_si512(second, low4),
                                        _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(high, 2), two), 4)),
                        _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(first, 4), low4),
                                        _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(high, 4), two), 4)),
                        _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(second, 4), low4),
                                        _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(high, 6), two), 4))};
                    for (int j = 0; j < C; j++) {
                        const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                        for (int q = 0; q < 4; q++) {
                            int32_t four;
                            memcpy(&four, y->qs + 128 * h + 32 * q + 4 * w, 4);
                            part[j][q] = _mm512_dpbusd_epi32(part[j][q], e[q], _mm512_set1_epi32(four));
                        }
                    }
                }
                for (int q = 0; q < 4; q++) {
                    const int g = 8 * h + 2 * q + s;
                    const __m512i word = _mm512_loadu_si512((const void *)(o + 32 + 64 * (g / 4)));
                    const __m512i scale = _mm512_srai_epi32(_mm512_slli_epi32(word, 24 - 8 * (g % 4)), 24);
                    for (int j = 0; j < C; j++) {
                        const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                        const __m512i exact = _mm512_sub_epi32(part[j][q], _mm512_set1_epi32(32 * y->bsums[g]));
                        total[j] = _mm512_add_epi32(total[j], _mm512_mullo_epi32(exact, scale));
                    }
                }
            }
        k16_float_step(o, total, a, a_stride, b, C, sums);
    }
    for (int j = 0; j < C; j++) store_group(sums[j], j, C, out);
}

PACKED_TILES_ENTRY(q6_Kx16, q6_Kx16_tile, )

/* ---- Q3_K packed 16 rows a group (quants.h): per half c and 32-element chunk j, a word of low bits shifted by 2j
 * and one of third bits shifted by 4c + j give four neighbouring elements of every row as value + 4 (0..7, unsigned)
 * for vpdpbusd. As Q6_K's: each 16-element sub-block's sum in its row's lane, less 4 times the activations'
 * sub-block sum, weighted by the row's scale (its 6-bit field less 32) as integers; then the canonical float step.
 * The same integers and floats as Q6_K's dot on the widened rows (quants.c), so packed or widened, the same bits. */

/* Each row's 16 scales less 32, four registers of bytes: register i's lane byte k holds group 4i + k's, its low four
 * bits from the first two words (high nibbles for groups 8..15), its high two from the third word's bits 2i of each
 * byte. */
INLINE void q3_scale_bytes(const __m512i words[3], __m512i scales[4]) {
    const __m512i nibble = _mm512_set1_epi8(0x0F), two = _mm512_set1_epi8(3), bias = _mm512_set1_epi8(32);
    for (int i = 0; i < 4; i++) {
        const __m512i low = _mm512_and_si512(i < 2 ? words[i] : _mm512_srli_epi16(words[i - 2], 4), nibble);
        const __m512i high = _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(words[2], 2 * i), two), 4);
        scales[i] = _mm512_sub_epi8(_mm512_or_si512(low, high), bias);
    }
}

INLINE void q3_Kx16_tile(int n, const void *group, const void *a, size_t a_stride, const int C, float *out) {
    const int blocks = n / QK_K;
    const __m512i two = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
    __m512 sums[DOT_ROWS];
    for (int j = 0; j < C; j++) sums[j] = _mm512_setzero_ps();
    for (int b = 0; b < blocks; b++) {
        const uint8_t *o = (const uint8_t *)group + (size_t)b * Q3_KX16_BLOCK;
        prefetch_ahead(o, Q3_KX16_BLOCK);
        const __m512i words[3] = {_mm512_loadu_si512((const void *)(o + Q3X16_SCALES)),
                                  _mm512_loadu_si512((const void *)(o + Q3X16_SCALES + 64)),
                                  _mm512_loadu_si512((const void *)(o + Q3X16_SCALES + 128))};
        __m512i scales[4];
        q3_scale_bytes(words, scales);
        __m512i total[DOT_ROWS];
        for (int j = 0; j < C; j++) total[j] = _mm512_setzero_si512();
        for (int c = 0; c < 2; c++)
            for (int s = 0; s < 2; s++) {  /* words 4s..4s+3: elements 16s..16s+15 of each chunk */
                __m512i part[DOT_ROWS][4];
                for (int j = 0; j < C; j++)
                    for (int q = 0; q < 4; q++) part[j][q] = _mm512_setzero_si512();
                for (int w = 4 * s; w < 4 * s + 4; w++) {
                    const __m512i third = _mm512_loadu_si512((const void *)(o + Q3X16_THIRD(w)));
                    const __m512i low = _mm512_loadu_si512((const void *)(o + Q3X16_LOW(c, w)));
                    for (int q = 0; q < 4; q++) {
                        /* bits 2q..2q+1 to 0..1, and bit 4c + q to 2: a | (b & c) */
                        const __m512i e = _mm512_ternarylogic_epi32(_mm512_and_si512(shift_bits(low, -2 * q), two),
                                                                    shift_bits(third, 2 - 4 * c - q), four, 0xF8);
                        for (int j = 0; j < C; j++) {
                            const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                            int32_t bytes;
                            memcpy(&bytes, y->qs + 128 * c + 32 * q + 4 * w, 4);
                            part[j][q] = _mm512_dpbusd_epi32(part[j][q], e, _mm512_set1_epi32(bytes));
                        }
                    }
                }
                for (int q = 0; q < 4; q++) {
                    const int g = 8 * c + 2 * q + s;
                    const __m512i scale = _mm512_srai_epi32(_mm512_slli_epi32(scales[g / 4], 24 - 8 * (g % 4)), 24);
                    for (int j = 0; j < C; j++) {
                        const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                        const __m512i exact = _mm512_sub_epi32(part[j][q], _mm512_set1_epi32(4 * y->bsums[g]));
                        total[j] = _mm512_add_epi32(total[j], _mm512_mullo_epi32(exact, scale));
                    }
                }
            }
        k16_float_step(o, total, a, a_stride, b, C, sums);
    }
    for (int j = 0; j < C; j++) store_group(sums[j], j, C, out);
}

PACKED_TILES_ENTRY(q3_Kx16, q3_Kx16_tile, )

/* ---- the GEMM of a prompt's pass (gemm.h): 16 tokens in the lanes of a register, vpdpbusd's 4 products each ---- */

/* One block b of R unpacked rows against TV groups of 16 tokens (group_stride apart in the panel): each token's
 * canonical float steps for this block, on the sums kept in memory (sums[r][t], minimums[r][t]: 16 tokens each). */
#define GEMM_KERNEL(NAME, BLOCK, SUB, SCALED, MINIMUM, ACTIVATION)                                                \
    INLINE void NAME##_gemm_block(const unpacked *u, const int R, const char *panel, size_t group_stride,          \
                                  const int TV, float (*sums)[2][LL_GEMM_LANES],                                  \
                                  float (*minimums)[2][LL_GEMM_LANES]) {                                          \
        const char *p[2];                                                                                         \
        for (int t = 0; t < TV; t++) p[t] = panel + (size_t)t * group_stride;                                     \
        __m512i isum[4][2];                                                                                       \
        for (int r = 0; r < R; r++)                                                                               \
            for (int t = 0; t < TV; t++) isum[r][t] = _mm512_setzero_si512();                                     \
        for (int s = 0; s < BLOCK / SUB; s++) {                                                                   \
            __m512i part[4][2];                                                                                   \
            for (int r = 0; r < R; r++)                                                                           \
                for (int t = 0; t < TV; t++) part[r][t] = _mm512_setzero_si512();                                 \
            for (int within = 0; within < SUB / 4; within++) { /* constant bounds: unrolled into registers */   \
                const int g = s * SUB / 4 + within;                                                               \
                __m512i act[2];                                                                                   \
                for (int t = 0; t < TV; t++) act[t] = _mm512_load_si512((const void *)(p[t] + 64 * g));          \
                /* a broadcast per product (one register apiece was about 10% slower here) */                     \
                for (int r = 0; r < R; r++)                                                                       \
                    for (int t = 0; t < TV; t++) {                                                                \
                        int32_t four;                                                                             \
                        memcpy(&four, u[r].q + 4 * g, 4);                                                         \
                        part[r][t] = _mm512_dpbusd_epi32(part[r][t], act[t], _mm512_set1_epi32(four));            \
                    }                                                                                             \
            }                                                                                                     \
            for (int r = 0; r < R; r++)                                                                           \
                for (int t = 0; t < TV; t++)                                                                      \
                    isum[r][t] = SCALED ? _mm512_add_epi32(isum[r][t], _mm512_mullo_epi32(                        \
                                              part[r][t], _mm512_set1_epi32(u[r].scale[s])))                      \
                                        : part[r][t];                                                             \
        }                                                                                                         \
        for (int t = 0; t < TV; t++) {                                                                            \
            const __m512 da = _mm512_load_ps((const float *)(p[t] + BLOCK * LANES));                              \
            const char *extra = p[t] + BLOCK * LANES + 4 * LANES;                                                 \
            for (int r = 0; r < R; r++) {                                                                         \
                const __m512i exact = _mm512_sub_epi32(isum[r][t], _mm512_set1_epi32(u[r].correction));           \
                _mm512_store_ps(sums[r][t], _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(u[r].d), da),            \
                                                            _mm512_cvtepi32_ps(exact), _mm512_load_ps(sums[r][t])));\
                if (MINIMUM == 1)                                                                                 \
                    _mm512_store_ps(minimums[r][t], _mm512_fmadd_ps(_mm512_set1_ps(u[r].m),                       \
                                                                    _mm512_load_ps((const float *)extra),         \
                                                                    _mm512_load_ps(minimums[r][t])));             \
                if (MINIMUM == 2) {                                                                               \
                    __m512i m = _mm512_setzero_si512();                                                           \
                    for (int q = 0; q < 4; q++)                                                                   \
                        m = _mm512_dpwssd_epi32(m, _mm512_load_si512((const void *)(extra + 64 * q)),             \
                                                _mm512_set1_epi32(u[r].min_pairs[q]));                            \
                    _mm512_store_ps(minimums[r][t], _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(u[r].m), da),    \
                                                                    _mm512_cvtepi32_ps(m),                        \
                                                                    _mm512_load_ps(minimums[r][t])));             \
                }                                                                                                 \
            }                                                                                                     \
        }                                                                                                         \
    }

GEMM_TYPES(GEMM_KERNEL)
GEMM_KERNEL(q4_0x16, QK, QK, 0, 0, LL_Q8_0)
GEMM_ENTRY(q4_0x16, QK, 0, LL_Q8_0)
GEMM_KERNEL(q4_1x16, QK, QK, 0, 1, LL_Q8_1)
GEMM_ENTRY(q4_1x16, QK, 1, LL_Q8_1)
GEMM_KERNEL(q8_0x16, QK, QK, 0, 0, LL_Q8_0)
GEMM_ENTRY(q8_0x16, QK, 0, LL_Q8_0)
GEMM_KERNEL(q5_0x16, QK, QK, 0, 0, LL_Q8_0)
GEMM_ENTRY(q5_0x16, QK, 0, LL_Q8_0)
GEMM_KERNEL(q5_1x16, QK, QK, 0, 1, LL_Q8_1)
GEMM_ENTRY(q5_1x16, QK, 1, LL_Q8_1)
GEMM_KERNEL(q4_Kx16, QK_K, 32, 1, 2, LL_Q8_K)
GEMM_ENTRY(q4_Kx16, QK_K, 2, LL_Q8_K)
GEMM_KERNEL(q5_Kx16, QK_K, 32, 1, 2, LL_Q8_K)
GEMM_ENTRY(q5_Kx16, QK_K, 2, LL_Q8_K)
GEMM_KERNEL(q6_Kx16, QK_K, 16, 1, 0, LL_Q8_K)
GEMM_ENTRY(q6_Kx16, QK_K, 0, LL_Q8_K)
GEMM_KERNEL(q3_Kx16, QK_K, 16, 1, 0, LL_Q8_K)
GEMM_ENTRY(q3_Kx16, QK_K, 0, LL_Q8_K)

#endif
