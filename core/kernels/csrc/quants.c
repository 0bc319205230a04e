/* Activation quantisation, row dequantisation and the scalar reference dot products of every weight type. */
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

void quantize_q8_0(const float *x, void *out, int n) {
    block_q8_0 *y = out;
    for (int b = 0; b < n / QK; b++) y[b].d = float_to_half(quantize_block_32(x + QK * b, y[b].qs));
}

void quantize_q8_1(const float *x, void *out, int n) {
    block_q8_1 *y = out;
    for (int b = 0; b < n / QK; b++) {
        const float d = quantize_block_32(x + QK * b, y[b].qs);
        int sum = 0;
        for (int j = 0; j < QK; j++) sum += y[b].qs[j];
        y[b].d = float_to_half(d);
        y[b].s = float_to_half(d * (float)sum);
    }
}

void quantize_q8_K(const float *x, void *out, int n) {
    block_q8_K *y = out;
    for (int b = 0; b < n / QK_K; b++, x += QK_K) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK_K; j++) {
            const float ax = fabsf(x[j]);
            if (ax > amax) { amax = ax; max = x[j]; }
        }
        if (amax == 0.0f) {
            memset(&y[b], 0, sizeof(y[b]));
            continue;
        }
        /* llama.cpp's scale: the largest magnitude maps to -127 (its sign kept in d). */
        const float iscale = -127.0f / max;
        for (int j = 0; j < QK_K; j++) {
            const int v = nearest(iscale * x[j]);
            y[b].qs[j] = (int8_t)(v > 127 ? 127 : v);
        }
        for (int j = 0; j < QK_K / 16; j++) {
            int sum = 0;
            for (int i = 0; i < 16; i++) sum += y[b].qs[16 * j + i];
            y[b].bsums[j] = (int16_t)sum;
        }
        y[b].d = 1.0f / iscale;
    }
}

int activation_type(int weight_type) {
    switch (weight_type) {
    case LL_Q4_0: case LL_Q5_0: case LL_Q8_0: return LL_Q8_0;
    case LL_Q4_1: case LL_Q5_1: return LL_Q8_1;
    case LL_Q4_K: case LL_Q5_K: case LL_Q6_K: return LL_Q8_K;
    case LL_F32: case LL_F16: case LL_BF16: return LL_F32;
    default: return -1;
    }
}

size_t row_bytes(int type, int n) {
    switch (type) {
    case LL_F32: return (size_t)n * 4;
    case LL_F16: case LL_BF16: return (size_t)n * 2;
    case LL_Q4_0: return (size_t)n / QK * sizeof(block_q4_0);
    case LL_Q4_1: return (size_t)n / QK * sizeof(block_q4_1);
    case LL_Q5_0: return (size_t)n / QK * sizeof(block_q5_0);
    case LL_Q5_1: return (size_t)n / QK * sizeof(block_q5_1);
    case LL_Q8_0: return (size_t)n / QK * sizeof(block_q8_0);
    case LL_Q8_1: return (size_t)n / QK * sizeof(block_q8_1);
    case LL_Q4_K: return (size_t)n / QK_K * sizeof(block_q4_K);
    case LL_Q5_K: return (size_t)n / QK_K * sizeof(block_q5_K);
    case LL_Q6_K: return (size_t)n / QK_K * sizeof(block_q6_K);
    case LL_Q8_K: return (size_t)n / QK_K * sizeof(block_q8_K);
    default: return 0;
    }
}

int block_elements(int type) {
    switch (type) {
    case LL_F32: case LL_F16: case LL_BF16: return 1;
    case LL_Q4_K: case LL_Q5_K: case LL_Q6_K: case LL_Q8_K: return QK_K;
    case LL_Q4_0: case LL_Q4_1: case LL_Q5_0: case LL_Q5_1: case LL_Q8_0: case LL_Q8_1: return QK;
    default: return 0;
    }
}

void quantize_activation(int type, const float *x, void *out, int n) {
    switch (type) {
    case LL_Q8_0: quantize_q8_0(x, out, n); break;
    case LL_Q8_1: quantize_q8_1(x, out, n); break;
    case LL_Q8_K: quantize_q8_K(x, out, n); break;
    default: memcpy(out, x, (size_t)n * sizeof(float)); break;
    }
}

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

/* Block b of a legacy-type row: its 32 whole numbers (Q4_0 and Q5_0 already offset to be signed), scale and
 * minimum (0 for the types without one). One decoding for the dequantisation and the reference dots. */
static void legacy_block(int type, const void *row, int b, int *q, float *d, float *m) {
    const uint8_t *block = (const uint8_t *)row + (size_t)b * row_bytes(type, QK);
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

int dequantize_row(int type, const void *row, float *y, int n) {
    switch (type) {
    case LL_F32: memcpy(y, row, (size_t)n * 4); return 0;
    case LL_F16: for (int i = 0; i < n; i++) y[i] = half_to_float(((const ll_half *)row)[i]); return 0;
    case LL_BF16: for (int i = 0; i < n; i++) y[i] = bf16_to_float(((const uint16_t *)row)[i]); return 0;
    case LL_Q4_0: case LL_Q4_1: case LL_Q5_0: case LL_Q5_1: case LL_Q8_0:
        for (int b = 0; b < n / QK; b++) {
            int q[QK];
            float d, m;
            legacy_block(type, row, b, q, &d, &m);
            for (int j = 0; j < QK; j++) y[QK * b + j] = q[j] * d + m;
        }
        return 0;
    case LL_Q4_K: case LL_Q5_K: {
        const int five = type == LL_Q5_K;
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
        return 0;
    }
    case LL_Q6_K: {
        const block_q6_K *x = row;
        for (int b = 0; b < n / QK_K; b++) {
            const float d = half_to_float(x[b].d);
            for (int e = 0; e < QK_K; e++) y[QK_K * b + e] = d * x[b].scales[e / 16] * q6_quant(&x[b], e);
        }
        return 0;
    }
    default:
        return -1;
    }
}

/* ---- Scalar dot products: the reference every SIMD kernel is tested against, and the portable path. ---- */

float dot_reference(int type, int n, const void *w, const void *a) {
    float sum = 0.0f;
    switch (type) {
    case LL_F32: case LL_F16: case LL_BF16: {
        const float *x = a;
        for (int i = 0; i < n; i++) {
            const float v = type == LL_F32 ? ((const float *)w)[i]
                          : type == LL_F16 ? half_to_float(((const ll_half *)w)[i])
                          : bf16_to_float(((const uint16_t *)w)[i]);
            sum += v * x[i];
        }
        return sum;
    }
    case LL_Q4_0: case LL_Q4_1: case LL_Q5_0: case LL_Q5_1: case LL_Q8_0: {
        /* The types with a minimum read Q8_1 activations, which carry d * sum(quants) for its term. */
        const int minimum = type == LL_Q4_1 || type == LL_Q5_1;
        for (int b = 0; b < n / QK; b++) {
            int q[QK], s = 0;
            float d, m;
            legacy_block(type, w, b, q, &d, &m);
            const int8_t *yq = minimum ? ((const block_q8_1 *)a)[b].qs : ((const block_q8_0 *)a)[b].qs;
            const float dy = half_to_float(minimum ? ((const block_q8_1 *)a)[b].d : ((const block_q8_0 *)a)[b].d);
            for (int j = 0; j < QK; j++) s += q[j] * yq[j];
            sum += s * d * dy + (minimum ? m * half_to_float(((const block_q8_1 *)a)[b].s) : 0.0f);
        }
        return sum;
    }
    case LL_Q4_K: case LL_Q5_K: {
        const int five = type == LL_Q5_K;
        const block_q8_K *y = a;
        for (int b = 0; b < n / QK_K; b++) {
            float d, dmin;
            const uint8_t *block = k_block(five, w, b, &d, &dmin);
            const uint8_t *scales = block + 4, *qh = block + 16, *qs = block + (five ? 48 : 16);
            int scaled = 0, minimums = 0;
            for (int j = 0; j < QK_K / 32; j++) {
                uint8_t sc, mn;
                k_scale_min(j, scales, &sc, &mn);
                int s = 0;
                for (int l = 0; l < 32; l++) {
                    const int e = 32 * j + l;
                    s += (k4_quant(qs, e) | (five ? k5_high(qh, e) << 4 : 0)) * y[b].qs[e];
                }
                scaled += sc * s;
                minimums += mn * (y[b].bsums[2 * j] + y[b].bsums[2 * j + 1]);
            }
            sum += y[b].d * (d * scaled - dmin * minimums);
        }
        return sum;
    }
    case LL_Q6_K: {
        const block_q6_K *x = w;
        const block_q8_K *y = a;
        for (int b = 0; b < n / QK_K; b++) {
            int scaled = 0;
            for (int g = 0; g < QK_K / 16; g++) {
                int s = 0;
                for (int l = 0; l < 16; l++) s += q6_quant(&x[b], 16 * g + l) * y[b].qs[16 * g + l];
                scaled += x[b].scales[g] * s;
            }
            sum += y[b].d * half_to_float(x[b].d) * scaled;
        }
        return sum;
    }
    default:
        return NAN;
    }
}
