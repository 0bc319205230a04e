/* GGUF quant block layouts (as llama.cpp's ggml defines them), half-float helpers and the activation formats. */
#ifndef LL_BLOCKS_H
#define LL_BLOCKS_H

#include <stdint.h>
#include <string.h>
#include <math.h>

#if defined(__AVX2__) || defined(__AVX512F__) || defined(__F16C__)
#include <immintrin.h>
#endif

/* GGML type ids, as stored in a GGUF file. */
enum {
    LL_F32 = 0, LL_F16 = 1, LL_Q4_0 = 2, LL_Q4_1 = 3, LL_Q5_0 = 6, LL_Q5_1 = 7, LL_Q8_0 = 8, LL_Q8_1 = 9,
    LL_Q2_K = 10, LL_Q3_K = 11, LL_Q4_K = 12, LL_Q5_K = 13, LL_Q6_K = 14, LL_Q8_K = 15, LL_BF16 = 30,
};

#define QK 32     /* elements in a legacy block */
#define QK_K 256  /* elements in a k-quant super-block */

typedef uint16_t ll_half;

typedef struct { ll_half d; uint8_t qs[QK / 2]; } block_q4_0;
typedef struct { ll_half d, m; uint8_t qs[QK / 2]; } block_q4_1;
typedef struct { ll_half d; uint8_t qh[4]; uint8_t qs[QK / 2]; } block_q5_0;
typedef struct { ll_half d, m; uint8_t qh[4]; uint8_t qs[QK / 2]; } block_q5_1;
typedef struct { ll_half d; int8_t qs[QK]; } block_q8_0;
/* Activations for the types with a minimum: s = d * sum(qs), as llama.cpp's Q8_1. */
typedef struct { ll_half d, s; int8_t qs[QK]; } block_q8_1;
typedef struct { ll_half d, dmin; uint8_t scales[12]; uint8_t qs[QK_K / 2]; } block_q4_K;
typedef struct { ll_half d, dmin; uint8_t scales[12]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; } block_q5_K;
typedef struct { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; ll_half d; } block_q6_K;
/* Each element's low two bits in qs, its third in hmask, and 16 packed 6-bit scales, each less 32 when applied. */
typedef struct { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; ll_half d; } block_q3_K;
/* Activations for k-quants: one float scale per 256, and the sums of each 16 quants. */
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } block_q8_K;

_Static_assert(sizeof(block_q4_0) == 18, "q4_0");
_Static_assert(sizeof(block_q4_1) == 20, "q4_1");
_Static_assert(sizeof(block_q5_0) == 22, "q5_0");
_Static_assert(sizeof(block_q5_1) == 24, "q5_1");
_Static_assert(sizeof(block_q8_0) == 34, "q8_0");
_Static_assert(sizeof(block_q8_1) == 36, "q8_1");
_Static_assert(sizeof(block_q4_K) == 144, "q4_K");
_Static_assert(sizeof(block_q5_K) == 176, "q5_K");
_Static_assert(sizeof(block_q6_K) == 210, "q6_K");
_Static_assert(sizeof(block_q3_K) == 110, "q3_K");
_Static_assert(sizeof(block_q8_K) == 292, "q8_K");

static inline float half_to_float_soft(ll_half h) {
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff, bits;
    if (exponent == 0) {
        if (mantissa == 0) {
            bits = sign;
        } else {  /* subnormal: normalise */
            exponent = 127 - 15 + 1;
            while (!(mantissa & 0x400)) { mantissa <<= 1; exponent--; }
            bits = sign | (exponent << 23) | ((mantissa & 0x3ff) << 13);
        }
    } else if (exponent == 31) {
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else {
        bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline ll_half float_to_half_soft(float f) {
    /* Round to nearest even, as F16C's _cvtss_sh with rounding mode 0. */
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000;
    const uint32_t abs = x & 0x7fffffff;
    if (abs >= 0x47800000u) return (ll_half)(sign | (abs > 0x7f800000u ? 0x7e00 : 0x7c00));  /* inf, NaN */
    if (abs < 0x38800000u) {  /* subnormal or zero in half */
        const float magic = 0.5f;  /* adding 0.5 aligns the mantissa so the FPU rounds for us */
        float value;
        memcpy(&value, &abs, 4);
        value += magic;
        uint32_t bits;
        memcpy(&bits, &value, 4);
        return (ll_half)(sign | (bits - 0x3f000000u));
    }
    const uint32_t odd = (abs >> 13) & 1;
    const uint32_t rounded = abs + 0xc8000fffu + odd;  /* rebias exponent (-112 << 23) and round */
    return (ll_half)(sign | (rounded >> 13));
}

#if defined(__F16C__)
static inline float half_to_float(ll_half h) { return _cvtsh_ss(h); }
static inline ll_half float_to_half(float f) { return (ll_half)_cvtss_sh(f, 0); }
#else
static inline float half_to_float(ll_half h) { return half_to_float_soft(h); }
static inline ll_half float_to_half(float f) { return float_to_half_soft(f); }
#endif

static inline float bf16_to_float(uint16_t h) {
    const uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* The 6-bit scale and minimum of sub-block j of a Q4_K or Q5_K super-block. */
/* All eight of k_scale_min's scales and minimums at once, sub-block j in byte j: the 12 packed bytes taken as three
 * 32-bit words, four sub-blocks per word at a time. */
static inline void k_scale_bytes(const uint8_t *q, uint64_t *scales, uint64_t *minimums) {
    uint32_t w[3];
    memcpy(w, q, 12);
    const uint32_t six = 0x3f3f3f3fu, four = 0x0f0f0f0fu, two = 0x03030303u;
    *scales = (uint64_t)(w[0] & six) | (uint64_t)((w[2] & four) | (((w[0] >> 6) & two) << 4)) << 32;
    *minimums = (uint64_t)(w[1] & six) | (uint64_t)(((w[2] >> 4) & four) | (((w[1] >> 6) & two) << 4)) << 32;
}

static inline void k_scale_min(int j, const uint8_t *q, uint8_t *scale, uint8_t *minimum) {
    if (j < 4) {
        *scale = q[j] & 63;
        *minimum = q[j + 4] & 63;
    } else {
        *scale = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *minimum = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* Scale s (0..15) of a Q3_K super-block as stored, 0..63 (applied less 32): its low four bits in the first eight
 * bytes (s < 8 the low nibble of byte s, else the high nibble of byte s - 8), its high two in bytes 8..11 (byte
 * 8 + s % 4, bits 2(s / 4)). */
static inline int q3_scale(const uint8_t *scales, int s) {
    const int low = s < 8 ? scales[s] & 0xF : scales[s - 8] >> 4;
    return low | ((scales[8 + s % 4] >> (2 * (s / 4))) & 3) << 4;
}

#endif
