/* The portable build's tiles, where the CPU has no AVX2: quants.c's scalar reference dots, one row at a time. */
#include "quants.h"

#if !(defined(__AVX2__) && defined(__FMA__))

#define TILE_ENTRY(NAME, TYPE)                                                                                  \
    void ll_tiles_##NAME(int n, const void *w, size_t w_stride, const void *a, size_t a_stride, int R, int C,    \
                         float *out) {                                                                          \
        for (int i = 0; i < R; i++)                                                                             \
            for (int j = 0; j < C; j++)                                                                         \
                out[i * C + j] = ll_type(TYPE)->dot_reference(n, (const char *)w + i * w_stride,                \
                                                              (const char *)a + j * a_stride);                  \
    }

#if !LL_AVX512_DOTS
TILE_ENTRY(q4_0, LL_Q4_0) TILE_ENTRY(q4_1, LL_Q4_1) TILE_ENTRY(q5_0, LL_Q5_0) TILE_ENTRY(q5_1, LL_Q5_1)
TILE_ENTRY(q8_0, LL_Q8_0) TILE_ENTRY(q4_K, LL_Q4_K) TILE_ENTRY(q5_K, LL_Q5_K) TILE_ENTRY(q6_K, LL_Q6_K)
#endif
TILE_ENTRY(f32, LL_F32) TILE_ENTRY(f16, LL_F16) TILE_ENTRY(bf16, LL_BF16)

const char *ll_kernel_isa(void) { return "scalar"; }

#endif
