/* AVX2 kernels: the quant types' tiles where AVX-512 VNNI is missing (AVX2-only CPUs), and the float types' tiles on
 * every AVX2 CPU. A tile multiplies up to 4 weight rows with up to DOT_ROWS activation rows: a weight block is
 * unpacked once for every activation row in the tile, and an activation block loaded once for every weight row.
 * The quant types compute quants.c's canonical dot to the last bit: each block's products summed exactly as
 * integers in vector lanes, reduced to one integer, then the scalar float steps.
 */
#include "gemm.h"

#if defined(__AVX2__) && defined(__FMA__)

#define INLINE static inline __attribute__((always_inline))

/* The sum of 8 int32 lanes (exact). */
INLINE int sum_8(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

INLINE float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* 16 bytes of nibbles -> 32 bytes: the low nibbles (elements 0..15), then the high ones (16..31). */
INLINE __m256i nibbles_32(const uint8_t *qs) {
    const __m128i packed = _mm_loadu_si128((const __m128i *)qs);
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

/* 32 bits -> 32 bytes, 0xFF where the bit is set. */
INLINE __m256i bits_32(const uint8_t *bits) {
    uint32_t word;
    memcpy(&word, bits, 4);
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)word),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
    const __m256i marked = _mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(marked, _mm256_set1_epi64x(-1));
}

/* Unsigned bytes times signed bytes, summed in fours: 8 int32 lanes. */
INLINE __m256i dot_u8_s8(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

/* The tile kernels below multiply R weight rows (w_stride bytes apart) with C activation rows (a_stride
 * apart) into out[i * C + j]. Each weight block is unpacked once for the C activations and each activation
 * block loaded once for the R weights: a decode step runs 1 x 1 tiles, a prompt's pass 4 x 4 (PREFILL_ROWS by
 * DOT_ROWS in model.c; smaller at the end of a job's rows or of the prompt). */
#define W_ROW(i) ((const char *)w + (size_t)(i) * w_stride)
#define A_ROW(j) ((const char *)a + (size_t)(j) * a_stride)

/* The legacy 32-element types: each block is a scale (and minimum) times 32 small whole numbers.
 * q is the block's whole numbers as bytes; signed types multiply via |q| and sign-moved activations. */
#define LEGACY_KERNEL(NAME, WBLOCK, ABLOCK, UNPACK, SIGNED, MINIMUM)                                          \
    INLINE void NAME##_tile(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, const int R,  \
                            const int C, float *out) {                                                        \
        float sums[4][DOT_ROWS], minimums[4][DOT_ROWS];                                                       \
        for (int i = 0; i < R; i++)                                                                           \
            for (int j = 0; j < C; j++) sums[i][j] = minimums[i][j] = 0.0f;                                   \
        for (int b = 0; b < n / QK; b++) {                                                                    \
            __m256i q[4], u[4];                                                                               \
            float dw[4], mw[4];                                                                               \
            for (int i = 0; i < R; i++) {                                                                     \
                const WBLOCK *x = (const WBLOCK *)W_ROW(i) + b;                                               \
                q[i] = UNPACK;                                                                                \
                u[i] = SIGNED ? _mm256_sign_epi8(q[i], q[i]) : q[i];                                          \
                dw[i] = half_to_float(x->d);                                                                  \
                mw[i] = MINIMUM ? MINIMUM_OF(x) : 0.0f;                                                       \
            }                                                                                                 \
            for (int j = 0; j < C; j++) {                                                                     \
                const ABLOCK *y = (const ABLOCK *)A_ROW(j) + b;                                               \
                const __m256i v = _mm256_loadu_si256((const __m256i *)y->qs);                                  \
                const float dy = half_to_float(y->d), sy = MINIMUM ? SUM_OF(y) : 0.0f;                        \
                for (int i = 0; i < R; i++) {                                                                 \
                    const __m256i signed_v = SIGNED ? _mm256_sign_epi8(v, q[i]) : v;                          \
                    sums[i][j] = fmaf(dw[i] * dy, (float)sum_8(dot_u8_s8(u[i], signed_v)), sums[i][j]);       \
                    if (MINIMUM) minimums[i][j] = fmaf(mw[i], sy, minimums[i][j]);                            \
                }                                                                                             \
            }                                                                                                 \
        }                                                                                                     \
        for (int i = 0; i < R; i++)                                                                           \
            for (int j = 0; j < C; j++) out[i * C + j] = MINIMUM ? sums[i][j] + minimums[i][j] : sums[i][j];  \
    }

#define MINIMUM_OF(x) 0.0f
#define SUM_OF(y) 0.0f
LEGACY_KERNEL(q4_0, block_q4_0, block_q8_0, _mm256_sub_epi8(nibbles_32(x->qs), _mm256_set1_epi8(8)), 1, 0)
LEGACY_KERNEL(q8_0, block_q8_0, block_q8_0, _mm256_loadu_si256((const __m256i *)x->qs), 1, 0)
/* Q5_0: a clear fifth bit means value - 16, which OR-ing 0xF0 into the nibble gives as a signed byte. */
LEGACY_KERNEL(q5_0, block_q5_0, block_q8_0,
              _mm256_or_si256(nibbles_32(x->qs), _mm256_andnot_si256(bits_32(x->qh), _mm256_set1_epi8((char)0xF0))),
              1, 0)
#undef MINIMUM_OF
#undef SUM_OF
#define MINIMUM_OF(x) half_to_float((x)->m)
#define SUM_OF(y) half_to_float((y)->s)
LEGACY_KERNEL(q4_1, block_q4_1, block_q8_1, nibbles_32(x->qs), 0, 1)
LEGACY_KERNEL(q5_1, block_q5_1, block_q8_1,
              _mm256_or_si256(nibbles_32(x->qs), _mm256_and_si256(bits_32(x->qh), _mm256_set1_epi8(0x10))), 0, 1)
#undef MINIMUM_OF
#undef SUM_OF

/* Q4_K and Q5_K: 256-element super-blocks of eight 32-element sub-blocks, each with a 6-bit scale and minimum. */
INLINE void k4_tile(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, const int R, const int C,
                    float *out, const int five) {
    float sums_f[4][DOT_ROWS], minimums[4][DOT_ROWS];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) sums_f[i][j] = minimums[i][j] = 0.0f;
    const __m256i low4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    const size_t block_bytes = five ? sizeof(block_q5_K) : sizeof(block_q4_K);
    for (int b = 0; b < n / QK_K; b++) {
        const uint8_t *block[4];
        uint8_t scales[4][8], mins[4][8];
        __m256i high_bits[4];
        for (int i = 0; i < R; i++) {
            block[i] = (const uint8_t *)W_ROW(i) + b * block_bytes;
            for (int k = 0; k < 8; k++) k_scale_min(k, block[i] + 4, &scales[i][k], &mins[i][k]);
            high_bits[i] = five ? _mm256_loadu_si256((const __m256i *)(block[i] + 16)) : _mm256_setzero_si256();
        }
        __m256i sums[4][DOT_ROWS];
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++) sums[i][j] = _mm256_setzero_si256();
        for (int k = 0; k < 4; k++) {
            __m256i low[4], high[4];
            for (int i = 0; i < R; i++) {
                const __m256i bits = _mm256_loadu_si256((const __m256i *)(block[i] + (five ? 48 : 16) + 32 * k));
                low[i] = _mm256_and_si256(bits, low4);
                high[i] = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low4);
                if (five) {
                    low[i] = _mm256_or_si256(low[i], _mm256_slli_epi16(
                        _mm256_and_si256(_mm256_srli_epi16(high_bits[i], 2 * k), one), 4));
                    high[i] = _mm256_or_si256(high[i], _mm256_slli_epi16(
                        _mm256_and_si256(_mm256_srli_epi16(high_bits[i], 2 * k + 1), one), 4));
                }
            }
            for (int j = 0; j < C; j++) {
                const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                const __m256i ylow = _mm256_loadu_si256((const __m256i *)(y->qs + 64 * k));
                const __m256i yhigh = _mm256_loadu_si256((const __m256i *)(y->qs + 64 * k + 32));
                for (int i = 0; i < R; i++) {
                    const __m256i pl = _mm256_madd_epi16(_mm256_maddubs_epi16(low[i], ylow),
                                                         _mm256_set1_epi16(scales[i][2 * k]));
                    const __m256i ph = _mm256_madd_epi16(_mm256_maddubs_epi16(high[i], yhigh),
                                                         _mm256_set1_epi16(scales[i][2 * k + 1]));
                    sums[i][j] = _mm256_add_epi32(sums[i][j], _mm256_add_epi32(pl, ph));
                }
            }
        }
        for (int i = 0; i < R; i++) {
            ll_half dh, mh;
            memcpy(&dh, block[i], 2);
            memcpy(&mh, block[i] + 2, 2);
            const float d = half_to_float(dh), dmin = half_to_float(mh);
            for (int j = 0; j < C; j++) {
                const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                int m = 0;
                for (int s = 0; s < 8; s++) m += mins[i][s] * (y->bsums[2 * s] + y->bsums[2 * s + 1]);
                sums_f[i][j] = fmaf(d * y->d, (float)sum_8(sums[i][j]), sums_f[i][j]);
                minimums[i][j] = fmaf(dmin * y->d, (float)m, minimums[i][j]);
            }
        }
    }
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) out[i * C + j] = sums_f[i][j] - minimums[i][j];
}

INLINE void q4_K_tile(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, const int R, const int C,
                      float *out) {
    k4_tile(n, w, w_stride, a, a_stride, R, C, out, 0);
}

INLINE void q5_K_tile(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, const int R, const int C,
                      float *out) {
    k4_tile(n, w, w_stride, a, a_stride, R, C, out, 1);
}

/* Q6_K: 6-bit whole numbers (stored +32) in 16-element groups, each with an 8-bit signed scale. */
INLINE void q6_K_tile(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, const int R, const int C,
                      float *out) {
    float sums_f[4][DOT_ROWS];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) sums_f[i][j] = 0.0f;
    const __m256i low4 = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(3);
    for (int b = 0; b < n / QK_K; b++) {
        __m256i sums[4][DOT_ROWS];
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++) sums[i][j] = _mm256_setzero_si256();
        for (int half = 0; half < 2; half++) {
            for (int k = 0; k < 4; k++) {
                __m256i q[4], scale[4];
                for (int i = 0; i < R; i++) {
                    const block_q6_K *x = (const block_q6_K *)W_ROW(i) + b;
                    const uint8_t *ql = x->ql + 64 * half + 32 * (k & 1), *qh = x->qh + 32 * half;
                    const __m256i l = _mm256_loadu_si256((const __m256i *)ql);
                    const __m256i h = _mm256_loadu_si256((const __m256i *)qh);
                    const __m256i nibble = k < 2 ? _mm256_and_si256(l, low4) : _mm256_and_si256(_mm256_srli_epi16(l, 4), low4);
                    q[i] = _mm256_or_si256(nibble, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2 * k), two), 4));
                    const int8_t *s = x->scales + 8 * half + 2 * k;
                    scale[i] = _mm256_set_m128i(_mm_set1_epi16(s[1]), _mm_set1_epi16(s[0]));
                }
                for (int j = 0; j < C; j++) {
                    const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                    const __m256i v = _mm256_loadu_si256((const __m256i *)(y->qs + 128 * half + 32 * k));
                    for (int i = 0; i < R; i++)
                        sums[i][j] = _mm256_add_epi32(sums[i][j], _mm256_madd_epi16(_mm256_maddubs_epi16(q[i], v), scale[i]));
                }
            }
        }
        for (int i = 0; i < R; i++) {
            const block_q6_K *x = (const block_q6_K *)W_ROW(i) + b;
            const float d = half_to_float(x->d);
            for (int j = 0; j < C; j++) {
                const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                int offset = 0;  /* the stored whole numbers are value + 32 */
                for (int g = 0; g < 16; g++) offset += x->scales[g] * y->bsums[g];
                sums_f[i][j] = fmaf(d * y->d, (float)(sum_8(sums[i][j]) - 32 * offset), sums_f[i][j]);
            }
        }
    }
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) out[i * C + j] = sums_f[i][j];
}

/* Float weights against float activations. */
INLINE __m256 load_weights_8(int type, const void *w, int i) {
    if (type == LL_F32) return _mm256_loadu_ps((const float *)w + i);
    const __m128i halves = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
    if (type == LL_F16) return _mm256_cvtph_ps(halves);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(halves), 16));
}

INLINE void float_tile(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, const int R,
                       const int C, float *out, const int type) {
    __m256 acc[4][DOT_ROWS];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) acc[i][j] = _mm256_setzero_ps();
    int e = 0;
    for (; e + 8 <= n; e += 8) {
        __m256 wv[4];
        for (int i = 0; i < R; i++) wv[i] = load_weights_8(type, W_ROW(i), e);
        for (int j = 0; j < C; j++) {
            const __m256 av = _mm256_loadu_ps((const float *)A_ROW(j) + e);
            for (int i = 0; i < R; i++) acc[i][j] = _mm256_fmadd_ps(wv[i], av, acc[i][j]);
        }
    }
    const size_t element = type == LL_F32 ? 4 : 2;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            out[i * C + j] = hsum_ps(acc[i][j]);
            if (e < n)  /* the last n % 8 elements */
                out[i * C + j] += ll_type(type)->dot_reference(n - e, W_ROW(i) + (size_t)e * element,
                                                               (const float *)A_ROW(j) + e);
        }
}

INLINE void f32_tile(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, const int R, const int C,
                     float *out) {
    float_tile(n, w, w_stride, a, a_stride, R, C, out, LL_F32);
}
INLINE void f16_tile(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, const int R, const int C,
                     float *out) {
    float_tile(n, w, w_stride, a, a_stride, R, C, out, LL_F16);
}
INLINE void bf16_tile(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, const int R, const int C,
                      float *out) {
    float_tile(n, w, w_stride, a, a_stride, R, C, out, LL_BF16);
}

/* Each kernel specialised for the tile shapes project() uses, so its loops unroll into registers: 4 x C for a
 * prompt, its edges, and 1 x 1 for a decode step (the default's loop, whose calls have constant shapes too).
 * The switch is on the shape, not the type: each type has its own entry. */
#define TILE_ENTRY(NAME)                                                                                        \
    void ll_tiles_##NAME(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, int R, int C,    \
                         float *out) {                                                                          \
        switch (R * 8 + C) {                                                                                    \
        case 4 * 8 + 1: NAME##_tile(n, w, w_stride, a, a_stride, 4, 1, out); break;                             \
        case 4 * 8 + 2: NAME##_tile(n, w, w_stride, a, a_stride, 4, 2, out); break;                             \
        case 4 * 8 + 4: NAME##_tile(n, w, w_stride, a, a_stride, 4, 4, out); break;                             \
        case 3 * 8 + 4: NAME##_tile(n, w, w_stride, a, a_stride, 3, 4, out); break;                             \
        case 2 * 8 + 4: NAME##_tile(n, w, w_stride, a, a_stride, 2, 4, out); break;                             \
        case 2 * 8 + 3: NAME##_tile(n, w, w_stride, a, a_stride, 2, 3, out); break;                             \
        case 2 * 8 + 2: NAME##_tile(n, w, w_stride, a, a_stride, 2, 2, out); break;                             \
        case 2 * 8 + 1: NAME##_tile(n, w, w_stride, a, a_stride, 2, 1, out); break;                             \
        case 1 * 8 + 4: NAME##_tile(n, w, w_stride, a, a_stride, 1, 4, out); break;                             \
        case 1 * 8 + 3: NAME##_tile(n, w, w_stride, a, a_stride, 1, 3, out); break;                             \
        case 1 * 8 + 2: NAME##_tile(n, w, w_stride, a, a_stride, 1, 2, out); break;                             \
        default:                                                                                                \
            for (int i = 0; i < R; i++)                                                                         \
                for (int j = 0; j < C; j++)                                                                     \
                    NAME##_tile(n, W_ROW(i), w_stride, A_ROW(j), a_stride, 1, 1, out + i * C + j);              \
        }                                                                                                       \
    }

#if !LL_AVX512_DOTS  /* with AVX-512 VNNI the quant types run dots_avx512.c's kernels: not compiled twice */
TILE_ENTRY(q4_0) TILE_ENTRY(q4_1) TILE_ENTRY(q5_0) TILE_ENTRY(q5_1) TILE_ENTRY(q8_0)
TILE_ENTRY(q4_K) TILE_ENTRY(q5_K) TILE_ENTRY(q6_K)
#endif
TILE_ENTRY(f32) TILE_ENTRY(f16) TILE_ENTRY(bf16)

#if LL_GEMM_LANES == 8
/* ---- the GEMM of a prompt's pass (gemm.h): 8 tokens in the lanes of a register ----
 *
 * Without VNNI, 4 products a lane are maddubs (unsigned activations by the broadcast signed weights, summed in
 * pairs to 16 bits). No pair saturates 16 bits for weights within +-32, which every type's are but Q8_0's: its
 * products take the signed activations and the weights' sign moved onto them (as the tiles do), with no +128 to
 * take off. Several maddubs are summed in 16 bits (GEMM_CHUNK: as many as 32,767 holds of 2 x 255 x the type's
 * largest weight magnitude) before one madd widens them, by ones or, for a k-quant, by the sub-block's scale: the
 * same whole number as widening each and multiplying the sub-block's sum, in fewer instructions. */
#define GEMM_CHUNK(NAME)                                                                                          \
    (__builtin_strncmp(#NAME, "q4_0", 4) == 0   ? 8 /* |w| <= 8: 8 x 4,080 */                                    \
     : __builtin_strncmp(#NAME, "q8_0", 4) == 0 ? 1 /* the pair alone may reach 32,512 */                        \
     : __builtin_strncmp(#NAME, "q4_1", 4) == 0 || __builtin_strncmp(#NAME, "q4_K", 4) == 0 ||                    \
             __builtin_strncmp(#NAME, "q5_0", 4) == 0                                                             \
         ? 4 /* |w| <= 16: 4 x 8,160 */                                                                           \
         : 2 /* Q5_1, Q5_K, Q6_K: |w| <= 32: 2 x 16,320 */)

#define GEMM_KERNEL(NAME, BLOCK, SUB, SCALED, MINIMUM, ACTIVATION)                                                \
    INLINE void NAME##_gemm_block(const unpacked *u, const int R, const char *panel, size_t group_stride,          \
                                  const int TV, float (*sums)[2][LL_GEMM_LANES],                                  \
                                  float (*minimums)[2][LL_GEMM_LANES]) {                                          \
        const int full_range = __builtin_strncmp(#NAME, "q8_0", 4) == 0; /* and q8_0x16 */                        \
        const __m256i ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8((char)0x80);                           \
        const char *p[2];                                                                                         \
        for (int t = 0; t < TV; t++) p[t] = panel + (size_t)t * group_stride;                                     \
        __m256i isum[4][2];                                                                                       \
        for (int r = 0; r < R; r++)                                                                               \
            for (int t = 0; t < TV; t++) isum[r][t] = _mm256_setzero_si256();                                     \
        for (int s = 0; s < BLOCK / SUB; s++) {                                                                   \
            for (int c = 0; c < SUB / 4; c += GEMM_CHUNK(NAME)) {                                                 \
                __m256i part[4][2];                                                                               \
                for (int r = 0; r < R; r++)                                                                       \
                    for (int t = 0; t < TV; t++) part[r][t] = _mm256_setzero_si256();                             \
                for (int within = c; within < c + GEMM_CHUNK(NAME); within++) { /* unrolled into registers */      \
                    const int g = s * SUB / 4 + within;                                                           \
                    __m256i act[2];                                                                               \
                    for (int t = 0; t < TV; t++) {                                                                \
                        act[t] = _mm256_load_si256((const __m256i *)(p[t] + 32 * g));                             \
                        if (full_range) act[t] = _mm256_xor_si256(act[t], flip);                                  \
                    }                                                                                             \
                    for (int r = 0; r < R; r++) {                                                                 \
                        int32_t four;                                                                             \
                        memcpy(&four, u[r].q + 4 * g, 4);                                                         \
                        const __m256i wq = _mm256_set1_epi32(four);                                               \
                        const __m256i magnitude = full_range ? _mm256_abs_epi8(wq) : wq;                          \
                        for (int t = 0; t < TV; t++) {                                                            \
                            part[r][t] = _mm256_add_epi16(                                                        \
                                part[r][t], full_range ? _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(act[t], wq)) \
                                                       : _mm256_maddubs_epi16(act[t], wq));                       \
                            __asm__("" : "+x"(part[r][t]));                                                        \
                        }                                                                                         \
                    }                                                                                             \
                }                                                                                                 \
                for (int r = 0; r < R; r++) {                                                                     \
                    const __m256i by = SCALED ? _mm256_set1_epi16((int16_t)u[r].scale[s]) : ones;                 \
                    for (int t = 0; t < TV; t++)                                                                  \
                        isum[r][t] = _mm256_add_epi32(isum[r][t], _mm256_madd_epi16(part[r][t], by));             \
                }                                                                                                 \
            }                                                                                                     \
        }                                                                                                         \
        for (int t = 0; t < TV; t++) {                                                                            \
            const __m256 da = _mm256_load_ps((const float *)(p[t] + BLOCK * LL_GEMM_LANES));                      \
            const char *extra = p[t] + BLOCK * LL_GEMM_LANES + 4 * LL_GEMM_LANES;                                 \
            for (int r = 0; r < R; r++) {                                                                         \
                const __m256i exact =                                                                             \
                    _mm256_sub_epi32(isum[r][t], _mm256_set1_epi32(full_range ? 0 : u[r].correction));            \
                _mm256_store_ps(sums[r][t], _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(u[r].d), da),            \
                                                            _mm256_cvtepi32_ps(exact), _mm256_load_ps(sums[r][t])));\
                if (MINIMUM == 1)                                                                                 \
                    _mm256_store_ps(minimums[r][t], _mm256_fmadd_ps(_mm256_set1_ps(u[r].m),                       \
                                                                    _mm256_load_ps((const float *)extra),         \
                                                                    _mm256_load_ps(minimums[r][t])));             \
                if (MINIMUM == 2) {                                                                               \
                    __m256i m = _mm256_setzero_si256();                                                           \
                    for (int q = 0; q < 4; q++)                                                                   \
                        m = _mm256_add_epi32(m, _mm256_madd_epi16(                                                \
                                                    _mm256_load_si256((const __m256i *)(extra + 32 * q)),         \
                                                    _mm256_set1_epi32(u[r].min_pairs[q])));                       \
                    _mm256_store_ps(minimums[r][t], _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(u[r].m), da),    \
                                                                    _mm256_cvtepi32_ps(m),                        \
                                                                    _mm256_load_ps(minimums[r][t])));             \
                }                                                                                                 \
            }                                                                                                     \
        }                                                                                                         \
    }

GEMM_TYPES(GEMM_KERNEL)

#if !LL_AVX512_DOTS
/* ---- Q4_0 packed 16 rows a group (quants.h): one row per 32-bit lane, two registers of 8 rows a block, so a
 * step's sums need no reduction across lanes. Without VNNI, 4 products a lane are maddubs (the unsigned nibbles by
 * the broadcast signed activations, in pairs to 16 bits), and a block's 8 such stay within 16 bits (8 x 2 x 15 x 128
 * = 30,720) before one madd by ones widens them: the exact integer of the canonical dot. ---- */
/* A group's row results for token j (rows 8h..8h+7 in the lanes of one register) into out[row * C + j]. */
INLINE void store_group_row(__m256 half, int h, int j, int C, float *out) {
    float lanes[8];
    _mm256_storeu_ps(lanes, half);
    for (int i = 0; i < 8; i++) out[(8 * h + i) * C + j] = lanes[i];
}

/* Each row's fifth bits first..first + 3 (its lane's word's bits; first a multiple of 4) as 0x10 in its lane's bytes
 * 0..3. */
INLINE __m256i fifth_bits_x4(__m256i qh, const int first) {
    const char byte = (char)(first / 8);
    const __m256i spread = _mm256_shuffle_epi8(  /* the lane's byte holding the four bits, in each of its bytes */
        qh, _mm256_add_epi8(_mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12,
                                             0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12),
                            _mm256_set1_epi8(byte)));
    const __m256i bit = _mm256_set1_epi32((int)(0x08040201u << (first % 8)));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
}

/* minimum: Q4_1 (the nibbles are the values; its rows' minimums after the scales, Q8_1 activations); five: Q5_0 and
 * Q5_1, each value's fifth bit on its nibble (Q5_0's values + 16), whose maddubs are widened four at a time (at most
 * 4 x 2 x 31 x 128 = 31,744). */
INLINE void q4_x16_tile(int n, const void *group, const void *a, size_t a_stride, const int C, float *out,
                        const int minimum, const int five) {
    const int blocks = n / QK;
    const size_t group_block = five ? (minimum ? Q5_1X16_BLOCK : Q5_0X16_BLOCK)
                                    : (minimum ? Q4_1X16_BLOCK : Q4_0X16_BLOCK);
    const int fifth_bits = minimum ? 64 : 32, quants = fifth_bits + (five ? 64 : 0);
    const __m256i low4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1), one_bytes = _mm256_set1_epi8(1);
    __m256 sums[DOT_ROWS][2], minimums[DOT_ROWS][2];
    for (int j = 0; j < C; j++) sums[j][0] = sums[j][1] = minimums[j][0] = minimums[j][1] = _mm256_setzero_ps();
    for (int b = 0; b < blocks; b++) {
        const uint8_t *o = (const uint8_t *)group + (size_t)b * group_block;
        prefetch_ahead(o, group_block);
        int offset[DOT_ROWS];
        float dy[DOT_ROWS], sy[DOT_ROWS];
        const int8_t *yq[DOT_ROWS];
        for (int j = 0; j < C; j++) {  /* Q4_0's nibbles are the values + 8: 8 times the activations' sum comes off */
            const size_t y_bytes = minimum ? sizeof(block_q8_1) : sizeof(block_q8_0);
            const uint8_t *y = (const uint8_t *)A_ROW(j) + (size_t)b * y_bytes;
            ll_half half[2];
            memcpy(half, y, minimum ? 4 : 2);
            yq[j] = (const int8_t *)(y + (minimum ? 4 : 2));
            const __m256i v = _mm256_loadu_si256((const __m256i *)yq[j]);
            const int values_above = five ? 16 : 8;
            offset[j] = minimum ? 0 : values_above * sum_8(_mm256_madd_epi16(_mm256_maddubs_epi16(one_bytes, v), ones));
            dy[j] = half_to_float(half[0]);
            sy[j] = minimum ? half_to_float(half[1]) : 0.0f;
        }
        for (int h = 0; h < 2; h++) {  /* rows 8h..8h+7 */
            __m256i q[8];  /* q[k]: elements 4k..4k+3 of each row */
            const __m256i qh = five ? _mm256_loadu_si256((const __m256i *)(o + fifth_bits + 32 * h)) : low4;
            for (int k = 0; k < 4; k++) {
                const __m256i x = _mm256_loadu_si256((const __m256i *)(o + quants + 64 * k + 32 * h));
                q[k] = _mm256_and_si256(x, low4);
                q[4 + k] = _mm256_and_si256(_mm256_srli_epi16(x, 4), low4);
                if (five) {
                    q[k] = _mm256_or_si256(q[k], fifth_bits_x4(qh, 4 * k));
                    q[4 + k] = _mm256_or_si256(q[4 + k], fifth_bits_x4(qh, 16 + 4 * k));
                }
            }
            const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 16 * h)));
            const __m256 mw = minimum ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 32 + 16 * h))) : dw;
            for (int j = 0; j < C; j++) {
                __m256i pairs[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
                for (int k = 0; k < 8; k++) {
                    int32_t four;
                    memcpy(&four, yq[j] + 4 * k, 4);
                    const int into = five ? k / 4 : 0;
                    pairs[into] = _mm256_add_epi16(pairs[into], _mm256_maddubs_epi16(q[k], _mm256_set1_epi32(four)));
                }
                __m256i widened = _mm256_madd_epi16(pairs[0], ones);
                if (five) widened = _mm256_add_epi32(widened, _mm256_madd_epi16(pairs[1], ones));
                const __m256i exact = _mm256_sub_epi32(widened, _mm256_set1_epi32(offset[j]));
                sums[j][h] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(dy[j])), _mm256_cvtepi32_ps(exact),
                                             sums[j][h]);
                if (minimum) minimums[j][h] = _mm256_fmadd_ps(mw, _mm256_set1_ps(sy[j]), minimums[j][h]);
            }
        }
    }
    for (int j = 0; j < C; j++)  /* Q4_0: + 0, sum + minimum */
        for (int h = 0; h < 2; h++) store_group_row(_mm256_add_ps(sums[j][h], minimums[j][h]), h, j, C, out);
}

PACKED_TILES_ENTRY(q4_0x16, q4_x16_tile, , 0, 0)
GEMM_KERNEL(q4_0x16, QK, QK, 0, 0, LL_Q8_0)
GEMM_ENTRY(q4_0x16, QK, 0, LL_Q8_0)
PACKED_TILES_ENTRY(q4_1x16, q4_x16_tile, , 1, 0)
GEMM_KERNEL(q4_1x16, QK, QK, 0, 1, LL_Q8_1)
GEMM_ENTRY(q4_1x16, QK, 1, LL_Q8_1)
PACKED_TILES_ENTRY(q5_0x16, q4_x16_tile, , 0, 1)
GEMM_KERNEL(q5_0x16, QK, QK, 0, 0, LL_Q8_0)
GEMM_ENTRY(q5_0x16, QK, 0, LL_Q8_0)
PACKED_TILES_ENTRY(q5_1x16, q4_x16_tile, , 1, 1)
GEMM_KERNEL(q5_1x16, QK, QK, 0, 1, LL_Q8_1)
GEMM_ENTRY(q5_1x16, QK, 1, LL_Q8_1)

/* ---- Q8_0 packed 16 rows a group: eight registers of quants a block, each holding elements 4k..4k+3 of 8 rows. Its
 * bytes are whole signed numbers, so its products take the tiles' sign trick: the weights' magnitudes by the
 * broadcast activations with the weights' signs moved onto them (a pair at most 2 x 128 x 127 = 32,512, so each
 * maddubs is widened at once). The file's layout spent most of a step reducing each row's lanes to one sum a block;
 * here each lane is a row and takes its row's canonical float steps. ---- */
INLINE void q8_x16_tile(int n, const void *group, const void *a, size_t a_stride, const int C, float *out) {
    const int blocks = n / QK;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 sums[DOT_ROWS][2];
    for (int j = 0; j < C; j++) sums[j][0] = sums[j][1] = _mm256_setzero_ps();
    for (int b = 0; b < blocks; b++) {
        const uint8_t *o = (const uint8_t *)group + (size_t)b * Q8_0X16_BLOCK;
        prefetch_ahead(o, Q8_0X16_BLOCK);
        float dy[DOT_ROWS];
        const int8_t *yq[DOT_ROWS];
        for (int j = 0; j < C; j++) {
            const block_q8_0 *y = (const block_q8_0 *)A_ROW(j) + b;
            dy[j] = half_to_float(y->d);
            yq[j] = y->qs;
        }
        for (int h = 0; h < 2; h++) {  /* rows 8h..8h+7 */
            __m256i q[8], magnitude[8];  /* q[k]: elements 4k..4k+3 of each row */
            for (int k = 0; k < 8; k++) {
                q[k] = _mm256_loadu_si256((const __m256i *)(o + 32 + 64 * k + 32 * h));
                magnitude[k] = _mm256_abs_epi8(q[k]);
            }
            const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 16 * h)));
            for (int j = 0; j < C; j++) {
                __m256i exact = _mm256_setzero_si256();
                for (int k = 0; k < 8; k++) {
                    int32_t four;
                    memcpy(&four, yq[j] + 4 * k, 4);
                    const __m256i signed_v = _mm256_sign_epi8(_mm256_set1_epi32(four), q[k]);
                    const __m256i pairs = _mm256_maddubs_epi16(magnitude[k], signed_v);
                    exact = _mm256_add_epi32(exact, _mm256_madd_epi16(pairs, ones));
                }
                sums[j][h] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(dy[j])), _mm256_cvtepi32_ps(exact),
                                             sums[j][h]);
            }
        }
    }
    for (int j = 0; j < C; j++)
        for (int h = 0; h < 2; h++) store_group_row(sums[j][h], h, j, C, out);
}

PACKED_TILES_ENTRY(q8_0x16, q8_x16_tile, )
GEMM_KERNEL(q8_0x16, QK, QK, 0, 0, LL_Q8_0)
GEMM_ENTRY(q8_0x16, QK, 0, LL_Q8_0)

/* ---- Q4_K and Q5_K packed 16 rows a group: as dots_avx512.c's, 8 rows a register, each sub-block's maddubs summed
 * within 16 bits (Q4_K: its 8 at once, at most 8 x 2 x 15 x 128 = 30,720; Q5_K: 4 at a time, at most
 * 4 x 2 x 31 x 128 = 31,744), then widened by a madd by the row's scale: the sum times the scale, exactly; the
 * minimums' term by madd. ---- */

/* Each byte's bits moved left by `by` (right where it is negative); bits crossing into a neighbour byte are the
 * caller's to mask off. */
INLINE __m256i shift_bits(__m256i v, const int by) {
    return by >= 0 ? _mm256_slli_epi16(v, by) : _mm256_srli_epi16(v, -by);
}

INLINE void k4x16_tile(int n, const void *group, const void *a, size_t a_stride, const int C, float *out,
                       const int five) {
    const int blocks = n / QK_K;
    const size_t group_block = five ? Q5_KX16_BLOCK : Q4_KX16_BLOCK, quants = K4X16_QUANTS(five);
    const int widen_every = five ? 4 : 8;
    const __m256i sixteen = _mm256_set1_epi8(0x10);
    const __m256i low4 = _mm256_set1_epi8(0x0F), six = _mm256_set1_epi8(0x3f), two = _mm256_set1_epi8(3),
                  low_byte = _mm256_set1_epi16(0xFF);
    /* Within each row's lane, scale byte 0 (then 1, 2, 3) as a word repeated in both halves: a madd by it is the
     * sub-block's sum times its scale. */
    const __m256i scale_byte0 = _mm256_setr_epi8(0, -1, 0, -1, 4, -1, 4, -1, 8, -1, 8, -1, 12, -1, 12, -1,
                                                 0, -1, 0, -1, 4, -1, 4, -1, 8, -1, 8, -1, 12, -1, 12, -1);
    __m256 sums[DOT_ROWS][2], minimums[DOT_ROWS][2];
    for (int j = 0; j < C; j++)
        for (int h = 0; h < 2; h++) sums[j][h] = minimums[j][h] = _mm256_setzero_ps();
    for (int b = 0; b < blocks; b++) {
        const uint8_t *o = (const uint8_t *)group + (size_t)b * group_block;
        const int distance = five ? ll_prefetch_avx2_q5_K : ll_prefetch_ahead;
        prefetch_by(o, quants, distance);  /* the scales; each line of quants as the first half's loop comes to it */
        int32_t pairs[DOT_ROWS][4];
        for (int j = 0; j < C; j++) k_activation_pairs((const block_q8_K *)A_ROW(j) + b, pairs[j]);
        for (int h = 0; h < 2; h++) {  /* rows 8h..8h+7 */
            const __m256i w0 = _mm256_loadu_si256((const __m256i *)(o + 64 + 32 * h)),
                          w1 = _mm256_loadu_si256((const __m256i *)(o + 128 + 32 * h)),
                          w2 = _mm256_loadu_si256((const __m256i *)(o + 192 + 32 * h));
            const __m256i scales[2] = {
                _mm256_and_si256(w0, six),
                _mm256_or_si256(_mm256_and_si256(w2, low4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(w0, 6), two), 4))};
            const __m256i mins[2] = {
                _mm256_and_si256(w1, six),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(w2, 4), low4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(w1, 6), two), 4))};
            __m256i total[DOT_ROWS];
            for (int j = 0; j < C; j++) total[j] = _mm256_setzero_si256();
            for (int k = 0; k < 4; k++) {  /* sub-blocks 2k (low nibbles) and 2k + 1 (high) */
                /* bytes 2(k % 2) and 2(k % 2) + 1 of scales[k / 2]: -1's bytes stay -1 (they zero the high bytes) */
                const __m256i at = _mm256_set1_epi8((char)(2 * (k % 2)));
                const __m256i low_scale = _mm256_shuffle_epi8(scales[k / 2], _mm256_or_si256(scale_byte0, at));
                const __m256i high_scale = _mm256_shuffle_epi8(
                    scales[k / 2], _mm256_or_si256(scale_byte0, _mm256_add_epi8(at, _mm256_set1_epi8(1))));
                for (int part = 0; part < 8; part += widen_every) {
                    __m256i low_pairs[DOT_ROWS], high_pairs[DOT_ROWS];
                    for (int j = 0; j < C; j++) low_pairs[j] = high_pairs[j] = _mm256_setzero_si256();
                    for (int w = part; w < part + widen_every; w++) {
                        if (h == 0) prefetch_by(o + quants + 64 * (8 * k + w), 64, distance);
                        const __m256i x = _mm256_loadu_si256((const __m256i *)(o + quants + 64 * (8 * k + w) + 32 * h));
                        __m256i low = _mm256_and_si256(x, low4);
                        __m256i high = _mm256_and_si256(_mm256_srli_epi16(x, 4), low4);
                        if (five) {  /* bits 2k and 2k + 1 of the fifth-bit bytes, each to bit 4 (16) of its value */
                            const __m256i q5 = _mm256_loadu_si256((const __m256i *)(o + K4X16_FIFTH_BITS + 64 * w + 32 * h));
                            low = _mm256_or_si256(low, _mm256_and_si256(shift_bits(q5, 4 - 2 * k), sixteen));
                            high = _mm256_or_si256(high, _mm256_and_si256(shift_bits(q5, 3 - 2 * k), sixteen));
                        }
                        for (int j = 0; j < C; j++) {
                            const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                            int32_t first, second;
                            memcpy(&first, y->qs + 64 * k + 4 * w, 4);
                            memcpy(&second, y->qs + 64 * k + 32 + 4 * w, 4);
                            low_pairs[j] =
                                _mm256_add_epi16(low_pairs[j], _mm256_maddubs_epi16(low, _mm256_set1_epi32(first)));
                            high_pairs[j] =
                                _mm256_add_epi16(high_pairs[j], _mm256_maddubs_epi16(high, _mm256_set1_epi32(second)));
                        }
                    }
                    for (int j = 0; j < C; j++)  /* widened by the scale: at most 2 x 31,744 x 63 */
                        total[j] = _mm256_add_epi32(total[j],
                                                    _mm256_add_epi32(_mm256_madd_epi16(low_pairs[j], low_scale),
                                                                     _mm256_madd_epi16(high_pairs[j], high_scale)));
                }
            }
            const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 16 * h)));
            const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 32 + 16 * h)));
            /* the minimums as int16: lanes' (m0, m2), (m1, m3), (m4, m6), (m5, m7) */
            const __m256i min_words[4] = {_mm256_and_si256(mins[0], low_byte),
                                          _mm256_and_si256(_mm256_srli_epi16(mins[0], 8), low_byte),
                                          _mm256_and_si256(mins[1], low_byte),
                                          _mm256_and_si256(_mm256_srli_epi16(mins[1], 8), low_byte)};
            for (int j = 0; j < C; j++) {
                const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                __m256i m = _mm256_setzero_si256();
                for (int p = 0; p < 4; p++)
                    m = _mm256_add_epi32(m, _mm256_madd_epi16(min_words[p], _mm256_set1_epi32(pairs[j][p])));
                const __m256 yd = _mm256_set1_ps(y->d);
                sums[j][h] = _mm256_fmadd_ps(_mm256_mul_ps(d, yd), _mm256_cvtepi32_ps(total[j]), sums[j][h]);
                minimums[j][h] = _mm256_fmadd_ps(_mm256_mul_ps(dmin, yd), _mm256_cvtepi32_ps(m), minimums[j][h]);
            }
        }
    }
    for (int j = 0; j < C; j++)
        for (int h = 0; h < 2; h++) store_group_row(_mm256_sub_ps(sums[j][h], minimums[j][h]), h, j, C, out);
}

PACKED_TILES_ENTRY(q4_Kx16, k4x16_tile, , 0)
PACKED_TILES_ENTRY(q5_Kx16, k4x16_tile, , 1)
GEMM_KERNEL(q4_Kx16, QK_K, 32, 1, 2, LL_Q8_K)
GEMM_ENTRY(q4_Kx16, QK_K, 2, LL_Q8_K)
GEMM_KERNEL(q5_Kx16, QK_K, 32, 1, 2, LL_Q8_K)
GEMM_ENTRY(q5_Kx16, QK_K, 2, LL_Q8_K)

/* Group g's scale (of 16) in each row's lane, repeated in both of its words, from scale_words as the Q6_K and Q3_K
 * tiles make them: [2i] each lane's scales of groups 4i and 4i + 2 as int16, [2i + 1] of 4i + 1 and 4i + 3. */
INLINE __m256i group_scale(const __m256i scale_words[8], const int g) {
    const __m256i repeat_low = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13,
                                                0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13);
    return _mm256_shuffle_epi8(scale_words[2 * (g / 4) + g % 2],
                               g % 4 < 2 ? repeat_low : _mm256_add_epi8(repeat_low, _mm256_set1_epi8(2)));
}

/* The canonical float step of rows 8r..8r+7 of a Q6_K or Q3_K group's block b (its rows' d the block's first 32
 * bytes): each row's sum += d * the activations' d * its whole number, for each token. */
INLINE void k16_float_step(const uint8_t *o, const int r, const __m256i *total, const void *a, size_t a_stride, int b,
                           const int C, __m256 (*sums)[2]) {
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 16 * r)));
    for (int j = 0; j < C; j++) {
        const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
        sums[j][r] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(y->d)), _mm256_cvtepi32_ps(total[j]), sums[j][r]);
    }
}

/* ---- Q6_K packed 16 rows a group: as dots_avx512.c's, 8 rows a register (the second 32 bytes of each of its
 * 64-byte registers are rows 8..15). The whole 6-bit values (value + 32, unsigned) by the broadcast activations in
 * maddubs, two words' pairs summed within 16 bits (at most 2 x 2 x 63 x 128 = 32,256) and widened; each 16-element
 * sub-block's sum less 32 times the activations' sub-block sum, weighted by the row's int8 scale as integers; then
 * the canonical float step, lane by lane. Read a row at a time in the file's layout (each block's sum reduced across
 * lanes), the 1B shape's Q6_K step took 1.15-1.25x llama.cpp's AVX2 build's (benchmarks/real_size.py --kernels
 * avx2, EPYC AVX-512); packed, ours alone, six alternated pairs: 31-42 ms (median 40.2) against 41-51 (49.2). ---- */

INLINE void q6_Kx16_tile(int n, const void *group, const void *a, size_t a_stride, const int C, float *out) {
    const int blocks = n / QK_K;
    const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
    __m256 sums[DOT_ROWS][2];
    for (int j = 0; j < C; j++) sums[j][0] = sums[j][1] = _mm256_setzero_ps();
    for (int b = 0; b < blocks; b++) {
        const uint8_t *o = (const uint8_t *)group + (size_t)b * Q6_KX16_BLOCK;
        prefetch_ahead(o, 288);  /* d and the scales; each word's three registers as the first rows' loop comes to them */
        /* The activations' sub-block sums in pairs (groups 4i and 4i + 2, 4i + 1 and 4i + 3), for the +32's term. */
        __m256i bsum_pairs[DOT_ROWS][8];
        for (int j = 0; j < C; j++) {
            const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
            for (int i = 0; i < 4; i++)
                for (int odd = 0; odd < 2; odd++)
                    bsum_pairs[j][2 * i + odd] = _mm256_set1_epi32(
                        (int32_t)((uint32_t)(uint16_t)y->bsums[4 * i + odd] |
                                  (uint32_t)(uint16_t)y->bsums[4 * i + odd + 2] << 16));
        }
        for (int r = 0; r < 2; r++) {  /* rows 8r..8r+7 */
            /* scale_words[2i]: each lane's scales of groups 4i and 4i + 2 as int16; [2i + 1]: 4i + 1 and 4i + 3 */
            __m256i scale_words[8];
            for (int i = 0; i < 4; i++) {
                const __m256i word = _mm256_loadu_si256((const __m256i *)(o + 32 + 64 * i + 32 * r));
                scale_words[2 * i] = _mm256_srai_epi16(_mm256_slli_epi16(word, 8), 8);
                scale_words[2 * i + 1] = _mm256_srai_epi16(word, 8);
            }
            __m256i total[DOT_ROWS];
            for (int j = 0; j < C; j++) {  /* less 32 x each group's scale x its activations' sum */
                __m256i offset = _mm256_setzero_si256();
                for (int i = 0; i < 8; i++)
                    offset = _mm256_add_epi32(offset, _mm256_madd_epi16(scale_words[i], bsum_pairs[j][i]));
                total[j] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offset, 5));
            }
            for (int h = 0; h < 2; h++)
                for (int s = 0; s < 2; s++) {  /* words 4s..4s+3: elements 16s..16s+15 of each quarter */
                    __m256i scale[4];  /* group 8h + 2q + s's scale, repeated in each lane's two words */
                    for (int q = 0; q < 4; q++) {
                        const int g = 8 * h + 2 * q + s;
                        scale[q] = group_scale(scale_words, g);
                    }
                    for (int pair = 4 * s; pair < 4 * s + 4; pair += 2) {
                        __m256i pairs[DOT_ROWS][4];
                        for (int j = 0; j < C; j++)
                            for (int q = 0; q < 4; q++) pairs[j][q] = _mm256_setzero_si256();
                        for (int w = pair; w < pair + 2; w++) {
                            const uint8_t *p = o + 288 + 192 * (8 * h + w);
                            if (r == 0) prefetch_ahead(p, 192);
                            const __m256i first = _mm256_loadu_si256((const __m256i *)(p + 32 * r)),
                                          second = _mm256_loadu_si256((const __m256i *)(p + 64 + 32 * r)),
                                          high = _mm256_loadu_si256((const __m256i *)(p + 128 + 32 * r));
                            /* Each value's two high bits (bits 2q, 2q + 1 of its high byte) moved to bits 4 and 5 in
                             * one 16-bit shift and a mask: bits that cross into the next byte land below bit 4. */
                            const __m256i e[4] = {
                                _mm256_or_si256(_mm256_and_si256(first, low4),
                                                _mm256_and_si256(_mm256_slli_epi16(high, 4), bits45)),
                                _mm256_or_si256(_mm256_and_si256(second, low4),
                                                _mm256_and_si256(_mm256_slli_epi16(high, 2), bits45)),
                                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(first, 4), low4),
                                                _mm256_and_si256(high, bits45)),
                                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(second, 4), low4),
                                                _mm256_and_si256(_mm256_srli_epi16(high, 2), bits45))};
                            for (int j = 0; j < C; j++) {
                                const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                                for (int q = 0; q < 4; q++) {
                                    int32_t four;
                                    memcpy(&four, y->qs + 128 * h + 32 * q + 4 * w, 4);
                                    pairs[j][q] =
                                        _mm256_add_epi16(pairs[j][q], _mm256_maddubs_epi16(e[q], _mm256_set1_epi32(four)));
                                }
                            }
                        }
                        /* widened by the group's scale: the pairs' sum times the scale, exactly, in 32 bits */
                        for (int j = 0; j < C; j++)
                            for (int q = 0; q < 4; q++)
                                total[j] = _mm256_add_epi32(total[j], _mm256_madd_epi16(pairs[j][q], scale[q]));
                    }
                }
            k16_float_step(o, r, total, a, a_stride, b, C, sums);
        }
    }
    for (int j = 0; j < C; j++)
        for (int r = 0; r < 2; r++) store_group_row(sums[j][r], r, j, C, out);
}

PACKED_TILES_ENTRY(q6_Kx16, q6_Kx16_tile, )
GEMM_KERNEL(q6_Kx16, QK_K, 16, 1, 0, LL_Q8_K)
GEMM_ENTRY(q6_Kx16, QK_K, 0, LL_Q8_K)

/* ---- Q3_K packed 16 rows a group: as dots_avx512.c's, 8 rows a register. Each value + 4 (0..7, unsigned) by the
 * broadcast activations in maddubs, a 16-element sub-block's four words summed within 16 bits (at most 4 x 2 x 7 x
 * 127 = 7,112 a word), less 4 times the activations' sub-block sum in one of the two words, then widened by madd
 * with the row's scale in both of its lane's words: the canonical integer, exactly. ---- */

/* Each row's 16 scales less 32 as int16, two groups to a register as q6_Kx16_tile's scale_words: [2i] the scales
 * of groups 4i and 4i + 2, [2i + 1] of 4i + 1 and 4i + 3, one a word. The four registers of bytes first: register
 * i's lane byte k holds group 4i + k's scale, its low four bits from the first two words (high nibbles for groups
 * 8..15), its high two from the third word's bits 2i of each byte. */
INLINE void q3_scale_words(const __m256i words[3], __m256i scale_words[8]) {
    const __m256i nibble = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(3), bias = _mm256_set1_epi8(32);
    for (int i = 0; i < 4; i++) {
        const __m256i low = _mm256_and_si256(i < 2 ? words[i] : _mm256_srli_epi16(words[i - 2], 4), nibble);
        const __m256i high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(words[2], 2 * i), two), 4);
        const __m256i scales = _mm256_sub_epi8(_mm256_or_si256(low, high), bias);
        scale_words[2 * i] = _mm256_srai_epi16(_mm256_slli_epi16(scales, 8), 8);
        scale_words[2 * i + 1] = _mm256_srai_epi16(scales, 8);
    }
}

INLINE void q3_Kx16_tile(int n, const void *group, const void *a, size_t a_stride, const int C, float *out) {
    const int blocks = n / QK_K;
    const __m256i two = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
    __m256 sums[DOT_ROWS][2];
    for (int j = 0; j < C; j++) sums[j][0] = sums[j][1] = _mm256_setzero_ps();
    for (int b = 0; b < blocks; b++) {
        const uint8_t *o = (const uint8_t *)group + (size_t)b * Q3_KX16_BLOCK;
        prefetch_ahead(o, Q3_KX16_BLOCK);
        for (int r = 0; r < 2; r++) {  /* rows 8r..8r+7 */
            const __m256i words[3] = {_mm256_loadu_si256((const __m256i *)(o + Q3X16_SCALES + 32 * r)),
                                      _mm256_loadu_si256((const __m256i *)(o + Q3X16_SCALES + 64 + 32 * r)),
                                      _mm256_loadu_si256((const __m256i *)(o + Q3X16_SCALES + 128 + 32 * r))};
            __m256i scale_words[8];
            q3_scale_words(words, scale_words);
            __m256i total[DOT_ROWS];
            for (int j = 0; j < C; j++) total[j] = _mm256_setzero_si256();
            for (int c = 0; c < 2; c++)
                for (int s = 0; s < 2; s++) {  /* words 4s..4s+3: elements 16s..16s+15 of each chunk q */
                    __m256i pairs[DOT_ROWS][4];
                    for (int j = 0; j < C; j++)
                        for (int q = 0; q < 4; q++) pairs[j][q] = _mm256_setzero_si256();
                    for (int w = 4 * s; w < 4 * s + 4; w++) {
                        const __m256i low = _mm256_loadu_si256((const __m256i *)(o + Q3X16_LOW(c, w) + 32 * r));
                        /* each byte's third bits of this half at bits 2..5: bit 2 + q is chunk q's */
                        const __m256i third = shift_bits(
                            _mm256_loadu_si256((const __m256i *)(o + Q3X16_THIRD(w) + 32 * r)), 2 - 4 * c);
                        for (int q = 0; q < 4; q++) {
                            const __m256i e = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(low, 2 * q), two),
                                                              _mm256_and_si256(_mm256_srli_epi16(third, q), four));
                            for (int j = 0; j < C; j++) {
                                const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                                int32_t bytes;
                                memcpy(&bytes, y->qs + 128 * c + 32 * q + 4 * w, 4);
                                pairs[j][q] =
                                    _mm256_add_epi16(pairs[j][q], _mm256_maddubs_epi16(e, _mm256_set1_epi32(bytes)));
                            }
                        }
                    }
                    for (int q = 0; q < 4; q++) {
                        const int g = 8 * c + 2 * q + s;
                        const __m256i scale = group_scale(scale_words, g);
                        for (int j = 0; j < C; j++) {
                            const block_q8_K *y = (const block_q8_K *)A_ROW(j) + b;
                            /* less 4 x the activations' sub-block sum, in the first word of each lane: at most
                             * 7,112 + 8,128 in 16 bits; then times the scale, exactly, in 32 */
                            const __m256i exact = _mm256_add_epi16(
                                pairs[j][q], _mm256_set1_epi32((int32_t)(uint16_t)(int16_t)(-4 * y->bsums[g])));
                            total[j] = _mm256_add_epi32(total[j], _mm256_madd_epi16(exact, scale));
                        }
                    }
                }
            k16_float_step(o, r, total, a, a_stride, b, C, sums);
        }
    }
    for (int j = 0; j < C; j++)
        for (int r = 0; r < 2; r++) store_group_row(sums[j][r], r, j, C, out);
}

PACKED_TILES_ENTRY(q3_Kx16, q3_Kx16_tile, )
GEMM_KERNEL(q3_Kx16, QK_K, 16, 1, 0, LL_Q8_K)
GEMM_ENTRY(q3_Kx16, QK_K, 0, LL_Q8_K)
#endif
#endif

const char *ll_kernel_isa(void) {
#if LL_AVX512_DOTS
    return "avx512 vnni";
#elif defined(__AVX512F__)
    return "avx2 kernels (avx512 machine)";
#else
    return "avx2";
#endif
}

#endif
