/* The GEMM's activation panel (gemm.h): a pass's quantised activation rows laid out LL_GEMM_LANES tokens a register. */
#include "gemm.h"

#include <stdlib.h>

#if LL_GEMM_LANES

size_t ll_panel_bytes(int32_t activation, int32_t n, int32_t tokens) {
    const int block = activation == LL_Q8_K ? QK_K : QK;
    return (size_t)((tokens + LL_GEMM_LANES - 1) / LL_GEMM_LANES) * (size_t)(n / block) *
           (size_t)panel_block_bytes(activation);
}

/* Lanes past `tokens` hold zeros (and +128 quants): their sums are never stored. */
void ll_panel_build(int32_t activation, int32_t n, const void *rows, size_t row_stride, int32_t tokens, void *panel) {
    enum { LANES = LL_GEMM_LANES };
    const int k = activation == LL_Q8_K, block = k ? QK_K : QK, blocks = n / block;
    const int bytes = panel_block_bytes(activation);
    for (int first = 0; first < tokens; first += LANES) {
        char *out = (char *)panel + (size_t)(first / LANES) * blocks * bytes;
        const int count = tokens - first < LANES ? tokens - first : LANES;
        for (int b = 0; b < blocks; b++, out += bytes) {
            uint32_t *groups = (uint32_t *)out;
            float *scales = (float *)(out + block * LANES), *extra = scales + LANES;
            for (int l = 0; l < LANES; l++) {
                const int real = l < count;
                const char *row = (const char *)rows + (size_t)(real ? first + l : first) * row_stride;
                const int8_t *qs;
                if (k) {
                    const block_q8_K *y = (const block_q8_K *)row + b;
                    qs = y->qs;
                    scales[l] = real ? y->d : 0.0f;
                    for (int p = 0; p < 4; p++) {  /* sub-blocks 2p and 2p + 1: each two of the 16-element sums */
                        const int low = y->bsums[4 * p] + y->bsums[4 * p + 1];
                        const int high = y->bsums[4 * p + 2] + y->bsums[4 * p + 3];
                        ((int32_t *)extra)[p * LANES + l] =
                            real ? (int32_t)((uint32_t)(uint16_t)low | (uint32_t)(uint16_t)high << 16) : 0;
                    }
                } else if (activation == LL_Q8_1) {
                    const block_q8_1 *y = (const block_q8_1 *)row + b;
                    qs = y->qs;
                    scales[l] = real ? half_to_float(y->d) : 0.0f;
                    extra[l] = real ? half_to_float(y->s) : 0.0f;
                } else {
                    const block_q8_0 *y = (const block_q8_0 *)row + b;
                    qs = y->qs;
                    scales[l] = real ? half_to_float(y->d) : 0.0f;
                }
                for (int g = 0; g < block / 4; g++) {
                    uint32_t four;
                    memcpy(&four, qs + 4 * g, 4);
                    groups[g * LANES + l] = real ? four ^ 0x80808080u : 0x80808080u;
                }
            }
        }
    }
}

#endif

int32_t ll_gemm_rows(int32_t type, int32_t n, const void *w, size_t w_stride, int32_t rows, const void *a,
                     size_t a_stride, int32_t tokens, float *out) {
#if LL_GEMM_LANES
    const ll_type_traits *t = ll_type(type);
    if (!t || !t->gemm || n <= 0 || n % t->block_elements || rows < 1 || tokens < 1) return -1;
    const size_t bytes = (ll_panel_bytes(t->activation, n, tokens) + 63) / 64 * 64;
    void *panel = aligned_alloc(64, bytes);
    if (!panel) return -1;
    ll_panel_build(t->activation, n, a, a_stride, tokens, panel);
    t->gemm(n, w, w_stride, rows, panel, tokens, out, (size_t)rows, 0);
    free(panel);
    return 0;
#else
    (void)type, (void)n, (void)w, (void)w_stride, (void)rows, (void)a, (void)a_stride, (void)tokens, (void)out;
    return -1;
#endif
}
