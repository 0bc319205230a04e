/* The per-type table, and what it points to: activation quantisation, row dequantisation and the scalar reference
 * dot products of every weight type. */
#include "quants.h"

#include <stdlib.h>

/* Round half to even, as the SIMD conversions do. */
static inline int nearest(float x) { return (int)lrintf(x); }

/* 32 values as 8-bit whole numbers times one scale d, the largest magnitude at 127; returns d. */
static float quantize_block_32(const float *x, int8_t *q) {
    float amax = 0.0f;
    for (int j = 0; j < QK; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
    for (int j = 0; j < QK; j++) q[j] = (int8_t)nearest(x[j] * id);
    return d;
}

static void quantize_q8_0(const float *x, void *out, int n) {
    block_q8_0 *y = out;
    for (int b = 0; b < n / QK; b++) y[b].d = float_to_half(quantize_block_32(x + QK * b, y[b].qs));
}

static void quantize_q8_1(const float *x, void *out, int n) {
    block_q8_1 *y = out;
    for (int b = 0; b < n / QK; b++) {
        const float d = quantize_block_32(x + QK * b, y[b].qs);
        int sum = 0;
        for (int j = 0; j < QK; j++) sum += y[b].qs[j];
        y[b].d = float_to_half(d);
        y[b].s = float_to_half(d * (float)sum);
    }
}

/* Q8_K, as llama.cpp quantises it: each 256-element block's largest magnitude (the first such element, its sign kept
 * in d) maps to -127. With AVX2 a block takes 8 lanes at a time, the same steps and bits: the magnitude's maximum is
 * exact, the first element that reaches it is found by comparing, the products are the same single roundings and
 * cvtps rounds to nearest even as lrintf does. */
static void quantize_q8_K(const float *x, void *out, int n) {
    block_q8_K *y = out;
    for (int b = 0; b < n / QK_K; b++, x += QK_K) {
#if defined(__AVX2__)
        const __m256 sign = _mm256_set1_ps(-0.0f);
        __m256 most = _mm256_setzero_ps();
        for (int j = 0; j < QK_K; j += 8) most = _mm256_max_ps(most, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)));
        __m128 half = _mm_max_ps(_mm256_castps256_ps128(most), _mm256_extractf128_ps(most, 1));
        half = _mm_max_ps(half, _mm_movehl_ps(half, half));
        const float amax = _mm_cvtss_f32(_mm_max_ss(half, _mm_movehdup_ps(half)));
        float max = 0.0f;
        for (int j = 0; j < QK_K; j += 8) {
            const int hits = _mm256_movemask_ps(
                _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)), _mm256_set1_ps(amax), _CMP_EQ_OQ));
            if (hits) {
                max = x[j + __builtin_ctz((unsigned)hits)];
                break;
            }
        }
#else
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK_K; j++) {
            const float ax = fabsf(x[j]);
            if (ax > amax) { amax = ax; max = x[j]; }
        }
#endif
        if (amax == 0.0f) {
            memset(&y[b], 0, sizeof(y[b]));
            continue;
        }
        /* llama.cpp's scale: the largest magnitude maps to -127 (its sign kept in d). */
        const float iscale = -127.0f / max;
#if defined(__AVX2__)
        const __m256 scale = _mm256_set1_ps(iscale);
        const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7), ones = _mm256_set1_epi8(1);
        for (int j = 0; j < QK_K; j += 32) {
            __m256i v[4];
            for (int i = 0; i < 4; i++)
                v[i] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(scale, _mm256_loadu_ps(x + j + 8 * i))),
                                        _mm256_set1_epi32(127));
            /* packs interleaves the 128-bit halves; the permute puts the 32 bytes back in order */
            const __m256i bytes = _mm256_permutevar8x32_epi32(
                _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3])), order);
            _mm256_storeu_si256((__m256i *)(y[b].qs + j), bytes);
            /* the two 16-element sums: pairs by maddubs (1 x each byte), then 8 pairs each */
            const __m256i pairs = _mm256_maddubs_epi16(ones, bytes);
            const __m256i quads = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
            int32_t lanes[8];
            _mm256_storeu_si256((__m256i *)lanes, quads);
            y[b].bsums[j / 16] = (int16_t)(lanes[0] + lanes[1] + lanes[2] + lanes[3]);
            y[b].bsums[j / 16 + 1] = (int16_t)(lanes[4] + lanes[5] + lanes[6] + lanes[7]);
        }
#else
        for (int j = 0; j < QK_K; j++) {
            const int v = nearest(iscale * x[j]);
            y[b].qs[j] = (int8_t)(v > 127 ? 127 : v);
        }
        for (int j = 0; j < QK_K / 16; j++) {
            int sum = 0;
            for (int i = 0; i < 16; i++) sum += y[b].qs[16 * j + i];
            y[b].bsums[j] = (int16_t)sum;
        }
#endif
        y[b].d = 1.0f / iscale;
    }
}

static void copy_f32(const float *x, void *out, int n) { memcpy(out, x, (size_t)n * sizeof(float)); }

/* The whole number of element e in a Q5_K / Q4_K super-block's 64-element chunk layout. */
static inline int k4_quant(const uint8_t *qs, int e) {
    const int chunk = e / 64, within = e % 64;
    const uint8_t byte = qs[32 * chunk + (within % 32)];
    return within < 32 ? (byte & 0xF) : (byte >> 4);
}

static inline int k5_high(const uint8_t *qh, int e) {
    const int chunk = e / 64, within = e % 64;
    return (qh[within % 32] >> (2 * chunk + (within >= 32))) & 1;
}

static inline int q6_quant(const block_q6_K *b, int e) {
    const int half = e / 128, within = e % 128, quarter = within / 32, l = within % 32;
    const uint8_t *ql = b->ql + 64 * half, *qh = b->qh + 32 * half;
    const int low = quarter & 1 ? ql[l + 32] : ql[l];
    const int nibble = quarter < 2 ? (low & 0xF) : (low >> 4);
    return (nibble | (((qh[l] >> (2 * quarter)) & 3) << 4)) - 32;
}

/* The whole number of element e of a Q3_K super-block, -4..3: in each 128-element half c, element 32j + l (j < 4)
 * has its low two bits at bits 2j of qs[32c + l] and its third at bit 4c + j of hmask[l]; a third bit of 0 means
 * minus 4. */
static inline int q3_quant(const block_q3_K *b, int e) {
    const int c = e / 128, j = e % 128 / 32, l = e % 32;
    const int low = (b->qs[32 * c + l] >> (2 * j)) & 3, high = (b->hmask[l] >> (4 * c + j)) & 1;
    return low - (high ? 0 : 4);
}

/* Super-block b of a Q4_K (or, with five, Q5_K) row, with its scale and the scale of its minimums. */
static const uint8_t *k_block(int five, const void *row, int b, float *d, float *dmin) {
    const uint8_t *block = (const uint8_t *)row + (size_t)b * (five ? sizeof(block_q5_K) : sizeof(block_q4_K));
    ll_half dh, mh;
    memcpy(&dh, block, 2);
    memcpy(&mh, block + 2, 2);
    *d = half_to_float(dh);
    *dmin = half_to_float(mh);
    return block;
}

/* The byte size of a legacy type's block: a constant once legacy_block is inlined for one type. */
static inline size_t legacy_bytes(int type) {
    return type == LL_Q4_0 ? sizeof(block_q4_0) : type == LL_Q4_1 ? sizeof(block_q4_1)
         : type == LL_Q5_0 ? sizeof(block_q5_0) : type == LL_Q5_1 ? sizeof(block_q5_1) : sizeof(block_q8_0);
}

/* Block b of a legacy-type row: its 32 whole numbers (Q4_0 and Q5_0 already offset to be signed), scale and
 * minimum (0 for the types without one). One decoding for the dequantisation and the reference dots; inlined
 * into each type's own functions, so the type is a constant in each. */
static inline __attribute__((always_inline)) void legacy_block(int type, const void *row, int b, int *q, float *d,
                                                               float *m) {
    const uint8_t *block = (const uint8_t *)row + (size_t)b * legacy_bytes(type);
    ll_half dh, mh = 0;
    memcpy(&dh, block, 2);
    *d = half_to_float(dh);
    if (type == LL_Q8_0) {
        for (int j = 0; j < QK; j++) q[j] = ((const int8_t *)block)[2 + j];
        *m = 0.0f;
        return;
    }
    const int minimum = type == LL_Q4_1 || type == LL_Q5_1, five = type == LL_Q5_0 || type == LL_Q5_1;
    if (minimum) memcpy(&mh, block + 2, 2);
    *m = minimum ? half_to_float(mh) : 0.0f;
    uint32_t qh = 0;
    if (five) memcpy(&qh, block + (minimum ? 4 : 2), 4);
    const uint8_t *qs = block + (minimum ? 4 : 2) + (five ? 4 : 0);
    const int offset = minimum ? 0 : (five ? 16 : 8);
    for (int j = 0; j < QK / 2; j++) {
        q[j] = ((qs[j] & 0xF) | (five ? ((qh >> j) & 1) << 4 : 0)) - offset;
        q[j + 16] = ((qs[j] >> 4) | (five ? ((qh >> (j + 16)) & 1) << 4 : 0)) - offset;
    }
}

/* ---- Dequantisation: a row of n elements to float32. ---- */

static void dequantize_f16(const void *row, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = half_to_float(((const ll_half *)row)[i]);
}

static void dequantize_bf16(const void *row, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = bf16_to_float(((const uint16_t *)row)[i]);
}

static void dequantize_f32(const void *row, float *y, int n) { memcpy(y, row, (size_t)n * 4); }

static inline __attribute__((always_inline)) void dequantize_legacy(int type, const void *row, float *y, int n) {
    for (int b = 0; b < n / QK; b++) {
        int q[QK];
        float d, m;
        legacy_block(type, row, b, q, &d, &m);
        for (int j = 0; j < QK; j++) y[QK * b + j] = q[j] * d + m;
    }
}

static inline __attribute__((always_inline)) void dequantize_k4(int five, const void *row, float *y, int n) {
    for (int b = 0; b < n / QK_K; b++) {
        float d, dmin;
        const uint8_t *block = k_block(five, row, b, &d, &dmin);
        const uint8_t *scales = block + 4, *qh = block + 16, *qs = block + (five ? 48 : 16);
        for (int e = 0; e < QK_K; e++) {
            uint8_t sc, mn;
            k_scale_min(e / 32, scales, &sc, &mn);
            const int q = k4_quant(qs, e) | (five ? k5_high(qh, e) << 4 : 0);
            y[QK_K * b + e] = d * sc * q - dmin * mn;
        }
    }
}

static void dequantize_q4_K(const void *row, float *y, int n) { dequantize_k4(0, row, y, n); }
static void dequantize_q5_K(const void *row, float *y, int n) { dequantize_k4(1, row, y, n); }

static void dequantize_q6_K(const void *row, float *y, int n) {
    const block_q6_K *x = row;
    for (int b = 0; b < n / QK_K; b++) {
        const float d = half_to_float(x[b].d);
        for (int e = 0; e < QK_K; e++) y[QK_K * b + e] = d * x[b].scales[e / 16] * q6_quant(&x[b], e);
    }
}

/* Q3_K, dequantised as ggml does: (d * (scale - 32)) * q, one rounding each. */
static void dequantize_q3_K(const void *row, float *y, int n) {
    const block_q3_K *x = row;
    for (int b = 0; b < n / QK_K; b++) {
        const float d = half_to_float(x[b].d);
        for (int e = 0; e < QK_K; e++) y[QK_K * b + e] = d * (q3_scale(x[b].scales, e / 16) - 32) * q3_quant(&x[b], e);
    }
}

/* ---- Widening: a type without kernels copied exactly into one with them. ----
 *
 * Q3_K into Q6_K: the same super-block of 16 groups of 16, one float16 d, a signed whole-number scale per group and a
 * signed whole number per element, each in a range Q6_K's holds (scales -32..31 in int8; values -4..3 in -32..31).
 * So every value, d * scale * q, is the same float (dequantize_q6_K rounds as dequantize_q3_K), every dot is the
 * same canonical Q6_K dot, and the Q6_K kernels, packed layout and GEMM run it: 210 bytes a block read instead of
 * 110, against 512 for the float16 a type without kernels runs in. */
static void widen_q3_K(const void *blocks, size_t count, void *out) {
    const block_q3_K *x = blocks;
    block_q6_K *y = out;
#pragma omp parallel for schedule(static) if (count >= 4096)
    for (size_t b = 0; b < count; b++) {
        y[b].d = x[b].d;
        for (int s = 0; s < QK_K / 16; s++) y[b].scales[s] = (int8_t)(q3_scale(x[b].scales, s) - 32);
        /* Q6_K holds value + 32 (0..63) as a nibble in ql and two high bits in qh: per half c and l < 32, elements
         * 32j + l (j < 4) share ql[64c + l] (j = 0, 2), ql[64c + 32 + l] (j = 1, 3) and qh[32c + l] (bits 2j). */
        for (int c = 0; c < 2; c++)
            for (int l = 0; l < 32; l++) {
                uint8_t v[4];
                for (int j = 0; j < 4; j++) {
                    const int low = (x[b].qs[32 * c + l] >> (2 * j)) & 3, high = (x[b].hmask[l] >> (4 * c + j)) & 1;
                    v[j] = (uint8_t)(low + 4 * high + 28);  /* (low - 4 + 4 * high) + 32 */
                }
                y[b].ql[64 * c + l] = (uint8_t)((v[0] & 0xF) | (v[2] & 0xF) << 4);
                y[b].ql[64 * c + 32 + l] = (uint8_t)((v[1] & 0xF) | (v[3] & 0xF) << 4);
                y[b].qh[32 * c + l] = (uint8_t)(v[0] >> 4 | (v[1] >> 4) << 2 | (v[2] >> 4) << 4 | (v[3] >> 4) << 6);
            }
    }
}

/* ---- Scalar dot products: the reference every SIMD kernel is tested against, and the portable path. ----
 *
 * The quant types' dots are written in one canonical form that every kernel (each instruction set, each tile
 * shape, the prompt's GEMM) computes to the last bit: per block, the products of the whole numbers are summed
 * exactly as integers (in any order: integers are exact), then the floats go one block after another,
 *     sum = fmaf(d_w * d_a, (float)isum, sum)        and, for the types with a minimum,
 *     minimums = fmaf(m_w, s_a, minimums)  (Q4_1, Q5_1)   or   fmaf(dmin_w * d_a, (float)imin, minimums)  (k-quants)
 * and the dot is sum + minimums (sum - minimums for the k-quants). A token's logits then do not depend on how
 * many tokens share its pass (batch invariance): the prompt's GEMM, whose vector lanes are tokens, and a decode
 * step, whose lanes are a row's elements, meet in these scalar steps. The library is built with -std=c11, so the
 * compiler contracts no other multiply-add into an FMA. */

static inline __attribute__((always_inline)) float dot_float(int type, int n, const void *w, const void *a) {
    const float *x = a;
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        const float v = type == LL_F32 ? ((const float *)w)[i]
                      : type == LL_F16 ? half_to_float(((const ll_half *)w)[i])
                      : bf16_to_float(((const uint16_t *)w)[i]);
        sum += v * x[i];
    }
    return sum;
}

static float dot_f32(int n, const void *w, const void *a) { return dot_float(LL_F32, n, w, a); }
static float dot_f16(int n, const void *w, const void *a) { return dot_float(LL_F16, n, w, a); }
static float dot_bf16(int n, const void *w, const void *a) { return dot_float(LL_BF16, n, w, a); }

static inline __attribute__((always_inline)) float dot_legacy(int type, int n, const void *w, const void *a) {
    /* The types with a minimum read Q8_1 activations, which carry d * sum(quants) for its term. */
    const int minimum = type == LL_Q4_1 || type == LL_Q5_1;
    float sum = 0.0f, minimums = 0.0f;
    for (int b = 0; b < n / QK; b++) {
        int q[QK], s = 0;
        float d, m;
        legacy_block(type, w, b, q, &d, &m);
        const int8_t *yq = minimum ? ((const block_q8_1 *)a)[b].qs : ((const block_q8_0 *)a)[b].qs;
        const float dy = half_to_float(minimum ? ((const block_q8_1 *)a)[b].d : ((const block_q8_0 *)a)[b].d);
        for (int j = 0; j < QK; j++) s += q[j] * yq[j];
        sum = fmaf(d * dy, (float)s, sum);
        if (minimum) minimums = fmaf(m, half_to_float(((const block_q8_1 *)a)[b].s), minimums);
    }
    return minimum ? sum + minimums : sum;
}

/* Each legacy type's own dequantisation and reference dot, the type a constant in each. */
#define LEGACY_TYPE(NAME, TYPE)                                                                                    \
    static void dequantize_##NAME(const void *row, float *y, int n) { dequantize_legacy(TYPE, row, y, n); }       \
    static float dot_##NAME(int n, const void *w, const void *a) { return dot_legacy(TYPE, n, w, a); }
LEGACY_TYPE(q4_0, LL_Q4_0)
LEGACY_TYPE(q4_1, LL_Q4_1)
LEGACY_TYPE(q5_0, LL_Q5_0)
LEGACY_TYPE(q5_1, LL_Q5_1)
LEGACY_TYPE(q8_0, LL_Q8_0)
#undef LEGACY_TYPE

static inline __attribute__((always_inline)) float dot_k4(int five, int n, const void *w, const void *a) {
    const block_q8_K *y = a;
    float sum = 0.0f, minimums = 0.0f;
    for (int b = 0; b < n / QK_K; b++) {
        float d, dmin;
        const uint8_t *block = k_block(five, w, b, &d, &dmin);
        const uint8_t *scales = block + 4, *qh = block + 16, *qs = block + (five ? 48 : 16);
        int scaled = 0, mins = 0;
        for (int j = 0; j < QK_K / 32; j++) {
            uint8_t sc, mn;
            k_scale_min(j, scales, &sc, &mn);
            int s = 0;
            for (int l = 0; l < 32; l++) {
                const int e = 32 * j + l;
                s += (k4_quant(qs, e) | (five ? k5_high(qh, e) << 4 : 0)) * y[b].qs[e];
            }
            scaled += sc * s;
            mins += mn * (y[b].bsums[2 * j] + y[b].bsums[2 * j + 1]);
        }
        sum = fmaf(d * y[b].d, (float)scaled, sum);
        minimums = fmaf(dmin * y[b].d, (float)mins, minimums);
    }
    return sum - minimums;
}

static float dot_q4_K(int n, const void *w, const void *a) { return dot_k4(0, n, w, a); }
static float dot_q5_K(int n, const void *w, const void *a) { return dot_k4(1, n, w, a); }

/* Q6_K's canonical dot, and Q3_K's, which is Q6_K's on its widened rows: each 16-element group's whole sum weighted
 * by its signed scale, as integers, then one float step a block. */
static inline __attribute__((always_inline)) float dot_k16(int three, int n, const void *w, const void *a) {
    const block_q8_K *y = a;
    float sum = 0.0f;
    for (int b = 0; b < n / QK_K; b++) {
        const block_q3_K *x3 = three ? (const block_q3_K *)w + b : NULL;
        const block_q6_K *x6 = three ? NULL : (const block_q6_K *)w + b;
        int scaled = 0;
        for (int g = 0; g < QK_K / 16; g++) {
            int s = 0;
            for (int l = 0; l < 16; l++)
                s += (three ? q3_quant(x3, 16 * g + l) : q6_quant(x6, 16 * g + l)) * y[b].qs[16 * g + l];
            scaled += (three ? q3_scale(x3->scales, g) - 32 : x6->scales[g]) * s;
        }
        sum = fmaf(half_to_float(three ? x3->d : x6->d) * y[b].d, (float)scaled, sum);
    }
    return sum;
}

static float dot_q6_K(int n, const void *w, const void *a) { return dot_k16(0, n, w, a); }
static float dot_q3_K(int n, const void *w, const void *a) { return dot_k16(1, n, w, a); }

/* ---- The table: one entry per GGML type id the kernels know (ggml's type_traits). ---- */

/* A weight type: its block, the activation type its dots read, and its functions. */
#define WEIGHT(NAME, ELEMENTS, BYTES, ACTIVATION, FUNCTIONS)                                                        \
    {#NAME, ELEMENTS, BYTES, ACTIVATION, dequantize_##FUNCTIONS, NULL, dot_##FUNCTIONS, ll_tiles_##FUNCTIONS,       \
     GEMM_OF(FUNCTIONS)}
#if LL_GEMM_LANES
#define GEMM_OF(FUNCTIONS) LL_GEMM(FUNCTIONS)
#else
#define GEMM_OF(FUNCTIONS) NULL
#endif

static const ll_type_traits types[LL_TYPE_LIMIT] = {
    [LL_F32] = {"F32", 1, 4, LL_F32, dequantize_f32, copy_f32, dot_f32, ll_tiles_f32, NULL},  /* weights and activations */
    [LL_F16] = {"F16", 1, 2, LL_F32, dequantize_f16, NULL, dot_f16, ll_tiles_f16, NULL},
    [LL_BF16] = {"BF16", 1, 2, LL_F32, dequantize_bf16, NULL, dot_bf16, ll_tiles_bf16, NULL},
#if LL_GEMM_LANES  /* AVX-512 or AVX2 */
    [LL_Q4_0] = {"Q4_0", QK, sizeof(block_q4_0), LL_Q8_0, dequantize_q4_0, NULL, dot_q4_0, ll_tiles_q4_0,
                 LL_GEMM(q4_0), ll_pack_q4_0x16, ll_packed_tiles_q4_0x16, LL_GEMM(q4_0x16)},
#else
    [LL_Q4_0] = WEIGHT(Q4_0, QK, sizeof(block_q4_0), LL_Q8_0, q4_0),
#endif
#if LL_GEMM_LANES  /* AVX-512 or AVX2 */
    [LL_Q4_1] = {"Q4_1", QK, sizeof(block_q4_1), LL_Q8_1, dequantize_q4_1, NULL, dot_q4_1, ll_tiles_q4_1,
                 LL_GEMM(q4_1), ll_pack_q4_1x16, ll_packed_tiles_q4_1x16, LL_GEMM(q4_1x16)},
#else
    [LL_Q4_1] = WEIGHT(Q4_1, QK, sizeof(block_q4_1), LL_Q8_1, q4_1),
#endif
#if LL_GEMM_LANES  /* AVX-512 or AVX2 */
    [LL_Q5_0] = {"Q5_0", QK, sizeof(block_q5_0), LL_Q8_0, dequantize_q5_0, NULL, dot_q5_0, ll_tiles_q5_0,
                 LL_GEMM(q5_0), ll_pack_q5_0x16, ll_packed_tiles_q5_0x16, LL_GEMM(q5_0x16)},
    [LL_Q5_1] = {"Q5_1", QK, sizeof(block_q5_1), LL_Q8_1, dequantize_q5_1, NULL, dot_q5_1, ll_tiles_q5_1,
                 LL_GEMM(q5_1), ll_pack_q5_1x16, ll_packed_tiles_q5_1x16, LL_GEMM(q5_1x16)},
#else
    [LL_Q5_0] = WEIGHT(Q5_0, QK, sizeof(block_q5_0), LL_Q8_0, q5_0),
    [LL_Q5_1] = WEIGHT(Q5_1, QK, sizeof(block_q5_1), LL_Q8_1, q5_1),
#endif
#if LL_GEMM_LANES  /* AVX-512 or AVX2 */
    [LL_Q8_0] = {"Q8_0", QK, sizeof(block_q8_0), LL_Q8_0, dequantize_q8_0, quantize_q8_0, dot_q8_0, ll_tiles_q8_0,
                 LL_GEMM(q8_0), ll_pack_q8_0x16, ll_packed_tiles_q8_0x16, LL_GEMM(q8_0x16)},
#else
    [LL_Q8_0] = {"Q8_0", QK, sizeof(block_q8_0), LL_Q8_0, dequantize_q8_0, quantize_q8_0, dot_q8_0, ll_tiles_q8_0,
                 NULL},
#endif
#if LL_GEMM_LANES  /* AVX-512 or AVX2 */
    [LL_Q4_K] = {"Q4_K", QK_K, sizeof(block_q4_K), LL_Q8_K, dequantize_q4_K, NULL, dot_q4_K, ll_tiles_q4_K,
                 LL_GEMM(q4_K), ll_pack_q4_Kx16, ll_packed_tiles_q4_Kx16, LL_GEMM(q4_Kx16)},
#else
    [LL_Q4_K] = WEIGHT(Q4_K, QK_K, sizeof(block_q4_K), LL_Q8_K, q4_K),
#endif
#if LL_GEMM_LANES  /* AVX-512 or AVX2 */
    [LL_Q5_K] = {"Q5_K", QK_K, sizeof(block_q5_K), LL_Q8_K, dequantize_q5_K, NULL, dot_q5_K, ll_tiles_q5_K,
                 LL_GEMM(q5_K), ll_pack_q5_Kx16, ll_packed_tiles_q5_Kx16, LL_GEMM(q5_Kx16)},
#else
    [LL_Q5_K] = WEIGHT(Q5_K, QK_K, sizeof(block_q5_K), LL_Q8_K, q5_K),
#endif
#if LL_GEMM_LANES  /* AVX-512 or AVX2 */
    [LL_Q6_K] = {"Q6_K", QK_K, sizeof(block_q6_K), LL_Q8_K, dequantize_q6_K, NULL, dot_q6_K, ll_tiles_q6_K,
                 LL_GEMM(q6_K), ll_pack_q6_Kx16, ll_packed_tiles_q6_Kx16, LL_GEMM(q6_Kx16)},
#else
    [LL_Q6_K] = WEIGHT(Q6_K, QK_K, sizeof(block_q6_K), LL_Q8_K, q6_K),
#endif
    /* Widened at ll_set_tensor, so without file-layout tiles of their own; packed, its own kernels. */
#if LL_GEMM_LANES  /* AVX-512 or AVX2 */
    [LL_Q3_K] = {"Q3_K", QK_K, sizeof(block_q3_K), LL_Q8_K, dequantize_q3_K, NULL, dot_q3_K, NULL, NULL,
                 ll_pack_q3_Kx16, ll_packed_tiles_q3_Kx16, LL_GEMM(q3_Kx16), widen_q3_K, LL_Q6_K},
#else
    [LL_Q3_K] = {"Q3_K", QK_K, sizeof(block_q3_K), LL_Q8_K, dequantize_q3_K, NULL, dot_q3_K, NULL, NULL, NULL, NULL,
                 NULL, widen_q3_K, LL_Q6_K},
#endif
    /* Activation formats only, as llama.cpp pairs them with the types with a minimum and the k-quants. */
    [LL_Q8_1] = {"Q8_1", QK, sizeof(block_q8_1), -1, NULL, quantize_q8_1, NULL, NULL, NULL},
    [LL_Q8_K] = {"Q8_K", QK_K, sizeof(block_q8_K), -1, NULL, quantize_q8_K, NULL, NULL, NULL},
};
#undef WEIGHT
#undef GEMM_OF

const ll_type_traits *ll_type(int type) {
    return type >= 0 && type < LL_TYPE_LIMIT && types[type].name ? &types[type] : NULL;
}

size_t ll_row_bytes(int type, int n) {
    const ll_type_traits *t = ll_type(type);
    return t ? (size_t)n / (size_t)t->block_elements * (size_t)t->block_bytes : 0;
}

/* ---- What Python reads, and the test hooks. ---- */

int32_t ll_type_count(void) { return LL_TYPE_LIMIT; }

int32_t ll_type_facts(int32_t type, ll_type_info *out) {
    const ll_type_traits *t = ll_type(type);
    if (!t) return -1;
    *out = (ll_type_info){t->name,      type, t->block_elements, t->block_bytes, t->activation,
                          t->widen ? t->wide : type, t->pack != NULL};
    return 0;
}

size_t ll_sizeof_type_info(void) { return sizeof(ll_type_info); }

int32_t ll_quantize_activation(int32_t type, const float *x, void *out, int32_t n) {
    const ll_type_traits *t = ll_type(type);
    if (!t || !t->quantize || n < 0 || n % t->block_elements) return -1;
    t->quantize(x, out, n);
    return 0;
}

int32_t ll_dequantize_row(int32_t type, const void *row, float *y, int32_t n) {
    const ll_type_traits *t = ll_type(type);
    if (!t || !t->dequantize || n < 0 || n % t->block_elements) return -1;
    t->dequantize(row, y, n);
    return 0;
}

int32_t ll_widen(int32_t type, const void *blocks, size_t count, void *out) {
    const ll_type_traits *t = ll_type(type);
    if (!t || !t->widen) return -1;
    t->widen(blocks, count, out);
    return 0;
}

float ll_dot_reference(int32_t type, int32_t n, const void *w, const void *a) {
    const ll_type_traits *t = ll_type(type);
    return t && t->dot_reference ? t->dot_reference(n, w, a) : NAN;
}

int32_t ll_dot_tile(int32_t type, int32_t n, const void *w, size_t w_stride, const void *a, size_t a_stride,
                    int32_t rows, int32_t count, float *out) {
    const ll_type_traits *t = ll_type(type);
    if (!t || !t->tiles || rows < 1 || rows > 4 || count < 1 || count > DOT_ROWS || n % t->block_elements) return -1;
    t->tiles(n, w, w_stride, a, a_stride, rows, count, out);
    return 0;
}

int32_t ll_packed_dot(int32_t type, int32_t n, const void *w, int32_t rows, const void *a, size_t a_stride,
                      int32_t count, float *out) {
    const ll_type_traits *t = ll_type(type);
    if (!t || !t->pack || rows < PACK_ROWS || rows % PACK_ROWS || count < 1 || count > DOT_ROWS ||
        n % t->block_elements)
        return -1;
    const size_t row_bytes = ll_row_bytes(type, n), bytes = (size_t)rows * row_bytes;
    void *packed = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!packed) return -1;
    t->pack(w, rows, n, packed);
    for (int g = 0; g < rows / PACK_ROWS; g++)
        t->packed_tiles(n, (const char *)packed + (size_t)g * PACK_ROWS * row_bytes, a, a_stride, count,
                        out + (size_t)g * PACK_ROWS * count);
    free(packed);
    return 0;
}
