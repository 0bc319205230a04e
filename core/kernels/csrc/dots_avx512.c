/* AVX-512 (BW, VL, DQ and VNNI) dot products of up to 4 weight rows with up to DOT_ROWS activation rows.
 *
 * Twice the AVX2 kernels' width: two legacy blocks, or a k-quant's 64 elements, per instruction, with VNNI's
 * vpdpbusd (unsigned bytes times signed bytes, summed in fours) in place of maddubs + madd, and vpdpwssd for
 * the k-quants' scaled 16-bit sums. The integer sums equal the AVX2 kernels' lane for lane (none can saturate),
 * and the floats are accumulated 8 lanes wide in the AVX2 kernels' order, block after block: so the results are
 * the AVX2 kernels' to the last bit, and llama.cpp's, whose x86 dots sum in that order. (Summing 16 lanes
 * wide moved last bits, which this model family turns into changed tokens now and then.) Built where
 * -march=native has these extensions (Ice Lake and later Xeons, Zen 4): they then define the quant types'
 * ll_tiles_* the type table points to, and dots.c leaves its AVX2 ones out; elsewhere the AVX2 kernels run.
 */
#include "quants.h"

#if LL_AVX512_DOTS

#define INLINE static inline __attribute__((always_inline))
#define W_ROW(i) ((const char *)w + (size_t)(i) * w_stride)
#define A_ROW(j) ((const char *)a + (size_t)(j) * a_stride)

/* Two 16-byte nibble arrays -> 64 bytes: block 0's low nibbles (its elements 0..15), then its high ones
 * (16..31), then block 1's, as two consecutive activation blocks lay out their 64 quants. */
INLINE __m512i nibbles_64(const uint8_t *qs0, const uint8_t *qs1) {
    const __m512i both = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs0))),
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs1)), 1);
    /* the second and fourth 16 bytes shifted down by a nibble (16-bit lanes 8..15 and 24..31) */
    return _mm512_and_si512(_mm512_mask_srli_epi16(both, 0xFF00FF00u, both, 4), _mm512_set1_epi8(0x0F));
}

/* 32 quants of each of two activation blocks, side by side. */
INLINE __m512i pair_512(const int8_t *q0, const int8_t *q1) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)q0)),
                              _mm256_loadu_si256((const __m256i *)q1), 1);
}

/* The fifth bits of two Q5 blocks, one bit per quant, in the order nibbles_64 gives. */
INLINE __mmask64 fifth_bits(const uint8_t *qh0, const uint8_t *qh1) {
    uint32_t low, high;
    memcpy(&low, qh0, 4);
    memcpy(&high, qh1, 4);
    return (__mmask64)low | ((__mmask64)high << 32);
}

/* The AVX2 kernels' horizontal sum of 8 lanes, in their order. */
INLINE float hsum_8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The two 8-lane halves of 16 int32 lanes, added (exact): what the AVX2 kernels' one 8-lane sum holds. */
INLINE __m256i fold_halves(__m512i v) {
    return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

/* Legacy 32-element types, two blocks at a time: q holds the weights as unsigned bytes (offset by OFFSET for
 * the signed types), and sum_j (q - OFFSET) a_j = dpbusd(q, a) - dpbusd(OFFSET, a); a lone last block runs
 * at half width. MINIMUM types add m * (d_a * sum(a)), as the AVX2 kernels do. */
#define LEGACY_512(NAME, WBLOCK, ABLOCK, UNPACK2, UNPACK1, OFFSET, MINIMUM)                                     \
    INLINE void NAME##_tile(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, const int R,  \
                            const int C, float *out) {                                                         \
        __m256 acc[4][DOT_ROWS];                                                                               \
        float minimums[4][DOT_ROWS];                                                                           \
        for (int i = 0; i < R; i++)                                                                            \
            for (int j = 0; j < C; j++) { acc[i][j] = _mm256_setzero_ps(); minimums[i][j] = 0.0f; }            \
        const int blocks = n / QK;                                                                             \
        int b = 0;                                                                                             \
        for (; b + 2 <= blocks; b += 2) {                                                                      \
            __m512i q[4];                                                                                      \
            float dw[4][2], mw[4][2];                                                                          \
            for (int i = 0; i < R; i++) {                                                                      \
                const WBLOCK *x = (const WBLOCK *)W_ROW(i) + b;                                                \
                q[i] = UNPACK2;                                                                                \
                dw[i][0] = half_to_float(x[0].d);                                                              \
                dw[i][1] = half_to_float(x[1].d);                                                              \
                mw[i][0] = MINIMUM ? MINIMUM_OF(&x[0]) : 0.0f;                                                 \
                mw[i][1] = MINIMUM ? MINIMUM_OF(&x[1]) : 0.0f;                                                 \
            }                                                                                                  \
            for (int j = 0; j < C; j++) {                                                                      \
                const ABLOCK *y = (const ABLOCK *)A_ROW(j) + b;                                                \
                const __m512i v = pair_512(y[0].qs, y[1].qs);                                                  \
                const float dy0 = half_to_float(y[0].d), dy1 = half_to_float(y[1].d);                          \
                const __m512i offset = OFFSET ? _mm512_dpbusd_epi32(_mm512_setzero_si512(),                    \
                                                                    _mm512_set1_epi8((char)OFFSET), v)         \
                                              : _mm512_setzero_si512();                                        \
                for (int i = 0; i < R; i++) {                                                                  \
                    const __m512i p = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), q[i], v),   \
                                                       offset);                                                \
                    const __m512 f = _mm512_cvtepi32_ps(p);                                                    \
                    acc[i][j] = _mm256_fmadd_ps(_mm256_set1_ps(dw[i][0] * dy0), _mm512_castps512_ps256(f),     \
                                                acc[i][j]);                                                    \
                    acc[i][j] = _mm256_fmadd_ps(_mm256_set1_ps(dw[i][1] * dy1), _mm512_extractf32x8_ps(f, 1),  \
                                                acc[i][j]);                                                    \
                    if (MINIMUM) {                                                                             \
                        minimums[i][j] += mw[i][0] * SUM_OF(&y[0]);                                            \
                        minimums[i][j] += mw[i][1] * SUM_OF(&y[1]);                                            \
                    }                                                                                          \
                }                                                                                              \
            }                                                                                                  \
        }                                                                                                      \
        for (; b < blocks; b++) {                                                                              \
            __m256i q[4];                                                                                      \
            float dw[4], mw[4];                                                                                \
            for (int i = 0; i < R; i++) {                                                                      \
                const WBLOCK *x = (const WBLOCK *)W_ROW(i) + b;                                                \
                q[i] = UNPACK1;                                                                                \
                dw[i] = half_to_float(x->d);                                                                   \
                mw[i] = MINIMUM ? MINIMUM_OF(x) : 0.0f;                                                        \
            }                                                                                                  \
            for (int j = 0; j < C; j++) {                                                                      \
                const ABLOCK *y = (const ABLOCK *)A_ROW(j) + b;                                                \
                const __m256i v = _mm256_loadu_si256((const __m256i *)y->qs);                                   \
                const float dy = half_to_float(y->d);                                                          \
                const __m256i offset = OFFSET ? _mm256_dpbusd_epi32(_mm256_setzero_si256(),                    \
                                                                    _mm256_set1_epi8((char)OFFSET), v)         \
                                              : _mm256_setzero_si256();                                        \
                for (int i = 0; i < R; i++) {                                                                  \
                    const __m256i p = _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), q[i], v),   \
                                                       offset);                                                \
                    acc[i][j] = _mm256_fmadd_ps(_mm256_set1_ps(dw[i] * dy), _mm256_cvtepi32_ps(p), acc[i][j]); \
                    if (MINIMUM) minimums[i][j] += mw[i] * SUM_OF(y);                                          \
                }                                                                                              \
            }                                                                                                  \
        }                                                                                                      \
        for (int i = 0; i < R; i++)                                                                            \
            for (int j = 0; j < C; j++) out[i * C + j] = hsum_8(acc[i][j]) + minimums[i][j];                   \
    }

/* The half-width tail's unpacking: one block's 32 quants as unsigned bytes. */
INLINE __m256i nibbles_32(const uint8_t *qs) {
    const __m128i packed = _mm_loadu_si128((const __m128i *)qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0x0F));
}

#define MINIMUM_OF(x) 0.0f
#define SUM_OF(y) 0.0f
LEGACY_512(q4_0, block_q4_0, block_q8_0, nibbles_64(x[0].qs, x[1].qs), nibbles_32(x->qs), 8, 0)
/* Q8_0: signed bytes moved to unsigned by +128 (an exclusive or of the sign bit). */
LEGACY_512(q8_0, block_q8_0, block_q8_0,
           _mm512_xor_si512(pair_512(x[0].qs, x[1].qs), _mm512_set1_epi8((char)0x80)),
           _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)x->qs), _mm256_set1_epi8((char)0x80)), 0x80, 0)
/* Q5_0: the nibble plus 16 for a set fifth bit, offset 16. */
LEGACY_512(q5_0, block_q5_0, block_q8_0,
           _mm512_or_si512(nibbles_64(x[0].qs, x[1].qs),
                           _mm512_maskz_set1_epi8(fifth_bits(x[0].qh, x[1].qh), 0x10)),
           _mm256_or_si256(nibbles_32(x->qs), _mm256_maskz_set1_epi8((__mmask32)fifth_bits(x->qh, x->qh), 0x10)), 16, 0)
#undef MINIMUM_OF
#undef SUM_OF
#define MINIMUM_OF(x) half_to_float((x)->m)
#define SUM_OF(y) half_to_float((y)->s)
LEGACY_512(q4_1, block_q4_1, block_q8_1, nibbles_64(x[0].qs, x[1].qs), nibbles_32(x->qs), 0, 1)
LEGACY_512(q5_1, block_q5_1, block_q8_1,
           _mm512_or_si512(nibbles_64(x[0].qs, x[1].qs),
                           _mm512_maskz_set1_epi8(fifth_bits(x[0].qh, x[1].qh), 0x10)),
           _mm256_or_si256(nibbles_32(x->qs), _mm256_maskz_set1_epi8((__mmask32)fifth_bits(x->qh, x->qh), 0x10)), 0, 1)
#undef MINIMUM_OF
#undef SUM_OF

/* Two 32-byte halves side by side. Each half is shifted in 256-bit registers first: one insert per 64 bytes,
 * where a per-half variable shift (vpsrlvw) made Q5_K slower than its AVX2 kernel. */
INLINE __m512i halves(__m256i low, __m256i high) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
}

/* Bit `shift` of each byte, as 0 or 1. */
INLINE __m256i bit_of(__m256i bytes, int shift) {
    return _mm256_and_si256(_mm256_srli_epi16(bytes, shift), _mm256_set1_epi8(1));
}

/* A Q4_K or Q5_K super-block's eight 6-bit scales and eight 6-bit minimums, as 16-bit lanes: the 12 packed bytes
 * taken as three 32-bit words, four sub-blocks per word at a time (k_scale_min one at a time cost as much as
 * the products). */
INLINE void k_scales_mins(const uint8_t *packed, __m128i *scales16, __m128i *mins16) {
    uint32_t w[3];
    memcpy(w, packed, 12);
    const uint32_t six = 0x3f3f3f3fu, four = 0x0f0f0f0fu, two = 0x03030303u;
    const uint64_t scales = (uint64_t)(w[0] & six) | (uint64_t)((w[2] & four) | (((w[0] >> 6) & two) << 4)) << 32;
    const uint64_t mins = (uint64_t)(w[1] & six) | (uint64_t)(((w[2] >> 4) & four) | (((w[1] >> 6) & two) << 4)) << 32;
    *scales16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)scales));
    *mins16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)mins));
}

/* Q4_K and Q5_K: each 64 elements of a super-block are two sub-blocks (low nibbles, then high) with their own
 * 6-bit scales; maddubs pairs them with the activations and vpdpwssd weighs each sub-block by its scale. */
INLINE void k4_tile(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, const int R, const int C,
                    float *out, const int five) {
    __m256 acc[4][DOT_ROWS];
    float minimums[4][DOT_ROWS];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) { acc[i][j] = _mm256_setzero_ps(); minimums[i][j] = 0.0f; }
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const size_t block_bytes = five ? sizeof(block_q5_K) : sizeof(block_q4_K);
    for (int b = 0; b < n / QK_K; b++) {
        const uint8_t *block[4];
        __m128i scales16[4], mins16[4];
        __m256i high_bits[4];
        for (int i = 0; i < R; i++) {
            block[i] = (const uint8_t *)W_ROW(i) + b * block_bytes;
            k_scales_mins(block[i] + 4, &scales16[i], &mins16[i]);
            high_bits[i] = five ? _mm256_loadu_si256((const __m256i *)(block[i] + 16)) : _mm256_setzero_si256();
        }
        __m512i sums[4][DOT_ROWS];
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++) sums[i][j] = _mm512_setzero_si512();
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
                    sums[i][j] = _mm512_dpwssd_epi32(sums[i][j], _mm512_maddubs_epi16(q[i], v), scale[i]);
            }
        }
        for (int i = 0; i < R; i++) {
            ll_half dh, mh;
            memcpy(&dh, block[i], 2);
            memcpy(&mh, block[i] + 2, 2);
            const float d = half_to_float(dh), dmin = half_to_float(mh);
            for (int j = 0; j < C; j++) {
                const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                /* each sub-block's sum of activations is two of the 16-element sums */
                const __m256i bsums = _mm256_loadu_si256((const __m256i *)y->bsums);
                const __m128i pairs = _mm_packs_epi32(
                    _mm256_castsi256_si128(_mm256_madd_epi16(bsums, _mm256_set1_epi16(1))),
                    _mm256_extracti128_si256(_mm256_madd_epi16(bsums, _mm256_set1_epi16(1)), 1));
                const __m128i weighted = _mm_madd_epi16(mins16[i], pairs);
                const __m128i folded = _mm_add_epi32(weighted, _mm_shuffle_epi32(weighted, _MM_SHUFFLE(1, 0, 3, 2)));
                const int m = _mm_cvtsi128_si32(_mm_add_epi32(folded, _mm_shuffle_epi32(folded, 1)));
                acc[i][j] = _mm256_fmadd_ps(_mm256_set1_ps(d * y->d), _mm256_cvtepi32_ps(fold_halves(sums[i][j])),
                                            acc[i][j]);
                minimums[i][j] -= dmin * y->d * (float)m;
            }
        }
    }
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) out[i * C + j] = hsum_8(acc[i][j]) + minimums[i][j];
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
    __m256 acc[4][DOT_ROWS];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) acc[i][j] = _mm256_setzero_ps();
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    for (int b = 0; b < n / QK_K; b++) {
        __m512i sums[4][DOT_ROWS];
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++) sums[i][j] = _mm512_setzero_si512();
        for (int half = 0; half < 2; half++) {
            for (int pair = 0; pair < 2; pair++) {  /* quarters 0 and 1 (low nibbles), then 2 and 3 (high) */
                __m512i q[4], scale[4];
                for (int i = 0; i < R; i++) {
                    const block_q6_K *x = (const block_q6_K *)W_ROW(i) + b;
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
                        sums[i][j] = _mm512_dpwssd_epi32(sums[i][j], _mm512_maddubs_epi16(q[i], v), scale[i]);
                }
            }
        }
        for (int i = 0; i < R; i++) {
            const block_q6_K *x = (const block_q6_K *)W_ROW(i) + b;
            const float d = half_to_float(x->d);
            const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
            for (int j = 0; j < C; j++) {
                const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                const __m256i products = _mm256_madd_epi16(scales16, _mm256_loadu_si256((const __m256i *)y->bsums));
                const __m128i folded = _mm_add_epi32(_mm256_castsi256_si128(products),
                                                     _mm256_extracti128_si256(products, 1));
                const __m128i twice = _mm_add_epi32(folded, _mm_shuffle_epi32(folded, _MM_SHUFFLE(1, 0, 3, 2)));
                const int offset = _mm_cvtsi128_si32(_mm_add_epi32(twice, _mm_shuffle_epi32(twice, 1)));
                const __m256i total = _mm256_sub_epi32(fold_halves(sums[i][j]),
                                                       _mm256_setr_epi32(32 * offset, 0, 0, 0, 0, 0, 0, 0));
                acc[i][j] = _mm256_fmadd_ps(_mm256_set1_ps(d * y->d), _mm256_cvtepi32_ps(total), acc[i][j]);
            }
        }
    }
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) out[i * C + j] = hsum_8(acc[i][j]);
}

/* Each kernel specialised for the tile shapes project() uses, so its loops unroll into registers: 1 x 1 for a
 * decode step (2 x 1 for the legacy 4- and 5-bit types, model.c's decode_rows), 4 x C for a prompt, and the
 * edges. The switch is on the shape, not the type: each type has its own entry. */
#define TILE_ENTRY(NAME)                                                                                        \
    void ll_tiles_##NAME(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, int R, int C,    \
                         float *out) {                                                                          \
        switch (R * 8 + C) {                                                                                    \
        case 1 * 8 + 1: NAME##_tile(n, w, w_stride, a, a_stride, 1, 1, out); break;                             \
        case 2 * 8 + 1: NAME##_tile(n, w, w_stride, a, a_stride, 2, 1, out); break;                             \
        case 4 * 8 + 1: NAME##_tile(n, w, w_stride, a, a_stride, 4, 1, out); break;                             \
        case 4 * 8 + 2: NAME##_tile(n, w, w_stride, a, a_stride, 4, 2, out); break;                             \
        case 4 * 8 + 3: NAME##_tile(n, w, w_stride, a, a_stride, 4, 3, out); break;                             \
        case 4 * 8 + 4: NAME##_tile(n, w, w_stride, a, a_stride, 4, 4, out); break;                             \
        case 1 * 8 + 2: NAME##_tile(n, w, w_stride, a, a_stride, 1, 2, out); break;                             \
        case 1 * 8 + 3: NAME##_tile(n, w, w_stride, a, a_stride, 1, 3, out); break;                             \
        case 1 * 8 + 4: NAME##_tile(n, w, w_stride, a, a_stride, 1, 4, out); break;                             \
        default:                                                                                                \
            for (int i = 0; i < R; i++)                                                                         \
                for (int j = 0; j < C; j++)                                                                     \
                    NAME##_tile(n, W_ROW(i), w_stride, A_ROW(j), a_stride, 1, 1, out + i * C + j);              \
        }                                                                                                       \
    }

TILE_ENTRY(q4_0) TILE_ENTRY(q4_1) TILE_ENTRY(q5_0) TILE_ENTRY(q5_1) TILE_ENTRY(q8_0)
TILE_ENTRY(q4_K) TILE_ENTRY(q5_K) TILE_ENTRY(q6_K)

#endif
